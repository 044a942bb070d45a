package httpplane_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Golden bodies are written from http.md section 9 as JSON text in which
// the string "<ts>" (a timestamp), "<any>" (any value) or "<n>" (any
// number) stands for a value the spec leaves open. sameJSON compares
// order-sensitively: object keys must come in the golden order.

type jnode struct {
	kind  byte // 'o' object, 'a' array, 'v' scalar
	keys  []string
	vals  []*jnode
	token any
}

func parseJSON(b []byte) (*jnode, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	n, err := parseNode(d)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data")
	}
	return n, nil
}

func parseNode(d *json.Decoder) (*jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		n := &jnode{kind: 'o'}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				return nil, err
			}
			v, err := parseNode(d)
			if err != nil {
				return nil, err
			}
			n.keys, n.vals = append(n.keys, k.(string)), append(n.vals, v)
		}
		_, err := d.Token()
		return n, err
	case json.Delim('['):
		n := &jnode{kind: 'a'}
		for d.More() {
			v, err := parseNode(d)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		_, err := d.Token()
		return n, err
	}
	return &jnode{kind: 'v', token: tok}, nil
}

// diff reports the first difference of got from want at path.
func diff(path string, got, want *jnode) string {
	if want.kind == 'v' {
		switch want.token {
		case "<any>":
			return ""
		case "<ts>", "<n>":
			if _, ok := got.token.(json.Number); got.kind == 'v' && ok {
				return ""
			}
			return path + ": want a number"
		}
	}
	if got.kind != want.kind {
		return fmt.Sprintf("%s: kind %c, want %c", path, got.kind, want.kind)
	}
	switch want.kind {
	case 'v':
		if fmt.Sprint(got.token) != fmt.Sprint(want.token) {
			return fmt.Sprintf("%s: %v, want %v", path, got.token, want.token)
		}
	case 'o':
		if strings.Join(got.keys, ",") != strings.Join(want.keys, ",") {
			return fmt.Sprintf("%s: keys %v, want %v", path, got.keys, want.keys)
		}
		for i := range want.vals {
			if d := diff(path+"."+want.keys[i], got.vals[i], want.vals[i]); d != "" {
				return d
			}
		}
	case 'a':
		if len(got.vals) != len(want.vals) {
			return fmt.Sprintf("%s: %d elements, want %d", path, len(got.vals), len(want.vals))
		}
		for i := range want.vals {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), got.vals[i], want.vals[i]); d != "" {
				return d
			}
		}
	}
	return ""
}

func sameJSON(t testing.TB, got []byte, want string) {
	t.Helper()
	g, err := parseJSON(got)
	if err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	w, err := parseJSON([]byte(want))
	if err != nil {
		t.Fatalf("golden %q is not JSON: %v", want, err)
	}
	if d := diff("$", g, w); d != "" {
		t.Errorf("body %s\n  golden %s\n  %s", got, want, d)
	}
}
