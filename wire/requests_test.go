package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// Request body codecs (client-plane.md 6, 8, 11.1, 17.4, 17.5). Every
// expected byte string below is written by hand from the spec layouts.

// reqHex decodes space-separated hex.
func reqHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// What a body does with one extra byte appended (client-plane.md 2.9).
type reqTail int

const (
	tailIgnored  reqTail = iota // fixed shape: trailing bytes ignored
	tailRejected                // options block / internal body: must be consumed exactly
	tailBatch                   // SendMessages: the byte joins the batch
)

type reqVector struct {
	name   string
	value  Body   // pointer to the expected value
	hex    string // the body, written from the spec
	minLen int    // every shorter prefix must fail to decode; -1 = whole body
	tail   reqTail
}

func reqPtr[T any](v T) *T { return &v }

// Permission sets used by the user vectors.

// reqPerms94 is the example of client-plane.md 9.4 (32 bytes).
func reqPerms94() *Permissions {
	return &Permissions{
		Global: GlobalPermissions{ReadServers: true, PollMessages: true},
		Streams: map[uint32]StreamPermissions{
			3: {ReadStream: true, Topics: map[uint32]TopicPermissions{0: {SendMessages: true}}},
		},
	}
}

const reqPerms94Hex = `00 01 00 00 00 00 00 00 01 00  01  03 00 00 00  00 01 00 00 00 00  01
	00 00 00 00  00 00 00 01  00  00`

const reqLogin174Hex = `00 2c 00 00 08 72 75 73 74 2d 73 64 6b 06 30 2e
	31 31 2e 30 04 69 67 67 79 04 69 67 67 79 00 00
	00 00`

// reqSend175Hex is the SendMessages body of client-plane.md 17.5.
var reqSend175Hex = `16 00 00 00  01 04 00 00 00 00  01 04 00 00 00 00  02 04 00 00 00 00  01 00 00 00
	00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00
	00 40 1e 18 24 0a 06 00  35 01 00 00 00 00 00 00  c3 0f 94 7c 3d c3 37 89
	01 00 00 00 ` + strings.Repeat("00 ", 204) + `
	8e 5c a5 9e db bd bf b9  01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
	00 00 00 00  00 00 00 00  00 00 00 00  05 00 00 00  00 00 00 00 00 00 00 00
	68 65 6c 6c 6f`

func reqSystemVectors() []reqVector {
	return []reqVector{
		{"Ping", &Ping{}, ``, -1, tailIgnored},
		{"GetStats", &GetStats{}, ``, -1, tailIgnored},
		{"GetSnapshot/two types", &GetSnapshot{Compression: 2, Types: []uint8{1, 100}}, `02 02 01 64`, -1, tailIgnored},
		{"GetSnapshot/no types", &GetSnapshot{Compression: 1}, `01 00`, -1, tailIgnored},
		{"GetClusterMetadata", &GetClusterMetadata{}, ``, -1, tailIgnored},
		{"DescribeOptions/topic", &DescribeOptions{Scope: 1}, `01`, -1, tailIgnored},
		{"DescribeOptions/user", &DescribeOptions{Scope: 3}, `03`, -1, tailIgnored},
		{"GetMe", &GetMe{}, ``, -1, tailIgnored},
		{"GetClient", &GetClient{ClientID: 0x01020304}, `04 03 02 01`, -1, tailIgnored},
		{"GetClients", &GetClients{}, ``, -1, tailIgnored},
	}
}

func reqUserVectors() []reqVector {
	return []reqVector{
		{"GetUser/numeric 0", &GetUser{User: ID(0)}, `01 04 00 00 00 00`, -1, tailIgnored},
		{"GetUser/named", &GetUser{User: Named("iggy")}, `02 04 69 67 67 79`, -1, tailIgnored},
		{"GetUsers", &GetUsers{}, ``, -1, tailIgnored},
		{"CreateUser/plain", &CreateUser{Username: "alice", Password: "secret", Status: 1},
			`05 61 6c 69 63 65  06 73 65 63 72 65 74  01  00`, -1, tailRejected},
		{"CreateUser/permissions 9.4, empty password", &CreateUser{Username: "bob", Status: 2, Permissions: reqPerms94()},
			`03 62 6f 62  00  02  01 20 00 00 00 ` + reqPerms94Hex, -1, tailRejected},
		{"CreateUser/options", &CreateUser{Username: "carol", Password: "pw", Status: 1,
			Options: Options{{Key: "k", Kind: KindUint8, Value: []byte{7}}}},
			`05 63 61 72 6f 6c  02 70 77  01  00  02 01 00 00 00 6b  09 01 00 00 00 07`, 11, tailRejected},
		{"DeleteUser", &DeleteUser{User: ID(5)}, `01 04 05 00 00 00`, -1, tailIgnored},
		{"UpdateUser/all fields", &UpdateUser{User: ID(1), Username: reqPtr("dave"), Status: reqPtr(uint8(2))},
			`01 04 01 00 00 00  01 04 64 61 76 65  01 02`, -1, tailRejected},
		{"UpdateUser/nothing", &UpdateUser{User: Named("x")}, `02 01 78  00  00`, -1, tailRejected},
		{"UpdateUser/options", &UpdateUser{User: ID(0), Status: reqPtr(uint8(1)),
			Options: Options{{Key: "a", Kind: KindString, Value: []byte("b")}}},
			`01 04 00 00 00 00  00  01 01  02 01 00 00 00 61  02 01 00 00 00 62`, 9, tailRejected},
		{"UpdatePermissions/global only", &UpdatePermissions{User: ID(2),
			Permissions: &Permissions{Global: GlobalPermissions{ManageServers: true}}},
			`01 04 02 00 00 00  01 0b 00 00 00  01 00 00 00 00 00 00 00 00 00  00`, -1, tailIgnored},
		{"UpdatePermissions/clear", &UpdatePermissions{User: ID(2)}, `01 04 02 00 00 00  00`, -1, tailIgnored},
		{"ChangePassword", &ChangePassword{User: Named("bob"), CurrentPassword: "old", NewPassword: "newpass"},
			`02 03 62 6f 62  03 6f 6c 64  07 6e 65 77 70 61 73 73`, -1, tailIgnored},
		{"ChangePassword/empty passwords", &ChangePassword{User: ID(1)}, `01 04 01 00 00 00 00 00`, -1, tailIgnored},
		{"LogoutUser", &LogoutUser{}, ``, -1, tailIgnored},
	}
}

func reqLoginVectors() []reqVector {
	rust := ClientVersionInfo{Version: ProtocolVersion, SDKName: "rust-sdk", SDKVersion: "0.11.0"}
	return []reqVector{
		{"LoginRegister/17.4", &LoginRegister{ClientInfo: rust, Username: "iggy", Password: "iggy"},
			reqLogin174Hex, -1, tailIgnored},
		{"LoginRegister/context", &LoginRegister{ClientInfo: rust, Username: "iggy", Password: "iggy", Context: "ctx"},
			`00 2c 00 00 08 72 75 73 74 2d 73 64 6b 06 30 2e 31 31 2e 30 04 69 67 67 79 04 69 67 67 79
			03 00 00 00 63 74 78`, -1, tailIgnored},
		{"LoginRegisterWithPAT", &LoginRegisterWithPAT{
			ClientInfo: ClientVersionInfo{Version: Pack(0, 11, 7), SDKName: "go-sdk", SDKVersion: "0.7.0"}, Token: "tok"},
			`07 2c 00 00  06 67 6f 2d 73 64 6b  05 30 2e 37 2e 30  03 74 6f 6b  00 00 00 00`, -1, tailIgnored},
	}
}

func reqTokenVectors() []reqVector {
	return []reqVector{
		{"GetPersonalAccessTokens", &GetPersonalAccessTokens{}, ``, -1, tailIgnored},
		// The Go SDK's 32-bit argument 1 arrives shifted into the upper half (8.3.2).
		{"CreatePersonalAccessToken/go sdk shift", &CreatePersonalAccessToken{Name: "ci", Expiry: 1 << 32},
			`02 63 69  00 00 00 00 01 00 00 00`, -1, tailIgnored},
		{"CreatePersonalAccessToken/never", &CreatePersonalAccessToken{Name: "t", Expiry: ^uint64(0)},
			`01 74  ff ff ff ff ff ff ff ff`, -1, tailIgnored},
		{"DeletePersonalAccessToken", &DeletePersonalAccessToken{Name: "ci"}, `02 63 69`, -1, tailIgnored},
	}
}

func reqMessageVectors(t testing.TB) []reqVector {
	send175 := reqHex(t, reqSend175Hex)
	return []reqVector{
		{"PollMessages/offset", &PollMessages{Consumer: SingleConsumer(ID(7)), Stream: ID(0), Topic: Named("t1"),
			Partition: Partition(3), Strategy: OffsetStrategy(0x10), Count: 100, AutoCommit: true},
			`01 01 04 07 00 00 00  01 04 00 00 00 00  02 02 74 31  01 03 00 00 00
			01 10 00 00 00 00 00 00 00  64 00 00 00  01`, -1, tailIgnored},
		{"PollMessages/group next", &PollMessages{Consumer: GroupConsumer(Named("g")), Stream: ID(1), Topic: ID(2),
			Strategy: NextStrategy(), Count: 10},
			`02 02 01 67  01 04 01 00 00 00  01 04 02 00 00 00  00 00 00 00 00
			05 00 00 00 00 00 00 00 00  0a 00 00 00  00`, -1, tailIgnored},
		{"SendMessages/17.5", &SendMessages{Stream: ID(0), Topic: ID(0), Partitioning: PartitionID(0),
			MessagesCount: 1, Batch: send175[26:]}, reqSend175Hex, 26, tailBatch},
		{"SendMessages/key, empty batch", &SendMessages{Stream: Named("s"), Topic: ID(1),
			Partitioning: MessagesKey([]byte{0xaa, 0xbb}), MessagesCount: 2, Batch: []byte{}},
			`11 00 00 00  02 01 73  01 04 01 00 00 00  03 02 aa bb  02 00 00 00`, -1, tailBatch},
		{"SendMessages/balanced", &SendMessages{Stream: ID(1), Topic: ID(2), Partitioning: Balanced(),
			Batch: []byte{1, 2, 3}},
			`12 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00  01 00  00 00 00 00  01 02 03`, 22, tailBatch},
		{"FlushUnsavedBuffer", &FlushUnsavedBuffer{Stream: ID(1), Topic: ID(2), PartitionID: 3, Fsync: true},
			`01 04 01 00 00 00  01 04 02 00 00 00  03 00 00 00  01`, -1, tailIgnored},
	}
}

func reqOffsetVectors() []reqVector {
	return []reqVector{
		{"GetConsumerOffset/named consumer", &GetConsumerOffset{Consumer: SingleConsumer(Named("my-consumer")),
			Stream: ID(0), Topic: ID(0), Partition: Partition(1)},
			`01 02 0b 6d 79 2d 63 6f 6e 73 75 6d 65 72  01 04 00 00 00 00  01 04 00 00 00 00  01 01 00 00 00`,
			-1, tailIgnored},
		{"GetConsumerOffset/no partition", &GetConsumerOffset{Consumer: GroupConsumer(ID(3)), Stream: ID(1), Topic: ID(2)},
			`02 01 04 03 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00  00 00 00 00 00`, -1, tailIgnored},
		{"StoreConsumerOffset/quorum", &StoreConsumerOffset{Consumer: GroupConsumer(ID(4)), Stream: ID(1), Topic: ID(2),
			Partition: Partition(0), Offset: 42, Ack: AckQuorum},
			`02 01 04 04 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00  01 00 00 00 00
			2a 00 00 00 00 00 00 00  01`, -1, tailIgnored},
		{"StoreConsumerOffset/no ack, no partition", &StoreConsumerOffset{Consumer: SingleConsumer(ID(1)),
			Stream: Named("s"), Topic: Named("t"), Offset: 0x0102030405060708, Ack: AckNone},
			`01 01 04 01 00 00 00  02 01 73  02 01 74  00 00 00 00 00  08 07 06 05 04 03 02 01  00`, -1, tailIgnored},
		{"DeleteConsumerOffset", &DeleteConsumerOffset{Consumer: SingleConsumer(ID(9)), Stream: ID(1), Topic: ID(2),
			Partition: Partition(5), Ack: AckNone},
			`01 01 04 09 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00  01 05 00 00 00  00`, -1, tailIgnored},
		{"DeleteConsumerOffset/quorum", &DeleteConsumerOffset{Consumer: SingleConsumer(ID(9)), Stream: ID(1), Topic: ID(2),
			Partition: Partition(5), Ack: AckQuorum},
			`01 01 04 09 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00  01 05 00 00 00  01`, -1, tailIgnored},
	}
}

func reqStreamVectors() []reqVector {
	return []reqVector{
		{"GetStream/numeric", &GetStream{Stream: ID(0)}, `01 04 00 00 00 00`, -1, tailIgnored},
		{"GetStream/named", &GetStream{Stream: Named("s1")}, `02 02 73 31`, -1, tailIgnored},
		{"GetStreams", &GetStreams{}, ``, -1, tailIgnored},
		{"CreateStream/no options", &CreateStream{Name: "s1"}, `02 73 31`, -1, tailRejected},
		{"CreateStream/options", &CreateStream{Name: "s1", Options: Options{{Key: "k", Kind: KindString, Value: []byte("v")}}},
			`02 73 31  02 01 00 00 00 6b  02 01 00 00 00 76`, 3, tailRejected},
		{"DeleteStream", &DeleteStream{Stream: ID(1)}, `01 04 01 00 00 00`, -1, tailIgnored},
		{"UpdateStream", &UpdateStream{Stream: ID(1), Name: "s2"}, `01 04 01 00 00 00  02 73 32`, -1, tailRejected},
		{"PurgeStream", &PurgeStream{Stream: Named("s1")}, `02 02 73 31`, -1, tailIgnored},
	}
}

func reqTopicVectors(t testing.TB) []reqVector {
	return []reqVector{
		{"GetTopic", &GetTopic{Stream: ID(0), Topic: Named("t")}, `01 04 00 00 00 00  02 01 74`, -1, tailIgnored},
		{"GetTopics", &GetTopics{Stream: ID(0)}, `01 04 00 00 00 00`, -1, tailIgnored},
		{"CreateTopic/no options", &CreateTopic{Stream: ID(0), PartitionsCount: 3, Name: "events"},
			`01 04 00 00 00 00  03 00 00 00  06 65 76 65 6e 74 73`, -1, tailRejected},
		{"CreateTopic/options", &CreateTopic{Stream: Named("s"), PartitionsCount: 0, Name: "t",
			Options: Options{
				{Key: "message_expiry", Kind: KindUint64, Value: make([]byte, 8)},
				{Key: "enforce_fsync", Kind: KindBool, Value: []byte{1}},
			}},
			`02 01 73  00 00 00 00  01 74
			02 0e 00 00 00 6d 65 73 73 61 67 65 5f 65 78 70 69 72 79  0c 08 00 00 00 00 00 00 00 00 00 00 00
			02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79 6e 63  03 01 00 00 00 01`, 9, tailRejected},
		{"DeleteTopic", &DeleteTopic{Stream: ID(1), Topic: ID(2)}, `01 04 01 00 00 00  01 04 02 00 00 00`, -1, tailIgnored},
		{"UpdateTopic", &UpdateTopic{Stream: ID(1), Topic: ID(2), Name: "t2",
			Options: Options{{Key: "max_topic_size", Kind: KindUint64, Value: bytes.Repeat([]byte{0xff}, 8)}}},
			`01 04 01 00 00 00  01 04 02 00 00 00  02 74 32
			02 0e 00 00 00 6d 61 78 5f 74 6f 70 69 63 5f 73 69 7a 65  0c 08 00 00 00 ff ff ff ff ff ff ff ff`,
			15, tailRejected},
		{"PurgeTopic", &PurgeTopic{Stream: Named("s"), Topic: Named("t")}, `02 01 73  02 01 74`, -1, tailIgnored},
		{"CreateTopicWithAssignments", &CreateTopicWithAssignments{
			Request:     reqHex(t, `01 04 00 00 00 00  02 00 00 00  02 61 62`),
			Derived:     Options{{Key: "enforce_fsync", Kind: KindBool, Value: []byte{0}}},
			Assignments: []PartitionAssignment{{0, 100}, {1, 101}},
		}, `0d 00 00 00  01 04 00 00 00 00  02 00 00 00  02 61 62
			18 00 00 00  02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79 6e 63  03 01 00 00 00 00
			02 00 00 00  00 00 00 00 64 00 00 00 00 00 00 00  01 00 00 00 65 00 00 00 00 00 00 00`, -1, tailRejected},
		{"CreateTopicWithAssignments/empty", &CreateTopicWithAssignments{},
			`00 00 00 00  00 00 00 00  00 00 00 00`, -1, tailRejected},
	}
}

func reqPartitionVectors(t testing.TB) []reqVector {
	return []reqVector{
		{"CreatePartitions", &CreatePartitions{Stream: ID(0), Topic: ID(1), PartitionsCount: 10},
			`01 04 00 00 00 00  01 04 01 00 00 00  0a 00 00 00`, -1, tailIgnored},
		{"DeletePartitions", &DeletePartitions{Stream: ID(0), Topic: ID(1), PartitionsCount: 1000},
			`01 04 00 00 00 00  01 04 01 00 00 00  e8 03 00 00`, -1, tailIgnored},
		{"DeleteSegments", &DeleteSegments{Stream: ID(0), Topic: ID(1), PartitionID: 2, SegmentsCount: 3},
			`01 04 00 00 00 00  01 04 01 00 00 00  02 00 00 00  03 00 00 00`, -1, tailIgnored},
		{"TruncatePartition", &TruncatePartition{Stream: ID(0), Topic: Named("t"), PartitionID: 1, UpToOffset: 0x0102030405060708},
			`01 04 00 00 00 00  02 01 74  01 00 00 00  08 07 06 05 04 03 02 01`, -1, tailIgnored},
		{"CreatePartitionsWithAssignments", &CreatePartitionsWithAssignments{
			Request:     reqHex(t, `01 04 00 00 00 00  01 04 01 00 00 00  01 00 00 00`),
			Assignments: []PartitionAssignment{{0, 7}},
		}, `10 00 00 00  01 04 00 00 00 00  01 04 01 00 00 00  01 00 00 00
			01 00 00 00  00 00 00 00 07 00 00 00 00 00 00 00`, -1, tailRejected},
	}
}

func reqGroupVectors() []reqVector {
	const ids = `01 04 00 00 00 00  01 04 01 00 00 00  02 02 67 31`
	return []reqVector{
		{"GetConsumerGroup", &GetConsumerGroup{Stream: ID(0), Topic: ID(1), Group: Named("g1")}, ids, -1, tailIgnored},
		{"GetConsumerGroups", &GetConsumerGroups{Stream: ID(0), Topic: ID(1)},
			`01 04 00 00 00 00  01 04 01 00 00 00`, -1, tailIgnored},
		{"CreateConsumerGroup", &CreateConsumerGroup{Stream: ID(0), Topic: ID(1), Name: "g1"},
			`01 04 00 00 00 00  01 04 01 00 00 00  02 67 31`, -1, tailIgnored},
		{"DeleteConsumerGroup", &DeleteConsumerGroup{Stream: ID(0), Topic: ID(1), Group: Named("g1")}, ids, -1, tailIgnored},
		{"JoinConsumerGroup", &JoinConsumerGroup{Stream: ID(0), Topic: ID(1), Group: Named("g1")}, ids, -1, tailIgnored},
		{"LeaveConsumerGroup", &LeaveConsumerGroup{Stream: ID(0), Topic: ID(1), Group: Named("g1")}, ids, -1, tailIgnored},
		{"SyncConsumerGroup", &SyncConsumerGroup{Stream: ID(0), Topic: ID(1), Group: ID(4)},
			`01 04 00 00 00 00  01 04 01 00 00 00  01 04 04 00 00 00`, -1, tailIgnored},
	}
}

func reqAllVectors(t testing.TB) []reqVector {
	var all []reqVector
	for _, family := range [][]reqVector{reqSystemVectors(), reqUserVectors(), reqLoginVectors(), reqTokenVectors(),
		reqMessageVectors(t), reqOffsetVectors(), reqStreamVectors(), reqTopicVectors(t), reqPartitionVectors(t),
		reqGroupVectors(), reqClusterVectors()} {
		all = append(all, family...)
	}
	return all
}

// reqFresh returns a new zero value of v's type.
func reqFresh(v Body) Body { return reflect.New(reflect.TypeOf(v).Elem()).Interface().(Body) }

// reqNormalize drops the decoded entry order of permission sets, which a
// value built in Go does not have.
func reqNormalize(v Body) Body {
	strip := func(p *Permissions) *Permissions {
		if p == nil {
			return nil
		}
		q := *p
		q.order, q.topicOrder = nil, nil
		return &q
	}
	switch x := v.(type) {
	case *CreateUser:
		c := *x
		c.Permissions = strip(x.Permissions)
		return &c
	case *UpdatePermissions:
		c := *x
		c.Permissions = strip(x.Permissions)
		return &c
	}
	return v
}

func reqAssertMalformed(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: decoded, want a malformed-input error", what)
	}
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("%s: error %v does not match ErrMalformed", what, err)
	}
}

func TestRequestVectors(t *testing.T) {
	for _, v := range reqAllVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			want := reqHex(t, v.hex)
			if got := v.value.AppendTo(nil); !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %x\nwant %x", got, want)
			}
			if val, ok := v.value.(interface{ Validate() error }); ok {
				if err := val.Validate(); err != nil {
					t.Fatalf("Validate: %v", err)
				}
			}
			got := reqFresh(v.value)
			if err := got.Decode(want); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(reqNormalize(got), reqNormalize(v.value)) {
				t.Fatalf("decode:\n got %+v\nwant %+v", got, v.value)
			}

			minLen := v.minLen
			if minLen < 0 {
				minLen = len(want)
			}
			for n := 0; n < minLen; n++ {
				reqAssertMalformed(t, "truncated to "+strconv.Itoa(n), reqFresh(v.value).Decode(want[:n:n]))
			}

			longer := append(append([]byte(nil), want...), 0x00)
			err := reqFresh(v.value).Decode(longer)
			switch v.tail {
			case tailIgnored:
				again := reqFresh(v.value)
				if err := again.Decode(longer); err != nil {
					t.Fatalf("trailing byte not ignored: %v", err)
				}
				if !reflect.DeepEqual(reqNormalize(again), reqNormalize(v.value)) {
					t.Fatalf("trailing byte changed the value: %+v", again)
				}
			case tailRejected:
				reqAssertMalformed(t, "trailing byte", err)
			case tailBatch:
				if err != nil {
					t.Fatalf("trailing byte: %v", err)
				}
			}
		})
	}
}

// Decodes whose input is not the canonical encoding: flags and bools other
// than 0/1, has_* flags other than 1 (18 #27), absent-partition flags other
// than 1 (2.4), trailing bytes after fixed shapes (2.9).
func TestRequestNonCanonicalDecode(t *testing.T) {
	cases := []struct {
		name string
		hex  string
		want Body
	}{
		{"CreateUser has_permissions 2 means absent", `01 61 00 01 02`,
			&CreateUser{Username: "a", Status: 1}},
		{"CreateUser status stored as sent", `01 61 00 07 00`, &CreateUser{Username: "a", Status: 7}},
		{"CreateUser has_permissions 0 then an option", `01 61 00 01 00  02 01 00 00 00 6b  09 01 00 00 00 07`,
			&CreateUser{Username: "a", Status: 1, Options: Options{{Key: "k", Kind: KindUint8, Value: []byte{7}}}}},
		{"UpdateUser has_username 7, has_status ff mean absent", `01 04 01 00 00 00  07  ff`,
			&UpdateUser{User: ID(1)}},
		{"UpdateUser has_username 0 then has_status 1", `01 04 01 00 00 00  00  01 09`,
			&UpdateUser{User: ID(1), Status: reqPtr(uint8(9))}},
		{"UpdatePermissions has_permissions 2 clears, rest ignored", `01 04 01 00 00 00  02 0b 00 00 00`,
			&UpdatePermissions{User: ID(1)}},
		{"PollMessages partition flag 2 is absent, auto_commit 5 is true",
			`01 01 04 07 00 00 00  01 04 00 00 00 00  01 04 00 00 00 00  02 09 00 00 00
			04 00 00 00 00 00 00 00 00  01 00 00 00  05`,
			&PollMessages{Consumer: SingleConsumer(ID(7)), Stream: ID(0), Topic: ID(0), Strategy: LastStrategy(),
				Count: 1, AutoCommit: true}},
		{"PollMessages strategy value carried for First", `01 01 04 07 00 00 00  01 04 00 00 00 00  01 04 00 00 00 00
			00 00 00 00 00  03 05 00 00 00 00 00 00 00  01 00 00 00  00`,
			&PollMessages{Consumer: SingleConsumer(ID(7)), Stream: ID(0), Topic: ID(0),
				Strategy: PollingStrategy{Kind: PollFirst, Value: 5}, Count: 1}},
		{"FlushUnsavedBuffer fsync 2 is true", `01 04 01 00 00 00  01 04 02 00 00 00  03 00 00 00  02`,
			&FlushUnsavedBuffer{Stream: ID(1), Topic: ID(2), PartitionID: 3, Fsync: true}},
		{"StoreConsumerOffset flag 0 with a value", `01 01 04 01 00 00 00  01 04 01 00 00 00  01 04 02 00 00 00
			00 05 00 00 00  01 00 00 00 00 00 00 00  01  ff ff`,
			&StoreConsumerOffset{Consumer: SingleConsumer(ID(1)), Stream: ID(1), Topic: ID(2), Offset: 1, Ack: AckQuorum}},
		{"GetStream trailing bytes", `01 04 01 00 00 00  ff ff ff`, &GetStream{Stream: ID(1)}},
		{"LoginRegisterWithPAT trailing bytes after context", `00 2c 00 00 01 67 01 31  01 74  00 00 00 00  99`,
			&LoginRegisterWithPAT{ClientInfo: ClientVersionInfo{Version: ProtocolVersion, SDKName: "g", SDKVersion: "1"},
				Token: "t"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := reqFresh(c.want)
			if err := got.Decode(reqHex(t, c.hex)); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(reqNormalize(got), reqNormalize(c.want)) {
				t.Fatalf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// Malformed bodies: every case must fail with errors.Is(err, ErrMalformed)
// (client-plane.md 11.1, 10.1, 2.x).
func TestRequestMalformed(t *testing.T) {
	const (
		id0   = `01 04 00 00 00 00 `
		id1   = `01 04 01 00 00 00 `
		pfx   = `00 2c 00 00 01 67 01 31 ` // ClientVersionInfo 0.11.0 "g" "1"
		opt1  = `02 01 00 00 00 6b 02 01 00 00 00 76 `
		perms = `01 00 00 00 00 00 00 00 00 00 00 `
	)
	cases := []struct {
		name string
		mk   Body
		hex  string
	}{
		// System.
		{"GetSnapshot empty", &GetSnapshot{}, ``},
		{"GetSnapshot types short", &GetSnapshot{}, `01 02 01`},
		{"DescribeOptions empty", &DescribeOptions{}, ``},
		{"DescribeOptions scope 0", &DescribeOptions{}, `00`},
		{"DescribeOptions scope 4", &DescribeOptions{}, `04`},
		{"GetClient 3 bytes", &GetClient{}, `01 02 03`},
		// Identifiers.
		{"identifier kind 0", &GetUser{}, `00 04 00 00 00 00`},
		{"identifier kind 3", &GetUser{}, `03 04 00 00 00 00`},
		{"numeric identifier length 5", &GetUser{}, `01 05 00 00 00 00 00`},
		{"numeric identifier length 3", &GetUser{}, `01 03 00 00 00`},
		{"string identifier length 0", &GetStream{}, `02 00`},
		{"string identifier bad UTF-8", &GetStream{}, `02 02 ff fe`},
		{"string identifier truncated", &DeleteStream{}, `02 05 61 62`},
		{"second identifier bad", &GetTopic{}, id0 + `05 01 61`},
		{"group identifier bad", &JoinConsumerGroup{}, id0 + id1 + `02 00`},
		// Users.
		{"CreateUser zero-length name", &CreateUser{}, `00 00 01 00`},
		{"CreateUser bad UTF-8 name", &CreateUser{}, `02 c3 28 00 01 00`},
		{"CreateUser bad UTF-8 password", &CreateUser{}, `01 61 01 ff 01 00`},
		{"CreateUser missing has_permissions", &CreateUser{}, `01 61 00 01`},
		{"CreateUser has_permissions without length", &CreateUser{}, `01 61 00 01 01 0b 00`},
		{"CreateUser permissions_len one short", &CreateUser{}, `01 61 00 01 01 1f 00 00 00 ` + reqPerms94Hex},
		{"CreateUser permissions_len one long", &CreateUser{}, `01 61 00 01 01 21 00 00 00 ` + reqPerms94Hex + ` 00`},
		{"CreateUser permissions_len past the body", &CreateUser{}, `01 61 00 01 01 ff 00 00 00 ` + perms},
		{"CreateUser permissions_len zero", &CreateUser{}, `01 61 00 01 01 00 00 00 00`},
		{"CreateUser options odd fields", &CreateUser{}, `01 61 00 01 00 02 01 00 00 00 6b`},
		{"CreateUser options trailing byte", &CreateUser{}, `01 61 00 01 00 ` + opt1 + `00`},
		{"CreateUser options key kind 0", &CreateUser{}, `01 61 00 01 00 00 01 00 00 00 6b 02 01 00 00 00 76`},
		{"CreateUser options value kind 0", &CreateUser{}, `01 61 00 01 00 02 01 00 00 00 6b 00 01 00 00 00 76`},
		{"CreateUser options key kind raw", &CreateUser{}, `01 61 00 01 00 01 01 00 00 00 6b 02 01 00 00 00 76`},
		{"CreateUser options value length 0", &CreateUser{}, `01 61 00 01 00 02 01 00 00 00 6b 02 00 00 00 00`},
		{"CreateUser options value length 256", &CreateUser{}, `01 61 00 01 00 02 01 00 00 00 6b 02 00 01 00 00` + strings.Repeat(" 76", 256)},
		{"CreateUser options duplicate key", &CreateUser{}, `01 61 00 01 00 ` + opt1 + opt1},
		{"DeleteUser empty", &DeleteUser{}, ``},
		{"UpdateUser empty username", &UpdateUser{}, id1 + `01 00 00`},
		{"UpdateUser missing has_status", &UpdateUser{}, id1 + `00`},
		{"UpdateUser has_status without status", &UpdateUser{}, id1 + `00 01`},
		{"UpdateUser options not tiling", &UpdateUser{}, id1 + `00 00 02 01 00 00 00 6b 02 05 00 00 00 76`},
		{"UpdatePermissions missing flag", &UpdatePermissions{}, id1},
		{"UpdatePermissions length mismatch", &UpdatePermissions{}, id1 + `01 0c 00 00 00 ` + perms + ` 00`},
		{"UpdatePermissions block truncated", &UpdatePermissions{}, id1 + `01 0b 00 00 00 01 00 00`},
		{"ChangePassword missing new", &ChangePassword{}, id1 + `02 61 62`},
		{"ChangePassword bad UTF-8", &ChangePassword{}, id1 + `01 ff 00`},
		// Login.
		{"LoginRegister empty", &LoginRegister{}, ``},
		{"LoginRegister empty sdk_name", &LoginRegister{}, `00 2c 00 00 00 01 31 01 61 00 00 00 00 00`},
		{"LoginRegister empty sdk_version", &LoginRegister{}, `00 2c 00 00 01 67 00 01 61 00 00 00 00 00`},
		{"LoginRegister empty username", &LoginRegister{}, pfx + `00 00 00 00 00 00`},
		{"LoginRegister bad UTF-8 context", &LoginRegister{}, pfx + `01 61 00 02 00 00 00 ff fe`},
		{"LoginRegister context past the body", &LoginRegister{}, pfx + `01 61 00 05 00 00 00 61`},
		{"LoginRegister missing context", &LoginRegister{}, pfx + `01 61 01 62`},
		{"LoginRegisterWithPAT bad UTF-8 token", &LoginRegisterWithPAT{}, pfx + `01 ff 00 00 00 00`},
		{"LoginRegisterWithPAT missing context", &LoginRegisterWithPAT{}, pfx + `01 74 00 00`},
		// Tokens.
		{"CreatePersonalAccessToken empty name", &CreatePersonalAccessToken{}, `00 00 00 00 00 00 00 00 00`},
		{"CreatePersonalAccessToken short expiry", &CreatePersonalAccessToken{}, `02 63 69 00 00 00 00`},
		{"DeletePersonalAccessToken empty name", &DeletePersonalAccessToken{}, `00`},
		{"DeletePersonalAccessToken bad UTF-8", &DeletePersonalAccessToken{}, `01 80`},
		// Messages.
		{"PollMessages consumer kind 0", &PollMessages{}, `00 01 04 07 00 00 00 ` + id0 + id0 + `00 00 00 00 00 01 00 00 00 00 00 00 00 00 01 00 00 00 00`},
		{"PollMessages consumer kind 3", &PollMessages{}, `03 01 04 07 00 00 00 ` + id0 + id0 + `00 00 00 00 00 01 00 00 00 00 00 00 00 00 01 00 00 00 00`},
		{"PollMessages strategy kind 0", &PollMessages{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00 00 00 00`},
		{"PollMessages strategy kind 6", &PollMessages{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `00 00 00 00 00 06 00 00 00 00 00 00 00 00 01 00 00 00 00`},
		{"PollMessages missing auto_commit", &PollMessages{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `00 00 00 00 00 01 00 00 00 00 00 00 00 00 01 00 00 00`},
		{"SendMessages 3 bytes", &SendMessages{}, `16 00 00`},
		{"SendMessages metadata_length past the body", &SendMessages{}, `17 00 00 00 ` + id0 + id0 + `02 04 00 00 00 00 01 00 00 00`},
		{"SendMessages partitioning kind 4", &SendMessages{}, `12 00 00 00 ` + id0 + id0 + `04 00 01 00 00 00`},
		{"SendMessages partitioning kind 0", &SendMessages{}, `12 00 00 00 ` + id0 + id0 + `00 00 01 00 00 00`},
		{"SendMessages balanced length 1", &SendMessages{}, `13 00 00 00 ` + id0 + id0 + `01 01 00 01 00 00 00`},
		{"SendMessages partition id length 3", &SendMessages{}, `15 00 00 00 ` + id0 + id0 + `02 03 00 00 00 01 00 00 00`},
		{"SendMessages messages key length 0", &SendMessages{}, `12 00 00 00 ` + id0 + id0 + `03 00 01 00 00 00`},
		{"SendMessages metadata_length too small", &SendMessages{}, `15 00 00 00 ` + id0 + id0 + `02 04 00 00 00 00 01 00 00 00`},
		{"SendMessages metadata_length too large", &SendMessages{}, `17 00 00 00 ` + id0 + id0 + `02 04 00 00 00 00 01 00 00 00 00`},
		{"FlushUnsavedBuffer missing fsync", &FlushUnsavedBuffer{}, id0 + id0 + `00 00 00 00`},
		// Offsets.
		{"GetConsumerOffset partition truncated", &GetConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00`},
		{"StoreConsumerOffset ack 2", &StoreConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00 05 00 00 00 00 00 00 00 02`},
		{"StoreConsumerOffset missing ack", &StoreConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00 05 00 00 00 00 00 00 00`},
		{"StoreConsumerOffset consumer kind 3", &StoreConsumerOffset{}, `03 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00 05 00 00 00 00 00 00 00 01`},
		{"DeleteConsumerOffset ack 2", &DeleteConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00 02`},
		{"DeleteConsumerOffset ack ff", &DeleteConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00 ff`},
		{"DeleteConsumerOffset missing ack", &DeleteConsumerOffset{}, `01 01 04 07 00 00 00 ` + id0 + id0 + `01 00 00 00 00`},
		// Streams.
		{"CreateStream empty", &CreateStream{}, ``},
		{"CreateStream zero-length name", &CreateStream{}, `00`},
		{"CreateStream bad UTF-8 name", &CreateStream{}, `01 ff`},
		{"CreateStream trailing byte", &CreateStream{}, `02 73 31 00`},
		{"CreateStream options odd fields", &CreateStream{}, `02 73 31 02 01 00 00 00 6b`},
		{"UpdateStream bad identifier", &UpdateStream{}, `01 02 00 00 02 73 31`},
		{"UpdateStream options trailing", &UpdateStream{}, id1 + `02 73 31 ` + opt1 + `01`},
		{"PurgeStream empty", &PurgeStream{}, ``},
		// Topics.
		{"CreateTopic missing partitions_count", &CreateTopic{}, id0 + `03 00`},
		{"CreateTopic zero-length name", &CreateTopic{}, id0 + `01 00 00 00 00`},
		{"CreateTopic options field past the end", &CreateTopic{}, id0 + `01 00 00 00 01 74 02 09 00 00 00 6b`},
		{"UpdateTopic zero-length name", &UpdateTopic{}, id0 + id1 + `00`},
		{"DeleteTopic missing topic", &DeleteTopic{}, id0},
		{"PurgeTopic bad topic kind", &PurgeTopic{}, id0 + `09 01 74`},
		{"GetTopics empty", &GetTopics{}, ``},
		// Partitions.
		{"CreatePartitions count truncated", &CreatePartitions{}, id0 + id1 + `01 00 00`},
		{"DeletePartitions count missing", &DeletePartitions{}, id0 + id1},
		{"DeleteSegments segments_count missing", &DeleteSegments{}, id0 + id1 + `01 00 00 00`},
		{"TruncatePartition offset truncated", &TruncatePartition{}, id0 + id1 + `01 00 00 00 01 00 00 00`},
		// Groups.
		{"CreateConsumerGroup zero-length name", &CreateConsumerGroup{}, id0 + id1 + `00`},
		{"GetConsumerGroup missing group", &GetConsumerGroup{}, id0 + id1},
		{"GetConsumerGroups bad topic", &GetConsumerGroups{}, id0 + `01 00`},
		{"DeleteConsumerGroup group length 0", &DeleteConsumerGroup{}, id0 + id1 + `02 00`},
		{"LeaveConsumerGroup numeric length 8", &LeaveConsumerGroup{}, id0 + id1 + `01 08 00 00 00 00 00 00 00 00`},
		{"SyncConsumerGroup empty", &SyncConsumerGroup{}, ``},
		// Internal bodies.
		{"CreateTopicWithAssignments req_len past the body", &CreateTopicWithAssignments{}, `05 00 00 00 01 02`},
		{"CreateTopicWithAssignments derived not tiling", &CreateTopicWithAssignments{}, `00 00 00 00 02 00 00 00 02 01 00 00 00 00`},
		{"CreateTopicWithAssignments count past the body", &CreateTopicWithAssignments{}, `00 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00 07 00 00 00 00 00 00 00`},
		{"CreateTopicWithAssignments trailing", &CreateTopicWithAssignments{}, `00 00 00 00 00 00 00 00 00 00 00 00 00`},
		{"CreatePartitionsWithAssignments missing count", &CreatePartitionsWithAssignments{}, `01 00 00 00 ff`},
		{"CreatePartitionsWithAssignments huge count", &CreatePartitionsWithAssignments{}, `00 00 00 00 ff ff ff ff 00 00 00 00 00 00 00 00 00 00 00 00`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqAssertMalformed(t, c.name, c.mk.Decode(reqHex(t, c.hex)))
		})
	}

	t.Run("options block over 100000 bytes", func(t *testing.T) {
		body := append(reqHex(t, `01 74`), make([]byte, MaxOptionsBlockSize+1)...)
		reqAssertMalformed(t, "CreateStream", new(CreateStream).Decode(body))
	})
}

// A permission block is echoed in the order it was decoded (9.3): the
// CreateUser reply and the rewritten prepare body carry it as sent.
func TestRequestPermissionsEchoOrder(t *testing.T) {
	body := reqHex(t, `01 61 00 01 01 23 00 00 00
		00 00 00 00 00 00 00 00 00 00  01
		05 00 00 00  01 00 00 00 00 00  00  01
		03 00 00 00  00 01 00 00 00 00  00  00`)
	var x CreateUser
	if err := x.Decode(body); err != nil {
		t.Fatal(err)
	}
	if got := x.AppendTo(nil); !bytes.Equal(got, body) {
		t.Fatalf("echo:\n got %x\nwant %x", got, body)
	}
}

// 17.4: the Rust SDK's password login body, and how DecodeRegister reports
// each shape (5.2 steps 1, 3, 4).
func TestDecodeRegister(t *testing.T) {
	rust := ClientVersionInfo{Version: ProtocolVersion, SDKName: "rust-sdk", SDKVersion: "0.11.0"}
	g := ClientVersionInfo{Version: ProtocolVersion, SDKName: "g", SDKVersion: "1"}
	const pfx = `00 2c 00 00 01 67 01 31 `
	cases := []struct {
		name     string
		hex      string
		password *LoginRegister
		token    *LoginRegisterWithPAT
	}{
		{"17.4 password only", reqLogin174Hex,
			&LoginRegister{ClientInfo: rust, Username: "iggy", Password: "iggy"}, nil},
		{"both shapes", pfx + `03 61 62 63 00 00 00 00 00`,
			&LoginRegister{ClientInfo: g, Username: "abc"},
			&LoginRegisterWithPAT{ClientInfo: g, Token: "abc"}},
		{"token only", pfx + `03 74 6f 6b 00 00 00 00`,
			nil, &LoginRegisterWithPAT{ClientInfo: g, Token: "tok"}},
		{"token with context", pfx + `01 74 03 00 00 00 63 74 78`,
			nil, &LoginRegisterWithPAT{ClientInfo: g, Token: "t", Context: "ctx"}},
		{"neither", pfx + `00`, nil, nil},
		{"nothing after the prefix", pfx, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecodeRegister(reqHex(t, c.hex))
			if err != nil {
				t.Fatalf("DecodeRegister: %v", err)
			}
			if !reflect.DeepEqual(got.Password, c.password) || !reflect.DeepEqual(got.Token, c.token) {
				t.Fatalf("got password %+v token %+v\nwant password %+v token %+v", got.Password, got.Token, c.password, c.token)
			}
			if got.ClientInfo.Version != ProtocolVersion {
				t.Fatalf("version %v", got.ClientInfo.Version)
			}
		})
	}
	for _, bad := range []string{``, `00 2c 00`, `00 2c 00 00`, `00 2c 00 00 00 01 31 01 61 00 00 00 00 00`,
		`00 2c 00 00 01 67 00`, `00 2c 00 00 01 ff 01 31 01 61 00 00 00 00 00`} {
		_, err := DecodeRegister(reqHex(t, bad))
		reqAssertMalformed(t, "prefix "+bad, err)
	}
}

// 17.5: the metadata section, aliasing and the error split of 13.1 steps 1-2.
func TestSendMessagesMetadata(t *testing.T) {
	body := reqHex(t, reqSend175Hex)
	if len(body) != 335 {
		t.Fatalf("17.5 body is %d bytes, want 335", len(body))
	}
	if got := AppendSendMessagesHeader(nil, ID(0), ID(0), PartitionID(0), 1); !bytes.Equal(got, body[:26]) {
		t.Fatalf("header:\n got %x\nwant %x", got, body[:26])
	}
	var x SendMessages
	if err := x.Decode(body); err != nil {
		t.Fatal(err)
	}
	if len(x.Batch) != 309 || &x.Batch[0] != &body[26] {
		t.Fatalf("batch does not alias body[26:]: len %d", len(x.Batch))
	}

	allocs := testing.AllocsPerRun(100, func() {
		var y SendMessages
		if err := y.Decode(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode allocates %.0f times for numeric identifiers", allocs)
	}

	const meta = `01 04 00 00 00 00  01 04 00 00 00 00  02 04 00 00 00 00  01 00 00 00`
	cases := []struct {
		name     string
		hex      string
		metadata bool // errors.Is(err, ErrSendMetadata): the server answers S 20
	}{
		{"empty", ``, true},
		{"short length", `16 00 00`, true},
		{"length past the body", `17 00 00 00 ` + meta, true},
		{"length far past the body", `ff ff ff ff ` + meta, true},
		{"section truncated by the length", `15 00 00 00 ` + meta, true},
		{"zero length", `00 00 00 00 ` + meta, true},
		{"bad stream kind", `16 00 00 00 03 04 00 00 00 00  01 04 00 00 00 00  02 04 00 00 00 00  01 00 00 00`, true},
		{"bad partitioning", `16 00 00 00 01 04 00 00 00 00  01 04 00 00 00 00  02 05 00 00 00 00  01 00 00 00`, true},
		{"length larger than the section", `17 00 00 00 ` + meta + ` 00`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := new(SendMessages).Decode(reqHex(t, c.hex))
			reqAssertMalformed(t, c.name, err)
			if errors.Is(err, ErrSendMetadata) != c.metadata {
				t.Fatalf("errors.Is(%v, ErrSendMetadata) = %v, want %v", err, !c.metadata, c.metadata)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%v does not carry a *DecodeError", err)
			}
		})
	}
}

func TestNewRequestCoversCatalogue(t *testing.T) {
	seen := map[reflect.Type]CommandCode{}
	for _, info := range Commands() {
		r, ok := NewRequest(info.Code)
		if info.Code == CodeLoginUser || info.Code == CodeLoginWithPersonalAccessToken {
			if ok {
				t.Errorf("%v: legacy login has a request type", info.Code)
			}
			continue
		}
		if !ok {
			t.Errorf("%v (%d): no request type", info.Name, info.Code)
			continue
		}
		if r.Code() != info.Code {
			t.Errorf("%v: type %T has Code %d", info.Name, r, r.Code())
		}
		typ := reflect.TypeOf(r).Elem()
		if typ.Name() != strings.ReplaceAll(info.Name, "Pat", "PAT") {
			t.Errorf("%v: type is named %s", info.Name, typ.Name())
		}
		if prev, dup := seen[typ]; dup {
			t.Errorf("%v and %v share type %s", prev, info.Code, typ)
		}
		seen[typ] = info.Code
		if !reflect.ValueOf(r).Elem().IsZero() {
			t.Errorf("%v: NewRequest value is not zero", info.Name)
		}
	}
	covered := map[reflect.Type]bool{}
	for _, v := range reqAllVectors(t) {
		covered[reflect.TypeOf(v.value).Elem()] = true
	}
	for typ, code := range seen {
		if !covered[typ] {
			t.Errorf("%v: %s has no encode/decode vector", code, typ)
		}
	}
	for _, code := range []CommandCode{0, 2, 38, 44, 999, 60000} {
		if _, ok := NewRequest(code); ok {
			t.Errorf("NewRequest(%d) reported a type", code)
		}
	}
}

// Validate refuses what the peer's decoder would refuse.
func TestRequestValidate(t *testing.T) {
	long := strings.Repeat("a", 256)
	tooMany := make(Options, MaxOptionsPairs+1)
	for i := range tooMany {
		tooMany[i] = KeyValue{Key: "k" + strconv.Itoa(i), Kind: KindUint8, Value: []byte{1}}
	}
	cases := []struct {
		name string
		v    interface{ Validate() error }
	}{
		{"GetSnapshot 256 types", GetSnapshot{Types: make([]uint8, 256)}},
		{"DescribeOptions scope 0", DescribeOptions{}},
		{"GetUser kind 0", GetUser{}},
		{"GetUser empty name", GetUser{User: Named("")}},
		{"GetUser 256-byte name", GetUser{User: Named(long)}},
		{"CreateUser empty username", CreateUser{Password: "p"}},
		{"CreateUser 256-byte password", CreateUser{Username: "u", Password: long}},
		{"CreateUser bad UTF-8 password", CreateUser{Username: "u", Password: "\xff"}},
		{"CreateUser too many options", CreateUser{Username: "u", Options: tooMany}},
		{"CreateUser empty option value", CreateUser{Username: "u", Options: Options{{Key: "k", Kind: KindRaw}}}},
		{"UpdateUser empty username", UpdateUser{User: ID(1), Username: reqPtr("")}},
		{"UpdatePermissions bad user", UpdatePermissions{User: Identifier{Kind: 3}}},
		{"ChangePassword 256-byte new", ChangePassword{User: ID(1), NewPassword: long}},
		{"LoginRegister empty sdk name", LoginRegister{ClientInfo: ClientVersionInfo{SDKVersion: "1"}, Username: "u"}},
		{"LoginRegister bad UTF-8 context", LoginRegister{ClientInfo: ClientVersionInfo{SDKName: "g", SDKVersion: "1"},
			Username: "u", Context: "\xc3"}},
		{"LoginRegisterWithPAT 256-byte token", LoginRegisterWithPAT{ClientInfo: ClientVersionInfo{SDKName: "g", SDKVersion: "1"},
			Token: long}},
		{"CreatePersonalAccessToken empty name", CreatePersonalAccessToken{}},
		{"DeletePersonalAccessToken 256-byte name", DeletePersonalAccessToken{Name: long}},
		{"PollMessages consumer kind 0", PollMessages{Stream: ID(0), Topic: ID(0), Strategy: FirstStrategy()}},
		{"PollMessages strategy kind 0", PollMessages{Consumer: SingleConsumer(ID(0)), Stream: ID(0), Topic: ID(0)}},
		{"PollMessages strategy kind 6", PollMessages{Consumer: SingleConsumer(ID(0)), Stream: ID(0), Topic: ID(0),
			Strategy: PollingStrategy{Kind: 6}}},
		{"SendMessages empty key", SendMessages{Stream: ID(0), Topic: ID(0), Partitioning: MessagesKey(nil)}},
		{"SendMessages 256-byte key", SendMessages{Stream: ID(0), Topic: ID(0), Partitioning: MessagesKey(make([]byte, 256))}},
		{"SendMessages partitioning kind 0", SendMessages{Stream: ID(0), Topic: ID(0)}},
		{"FlushUnsavedBuffer bad topic", FlushUnsavedBuffer{Stream: ID(0)}},
		{"GetConsumerOffset group kind 3", GetConsumerOffset{Consumer: Consumer{Kind: 3, ID: ID(0)}, Stream: ID(0), Topic: ID(0)}},
		{"StoreConsumerOffset ack 2", StoreConsumerOffset{Consumer: SingleConsumer(ID(0)), Stream: ID(0), Topic: ID(0), Ack: 2}},
		{"DeleteConsumerOffset ack 2", DeleteConsumerOffset{Consumer: SingleConsumer(ID(0)), Stream: ID(0), Topic: ID(0), Ack: 2}},
		{"CreateStream empty name", CreateStream{}},
		{"CreateStream bad UTF-8 name", CreateStream{Name: "\xff"}},
		{"UpdateStream duplicate option", UpdateStream{Stream: ID(0), Name: "s", Options: Options{
			{Key: "k", Kind: KindBool, Value: []byte{1}}, {Key: "k", Kind: KindBool, Value: []byte{0}}}}},
		{"CreateTopic 256-byte name", CreateTopic{Stream: ID(0), Name: long}},
		{"UpdateTopic bad stream", UpdateTopic{Topic: ID(0), Name: "t"}},
		{"CreateConsumerGroup empty name", CreateConsumerGroup{Stream: ID(0), Topic: ID(0)}},
		{"JoinConsumerGroup bad group", JoinConsumerGroup{Stream: ID(0), Topic: ID(0), Group: Named("")}},
		{"CreateTopicWithAssignments bad derived", CreateTopicWithAssignments{Derived: Options{{Key: "", Kind: KindBool, Value: []byte{1}}}}},
	}
	for _, c := range cases {
		if err := c.v.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", c.name)
		}
	}
}

// The internal bodies expose their embedded client requests.
func TestRequestInternalEmbedded(t *testing.T) {
	ct := CreateTopic{Stream: ID(0), PartitionsCount: 2, Name: "ab"}
	x := CreateTopicWithAssignments{Request: ct.AppendTo(nil)}
	got, err := x.CreateTopic()
	if err != nil || !reflect.DeepEqual(got, ct) {
		t.Fatalf("CreateTopic() = %+v, %v", got, err)
	}
	cp := CreatePartitions{Stream: ID(0), Topic: ID(1), PartitionsCount: 1}
	y := CreatePartitionsWithAssignments{Request: cp.AppendTo(nil)}
	gotP, err := y.CreatePartitions()
	if err != nil || gotP != cp {
		t.Fatalf("CreatePartitions() = %+v, %v", gotP, err)
	}
	if x.Operation() != OpCreateTopicWithAssignments || y.Operation() != OpCreatePartitionsWithAssignments ||
		(TruncatePartition{}).Operation() != OpTruncatePartition {
		t.Fatal("internal operations")
	}
}
