package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
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

var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "usec": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond, "millis": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

// ParseDuration parses "<n><unit>" terms separated by optional spaces and
// sums them; "0" and "" are zero; a bare number is seconds.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(s, 10, 63); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	var total time.Duration
	rest := s
	for rest != "" {
		rest = strings.TrimLeft(rest, " ")
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("duration %q: expected a number", s)
		}
		n, _ := strconv.ParseInt(rest[:i], 10, 64)
		rest = strings.TrimLeft(rest[i:], " ")
		j := 0
		for j < len(rest) && (unicode.IsLetter(rune(rest[j])) || rest[j] == 0xC2 || rest[j] == 0xB5) {
			j++
		}
		unit, ok := durationUnits[strings.ToLower(rest[:j])]
		if !ok {
			return 0, fmt.Errorf("duration %q: unknown unit %q", s, rest[:j])
		}
		total += time.Duration(n) * unit
		rest = rest[j:]
	}
	return total, nil
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

var sizeUnits = map[string]uint64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
}

// ParseSize parses "<n>[.<frac>] <unit>".
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("size %q: expected a number", s)
	}
	num, err := strconv.ParseFloat(t[:i], 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	mult, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit", s)
	}
	return uint64(num * float64(mult)), nil
}
