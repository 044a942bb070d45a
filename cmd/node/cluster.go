package main

import (
	"fmt"
	"net/http"
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

// readyRoute is the readiness route of the HTTP listener.
const readyRoute = "/ready"

// withReadiness serves GET /ready in front of next: 200 "ready" once
// ready reports true, 503 before. Liveness stays on /ping, which answers
// as long as the process serves: a pod that takes long to catch up (a
// state transfer) must not be killed for it, only kept out of the client
// Service.
func withReadiness(next http.Handler, ready func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+readyRoute, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if !ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("catching up"))
			return
		}
		_, _ = w.Write([]byte("ready"))
	})
	mux.Handle("/", next)
	return mux
}
