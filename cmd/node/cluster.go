package main

import (
	"fmt"
	"strconv"
	"strings"
)

// replicaIDFromName is the replica id a StatefulSet's pod name carries:
// the number after its last '-' (iggynode-2 is replica 2). The chart
// passes the pod name from the downward API (--replica-id-from-name
// $(POD_NAME)); the image is FROM scratch, so there is no shell to cut
// it out of $HOSTNAME.
func replicaIDFromName(name string) (int, error) {
	i := strings.LastIndexByte(name, '-')
	id, err := strconv.Atoi(name[i+1:])
	if i < 0 || err != nil || id < 0 || strings.HasPrefix(name[i+1:], "+") {
		return 0, fmt.Errorf("--replica-id-from-name %q: want a name ending in -<ordinal>, as a StatefulSet's pods (iggynode-2)", name)
	}
	return id, nil
}
