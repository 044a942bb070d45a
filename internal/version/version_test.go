package version

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"iggynode/wire"
)

// Both numbers, each labelled, wherever a version is shown: the line of
// --version and what the server reports at login and in stats.
func TestVersionsAreSaidTogether(t *testing.T) {
	if Protocol != "0.11.0" {
		t.Fatalf("protocol %q", Protocol)
	}
	for _, s := range []string{Line("iggy"), Line("iggynode"), wire.ServerVersion} {
		if !strings.Contains(s, "iggynode "+Node) || !strings.Contains(s, "protocol 0.11.0") {
			t.Errorf("%q does not name both the node version and the protocol version", s)
		}
	}
	if len(wire.ServerVersion) > 255 {
		t.Errorf("server version is %d bytes, the login response allows 255", len(wire.ServerVersion))
	}
}

func TestFlag(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	v := Flag(fs)
	var out bytes.Buffer
	if Handled(v, "x", &out) || out.Len() > 0 {
		t.Fatal("handled before the flag was given")
	}
	if err := fs.Parse([]string{"--version"}); err != nil {
		t.Fatal(err)
	}
	if !Handled(v, "x", &out) || !strings.HasPrefix(out.String(), "x (iggynode ") {
		t.Fatalf("printed %q", out.String())
	}
}
