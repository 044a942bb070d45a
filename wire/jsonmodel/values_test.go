package jsonmodel

import (
	"encoding/json"
	"testing"

	"iggynode/wire"
)

var wireID = wire.ID(0)

// http.md 0.1: sizes as the reference spells them, and read back.
func TestByteSize(t *testing.T) {
	for v, want := range map[uint64]string{0: "0 B", 1500: "1.5 KB", 1024: "1 KiB", 2000: "2 KB", 1 << 30: "1 GiB",
		147412 * 1024: "147412 KiB", 69092: "69.092 KB", 999: "999 B", 1000: "1 KB"} {
		if got := ByteSize(v).String(); got != want {
			t.Errorf("%d: %q, want %q", v, got, want)
		}
		back, err := ParseByteSize(want)
		if err != nil || back != v {
			t.Errorf("%q read back as %d (%v)", want, back, err)
		}
	}
	var s ByteSize
	if err := json.Unmarshal([]byte(`12345`), &s); err != nil || s != 12345 {
		t.Errorf("a bare number: %d %v", s, err)
	}
}

// 6.3.1: every id form; numbers above u64 are refused on input, written
// whole on output.
func TestMessageIDForms(t *testing.T) {
	cases := map[string]wire.U128{
		`7`: {Lo: 7}, `"340282366920938463463374607431768211455"`: {Lo: ^uint64(0), Hi: ^uint64(0)},
		`"00000000-0000-0000-0000-000000000102"`: {Lo: 0x102},
	}
	for in, want := range cases {
		var id MessageIDIn
		if err := json.Unmarshal([]byte(in), &id); err != nil || wire.U128(id) != want {
			t.Errorf("%s: %v %v", in, id, err)
		}
	}
	for _, bad := range []string{`-1`, `1.5`, `18446744073709551616`, `"xyz"`, `true`} {
		var id MessageIDIn
		if json.Unmarshal([]byte(bad), &id) == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	out, _ := json.Marshal(MessageID{Lo: ^uint64(0), Hi: ^uint64(0)})
	if string(out) != "340282366920938463463374607431768211455" {
		t.Errorf("u128 max written %s", out)
	}
}

// 2.2.2: digits are numeric ids (with +, leading zeros, up to u32), the
// rest names, over 255 bytes refused.
func TestParseIdentifier(t *testing.T) {
	for in, want := range map[string]wire.Identifier{"0": wire.ID(0), "+7": wire.ID(7), "0042": wire.ID(42),
		"4294967295": wire.ID(4294967295), "4294967296": wire.Named("4294967296"), "stream1": wire.Named("stream1"), "a/b": wire.Named("a/b")} {
		if got, err := ParseIdentifier(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseIdentifier(string(make([]byte, 256))); err == nil {
		t.Error("256 bytes accepted")
	}
}

// 2.4.1: 400 for invalid JSON, 422 for a model mismatch; unknown fields
// fatal only at the send body's top level.
func TestDecodeClasses(t *testing.T) {
	cases := []struct {
		body   string
		v      any
		syntax bool
		ok     bool
	}{
		{`{`, &CreateStream{}, true, false},
		{``, &CreateStream{}, true, false},
		{`{}`, &CreateStream{}, false, false},
		{`{"name":1}`, &CreateStream{}, false, false},
		{`{"name":"s","extra":1}`, &CreateStream{}, false, true},
		{`{"partitioning":{"kind":"balanced"},"messages":[{"payload":"eA=="}],"extra":1}`, &SendMessages{}, false, false},
		{`{"partitioning":{"kind":"balanced"},"messages":[{"id":null,"payload":"eA=="}]}`, &SendMessages{}, false, true},
		{`{"partitioning":{"kind":"balanced"},"messages":[{"payload":""}]}`, &SendMessages{}, false, false},
		{`{"partitioning":{"kind":"balanced"},"messages":[{"payload":"!!"}]}`, &SendMessages{}, false, false},
		{`{"partitioning":{"kind":"sideways"},"messages":[]}`, &SendMessages{}, false, false},
		{`{"username":"u","password":"p","status":"gone"}`, &CreateUser{}, false, false},
		{`{"permissions":{"global":{"manage_servers":true}}}`, &UpdatePermissions{}, false, false},
		{`{"permissions":null}`, &UpdatePermissions{}, false, true},
		{`{}`, &UpdatePermissions{}, false, true},
	}
	for _, c := range cases {
		err := Decode([]byte(c.body), c.v)
		if c.ok != (err == nil) {
			t.Errorf("%s into %T: %v", c.body, c.v, err)
			continue
		}
		if be, _ := err.(*BodyError); err != nil && be.Syntax != c.syntax {
			t.Errorf("%s: syntax %v, want %v", c.body, be.Syntax, c.syntax)
		}
	}
}
