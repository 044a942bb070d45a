package units

import (
	"testing"
	"time"
)

// The forms the configuration, topic options (server-behaviour.md 4.2.6),
// connection strings and the bench write, and what each must refuse.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{
		"1073741824": 1 << 30, "1 GiB": 1 << 30, "1gib": 1 << 30, "128MiB": 128 << 20, "64 MiB": 64 << 20,
		"1 GB": 1e9, "10 KB": 10_000, "10 KiB": 10_240, "512 B": 512, "1.5 MB": 1_500_000, "10kb": 10_000,
		"4 k": 4000, "  15 MB ": 15e6, "0": 0, "3TB": 3e12,
		// Exact above 2^53, where a float64 would round.
		"9007199254740993": 9007199254740993, "18446744073709551615 B": 1<<64 - 1,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "1 GiBs", "-1 MB", "16 EiB", "5 parsecs", "x", "NaN", "1e30TB"} {
		if got, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", bad, got)
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30 s": 30 * time.Second, "500ms": 500 * time.Millisecond, "1 m": time.Minute, "7 days": 7 * 24 * time.Hour,
		"1h 30m": 90 * time.Minute, "2days": 48 * time.Hour, "15µs": 15 * time.Microsecond, "1day 2h": 26 * time.Hour,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "10", "s", "1.5h", "-5s", "5parsecs", "99999999999999999999s", "300 years"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", bad, got)
		}
	}
	// "M" is months and "m" minutes (humantime is case-sensitive).
	if secs, _, ok := ParseHumanDuration("1M"); !ok || secs != 2_630_016 {
		t.Errorf("1M = %d s", secs)
	}
}
