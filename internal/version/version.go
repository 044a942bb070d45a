// Package version names what every binary reports for --version: the
// node's own release and the Apache Iggy binary protocol it speaks. The
// two numbers are unrelated (iggynode 0.9.0 speaks protocol 0.11.0), so
// they are always printed together and labelled, never one alone.
package version

import (
	"flag"
	"fmt"
	"io"

	"iggynode/wire"
)

// Node is iggynode's release; wire.ServerVersion and the stats semver
// (wire.ServerSemver) carry the same number.
const Node = wire.NodeVersion

// Protocol is the binary protocol version the node and the SDK speak.
var Protocol = wire.ProtocolVersion.String()

// Line is what `BINARY --version` prints, e.g.
// "iggy (iggynode 0.9.0), Apache Iggy binary protocol 0.11.0".
func Line(binary string) string {
	if binary == "iggynode" {
		return fmt.Sprintf("iggynode %s, Apache Iggy binary protocol %s", Node, Protocol)
	}
	return fmt.Sprintf("%s (iggynode %s), Apache Iggy binary protocol %s", binary, Node, Protocol)
}

// Flag registers --version on a flag set (the flag-package binaries share
// it, so each says the same).
func Flag(fs *flag.FlagSet) *bool {
	return fs.Bool("version", false, "print the iggynode and protocol versions and exit")
}

// Handled prints the version line when the flag was set.
func Handled(set *bool, binary string, w io.Writer) bool {
	if set == nil || !*set {
		return false
	}
	fmt.Fprintln(w, Line(binary))
	return true
}
