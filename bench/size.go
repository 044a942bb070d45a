package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the suffixes ParseSize accepts: decimal (as the report's
// MB/s) and binary.
var sizeUnits = []struct {
	suffix string
	factor float64
}{
	{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseSize reads a byte count such as "1GB", "512KiB", "1.5MB" or "1000"
// (bytes). Units are case-insensitive; KB/MB/GB/TB are decimal and
// KiB/MiB/GiB/TiB binary.
func ParseSize(s string) (uint64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	factor := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, factor = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.factor
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) || v*factor >= math.MaxUint64 {
		return 0, fmt.Errorf("bench: size %q: want a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s)
	}
	return uint64(math.Round(v * factor)), nil
}

// ParseRate reads a byte rate such as "100MB/s" (the "/s" is optional).
func ParseRate(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if l := strings.ToLower(t); strings.HasSuffix(l, "/s") {
		t = t[:len(t)-2]
	}
	return ParseSize(t)
}
