package bench

import (
	"fmt"
	"strings"

	"iggynode/internal/units"
)

// ParseSize reads a byte count such as "1GB", "512KiB", "1.5MB" or "1000"
// (bytes), with units.ParseSize: case-insensitive; KB/MB/GB/TB are decimal
// and KiB/MiB/GiB/TiB binary.
func ParseSize(s string) (uint64, error) {
	n, err := units.ParseSize(s)
	if err != nil {
		return 0, fmt.Errorf("bench: size %q: want a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s)
	}
	return n, nil
}

// ParseRate reads a byte rate such as "100MB/s" (the "/s" is optional).
func ParseRate(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if l := strings.ToLower(t); strings.HasSuffix(l, "/s") {
		t = t[:len(t)-2]
	}
	return ParseSize(t)
}
