package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"iggynode/wire"
	"iggynode/wire/jsonmodel"
)

// table collects tab-separated rows for text/tabwriter.
type table struct{ rows [][]string }

func (t *table) row(cells ...any) {
	r := make([]string, len(cells))
	for i, c := range cells {
		r[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, r)
}

// print writes v as indented JSON with --output json, else the table fill
// builds. Wire replies are printed as the reference server's HTTP API
// models (jsonView), so a jq script written against Iggy's REST replies
// reads the CLI's output too.
func (a *app) print(v any, fill func(*table)) error {
	if a.output == "json" {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // as plane/http writes: a name "a&b" stays "a&b"
		return enc.Encode(jsonView(v))
	}
	var t table
	fill(&t)
	if a.listMode == "list" && len(t.rows) > 0 {
		// Upstream's list mode: one line per row, each cell named by the
		// header above it.
		head := t.rows[0]
		for _, r := range t.rows[1:] {
			cells := make([]string, 0, len(r))
			for i, c := range r {
				if i < len(head) {
					c = head[i] + ": " + c
				}
				cells = append(cells, c)
			}
			fmt.Fprintln(a.out, strings.Join(cells, ", "))
		}
		return nil
	}
	w := tabwriter.NewWriter(a.out, 0, 0, 2, ' ', 0)
	for _, r := range t.rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// jsonView is the HTTP API model (docs/spec/http.md 4, package jsonmodel:
// the encoder plane/http answers with) of a wire reply; anything else (the
// CLI's own results, such as printDone's) is printed as it is.
func jsonView(v any) any {
	switch x := v.(type) {
	case wire.Streams:
		return jsonmodel.FromStreams(x)
	case *wire.StreamDetails:
		return jsonmodel.FromStreamDetails(*x)
	case wire.Topics:
		return jsonmodel.FromTopics(x)
	case *wire.TopicDetails:
		return jsonmodel.FromTopicDetails(*x)
	case wire.ConsumerGroups:
		return jsonmodel.FromConsumerGroups(x)
	case *wire.ConsumerGroupDetails:
		return jsonmodel.FromConsumerGroupDetails(*x)
	case wire.Users:
		return jsonmodel.FromUsers(x)
	case *wire.UserDetails:
		return jsonmodel.FromUserDetails(*x)
	case wire.PersonalAccessTokens:
		return jsonmodel.FromTokens(x)
	case wire.RawToken:
		return jsonmodel.RawPersonalAccessToken{Token: x.Token}
	case *wire.Stats:
		return jsonmodel.FromStats(*x)
	case wire.Clients:
		return jsonmodel.FromClients(x)
	case *wire.ClientDetails:
		return jsonmodel.FromClientDetails(*x)
	case *wire.ClusterMetadata:
		return jsonmodel.FromClusterMetadata(*x)
	case wire.OptionCatalog:
		return jsonmodel.FromOptionCatalog(x)
	case wire.SendConfirmations:
		return jsonmodel.FromConfirmations(x)
	case *wire.ConsumerOffset:
		if x == nil {
			return nil // the reference answers 404 with no body; null here
		}
		return jsonmodel.FromConsumerOffset(*x)
	case *wire.PolledMessages:
		return jsonmodel.FromPolled(x)
	}
	return v
}

// printDone reports a command without a reply body.
func (a *app) printDone(what string, fields map[string]any) error {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["result"] = what
	return a.print(fields, func(t *table) { t.row(what) })
}

// micros renders a µs-since-epoch timestamp; 0 stays "-", and so does 1:
// the root user's created_at is that fixed sentinel (server-behaviour.md
// 2.1.4, identical on every replica), not a time in 1970.
func micros(us uint64) string {
	if us <= rootCreatedAtSentinel {
		return "-"
	}
	return time.UnixMicro(int64(us)).UTC().Format(time.RFC3339)
}

// size renders a byte count with binary units.
func size(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// rootCreatedAtSentinel is the root user's created_at.
const rootCreatedAtSentinel = 1

// optionValue renders a TLV value by its kind.
func optionValue(kind wire.HeaderKind, v []byte) string {
	r := wire.NewReader(v)
	switch {
	case kind == wire.KindString && utf8.Valid(v):
		return string(v)
	case kind == wire.KindBool && len(v) == 1:
		return fmt.Sprint(v[0] != 0)
	case kind == wire.KindUint32 && len(v) == 4:
		return fmt.Sprint(r.U32("value"))
	case kind == wire.KindUint64 && len(v) == 8:
		return fmt.Sprint(r.U64("value"))
	case kind == wire.KindUint8 && len(v) == 1:
		return fmt.Sprint(v[0])
	}
	return fmt.Sprintf("%s 0x%x", kind, v)
}

func optionsText(o wire.Options) string {
	parts := make([]string, len(o))
	for i, kv := range o {
		parts[i] = kv.Key + "=" + optionValue(kv.Kind, kv.Value)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// parseIdentifier reads a numeric id or a name.
func parseIdentifier(s string) (wire.Identifier, error) {
	var id wire.Identifier
	if n, err := parseU32(s); err == nil {
		id = wire.ID(n)
	} else {
		id = wire.Named(s)
	}
	return id, id.Validate()
}

func parseU32(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number in 0..=4294967295", s)
	}
	return uint32(n), nil
}

func parseU64(s string) (uint64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not an unsigned 64-bit number", s)
	}
	return n, nil
}

// ids parses the leading identifier arguments (stream, topic, ...).
func ids(args []string) ([]wire.Identifier, error) {
	out := make([]wire.Identifier, len(args))
	for i, s := range args {
		id, err := parseIdentifier(s)
		if err != nil {
			return nil, fmt.Errorf("identifier %q: %w", s, err)
		}
		out[i] = id
	}
	return out, nil
}

// parseKeyValues turns repeated key=value flags into String TLV pairs;
// every catalog key accepts a String form (client-plane.md 10.4).
func parseKeyValues(pairs []string) ([]wire.KeyValue, error) {
	var out []wire.KeyValue
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%q is not key=value", p)
		}
		out = append(out, wire.KeyValue{Key: k, Kind: wire.KindString, Value: []byte(v)})
	}
	return out, nil
}
