package httpplane_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"iggynode/actors"
	"iggynode/config"
	"iggynode/telemetry"
	"iggynode/wire"
)

// step is one request of the golden sequence of http.md section 9 and
// what the spec says it answers.
type step struct {
	row    string
	as     string // credential: root (default), user1, pat, none, garbage, or a literal "raw:<value>"
	method string
	path   string
	body   any
	header []string
	status int
	// want is the golden body (sameJSON); "" means an empty body; "*"
	// skips the body check (check does it).
	want string
	// headers the response must carry ("" value: must be absent).
	headers map[string]string
	check   func(t *testing.T, r response, s *sequence)
}

// sequence holds the credentials the steps mint.
type sequence struct {
	n      *testNode
	tokens map[string]string
}

func (s *sequence) run(t *testing.T, st step) response {
	t.Helper()
	tok := ""
	switch as := st.as; {
	case as == "":
		tok = s.tokens["root"]
	case as == "none":
	case strings.HasPrefix(as, "raw:"):
		tok = strings.TrimPrefix(as, "raw:")
	default:
		tok = s.tokens[as]
	}
	r := do(t, s.n.base, st.method, st.path, tok, st.body, st.header...)
	if r.status != st.status {
		t.Fatalf("row %s: %s %s: status %d, want %d; body %s", st.row, st.method, st.path, r.status, st.status, r.body)
	}
	switch st.want {
	case "*":
	case "":
		if len(r.body) != 0 {
			t.Errorf("row %s: body %q, want empty", st.row, r.body)
		}
	default:
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("row %s: Content-Type %q", st.row, ct)
		}
		sameJSON(t, r.body, st.want)
	}
	view := r.header.Get("Iggy-View")
	switch {
	case r.status < 400 && st.path != "/ping" && st.method != "OPTIONS" && view == "":
		t.Errorf("row %s: 2xx without iggy-view", st.row)
	case (r.status >= 400 || st.path == "/ping") && view != "":
		t.Errorf("row %s: iggy-view %q on %d", st.row, view, r.status)
	}
	for k, v := range st.headers {
		if got := r.header.Get(k); got != v {
			t.Errorf("row %s: header %s = %q, want %q", st.row, k, got, v)
		}
	}
	if st.check != nil {
		st.check(t, r, s)
	}
	return r
}

// Golden error bodies of http.md 9 (reason where the spec gives it).
const (
	e40   = `{"id":40,"code":"unauthenticated","reason":"Unauthenticated","field":null}`
	e41   = `{"id":41,"code":"unauthorized","reason":"Unauthorized","field":null}`
	e42   = `{"id":42,"code":"invalid_credentials","reason":"Invalid credentials","field":null}`
	e53   = `{"id":53,"code":"invalid_personal_access_token","reason":"Invalid personal access token","field":null}`
	e77   = `{"id":77,"code":"access_token_missing","reason":"Access token is missing","field":null}`
	g404  = `{"id":404,"code":"not_found","reason":"Resource not found","field":null}`
	e1009 = `{"id":1009,"code":"stream_id_not_found","reason":"Stream with ID: 0 was not found.","field":"stream_id"}`
)

const streamRow9 = `{"id":0,"created_at":"<ts>","name":"stream1","size":"0 B","messages_count":0,"topics_count":0,"topics":[],"options":{}}`

const topicOptions = `{"compression_algorithm":{"value":"<any>","explicit":false},"enforce_fsync":{"value":"<any>","explicit":false},` +
	`"max_topic_size":{"value":"<any>","explicit":false},"message_expiry":{"value":"<any>","explicit":false},` +
	`"messages_required_to_save":{"value":"<any>","explicit":false},"preallocate_segments":{"value":"<any>","explicit":false},` +
	`"segment_size":{"value":"<any>","explicit":false},"size_of_messages_required_to_save":{"value":"<any>","explicit":false}}`

const topicRow17 = `{"id":0,"created_at":"<ts>","name":"topic1","size":"0 B","message_expiry":18446744073709551615,"compression_algorithm":"none",` +
	`"max_topic_size":18446744073709551615,"messages_count":0,"partitions_count":1,"partitions":[{"id":0,"created_at":"<ts>",` +
	`"segments_count":1,"current_offset":0,"size":"0 B","messages_count":0}],"options":` + topicOptions + `}`

const sendRow27 = `{"partitioning":{"kind":"partition_id","value":"AAAAAA=="},"messages":[{"id":0,"payload":"aGVsbG8="},` +
	`{"id":0,"payload":"d29ybGQ=","user_headers":[{"key":{"kind":"string","value":"a2V5XzE="},"value":{"kind":"string","value":"dmFsdWUgMQ=="}},` +
	`{"key":{"kind":"string","value":"bg=="},"value":{"kind":"uint32","value":"KgAAAA=="}}]}]}`

const pollRow28 = `{"partition_id":0,"current_offset":1,"count":2,"messages":[` +
	`{"header":{"checksum":"<n>","id":"<n>","offset":0,"timestamp":"<ts>","origin_timestamp":"<ts>","user_headers_length":0,"payload_length":5,"reserved":0},"payload":"aGVsbG8=","user_headers":[]},` +
	`{"header":{"checksum":"<n>","id":"<n>","offset":1,"timestamp":"<ts>","origin_timestamp":"<ts>","user_headers_length":"<n>","payload_length":5,"reserved":0},"payload":"d29ybGQ=",` +
	`"user_headers":[{"key":{"kind":"string","value":"a2V5XzE="},"value":{"kind":"string","value":"dmFsdWUgMQ=="}},{"key":{"kind":"string","value":"bg=="},"value":{"kind":"uint32","value":"KgAAAA=="}}]}]}`

const rootPermissions = `{"global":{"manage_servers":true,"read_servers":true,"manage_users":true,"read_users":true,"manage_streams":true,` +
	`"read_streams":true,"manage_topics":true,"read_topics":true,"poll_messages":true,"send_messages":true},"streams":null}`

// The server.http permissions body (row 52).
const permissionsRow52 = `{"permissions":{"global":{"manage_servers":false,"read_servers":true,"manage_users":false,"read_users":true,` +
	`"manage_streams":false,"read_streams":true,"manage_topics":false,"read_topics":true,"poll_messages":true,"send_messages":false},` +
	`"streams":{"0":{"manage_stream":false,"read_stream":true,"manage_topics":false,"read_topics":true,"poll_messages":true,"send_messages":false,` +
	`"topics":{"0":{"manage_topic":false,"read_topic":true,"poll_messages":true,"send_messages":false}}}}}}`

func saveToken(name string) func(*testing.T, response, *sequence) {
	return func(t *testing.T, r response, s *sequence) {
		var id struct {
			AccessToken struct{ Token string } `json:"access_token"`
			Token       string                 `json:"token"`
		}
		r.json(t, &id)
		s.tokens[name] = id.AccessToken.Token + id.Token
	}
}

// checkJWT decodes the token of an IdentityInfo (3.4): claims in order,
// issuer and audience strings, sub "0", exp = iat + 3600 = expiry, nbf = iat.
func checkJWT(t *testing.T, r response, s *sequence) {
	var id struct {
		UserID      uint32 `json:"user_id"`
		AccessToken struct {
			Token  string `json:"token"`
			Expiry int64  `json:"expiry"`
		} `json:"access_token"`
	}
	r.json(t, &id)
	parts := strings.Split(id.AccessToken.Token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWS", id.AccessToken.Token)
	}
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	sameJSON(t, header, `{"alg":"HS256","typ":"JWT"}`)
	sameJSON(t, payload, `{"jti":"<any>","iss":"iggy.apache.org","aud":"iggy.apache.org","sub":"0","iat":"<n>","exp":"<n>","nbf":"<n>"}`)
	var c struct{ Iat, Exp, Nbf int64 }
	_ = json.Unmarshal(payload, &c)
	if c.Exp != c.Iat+3600 || c.Nbf != c.Iat || id.AccessToken.Expiry != c.Exp {
		t.Errorf("claims iat %d exp %d nbf %d, expiry %d", c.Iat, c.Exp, c.Nbf, id.AccessToken.Expiry)
	}
	if s.tokens["root"] == "" {
		s.tokens["root"] = id.AccessToken.Token
	}
}

func withTelemetry(t *testing.T) func(*config.Config, *actors.Options) {
	return func(cfg *config.Config, opts *actors.Options) {
		tel, err := telemetry.Setup(context.Background(), *cfg, 0, wire.ServerVersion)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
		surface, err := tel.Surface(cfg.HTTP)
		if err != nil {
			t.Fatal(err)
		}
		opts.HTTPSurface, opts.MeterProvider = surface, tel.MeterProvider()
	}
}

// TestGoldenSequence runs the golden vectors of http.md section 9 in
// order against a fresh node, with the spec's bodies as fixtures.
func TestGoldenSequence(t *testing.T) {
	n := startNodeWith(t, t.TempDir(), withTelemetry(t))
	t.Cleanup(func() { _ = n.Close() })
	s := &sequence{n: n, tokens: map[string]string{}}
	jsonHeader := map[string]string{"Content-Type": "application/json"}
	steps := []step{
		{row: "1", as: "none", method: "GET", path: "/ping", status: 200, want: "*",
			headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"},
			check: func(t *testing.T, r response, _ *sequence) {
				if string(r.body) != "pong" {
					t.Errorf("ping %q", r.body)
				}
			}},
		{row: "2", as: "none", method: "POST", path: "/users/login", body: map[string]string{"username": "iggy", "password": "iggy"},
			status: 200, want: `{"user_id":0,"access_token":{"token":"<any>","expiry":"<n>"}}`, check: checkJWT},
		{row: "3", as: "none", method: "POST", path: "/users/login", body: map[string]string{"username": "iggy", "password": "nope"}, status: 400, want: e42},
		{row: "4", as: "none", method: "POST", path: "/personal-access-tokens/login", body: map[string]string{"token": "secret"}, status: 401, want: e53},
		{row: "5", as: "none", method: "POST", path: "/users/refresh-token", status: 200, want: `{"user_id":0,"access_token":{"token":"<any>","expiry":"<n>"}}`,
			check: func(t *testing.T, r response, s *sequence) {
				saveToken("refreshed")(t, r, s)
				if s.tokens["refreshed"] == s.tokens["root"] {
					t.Error("refresh returned the same token")
				}
			}},
		{row: "5b", method: "GET", path: "/streams", status: 200, want: `[]`}, // the row-2 token keeps working
		{row: "6", as: "none", method: "POST", path: "/users/refresh-token", body: map[string]string{"token": "not-a-jwt"}, status: 401, want: e40},
		{row: "6b", as: "none", method: "POST", path: "/users/refresh-token", body: map[string]string{"token": ""}, status: 401, want: e40},
		{row: "7", as: "none", method: "GET", path: "/streams", status: 401, want: e77},
		{row: "8", as: "garbage", method: "GET", path: "/streams", status: 401, want: e40},
		{row: "9", method: "POST", path: "/streams", body: map[string]string{"name": "stream1"}, status: 200, want: streamRow9},
		{row: "10", method: "POST", path: "/streams", body: map[string]string{"name": "stream1"}, status: 400,
			want: `{"id":1012,"code":"stream_name_already_exists","reason":"Stream with name:  already exists.","field":"name"}`},
		{row: "11", method: "GET", path: "/streams", status: 200,
			want: `[{"id":0,"created_at":"<ts>","name":"stream1","size":"0 B","messages_count":0,"topics_count":0,"options":{}}]`},
		{row: "12", method: "GET", path: "/streams/0", status: 200, want: streamRow9},
		{row: "12b", method: "GET", path: "/streams/stream1", status: 200, want: streamRow9},
		{row: "13", method: "GET", path: "/streams/999", status: 404, want: g404},
		{row: "14", method: "PUT", path: "/streams/0", body: map[string]string{"name": "stream1"}, status: 204},
		{row: "15", method: "DELETE", path: "/streams/0/purge", status: 204},
		{row: "16", method: "DELETE", path: "/streams/999", status: 404, want: e1009},
		{row: "17", method: "POST", path: "/streams/0/topics", body: `{"name":"topic1","partitions_count":1,"compression_algorithm":"none","max_topic_size":0,"message_expiry":0}`,
			status: 200, want: topicRow17},
		// The replication_factor field (issue 23): more copies than this
		// single node holds is typed 2018; 0 is "not set".
		{row: "17b", method: "POST", path: "/streams/0/topics", body: `{"name":"twice","partitions_count":1,"replication_factor":2}`, status: 400,
			want: `{"id":2018,"code":"invalid_replication_factor","reason":"Bad replication factor","field":null}`},
		{row: "18", method: "GET", path: "/streams/0/topics", status: 200,
			want: `[{"id":0,"created_at":"<ts>","name":"topic1","size":"0 B","message_expiry":18446744073709551615,"compression_algorithm":"none",` +
				`"max_topic_size":18446744073709551615,"messages_count":0,"partitions_count":1,"options":` + topicOptions + `}]`},
		{row: "19", method: "GET", path: "/streams/999/topics", status: 200, want: `[]`},
		{row: "20", method: "GET", path: "/streams/0/topics/0", status: 200, want: topicRow17},
		{row: "21", method: "PUT", path: "/streams/0/topics/0", body: `{"name":"topic1","compression_algorithm":"none","max_topic_size":0,"message_expiry":0}`, status: 204},
		{row: "22", method: "POST", path: "/streams/0/topics/0/partitions", body: `{"partitions_count":3}`, status: 200},
		{row: "23", method: "DELETE", path: "/streams/0/topics/0/partitions?partitions_count=1", status: 204},
		{row: "24", method: "DELETE", path: "/streams/0/topics/0/partitions", status: 400, want: "*",
			headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}},
		{row: "25", method: "POST", path: "/streams/0/topics/0/partitions", body: `{"partitions_count":0}`, status: 400,
			want: `{"id":2015,"code":"too_many_partitions","reason":"Too many partitions","field":null}`},
		{row: "26", method: "DELETE", path: "/streams/0/topics/0/partitions/0?segments_count=3", status: 204},
		{row: "27", method: "POST", path: "/streams/0/topics/0/messages", body: sendRow27, status: 201,
			want:    `{"confirmations":[{"stream_id":0,"topic_id":0,"partition_id":0,"base_offset":0}]}`,
			headers: map[string]string{"Iggy-Durability": "replicated-memory"}},
		{row: "28", method: "GET", path: "/streams/0/topics/0/messages?consumer_id=1&partition_id=0&kind=offset&value=0&count=10&auto_commit=false",
			status: 200, want: pollRow28},
		{row: "30", method: "GET", path: "/streams/0/topics/0/messages?partition_id=7", status: 404,
			want: `{"id":3007,"code":"partition_not_found","reason":"<any>","field":"partition_id"}`},
		{row: "31", method: "PUT", path: "/streams/0/topics/0/consumer-offsets", body: `{"consumer_id":1,"partition_id":0,"offset":1}`, status: 204},
		{row: "32", method: "PUT", path: "/streams/0/topics/0/consumer-offsets", body: `{"consumer_id":1,"partition_id":0,"offset":5}`, status: 400,
			want: `{"id":4100,"code":"invalid_offset","reason":"Invalid offset: 0","field":"offset"}`},
		{row: "33", method: "GET", path: "/streams/0/topics/0/consumer-offsets?consumer_id=1&partition_id=0", status: 200,
			want: `{"partition_id":0,"current_offset":1,"stored_offset":1}`},
		{row: "34", method: "DELETE", path: "/streams/0/topics/0/consumer-offsets/1?partition_id=0", status: 204},
		{row: "35", method: "DELETE", path: "/streams/0/topics/0/consumer-offsets/1?partition_id=0", status: 404,
			want: `{"id":3021,"code":"consumer_offset_not_found","reason":"<any>","field":null}`},
		{row: "36", method: "GET", path: "/streams/0/topics/0/consumer-offsets?consumer_id=1&partition_id=0", status: 404, want: g404},
		{row: "37", method: "POST", path: "/streams/0/topics/0/consumer-groups", body: `{"name":"consumer_group_1"}`, status: 200,
			want: `{"id":0,"name":"consumer_group_1","partitions_count":3,"members_count":0,"members":[]}`},
		{row: "38", method: "GET", path: "/streams/0/topics/0/consumer-groups", status: 200,
			want: `[{"id":0,"name":"consumer_group_1","partitions_count":3,"members_count":0}]`},
		{row: "39", method: "GET", path: "/streams/0/topics/0/consumer-groups/0", status: 200,
			want: `{"id":0,"name":"consumer_group_1","partitions_count":3,"members_count":0,"members":[]}`},
		{row: "39b", method: "GET", path: "/streams/0/topics/0/consumer-groups/1", status: 404, want: g404},
		{row: "40", method: "GET", path: "/streams/999/topics/0/consumer-groups", status: 404, want: e1009},
		{row: "41", method: "DELETE", path: "/streams/0/topics/0/consumer-groups/0", status: 204},
		{row: "42", method: "DELETE", path: "/streams/0/topics/0", status: 204},
		{row: "42b", method: "DELETE", path: "/streams/0", status: 204},
		{row: "43", method: "POST", path: "/users", body: `{"username":"user1","password":"secret","status":"active","permissions":null}`, status: 200,
			want: `{"id":1,"created_at":"<ts>","status":"active","username":"user1","permissions":null,"options":{}}`},
		{row: "44", method: "GET", path: "/users", status: 200,
			want: `[{"id":0,"created_at":"<ts>","status":"active","username":"iggy","options":{}},{"id":1,"created_at":"<ts>","status":"active","username":"user1","options":{}}]`},
		{row: "45", method: "GET", path: "/users/1", status: 200,
			want: `{"id":1,"created_at":"<ts>","status":"active","username":"user1","permissions":null,"options":{}}`},
		{row: "45b", method: "GET", path: "/users/0", status: 200,
			want: `{"id":0,"created_at":"<ts>","status":"active","username":"iggy","permissions":` + rootPermissions + `,"options":{}}`},
		{row: "45c", as: "none", method: "POST", path: "/users/login", body: map[string]string{"username": "user1", "password": "secret"},
			status: 200, want: "*", check: saveToken("user1")},
		{row: "45d", as: "user1", method: "GET", path: "/users/me", status: 200,
			want: `{"id":1,"created_at":"<ts>","status":"active","username":"user1","permissions":null,"options":{}}`},
		{row: "46", as: "user1", method: "GET", path: "/streams", status: 403, want: e41},
		{row: "46b", as: "user1", method: "POST", path: "/streams", body: `{"name":"x"}`, status: 403, want: e41},
		{row: "47", as: "user1", method: "GET", path: "/cluster/metadata", status: 200, want: "*"},
		{row: "47b", as: "user1", method: "GET", path: "/metrics", status: 200, want: "*"},
		{row: "48", method: "PUT", path: "/users/1", body: `{"username":"user1","status":"active","permissions":null}`, status: 204},
		{row: "49", method: "PUT", path: "/users/1/password", body: `{"current_password":"secret","new_password":"secret1"}`, status: 204},
		{row: "50", method: "PUT", path: "/users/1/password", body: `{"current_password":"wrong","new_password":"secret2"}`, status: 400, want: e42},
		{row: "51", method: "PUT", path: "/users/ghost-does-not-exist/password", body: `{"current_password":"whatever","new_password":"whatever-else"}`,
			status: 404, want: `{"id":20,"code":"resource_not_found","reason":"Resource with key:  was not found.","field":null}`},
		{row: "52", method: "PUT", path: "/users/1/permissions", body: permissionsRow52, status: 204},
		{row: "53", method: "PUT", path: "/users/0/permissions", body: `{"permissions":null}`, status: 400,
			want: `{"id":49,"code":"cannot_change_permissions","reason":"Cannot change permissions for user with ID: 0","field":null}`},
		{row: "54", method: "DELETE", path: "/users/0", status: 400,
			want: `{"id":48,"code":"cannot_delete_user","reason":"Cannot delete user with ID: 0","field":null}`},
		{row: "55", method: "DELETE", path: "/users/1", status: 204},
		{row: "56", method: "POST", path: "/personal-access-tokens", body: `{"name":"dev_token","expiry":0}`, status: 200, want: `{"token":"<any>"}`,
			check: saveToken("pat")},
		{row: "57", method: "GET", path: "/personal-access-tokens", status: 200, want: `[{"name":"dev_token","expiry_at":null}]`},
		{row: "58", as: "pat", method: "GET", path: "/streams", status: 200, want: `[]`},
		{row: "59", as: "none", method: "POST", path: "/personal-access-tokens/login", status: 200,
			want: `{"user_id":0,"access_token":{"token":"<any>","expiry":"<n>"}}`},
		{row: "60", method: "DELETE", path: "/personal-access-tokens/dev_token", status: 204},
		{row: "60b", as: "pat", method: "GET", path: "/streams", status: 401, want: e40},
		{row: "61", method: "GET", path: "/stats", status: 200, want: "*", check: checkStats},
		{row: "62", method: "POST", path: "/snapshot", body: `{"compression":"Deflated","snapshot_types":["All"]}`, status: 200, want: "*",
			headers: map[string]string{"Content-Type": "application/zip"},
			check: func(t *testing.T, r response, _ *sequence) {
				cd := r.header.Get("Content-Disposition")
				if !strings.HasPrefix(cd, `attachment; filename="iggy_snapshot_`) || !strings.HasSuffix(cd, `.zip"`) || len(r.body) < 22 || string(r.body[:2]) != "PK" {
					t.Errorf("snapshot: %q, %d bytes", cd, len(r.body))
				}
			}},
		{row: "63", method: "GET", path: "/cluster/metadata", status: 200, want: "*",
			check: func(t *testing.T, r response, s *sequence) {
				_, port, _ := strings.Cut(strings.TrimPrefix(s.n.base, "http://"), ":")
				_, tcp, _ := strings.Cut(s.n.TCPAddr(), ":")
				sameJSON(t, r.body, `{"name":"single-node","nodes":[{"name":"iggy-node","ip":"127.0.0.1","endpoints":{"tcp":`+tcp+
					`,"quic":0,"http":`+port+`,"websocket":0},"role":"leader","status":"healthy"}]}`)
			}},
		{row: "64", method: "GET", path: "/clients", status: 200, want: `[]`},
		{row: "64b", method: "GET", path: "/clients/1", status: 404, want: g404},
		{row: "65", method: "GET", path: "/options/topic", status: 200, want: "*",
			check: func(t *testing.T, r response, _ *sequence) {
				var specs []map[string]json.RawMessage
				r.json(t, &specs)
				if len(specs) != 8 || string(specs[0]["key"]) != `"compression_algorithm"` || string(specs[0]["kind"]) != `"string"` ||
					string(specs[0]["default_value"]) != `[110,111,110,101]` {
					t.Errorf("options %s", r.body)
				}
			}},
		{row: "65b", method: "GET", path: "/options/bogus", status: 400,
			want: `{"id":3,"code":"invalid_command","reason":"Invalid command","field":null}`},
		{row: "66", as: "none", method: "GET", path: "/metrics", status: 401, want: e77},
		{row: "66b", method: "GET", path: "/metrics", status: 200, want: "*",
			check: func(t *testing.T, r response, _ *sequence) {
				if !strings.Contains(string(r.body), "# TYPE streams ") {
					t.Errorf("metrics without the streams gauge")
				}
			}},
		{row: "68", method: "POST", path: "/streams/0/topics/0/messages", status: 413, want: "*",
			body:    `{"partitioning":{"kind":"balanced","value":""},"messages":[{"payload":"` + base64.StdEncoding.EncodeToString(make([]byte, 3<<20)) + `"}]}`,
			headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"},
			check: func(t *testing.T, r response, _ *sequence) {
				if !r.close {
					t.Error("413 without Connection: close")
				}
			}},
		{row: "68b", method: "POST", path: "/streams", body: `{"name":"after-413"}`, status: 200, want: "*"}, // the listener stays healthy
		{row: "68c", method: "DELETE", path: "/streams/after-413", status: 204},
		{row: "69", method: "POST", path: "/streams", body: `{"name":"x"}`, header: []string{"Content-Type", ""}, status: 415, want: "*"},
		{row: "69b", method: "POST", path: "/streams", body: `{`, status: 400, want: "*"},
		{row: "69c", method: "POST", path: "/streams", body: `{}`, status: 422, want: "*"},
		{row: "70", method: "GET", path: "/users/logout", status: 405, want: "", headers: map[string]string{"Allow": "DELETE"}},
		{row: "71", as: "none", method: "OPTIONS", path: "/streams", header: []string{"Origin", "http://a.example", "Access-Control-Request-Method", "POST"},
			status: 200, want: "", headers: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET,POST,PUT,DELETE",
				"Access-Control-Allow-Headers": "content-type,authorization"}},
		{row: "72", method: "GET", path: "/streams", header: []string{"Origin", "http://a.example"}, status: 200, want: `[]`,
			headers: map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Expose-Headers": "iggy-view"}},
		{row: "2.1.2", method: "GET", path: "/streams/", status: 404, want: ""},
		{row: "2.3.2", method: "GET", path: "/streams?consistency=eventual", status: 400, want: "*"},
		{row: "2.3.2b", method: "GET", path: "/streams?consistency=serializable&unknown=1", status: 200, want: `[]`},
		{row: "2.2.2", method: "GET", path: "/streams/" + strings.Repeat("x", 256), status: 400,
			want: `{"id":6,"code":"invalid_identifier","reason":"<any>","field":null}`},
		{row: "67", method: "DELETE", path: "/users/logout", status: 204},
		// Our choice (3.7.3): a logged-out token is refused.
		{row: "67b", method: "GET", path: "/streams", status: 401, want: e40},
		{row: "67c", as: "refreshed", method: "GET", path: "/streams", status: 200, want: `[]`},
	}
	for _, st := range steps {
		if st.row == "5" {
			st.body = map[string]string{"token": s.tokens["root"]}
		}
		if st.row == "59" {
			st.body = map[string]string{"token": s.tokens["pat"]}
		}
		if st.as == "garbage" {
			st.as = "raw:garbage"
		}
		if st.want != "" && st.want != "*" && st.headers == nil {
			st.headers = jsonHeader
		}
		s.run(t, st)
	}
}

func checkStats(t *testing.T, r response, _ *sequence) {
	var m map[string]any
	r.json(t, &m)
	for _, k := range []string{"memory_usage", "total_memory", "available_memory", "read_bytes", "written_bytes", "messages_size_bytes",
		"free_disk_space", "total_disk_space"} {
		if _, ok := m[k].(string); !ok {
			t.Errorf("stats %s = %v, want a byte-size string", k, m[k])
		}
	}
	if m["cache_metrics"] == nil || m["hostname"] == nil {
		t.Errorf("stats %s", r.body)
	}
}

// Row 29: ?ack=none answers 202 with an empty body; the messages become
// pollable shortly after.
func TestSendAckNone(t *testing.T) {
	n := startNode(t)
	tok := login(t, n.base, "iggy", "iggy")
	do(t, n.base, "POST", "/streams", tok, `{"name":"s"}`)
	do(t, n.base, "POST", "/streams/0/topics", tok, `{"name":"t","partitions_count":1}`)
	r := do(t, n.base, "POST", "/streams/0/topics/0/messages?ack=none", tok, sendRow27)
	if r.status != 202 || len(r.body) != 0 || r.header.Get("Iggy-Durability") != "none" {
		t.Fatalf("ack=none: %d %v %q", r.status, r.header, r.body)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r = do(t, n.base, "GET", "/streams/0/topics/0/messages?count=10", tok, nil)
		var p struct{ Count int }
		r.json(t, &p)
		if p.Count == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("messages not pollable: %s", r.body)
		}
	}
	if r := do(t, n.base, "POST", "/streams/0/topics/0/messages?ack=bogus", tok, sendRow27); r.status != 400 {
		t.Fatalf("ack=bogus: %d", r.status)
	}
}

var _ = http.MethodGet
var _ = strconv.Itoa
