package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"iggynode/wire/jsonmodel"
)

// httpAPI is the test node's REST API (docs/spec/http.md), logged in as
// the root user with a JWT (3.2).
type httpAPI struct {
	t     *testing.T
	base  string
	token string
}

func newHTTPAPI(t *testing.T, e *cliEnv) *httpAPI {
	t.Helper()
	api := &httpAPI{t: t, base: e.node.HTTPURL()}
	if api.base == "" {
		t.Fatal("the test node has no HTTP listener")
	}
	status, body := api.do("POST", "/users/login", `{"username":"iggy","password":"iggy"}`)
	var id jsonmodel.IdentityInfo
	if status != http.StatusOK || json.Unmarshal(body, &id) != nil || id.AccessToken == nil || id.AccessToken.Token == "" {
		t.Fatalf("POST /users/login: %d %s", status, body)
	}
	api.token = id.AccessToken.Token
	return api
}

func (h *httpAPI) do(method, path, body string) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, h.base+path, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp.StatusCode, b
}

// get is the 200 body of GET path.
func (h *httpAPI) get(path string) []byte {
	h.t.Helper()
	status, body := h.do("GET", path, "")
	if status != http.StatusOK {
		h.t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return body
}

func compact(t *testing.T, what string, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("%s is not JSON (%v): %q", what, err, b)
	}
	return out.Bytes()
}

// One encoder for both: the CLI's --output json of a wire reply is, byte
// for byte once compacted, the body the node's HTTP API answers for the
// same resource (jsonView, http.md 4). Printing the wire structs as Go
// encodes them ("ID", "StreamResponse", numeric enums, no options map)
// fails every case.
func TestJSONOutputIsTheHTTPAPIModel(t *testing.T) {
	e := newEnv(t)
	// The set-up reads nothing of the CLI's JSON, so that without jsonView
	// every comparison below, not the set-up, is what fails.
	e.ok("stream", "create", "shop")
	e.ok("stream", "create", "a&b<c>") // HTML characters stay as they are, as plane/http writes them
	e.ok("topic", "create", "shop", "orders", "--partitions", "2", "--option", "message_expiry=1h")
	e.ok("topic", "create", "shop", "refunds", "1", "gzip", "unlimited")
	// Messages, so sizes, counts and offsets are not all zero; one with
	// headers of two kinds.
	e.ok("message", "send", "shop", "orders", "--partition", "0", "-H", "k:string:v,n:uint32:7", "first", "second")
	e.ok("message", "send", "shop", "orders", "--partition", "0", "third")
	e.ok("message", "send", "shop", "orders", "--partition", "1", "other")
	api := newHTTPAPI(t, e)
	var s jsonmodel.StreamDetails
	var tp jsonmodel.TopicDetails
	if json.Unmarshal(api.get("/streams/shop"), &s) != nil || json.Unmarshal(api.get("/streams/shop/topics/orders"), &tp) != nil {
		t.Fatal("GET of the stream and topic by name")
	}
	sid, tid := strconv.Itoa(int(s.ID)), strconv.Itoa(int(tp.ID))
	e.ok("user", "create", "dave", "secret1", "--perm", "global=read_streams,poll_messages",
		"--perm", "stream:"+sid+"=send_messages", "--perm", "stream:"+sid+"/topic:"+tid+"=all")
	e.ok("user", "create", "erin", "secret1", "--status", "inactive")
	e.ok("group", "create", "shop", "orders", "readers")
	e.ok("group", "create", "shop", "orders", "writers")
	e.ok("offset", "store", "shop", "orders", "1", "--partition", "0", "--consumer", "7")
	e.ok("pat", "create", "ci-token", "--expiry", "1h")
	e.ok("pat", "create", "forever")
	var u jsonmodel.UserInfoDetails
	var g jsonmodel.ConsumerGroupDetails
	if json.Unmarshal(api.get("/users/dave"), &u) != nil || json.Unmarshal(api.get("/streams/shop/topics/orders/consumer-groups/readers"), &g) != nil ||
		u.Permissions == nil || g.Name != "readers" {
		t.Fatalf("GET of the user and group by name: %+v %+v", u, g)
	}

	// The CLI names what the HTTP path numbers, and the other way round.
	topic := "/streams/" + sid + "/topics/" + tid
	for _, tc := range []struct {
		cli  []string
		path string
	}{
		{[]string{"stream", "get", "shop"}, "/streams/" + sid},
		{[]string{"stream", "get", sid}, "/streams/shop"},
		{[]string{"topic", "get", "shop", "orders"}, topic},
		{[]string{"user", "get", "dave"}, "/users/" + strconv.Itoa(int(u.ID))},
		{[]string{"user", "get", "erin"}, "/users/erin"},
		{[]string{"stream", "list"}, "/streams"},
		{[]string{"topic", "list", "shop"}, "/streams/" + sid + "/topics"},
		{[]string{"topic", "get", "shop", "refunds"}, "/streams/shop/topics/refunds"},
		{[]string{"user", "list"}, "/users"},
		{[]string{"group", "get", "shop", "orders", "readers"}, topic + "/consumer-groups/" + strconv.Itoa(int(g.ID))},
		{[]string{"group", "list", "shop", "orders"}, topic + "/consumer-groups"},
		{[]string{"offset", "get", "shop", "orders", "--partition", "0", "--consumer", "7"},
			topic + "/consumer-offsets?consumer_id=7&partition_id=0"},
		{[]string{"message", "poll", "shop", "orders", "--partition", "0", "--strategy", "offset", "--value", "0", "--count", "3"},
			topic + "/messages?consumer_id=1&partition_id=0&kind=offset&value=0&count=3&auto_commit=false"},
		{[]string{"options", "topic"}, "/options/topic"},
		{[]string{"pat", "list"}, "/personal-access-tokens"},
		{[]string{"cluster", "metadata"}, "/cluster/metadata"},
	} {
		name := strings.Join(tc.cli, " ")
		t.Run(name, func(t *testing.T) {
			body := api.get(tc.path)
			cli := e.ok(append([]string{"--output", "json"}, tc.cli...)...)
			want, got := compact(t, "GET "+tc.path, body), compact(t, "iggy "+name, []byte(cli))
			if !bytes.Equal(got, want) {
				t.Fatalf("iggy --output json %s is not GET %s:\n cli  %s\n http %s", name, tc.path, got, want)
			}
			if len(want) < 16 {
				t.Fatalf("GET %s: a near-empty body %s proves nothing", tc.path, want)
			}
		})
	}
}

// specFields is the field column of the first table of the section
// "### <section> ..." of docs/spec/http.md, in order, and whether each is
// marked for the details model only.
func specFields(t *testing.T, section string) (fields []string, detailsOnly []bool) {
	t.Helper()
	spec, err := os.ReadFile("../../docs/spec/http.md")
	if err != nil {
		t.Fatal(err)
	}
	head := "\n### " + section + " "
	i := bytes.Index(spec, []byte(head))
	if i < 0 {
		t.Fatalf("http.md has no section %q", section)
	}
	body := spec[i+len(head):]
	if j := bytes.Index(body, []byte("\n### ")); j >= 0 {
		body = body[:j]
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|(.*)\\|\\s*$")
	for _, m := range row.FindAllSubmatch(body, -1) {
		fields = append(fields, string(m[1]))
		detailsOnly = append(detailsOnly, bytes.Contains(m[2], []byte("only**")))
	}
	if len(fields) == 0 {
		t.Fatalf("http.md %s has no field table", section)
	}
	return fields, detailsOnly
}

// keysOf is the top-level keys of a JSON object, in the order written.
func keysOf(t *testing.T, obj []byte) []string {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %q", obj)
	}
	var keys []string
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// The CLI's JSON keys are the spec's, in the spec's order (http.md 0.1:
// "Output key order is the declaration order used in the tables of
// section 4"). The golden is the spec text itself, not our encoder.
func TestJSONKeysFollowTheSpecTables(t *testing.T) {
	e := newEnv(t)
	e.ok("stream", "create", "s")
	e.ok("topic", "create", "s", "t")
	e.ok("user", "create", "bob", "secret1")
	first := func(list string) []byte {
		var elems []json.RawMessage
		if err := json.Unmarshal([]byte(list), &elems); err != nil || len(elems) == 0 {
			t.Fatalf("list %q: %v", list, err)
		}
		return elems[0]
	}
	for _, tc := range []struct {
		section       string
		details, list []string
	}{
		{"4.1", []string{"stream", "get", "s"}, []string{"stream", "list"}},
		{"4.2", []string{"topic", "get", "s", "t"}, []string{"topic", "list", "s"}},
		{"4.6", []string{"user", "get", "bob"}, []string{"user", "list"}},
	} {
		fields, detailsOnly := specFields(t, tc.section)
		var listFields []string
		for i, f := range fields {
			if !detailsOnly[i] {
				listFields = append(listFields, f)
			}
		}
		if len(listFields) == len(fields) {
			t.Fatalf("http.md %s marks no details-only field: %v", tc.section, fields)
		}
		details := keysOf(t, []byte(e.ok(append([]string{"--output", "json"}, tc.details...)...)))
		if !slices.Equal(details, fields) {
			t.Errorf("%s: keys %v, http.md %s says %v", strings.Join(tc.details, " "), details, tc.section, fields)
		}
		list := keysOf(t, first(e.ok(append([]string{"--output", "json"}, tc.list...)...)))
		if !slices.Equal(list, listFields) {
			t.Errorf("%s: element keys %v, http.md %s says %v", strings.Join(tc.list, " "), list, tc.section, listFields)
		}
	}
	// The spec's own StreamDetails order, spelled out, so a reshuffled
	// table is noticed too.
	if fields, _ := specFields(t, "4.1"); strings.Join(fields, ",") != "id,created_at,name,size,messages_count,topics_count,topics,options" {
		t.Fatalf("http.md 4.1 fields %v", fields)
	}
}
