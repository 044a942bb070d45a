// Package units is the one parser of human sizes and durations, for the
// configuration ("64 MiB", "30 s", server-behaviour.md 11), topic options
// (server-behaviour.md 4.2.6), connection strings (transports.md 8.1), the
// bench's --total-size and --rate-limit and the CLI's EXPIRY words. Each
// caller adds only its own special words ("unlimited", "none", a bare
// number meaning seconds in the configuration).
//
// Sizes are parsed by github.com/dustin/go-humanize (ParseBytes: decimal
// KB, MB, GB... and binary KiB, MiB, GiB..., case-insensitive, spaces
// allowed); a plain integer is read exactly here first, since humanize
// goes through a float64 and would round byte counts above 2^53.
//
// Durations are parsed here, by hand, because no humantime parser is in
// the module graph: time.ParseDuration rejects "30 s", "7 days" and
// "1h 30m", which the reference configuration, topic options and
// connection strings all write. The parser is humantime 2's grammar,
// exact (integer seconds and nanoseconds, overflow refused).
package units

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
)

// ParseSize reads a byte size: "1073741824", "64 MiB", "1.5 GB", "10kb".
// Fractions are truncated to whole bytes; a size that does not fit a
// uint64 is an error.
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	digits := strings.TrimRight(strings.TrimSuffix(strings.TrimSuffix(t, "B"), "b"), " ")
	if n, err := strconv.ParseUint(digits, 10, 64); err == nil {
		return n, nil
	}
	if t == "" || t[0] < '0' || t[0] > '9' && t[0] != '.' {
		return 0, fmt.Errorf("size %q: expected a number", s)
	}
	n, err := humanize.ParseBytes(t)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return n, nil
}

// ParseDuration reads a humantime duration as a time.Duration; one beyond
// time.Duration's range is an error.
func ParseDuration(s string) (time.Duration, error) {
	secs, nanos, ok := ParseHumanDuration(s)
	if !ok {
		return 0, fmt.Errorf("duration %q: want numbers with units, e.g. 30s, 500ms, 1h 30m, 7 days", s)
	}
	if secs > uint64(1<<63-1)/uint64(time.Second)-1 {
		return 0, fmt.Errorf("duration %q: too long", s)
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), nil
}

// ParseHumanDuration parses a humantime duration ("7 days", "1h 30m",
// "500ms"): numbers each followed by a unit, spaces allowed between and
// inside items, as humantime 2 does. It returns whole seconds and the
// remaining nanoseconds.
func ParseHumanDuration(s string) (secs uint64, nanos uint32, ok bool) {
	rs := []rune(s)
	i := 0
	skipSpace := func() {
		for i < len(rs) && unicode.IsSpace(rs[i]) {
			i++
		}
	}
	isUnitRune := func(r rune) bool { return r < utf8.RuneSelf && unicode.IsLetter(r) || r == 'µ' }
	var total struct{ secs, nanos uint64 }
	add := func(n uint64, unit string) bool {
		s, ns, ok := durationOf(n, unit)
		if !ok {
			return false
		}
		total.nanos += ns
		carry := total.nanos / 1e9
		total.nanos %= 1e9
		var c1, c2 uint64
		total.secs, c1 = bits.Add64(total.secs, s, 0)
		total.secs, c2 = bits.Add64(total.secs, carry, 0)
		return c1 == 0 && c2 == 0
	}
	skipSpace()
	if i == len(rs) || rs[i] < '0' || rs[i] > '9' {
		return 0, 0, false
	}
	n := uint64(rs[i] - '0')
	i++
	for {
		for i < len(rs) && !isUnitRune(rs[i]) {
			switch c := rs[i]; {
			case c >= '0' && c <= '9':
				hi, lo := bits.Mul64(n, 10)
				lo2, carry := bits.Add64(lo, uint64(c-'0'), 0)
				if hi != 0 || carry != 0 {
					return 0, 0, false
				}
				n = lo2
			case unicode.IsSpace(c):
			default:
				return 0, 0, false
			}
			i++
		}
		start := i
		next := false
		for i < len(rs) && !unicode.IsSpace(rs[i]) {
			c := rs[i]
			if c >= '0' && c <= '9' {
				if !add(n, string(rs[start:i])) {
					return 0, 0, false
				}
				n = uint64(c - '0')
				i++
				next = true
				break
			}
			if !isUnitRune(c) {
				return 0, 0, false
			}
			i++
		}
		if next {
			continue
		}
		if !add(n, string(rs[start:i])) {
			return 0, 0, false
		}
		skipSpace()
		if i == len(rs) {
			return total.secs, uint32(total.nanos), true
		}
		if rs[i] < '0' || rs[i] > '9' {
			return 0, 0, false
		}
		n = uint64(rs[i] - '0')
		i++
	}
}

// durationOf converts n units to (seconds, nanoseconds); humantime's unit
// names, case-sensitive ("M" is months, "m" minutes).
func durationOf(n uint64, unit string) (uint64, uint64, bool) {
	var mul uint64
	switch unit {
	case "nanos", "nsec", "ns":
		return n / 1e9, n % 1e9, true
	case "usec", "us", "µs":
		return n / 1e6, n % 1e6 * 1e3, true
	case "millis", "msec", "ms":
		return n / 1e3, n % 1e3 * 1e6, true
	case "seconds", "second", "secs", "sec", "s":
		mul = 1
	case "minutes", "minute", "min", "mins", "m":
		mul = 60
	case "hours", "hour", "hr", "hrs", "h":
		mul = 3600
	case "days", "day", "d":
		mul = 86400
	case "weeks", "week", "w":
		mul = 7 * 86400
	case "months", "month", "M":
		mul = 2_630_016 // 30.44 days
	case "years", "year", "y":
		mul = 31_557_600 // 365.25 days
	default:
		return 0, 0, false
	}
	hi, lo := bits.Mul64(n, mul)
	return lo, 0, hi == 0
}

// byteUnits maps a lower-cased unit to its multiplier: decimal units are
// powers of 1000, "i" units powers of 1024 (server-behaviour.md 4.2.6).
var byteUnits = map[string]uint64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1e6, "mb": 1e6, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1e9, "gb": 1e9, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1e12, "tb": 1e12, "ti": 1 << 40, "tib": 1 << 40,
	"p": 1e15, "pb": 1e15, "pi": 1 << 50, "pib": 1 << 50,
	"e": 1e18, "eb": 1e18, "ei": 1 << 60, "eib": 1 << 60,
}

// parseByteSize parses "1073741824", "1 GiB", "128MiB", "1.5 GB": a
// decimal number (fraction allowed), optional spaces, an optional unit
// (case-insensitive). The result is truncated to whole bytes.
func parseByteSize(s string) (uint64, bool) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intPart := s[:i]
	frac := ""
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		frac, i = s[i+1:j], j
	}
	if intPart == "" && frac == "" {
		return 0, false
	}
	mul, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if !ok {
		return 0, false
	}
	var whole uint64
	if intPart != "" {
		v, err := strconv.ParseUint(intPart, 10, 64)
		if err != nil {
			return 0, false
		}
		whole = v
	}
	hi, total := bits.Mul64(whole, mul)
	if hi != 0 {
		return 0, false
	}
	if len(frac) > 19 {
		frac = frac[:19]
	}
	if frac != "" {
		f, _ := strconv.ParseUint(frac, 10, 64)
		scale := uint64(1)
		for range frac {
			scale *= 10
		}
		phi, plo := bits.Mul64(f, mul)
		part, _ := bits.Div64(phi, plo, scale)
		var carry uint64
		total, carry = bits.Add64(total, part, 0)
		if carry != 0 {
			return 0, false
		}
	}
	return total, true
}
