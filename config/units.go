package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"iggynode/internal/units"
)

// Duration is a humantime duration as the reference configuration writes
// it: "30 s", "500ms", "1 m", "7 days", "1h 30m". A bare integer is seconds.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalText parses a humantime string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes Go duration syntax, which ParseDuration reads back.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// ParseDuration parses a humantime duration (units.ParseDuration); "0"
// and "" are zero and a bare number is seconds, as the reference
// configuration writes them.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(s, 10, 63); err == nil {
		if n > uint64(1<<63-1)/uint64(time.Second) {
			return 0, fmt.Errorf("duration %q: too long", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	return units.ParseDuration(s)
}

// Size is a byte size written as IEC or SI: "64 MiB", "500 MB", "1200 B",
// "4 GB". A bare integer is bytes.
type Size uint64

// UnmarshalText parses a byte-size string.
func (s *Size) UnmarshalText(b []byte) error {
	v, err := ParseSize(string(b))
	if err != nil {
		return err
	}
	*s = Size(v)
	return nil
}

// MarshalText writes the exact byte count.
func (s Size) MarshalText() ([]byte, error) {
	return []byte(strconv.FormatUint(uint64(s), 10) + " B"), nil
}

// ParseSize parses "<n>[.<frac>] <unit>" (units.ParseSize).
func ParseSize(s string) (uint64, error) { return units.ParseSize(s) }
