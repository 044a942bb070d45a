package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"iggynode/wire"
)

// The cluster admin commands (docs/reconfiguration.md, "Admin surface")
// against a fake node: the real node does not serve 9001..9004 yet, so a
// TCP listener answers the register handshake, the roster read that
// follows a login, and the four commands with reply bytes written here by
// hand from the doc's tables (never with package wire). The tests check
// the bytes the CLI sent and what it printed.

// adminRequest is one request the fake received, read at the framing.md
// offsets.
type adminRequest struct {
	operation uint8
	code      uint32
	request   uint64
	session   uint64
	body      []byte
}

type adminFake struct {
	t    *testing.T
	addr string
	// status is the reply status for 9001..9004 (0: the canned reply).
	status uint32

	mu   sync.Mutex
	reqs []adminRequest
}

func newAdminFake(t *testing.T, status uint32) *adminFake {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &adminFake{t: t, addr: ln.Addr().String(), status: status}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *adminFake) serve(nc net.Conn) {
	defer nc.Close()
	le := binary.LittleEndian
	for {
		head := make([]byte, 256)
		if _, err := io.ReadFull(nc, head); err != nil {
			return
		}
		size := le.Uint32(head[48:])
		if size < 256 || size > 1<<20 {
			f.t.Errorf("fake: request size %d", size)
			return
		}
		frame := append(head, make([]byte, size-256)...)
		if _, err := io.ReadFull(nc, frame[256:]); err != nil {
			return
		}
		r := adminRequest{operation: frame[176], code: le.Uint32(frame[196:]), request: le.Uint64(frame[168:]),
			session: le.Uint64(frame[184:]), body: append([]byte(nil), frame[256:]...)}
		f.mu.Lock()
		f.reqs = append(f.reqs, r)
		f.mu.Unlock()
		var op uint8
		var status uint32
		var body []byte
		switch {
		case r.operation == 1: // Register: result count 0, LoginRegisterResponse (client-plane.md 7.12)
			op, body = 1, unhex(f.t, `00 00 00 00  07 00 00 00  2a 00 00 00 00 00 00 00  00 2c 00 00  04 66 61 6b 65`)
		case r.operation == 2 && r.code == 12: // one healthy leader: stay (7.15)
			op, body = 2, rosterOne(f.addr)
		case r.operation == 2 && r.code >= 9001 && r.code <= 9004:
			op, status = 2, f.status
			if status == 0 {
				body = unhex(f.t, statusReplyHex)
			}
		default:
			f.t.Errorf("fake: unexpected request operation %d code %d", r.operation, r.code)
			op, status = r.operation, 3
		}
		out := make([]byte, 256+len(body)) // ReplyHeader (4.4): size 48, command 60, request 200, operation 208, status 216
		le.PutUint32(out[48:], uint32(len(out)))
		out[60] = 8
		le.PutUint64(out[200:], r.request)
		out[208] = op
		le.PutUint32(out[216:], status)
		copy(out[256:], body)
		if _, err := nc.Write(out); err != nil {
			return
		}
	}
}

// admin returns the requests with codes 9001..9004.
func (f *adminFake) admin() []adminRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []adminRequest
	for _, r := range f.reqs {
		if r.operation == 2 && r.code >= 9001 && r.code <= 9004 {
			out = append(out, r)
		}
	}
	return out
}

// unhex reads hex separated by whitespace; `#` starts a comment.
func unhex(t *testing.T, s string) []byte {
	t.Helper()
	var digits []string
	for _, line := range strings.Split(s, "\n") {
		line, _, _ = strings.Cut(line, "#")
		digits = append(digits, strings.Fields(line)...)
	}
	b, err := hex.DecodeString(strings.Join(digits, ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rosterOne is ClusterMetadata (7.15) naming the fake as the one healthy
// leader, so the client stays after login.
func rosterOne(addr string) []byte {
	host, port, _ := net.SplitHostPort(addr)
	var p uint16
	fmt.Sscan(port, &p)
	le := binary.LittleEndian
	b := le.AppendUint32(nil, 1)
	b = append(b, 'c')
	b = le.AppendUint32(b, 1)
	b = le.AppendUint32(b, 4)
	b = append(b, "fake"...)
	b = le.AppendUint32(b, uint32(len(host)))
	b = append(b, host...)
	b = le.AppendUint16(b, p)
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0) // quic, http, websocket 0; role leader, status healthy
	return b
}

// statusReplyHex is a ClusterStatus reply: node 3 joining node 0 (R1
// committed). epoch 1, voters {0}, learners {3}, target {0, 3},
// epoch_op 1042, view 0x01000002, two nodes.
const statusReplyHex = `
	01 00 00 00  01 00 00 00  08 00 00 00  09 00 00 00      # epoch, voters, learners, target
	12 04 00 00 00 00 00 00  02 00 00 01  02 00 00 00       # epoch_op 1042, view, nodes_count 2
	00 00 01 00  1a 04 00 00 00 00 00 00                    # id 0 voter primary live, commit 1050
	07 6e 30 3a 38 30 37 30  06 6e 6f 64 65 2d 30           # "n0:8070" "node-0"
	08 31 30 2e 30 2e 30 2e 31  9a 1f 90 1f b8 0b 9c 1f     # "10.0.0.1", 8090 8080 3000 8092
	03 01 00 01  00 00 00 00 00 00 00 00                    # id 3 learner, not primary, unreachable, commit 0
	07 6e 33 3a 38 30 37 30  00  00  9a 1f 00 00 00 00 00 00 # "n3:8070" "" "", tcp 8090 only
`

// The same reply as the CLI prints it.
const (
	statusTable = "" +
		"EPOCH  VIEW      EPOCH OP  VOTERS  LEARNERS  TARGET  CHANGE\n" +
		"1      16777218  1042      0       3         0,3     in progress\n" +
		"\n" +
		"ID  ROLE     PRIMARY  STATUS       COMMIT  REPLICA ADDRESS  NAME    IP        TCP   QUIC  HTTP  WS\n" +
		"0   voter    yes      live         1050    n0:8070          node-0  10.0.0.1  8090  8080  3000  8092\n" +
		"3   learner  no       unreachable  0       n3:8070          -       -         8090  -     -     -\n"
	statusJSON = `{"epoch":1,"voters":[0],"learners":[3],"target":[0,3],"epoch_op":1042,"view":16777218,"nodes":[` +
		`{"id":0,"role":"voter","primary":true,"status":"live","commit":1050,"partition_replicas":0,"partitions_led":0,"replica_address":"n0:8070",` +
		`"name":"node-0","ip":"10.0.0.1","tcp_port":8090,"quic_port":8080,"http_port":3000,"websocket_port":8092},` +
		`{"id":3,"role":"learner","primary":false,"status":"unreachable","commit":0,"partition_replicas":0,"partitions_led":0,"replica_address":"n3:8070",` +
		`"name":"","ip":"","tcp_port":8090,"quic_port":0,"http_port":0,"websocket_port":0}],"partitions":[]}`
)

// runAgainst runs the CLI against addr as iggy/iggy with private config.
func runAgainst(t *testing.T, addr string, args ...string) (int, string, string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("IGGY_USERNAME", "")
	t.Setenv("IGGY_PASSWORD", "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	full := append([]string{"--address", addr, "--username", "iggy", "--password", "iggy", "--reconnect-retries", "0",
		"--session-file", filepath.Join(t.TempDir(), "session.json")}, args...)
	code := run(ctx, full, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestClusterCommandsSendAndPrint(t *testing.T) {
	specAll := `03  0d 31 30 2e 30 2e 30 2e 34 3a 38 30 37 30  06 6e 6f 64 65 2d 33  08 31 30 2e 30 2e 30 2e 34
		9a 1f 90 1f b8 0b 9c 1f` // id 3, "10.0.0.4:8070", "node-3", "10.0.0.4", 8090 8080 3000 8092
	for _, tc := range []struct {
		name string
		args []string
		code uint32
		body string // hex, by hand from the doc's tables
		note string // the line before the tables
	}{
		{"status", []string{"cluster", "status"}, 9004, ``, ""},
		{"add every flag", []string{"cluster", "add", "3", "10.0.0.4:8070", "--name", "node-3", "--ip", "10.0.0.4",
			"--tcp-port", "8090", "--quic-port", "8080", "--http-port", "3000", "--websocket-port", "8092"}, 9001, specAll,
			"Node 3 joins as a learner; it becomes a voter once it holds the log.\n\n"},
		{"add defaults", []string{"cluster", "add", "31", "[::1]:8070"}, 9001,
			`1f  0a 5b 3a 3a 31 5d 3a 38 30 37 30  00  00  00 00 00 00 00 00 00 00`, // id 31, "[::1]:8070", no name, ip or ports
			"Node 31 joins as a learner; it becomes a voter once it holds the log.\n\n"},
		{"remove", []string{"cluster", "remove", "2"}, 9002, `02`, "Removal of node 2 started.\n\n"},
		{"replace", []string{"cluster", "replace", "1", "5", "h5:8070", "--ip", "192.0.2.7", "--tcp-port", "8090"}, 9003,
			`01  05  07 68 35 3a 38 30 37 30  00  09 31 39 32 2e 30 2e 32 2e 37  9a 1f 00 00 00 00 00 00`,
			"Node 5 joins as a learner and takes node 1's place among the voters once it holds the log.\n\n"},
		{"replace in place", []string{"cluster", "replace", "1", "1", "h1:8070"}, 9003,
			`01  01  07 68 31 3a 38 30 37 30  00  00  00 00 00 00 00 00 00 00`,
			"Node 1 moves to h1:8070; it starts empty and transfers the state.\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAdminFake(t, 0)
			code, out, errOut := runAgainst(t, f.addr, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if want := tc.note + statusTable; out != want {
				t.Fatalf("table:\n%s\nwant:\n%s", out, want)
			}
			reqs := f.admin()
			if len(reqs) != 1 {
				t.Fatalf("%d admin requests sent, want 1", len(reqs))
			}
			r := reqs[0]
			if r.code != tc.code || r.session != 42 || r.request != 1 || !bytes.Equal(r.body, unhex(t, tc.body)) {
				t.Fatalf("sent code %d session %d request %d body %x\nwant code %d body %s", r.code, r.session, r.request, r.body, tc.code, tc.body)
			}

			// --output json: the reply's fields in snake_case, the same
			// request bytes.
			f = newAdminFake(t, 0)
			code, out, errOut = runAgainst(t, f.addr, append([]string{"--output", "json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("json: exit %d, stderr %q", code, errOut)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, []byte(out)); err != nil {
				t.Fatalf("json: %v in %q", err, out)
			}
			if compact.String() != statusJSON {
				t.Fatalf("json:\n%s\nwant:\n%s", compact.String(), statusJSON)
			}
			if reqs := f.admin(); len(reqs) != 1 || !bytes.Equal(reqs[0].body, unhex(t, tc.body)) {
				t.Fatalf("json: sent %+v", reqs)
			}
		})
	}
}

func TestClusterStatusListMode(t *testing.T) {
	f := newAdminFake(t, 0)
	code, out, errOut := runAgainst(t, f.addr, "cluster", "status", "-l", "list")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := "EPOCH: 1, VIEW: 16777218, EPOCH OP: 1042, VOTERS: 0, LEARNERS: 3, TARGET: 0,3, CHANGE: in progress\n" +
		"\n" +
		"ID: 0, ROLE: voter, PRIMARY: yes, STATUS: live, COMMIT: 1050, REPLICA ADDRESS: n0:8070, NAME: node-0, IP: 10.0.0.1, TCP: 8090, QUIC: 8080, HTTP: 3000, WS: 8092\n" +
		"ID: 3, ROLE: learner, PRIMARY: no, STATUS: unreachable, COMMIT: 0, REPLICA ADDRESS: n3:8070, NAME: -, IP: -, TCP: 8090, QUIC: -, HTTP: -, WS: -\n"
	if out != want {
		t.Fatalf("list mode:\n%s\nwant:\n%s", out, want)
	}
}

// Refusals print the code's name and a hint, and exit 1.
func TestClusterCommandErrors(t *testing.T) {
	for _, tc := range []struct {
		status uint32
		args   []string
		want   []string
	}{
		{20002, []string{"cluster", "add", "3", "h:1"}, []string{"error: ReconfigurationInProgress (20002)", "hint: another cluster change is in progress"}},
		{20001, []string{"cluster", "remove", "1"}, []string{"error: NodeRemoved (20001)", "hint: this node has left the cluster"}},
		{41, []string{"cluster", "replace", "1", "2", "h:1"}, []string{"error: Unauthorized (41)", "manage_servers"}},
		{41, []string{"cluster", "status"}, []string{"error: Unauthorized (41)", "read_servers"}},
		{3, []string{"cluster", "remove", "1"}, []string{"error: InvalidCommand (3)", "the roster refused the change"}},
		{3, []string{"cluster", "status"}, []string{"error: InvalidCommand (3)", "iggy cluster metadata"}},
	} {
		t.Run(fmt.Sprintf("%s status %d", strings.Join(tc.args, " "), tc.status), func(t *testing.T) {
			f := newAdminFake(t, tc.status)
			code, out, errOut := runAgainst(t, f.addr, tc.args...)
			if code != 1 || out != "" {
				t.Fatalf("exit %d, stdout %q", code, out)
			}
			contains(t, "stderr", errOut, tc.want...)
			if n := len(f.admin()); n != 1 {
				t.Fatalf("%d admin requests", n)
			}
		})
	}
}

// Arguments the node would refuse are refused before anything is sent.
func TestClusterCommandsCheckArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "add", "32", "h:1"}, `node id "32": a number in 0..=31`},
		{[]string{"cluster", "add", "x", "h:1"}, `node id "x"`},
		{[]string{"cluster", "add", "3", "nohost"}, `replica address "nohost" is not HOST:PORT`},
		{[]string{"cluster", "add", "3", ":8070"}, `needs a host and a port 1..65535`},
		{[]string{"cluster", "add", "3", "h:0"}, `needs a host and a port 1..65535`},
		{[]string{"cluster", "add", "3", "h:1", "--tcp-port", "70000"}, `--tcp-port`},
		{[]string{"cluster", "add", "3", "h:1", "--name", strings.Repeat("n", 256)}, `node name`},
		{[]string{"cluster", "add", "3"}, `accepts 2 arg(s)`},
		{[]string{"cluster", "remove", "40"}, `node id "40"`},
		{[]string{"cluster", "replace", "99", "1", "h:1"}, `node id "99"`},
		{[]string{"cluster", "replace", "1", "2"}, `accepts 3 arg(s)`},
		{[]string{"cluster", "status", "extra"}, `accepts 0 arg(s)`},
	} {
		name := strings.Join(tc.args, " ")
		if len(name) > 60 {
			name = name[:60] + "..."
		}
		t.Run(name, func(t *testing.T) {
			f := newAdminFake(t, 0)
			code, _, errOut := runAgainst(t, f.addr, tc.args...)
			if code != 1 {
				t.Fatalf("exit %d", code)
			}
			contains(t, "stderr", errOut, tc.want)
			if n := len(f.admin()); n != 0 {
				t.Fatalf("%d admin requests sent", n)
			}
		})
	}
}

// Issue 23: with a placement section the node table counts each node's
// partition replicas and leads, and --partitions lists every partition
// (text and JSON from the same reply).
func TestClusterStatusPrintsPlacement(t *testing.T) {
	r := wire.ClusterStatusReply{Voters: 0b111, Target: 0b111, View: 4, Nodes: []wire.ClusterStatusNode{
		{Spec: wire.NodeSpec{ID: 0, ReplicaAddress: "n0:8070"}, Primary: true},
		{Spec: wire.NodeSpec{ID: 1, ReplicaAddress: "n1:8070"}},
		{Spec: wire.NodeSpec{ID: 2, ReplicaAddress: "n2:8070"}},
	}, Partitions: []wire.ClusterStatusPartition{
		{Stream: 1, Topic: 1, Partition: 0, Replicas: 0b011, Voters: 0b011, Preferred: 0, Primary: 0},
		{Stream: 1, Topic: 1, Partition: 1, Replicas: 0b110, Voters: 0b101, Preferred: 2, Primary: wire.NoPrimary},
	}}
	var out bytes.Buffer
	a := &app{out: &out, statusPartitions: true, listMode: "table"}
	if err := a.printClusterStatus(r, ""); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"EPOCH  VIEW  EPOCH OP  VOTERS  LEARNERS  TARGET  CHANGE\n" +
		"0      4     0         0,1,2   -         0,1,2   none\n" +
		"\n" +
		"ID  ROLE   PRIMARY  STATUS  COMMIT  REPLICAS  LEADS  REPLICA ADDRESS  NAME  IP  TCP  QUIC  HTTP  WS\n" +
		"0   voter  yes      live    0       1         1      n0:8070          -     -   -    -     -     -\n" +
		"1   voter  no       live    0       2         0      n1:8070          -     -   -    -     -     -\n" +
		"2   voter  no       live    0       1         0      n2:8070          -     -   -    -     -     -\n" +
		"\n" +
		"STREAM  TOPIC  PARTITION  REPLICAS  VOTERS  PREFERRED  PRIMARY  MOVING\n" +
		"1       1      0          0,1       0,1     0          0        no\n" +
		"1       1      1          1,2       0,2     2          -        yes\n"
	if out.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	a.output = "json"
	if err := a.printClusterStatus(r, ""); err != nil {
		t.Fatal(err)
	}
	var got clusterStatusJSON
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	p1 := got.Partitions[1]
	if got.Nodes[1].Replicas != 2 || got.Nodes[0].Leads != 1 || len(got.Partitions) != 2 || p1.Primary != nil || !p1.Moving ||
		fmt.Sprint(p1.Replicas, p1.Voters) != "[1 2] [0 2]" || p1.Preferred != 2 || !strings.Contains(out.String(), `"primary": null`) {
		t.Fatalf("JSON %s", out.String())
	}
}
