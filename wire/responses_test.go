package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
)

// respUnhex decodes a hand-written hex vector: "#" starts a comment that runs
// to the end of the line, whitespace is ignored.
func respUnhex(s string) []byte {
	var clean strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		clean.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(clean.String())
	if err != nil {
		panic(fmt.Sprintf("bad test vector %q: %v", s, err))
	}
	return b
}

// Hand-written pieces of the vectors, from the offset tables of
// client-plane.md 7. Concatenated pieces are still written from the spec,
// never produced by our encoder.
const (
	// 7.1 / 17.6: CreateStream reply payload for stream 0 "s1", created_at T.
	respHexStreamS1 = `
		00 00 00 00                 # id 0
		00 40 1e 18 24 0a 06 00     # created_at T = 1 700 000 000 000 000 µs
		00 00 00 00                 # topics_count 0
		00 00 00 00 00 00 00 00     # size_bytes
		00 00 00 00 00 00 00 00     # messages_count
		02 73 31                    # name "s1"
		00 00 00 00                 # options_len 0
`

	// 7.1 with an options block of two pairs in ascending key order.
	respHexStreamOrders = `
		05 00 00 00                 # id 5
		01 00 00 00 00 00 00 00     # created_at 1
		02 00 00 00                 # topics_count 2
		10 00 00 00 00 00 00 00     # size_bytes 16
		03 00 00 00 00 00 00 00     # messages_count 3
		06 6f 72 64 65 72 73        # name "orders"
		18 00 00 00                 # options_len 24
		02 01 00 00 00 61  09 01 00 00 00 07   # "a" = Uint8 7
		02 01 00 00 00 62  02 01 00 00 00 78   # "b" = String "x"
`

	// 7.1: the head of a StreamDetails with one topic.
	respHexStreamWithOneTopic = `
		01 00 00 00                 # id 1
		02 00 00 00 00 00 00 00     # created_at 2
		01 00 00 00                 # topics_count 1
		00 00 00 00 00 00 00 00     # size_bytes
		00 00 00 00 00 00 00 00     # messages_count
		01 73                       # name "s"
		00 00 00 00                 # options_len 0
`

	// 7.3 up to partitions_count; respHexTopicTail completes it.
	respHexTopicHead = `
		01 00 00 00                 # id 1
		02 00 00 00 00 00 00 00     # created_at 2
`
	respHexTopicTail = `
		ff ff ff ff ff ff ff ff     # message_expiry: never
		01                          # compression_algorithm: none
		ff ff ff ff ff ff ff ff     # max_topic_size: unlimited
		00 01 00 00 00 00 00 00     # size_bytes 256
		03 00 00 00 00 00 00 00     # messages_count 3
		01 74                       # name "t"
		18 00 00 00                 # explicit_len 24
		02 0d 00 00 00 65 6e 66 6f 72 63 65 5f 66 73 79 6e 63   # "enforce_fsync"
		03 01 00 00 00 01                                       # Bool true
		23 00 00 00                 # derived_len 35
		02 15 00 00 00 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 74 68 6d   # "compression_algorithm"
		02 04 00 00 00 6e 6f 6e 65                              # String "none"
`

	// 7.4: two partitions, 40 bytes each.
	respHexPartition0 = `
		00 00 00 00                 # id 0
		02 00 00 00 00 00 00 00     # created_at 2
		01 00 00 00                 # segments_count 1
		09 00 00 00 00 00 00 00     # current_offset 9
		34 12 00 00 00 00 00 00     # size_bytes 0x1234
		0a 00 00 00 00 00 00 00     # messages_count 10
`
	respHexPartition1 = `
		01 00 00 00                 # id 1
		02 00 00 00 00 00 00 00     # created_at 2
		00 00 00 00                 # segments_count 0
		00 00 00 00 00 00 00 00     # current_offset
		00 00 00 00 00 00 00 00     # size_bytes
		00 00 00 00 00 00 00 00     # messages_count
`

	// 7.6 / 7.7.
	respHexGroupG1 = `
		02 00 00 00                 # id 2
		03 00 00 00                 # partitions_count 3
		01 00 00 00                 # members_count 1
		02 67 31                    # name "g1"
`
	respHexGroupG2 = `
		03 00 00 00                 # id 3
		03 00 00 00                 # partitions_count 3
		00 00 00 00                 # members_count 0
		02 67 32                    # name "g2"
`
	respHexMember0 = `
		00 00 00 00                 # member id 0
		02 00 00 00                 # partitions_count 2
		00 00 00 00  02 00 00 00    # partitions 0, 2
`

	// 7.9 / 7.10.
	respHexClientAnon = `
		05 00 00 00                 # client_id 5
		ff ff ff ff                 # user_id: not logged in
		01                          # transport TCP
		0e 00 00 00 31 32 37 2e 30 2e 30 2e 31 3a 35 30 30 30   # "127.0.0.1:5000"
		00 00 00 00                 # consumer_groups_count 0
`
	respHexClientWS = `
		06 00 00 00                 # client_id 6
		00 00 00 00                 # user_id 0 (root)
		04                          # transport WebSocket
		0a 00 00 00 5b 3a 3a 31 5d 3a 38 30 39 32               # "[::1]:8092"
		01 00 00 00                 # consumer_groups_count 1
`
	respHexGroupInfo = `
		01 00 00 00  02 00 00 00  03 00 00 00   # stream 1, topic 2, group 3
`

	// 7.11.
	respHexUserRoot = `
		00 00 00 00                 # id 0
		01 00 00 00 00 00 00 00     # created_at 1
		01                          # status active
		04 69 67 67 79              # username "iggy"
		00 00 00 00                 # options_len 0
`
	respHexUserBob = `
		01 00 00 00                 # id 1
		02 00 00 00 00 00 00 00     # created_at 2
		02                          # status inactive
		03 62 6f 62                 # username "bob"
		00 00 00 00                 # options_len 0
`

	// 9.4: the example permission block, 32 bytes, behind 01 and its length.
	respHexPerm94 = `
		01 20 00 00 00                  # has permissions, perm_len 32
		00 01 00 00 00 00 00 00 01 00   # global flags
		01                              # has_streams
		03 00 00 00                     # stream_id = 3
		00 01 00 00 00 00               # stream flags: read_stream
		01                              # has_topics
		00 00 00 00                     # topic_id = 0
		00 00 00 01                     # topic flags: send_messages
		00                              # has_next_topic = 0
		00                              # has_next_stream = 0
`

	// 7.14: every field distinct so a swapped field shows.
	respHexStats = `
		10 00 00 00                 # process_id 16
		00 00 c0 3f                 # cpu_usage 1.5
		00 00 48 42                 # total_cpu_usage 50.0
		01 00 00 00 00 00 00 00     # memory_usage 1
		02 00 00 00 00 00 00 00     # total_memory 2
		03 00 00 00 00 00 00 00     # available_memory 3
		04 00 00 00 00 00 00 00     # run_time 4
		05 00 00 00 00 00 00 00     # start_time 5
		06 00 00 00 00 00 00 00     # read_bytes 6
		07 00 00 00 00 00 00 00     # written_bytes 7
		08 00 00 00 00 00 00 00     # messages_size_bytes 8
		09 00 00 00                 # streams_count 9
		0a 00 00 00                 # topics_count 10
		0b 00 00 00                 # partitions_count 11
		0c 00 00 00                 # segments_count 12
		0d 00 00 00 00 00 00 00     # messages_count 13
		0e 00 00 00                 # clients_count 14
		0f 00 00 00                 # consumer_groups_count 15
		01 00 00 00 68              # hostname "h"          (offset 108)
		00 00 00 00                 # os_name ""
		01 00 00 00 76              # os_version "v"
		01 00 00 00 6b              # kernel_version "k"
		05 00 00 00 30 2e 39 2e 30  # iggy_server_version "0.9.0"
		28 23 00 00                 # iggy_server_semver 9000
		01 00 00 00                 # cache_metrics_count 1
		01 00 00 00  02 00 00 00  03 00 00 00   # stream 1, topic 2, partition 3
		04 00 00 00 00 00 00 00     # hits 4
		05 00 00 00 00 00 00 00     # misses 5
		00 00 00 3f                 # hit_ratio 0.5
		08 00 00 00                 # threads_count 8
		00 10 00 00 00 00 00 00     # free_disk_space 4096
		00 20 00 00 00 00 00 00     # total_disk_space 8192
`

	// 7.15: the reference's single-node roster.
	respHexCluster = `
		0b 00 00 00 73 69 6e 67 6c 65 2d 6e 6f 64 65   # name "single-node"
		01 00 00 00                                     # nodes_count 1
		09 00 00 00 69 67 67 79 2d 6e 6f 64 65          # node name "iggy-node"
		09 00 00 00 31 32 37 2e 30 2e 30 2e 31          # ip "127.0.0.1"
		9a 1f                       # tcp_port 8090
		90 1f                       # quic_port 8080
		b8 0b                       # http_port 3000
		9c 1f                       # websocket_port 8092
		00                          # role Leader
		00                          # status Healthy
`
	respHexNodeFollower = `
		01 00 00 00 62              # name "b"
		00 00 00 00                 # ip ""
		01 00  00 00  00 00  00 00  # tcp 1, quic/http/ws disabled
		01                          # role Follower
		04                          # status Maintenance
`

	// 7.16: one descriptor with a default and one without.
	respHexDescriptorFsync = `
		0d 65 6e 66 6f 72 63 65 5f 66 73 79 6e 63   # key "enforce_fsync"
		03                          # kind Bool
		01 00 00 00 00              # default_len 1, false
		03 00 00 00 6f 6e 2e        # description "on."
`
	respHexDescriptorNoDefault = `
		01 78                       # key "x"
		01                          # kind Raw
		00 00 00 00                 # default_len 0: no default
		00 00 00 00                 # description ""
`
)

var respTMicros = uint64(1_700_000_000_000_000)

var (
	respStreamS1 = StreamResponse{CreatedAt: respTMicros, Name: "s1"}

	respStreamOrders = StreamResponse{ID: 5, CreatedAt: 1, TopicsCount: 2, SizeBytes: 16, MessagesCount: 3,
		Name: "orders", Options: Options{{Key: "a", Kind: KindUint8, Value: []byte{7}}, {Key: "b", Kind: KindString, Value: []byte("x")}}}

	respTopicT = TopicHeader{ID: 1, CreatedAt: 2, PartitionsCount: 1, MessageExpiry: math.MaxUint64,
		CompressionAlgorithm: 1, MaxTopicSize: math.MaxUint64, SizeBytes: 256, MessagesCount: 3, Name: "t",
		ExplicitOptions: Options{{Key: OptEnforceFsync, Kind: KindBool, Value: []byte{1}}},
		DerivedOptions:  Options{{Key: OptCompressionAlgorithm, Kind: KindString, Value: []byte("none")}}}

	respPartition0 = PartitionResponse{ID: 0, CreatedAt: 2, SegmentsCount: 1, CurrentOffset: 9, SizeBytes: 0x1234, MessagesCount: 10}
	respPartition1 = PartitionResponse{ID: 1, CreatedAt: 2}

	respGroupG1 = ConsumerGroupResponse{ID: 2, PartitionsCount: 3, MembersCount: 1, Name: "g1"}
	respGroupG2 = ConsumerGroupResponse{ID: 3, PartitionsCount: 3, Name: "g2"}
	respMember0 = ConsumerGroupMember{ID: 0, Partitions: []uint32{0, 2}}

	respClientAnon = ClientResponse{ClientID: 5, UserID: UserIDNone, Transport: TransportTCP, Address: "127.0.0.1:5000"}
	respClientWS   = ClientResponse{ClientID: 6, UserID: 0, Transport: TransportWebSocket, Address: "[::1]:8092", ConsumerGroupsCount: 1}

	respUserRoot = UserResponse{ID: 0, CreatedAt: 1, Status: UserActive, Username: "iggy"}
	respUserBob  = UserResponse{ID: 1, CreatedAt: 2, Status: UserInactive, Username: "bob"}

	respClusterSingle = ClusterMetadata{Name: "single-node", Nodes: []ClusterNode{{Name: "iggy-node", IP: "127.0.0.1",
		TCPPort: 8090, QUICPort: 8080, HTTPPort: 3000, WebSocketPort: 8092, Role: RoleLeader, Status: NodeHealthy}}}
)

// respPerm94 is the permission set of client-plane.md 9.4.
func respPerm94() *Permissions {
	return &Permissions{
		Global: GlobalPermissions{ReadServers: true, PollMessages: true},
		Streams: map[uint32]StreamPermissions{3: {ReadStream: true,
			Topics: map[uint32]TopicPermissions{0: {SendMessages: true}}}},
	}
}

type respVector struct {
	name string
	hex  string
	want Body // a pointer to the expected value
	// boundaries are prefix lengths that still decode (element boundaries
	// of lists that run to the end of the body).
	boundaries []int
	// trailingOK is set where the spec says trailing bytes are ignored.
	trailingOK bool
}

func respVectors() []respVector {
	return []respVector{
		{name: "StreamResponse/17.6", hex: respHexStreamS1, want: &respStreamS1},
		{name: "StreamResponse/options", hex: respHexStreamOrders, want: &respStreamOrders},
		{name: "StreamDetails/17.6 no topics", hex: respHexStreamS1, want: &StreamDetails{StreamResponse: respStreamS1}},
		{name: "StreamDetails/one topic", hex: respHexStreamWithOneTopic + respHexTopicHead + "01 00 00 00" + respHexTopicTail,
			want: &StreamDetails{StreamResponse: StreamResponse{ID: 1, CreatedAt: 2, TopicsCount: 1, Name: "s"},
				Topics: []TopicHeader{respTopicT}}},
		{name: "Streams/empty", hex: "", want: &Streams{}},
		{name: "Streams/two", hex: respHexStreamS1 + respHexStreamOrders, want: &Streams{respStreamS1, respStreamOrders},
			boundaries: []int{39}},
		{name: "TopicHeader", hex: respHexTopicHead + "01 00 00 00" + respHexTopicTail, want: &respTopicT},
		{name: "PartitionResponse", hex: respHexPartition0, want: &respPartition0},
		{name: "TopicDetails/two partitions", hex: respHexTopicHead + "02 00 00 00" + respHexTopicTail + respHexPartition0 + respHexPartition1,
			want: &TopicDetails{TopicHeader: respWithPartitions(respTopicT, 2), Partitions: []PartitionResponse{respPartition0, respPartition1}}},
		{name: "TopicDetails/no partitions", hex: respHexTopicHead + "00 00 00 00" + respHexTopicTail,
			want: &TopicDetails{TopicHeader: respWithPartitions(respTopicT, 0)}},
		{name: "Topics/unknown stream", hex: "00 00 00 00", want: &Topics{}},
		{name: "Topics/one", hex: "01 00 00 00" + respHexTopicHead + "01 00 00 00" + respHexTopicTail, want: &Topics{respTopicT}},
		{name: "ConsumerGroupResponse", hex: respHexGroupG1, want: &respGroupG1},
		{name: "ConsumerGroupMember", hex: respHexMember0, want: &respMember0},
		{name: "ConsumerGroupMember/no partitions", hex: "07 00 00 00  00 00 00 00", want: &ConsumerGroupMember{ID: 7}},
		{name: "ConsumerGroupDetails/one member", hex: respHexGroupG1 + respHexMember0,
			want: &ConsumerGroupDetails{ConsumerGroupResponse: respGroupG1, Members: []ConsumerGroupMember{respMember0}}},
		{name: "ConsumerGroupDetails/created", hex: respHexGroupG2, want: &ConsumerGroupDetails{ConsumerGroupResponse: respGroupG2}},
		{name: "ConsumerGroups/empty", hex: "", want: &ConsumerGroups{}},
		{name: "ConsumerGroups/two", hex: respHexGroupG1 + respHexGroupG2, want: &ConsumerGroups{respGroupG1, respGroupG2},
			boundaries: []int{15}},
		{name: "ConsumerOffset", hex: `
			01 00 00 00                 # partition_id 1
			64 00 00 00 00 00 00 00     # current_offset 100
			2a 00 00 00 00 00 00 00     # stored_offset 42
`,
			want: &ConsumerOffset{PartitionID: 1, CurrentOffset: 100, StoredOffset: 42}},
		{name: "Assignment/two", hex: `
			07 00 00 00 00 00 00 00     # generation 7
			02 00 00 00                 # partitions_count 2
			01 00 00 00  03 00 00 00    # partitions 1, 3
`,
			want: &Assignment{Generation: 7, Partitions: []uint32{1, 3}}},
		{name: "Assignment/member without partitions", hex: "09 00 00 00 00 00 00 00  00 00 00 00",
			want: &Assignment{Generation: 9}},
		{name: "ClientResponse", hex: respHexClientAnon, want: &respClientAnon},
		{name: "ConsumerGroupInfo", hex: respHexGroupInfo, want: &ConsumerGroupInfo{StreamID: 1, TopicID: 2, GroupID: 3}},
		{name: "ClientDetails/one group", hex: respHexClientWS + respHexGroupInfo, want: &ClientDetails{ClientResponse: respClientWS,
			ConsumerGroups: []ConsumerGroupInfo{{StreamID: 1, TopicID: 2, GroupID: 3}}}},
		{name: "ClientDetails/anonymous", hex: respHexClientAnon, want: &ClientDetails{ClientResponse: respClientAnon}},
		{name: "Clients/empty", hex: "", want: &Clients{}},
		{name: "Clients/two", hex: respHexClientAnon + respHexClientWS, want: &Clients{respClientAnon, respClientWS},
			boundaries: []int{31}},
		{name: "UserResponse", hex: respHexUserRoot, want: &respUserRoot},
		{name: "UserDetails/no permission set", hex: respHexUserRoot + "00 00 00 00",
			want: &UserDetails{UserResponse: respUserRoot}},
		{name: "UserDetails/9.4 permissions", hex: respHexUserBob + respHexPerm94,
			want: &UserDetails{UserResponse: respUserBob, Permissions: respPerm94()}},
		{name: "UserDetails/empty set is still a set", hex: respHexUserBob + `
			01 0b 00 00 00                    # has permissions, perm_len 11
			00 00 00 00 00 00 00 00 00 00 00  # no flags, no streams
`,
			want: &UserDetails{UserResponse: respUserBob, Permissions: &Permissions{}}},
		{name: "Users/empty", hex: "", want: &Users{}},
		{name: "Users/two", hex: respHexUserRoot + respHexUserBob, want: &Users{respUserRoot, respUserBob},
			boundaries: []int{22}},
		{name: "LoginRegisterResponse", hex: `
			00 00 00 00                 # user_id 0
			01 00 00 00 00 00 00 00     # session 1
			00 2c 00 00                 # server_protocol_version 0.11.0
			0c 30 2e 39 2e 30 2d 65 64 67 65 2e 35   # "0.9.0-edge.5"
`,
			want: &LoginRegisterResponse{UserID: 0, Session: 1, ServerProtocolVersion: Pack(0, 11, 0), ServerVersion: "0.9.0-edge.5"}},
		{name: "PatEntry", hex: "02 63 69  00 00 00 00 00 00 00 00", want: &PatEntry{Name: "ci"}},
		{name: "PersonalAccessTokens/empty", hex: "", want: &PersonalAccessTokens{}},
		{name: "PersonalAccessTokens/two", hex: `
			02 63 69  00 00 00 00 00 00 00 00   # "ci", never expires
			03 62 6f 74  00 40 1e 18 24 0a 06 00 # "bot", expires at T
`,
			want:       &PersonalAccessTokens{{Name: "ci"}, {Name: "bot", ExpiryAt: respTMicros}},
			boundaries: []int{11}},
		{name: "RawToken", hex: "03 61 62 63", want: &RawToken{Token: "abc"}},
		{name: "Stats", hex: respHexStats, want: &Stats{ProcessID: 16, CPUUsage: 1.5, TotalCPUUsage: 50,
			MemoryUsage: 1, TotalMemory: 2, AvailableMemory: 3, RunTime: 4, StartTime: 5, ReadBytes: 6, WrittenBytes: 7,
			MessagesSizeBytes: 8, StreamsCount: 9, TopicsCount: 10, PartitionsCount: 11, SegmentsCount: 12,
			MessagesCount: 13, ClientsCount: 14, ConsumerGroupsCount: 15, Hostname: "h", OSVersion: "v",
			KernelVersion: "k", IggyServerVersion: "0.9.0", IggyServerSemver: 9000,
			CacheMetrics: []CacheMetric{{StreamID: 1, TopicID: 2, PartitionID: 3, Hits: 4, Misses: 5, HitRatio: 0.5}},
			ThreadsCount: 8, FreeDiskSpace: 4096, TotalDiskSpace: 8192}},
		{name: "CacheMetric", hex: `
			01 00 00 00  02 00 00 00  03 00 00 00   # stream 1, topic 2, partition 3
			04 00 00 00 00 00 00 00     # hits 4
			05 00 00 00 00 00 00 00     # misses 5
			00 00 80 3f                 # hit_ratio 1.0
`,
			want: &CacheMetric{StreamID: 1, TopicID: 2, PartitionID: 3, Hits: 4, Misses: 5, HitRatio: 1}},
		{name: "ClusterMetadata/single node", hex: respHexCluster, want: &respClusterSingle, trailingOK: true},
		{name: "ClusterMetadata/no nodes", hex: "00 00 00 00  00 00 00 00", want: &ClusterMetadata{}, trailingOK: true},
		{name: "ClusterNode", hex: respHexNodeFollower, want: &ClusterNode{Name: "b", TCPPort: 1, Role: RoleFollower, Status: NodeMaintenance}},
		{name: "OptionCatalog/empty", hex: "00 00 00 00", want: &OptionCatalog{}},
		{name: "OptionCatalog/two", hex: "02 00 00 00" + respHexDescriptorFsync + respHexDescriptorNoDefault,
			want: &OptionCatalog{{Key: OptEnforceFsync, Kind: KindBool, Default: []byte{0}, Description: "on."},
				{Key: "x", Kind: KindRaw}}},
		{name: "OptionDescriptor", hex: respHexDescriptorFsync,
			want: &OptionDescriptor{Key: OptEnforceFsync, Kind: KindBool, Default: []byte{0}, Description: "on."}},
	}
}

func respWithPartitions(t TopicHeader, n uint32) TopicHeader { t.PartitionsCount = n; return t }

// respNewLike returns a new zero value of want's type.
func respNewLike(want Body) Body { return reflect.New(reflect.TypeOf(want).Elem()).Interface().(Body) }

// respNormalize makes values comparable with DeepEqual: empty lists become nil
// (a decoded empty list is nil) and a permission set forgets its decoded
// order (it is not part of the value, only of AppendEcho).
func respNormalize(v Body) Body {
	switch x := v.(type) {
	case *UserDetails:
		if x.Permissions != nil {
			p := *x.Permissions
			p.order, p.topicOrder = nil, nil
			c := *x
			c.Permissions = &p
			return &c
		}
	}
	rv := reflect.ValueOf(v).Elem()
	if rv.Kind() == reflect.Slice && rv.Len() == 0 {
		return reflect.New(rv.Type()).Interface().(Body)
	}
	return v
}

func TestResponseVectors(t *testing.T) {
	for _, tc := range respVectors() {
		t.Run(tc.name, func(t *testing.T) {
			wire := respUnhex(tc.hex)
			if got := tc.want.AppendTo(nil); !bytes.Equal(got, wire) {
				t.Fatalf("encode:\n got %x\nwant %x", got, wire)
			}
			got := respNewLike(tc.want)
			if err := got.Decode(wire); err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(respNormalize(got), respNormalize(tc.want)) {
				t.Fatalf("decode:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestResponseTruncated(t *testing.T) {
	for _, tc := range respVectors() {
		t.Run(tc.name, func(t *testing.T) {
			wire := respUnhex(tc.hex)
			for n := 0; n < len(wire); n++ {
				if respContains(tc.boundaries, n) || (n == 0 && respListToEnd(tc.want)) {
					continue
				}
				err := respNewLike(tc.want).Decode(wire[:n])
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrMalformed", n, len(wire), err)
				}
			}
		})
	}
}

func TestResponseTrailingBytes(t *testing.T) {
	for _, tc := range respVectors() {
		t.Run(tc.name, func(t *testing.T) {
			wire := append(respUnhex(tc.hex), 0)
			err := respNewLike(tc.want).Decode(wire)
			if tc.trailingOK {
				if err != nil {
					t.Fatalf("trailing byte: %v, want it ignored (7.15)", err)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("trailing byte: err = %v, want ErrMalformed", err)
			}
		})
	}
}

// respListToEnd reports whether b is a list without a count, for which an
// empty body is the empty list.
func respListToEnd(b Body) bool {
	switch b.(type) {
	case *Streams, *ConsumerGroups, *Clients, *Users, *PersonalAccessTokens:
		return true
	}
	return false
}

func respContains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestCreateStreamReply decodes the whole 17.6 reply body: the result count
// then the StreamDetails payload.
func TestCreateStreamReply(t *testing.T) {
	body := respUnhex("00 00 00 00" + respHexStreamS1)
	payload, err := SplitResult(body)
	if err != nil {
		t.Fatal(err)
	}
	var got StreamDetails
	if err := got.Decode(payload); err != nil {
		t.Fatal(err)
	}
	if want := (StreamDetails{StreamResponse: respStreamS1}); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if out := AppendResultOK(nil); !bytes.Equal(got.AppendTo(out), body) {
		t.Fatalf("re-encoded reply differs")
	}
}

// TestResponseFixedSizes checks the sizes the spec states.
func TestResponseFixedSizes(t *testing.T) {
	sizes := []struct {
		name string
		body interface{ AppendTo([]byte) []byte }
		want int
	}{
		{"PartitionResponse 7.4", PartitionResponse{}, 40},
		{"ConsumerOffset 7.19", ConsumerOffset{}, 20},
		{"ConsumerGroupInfo 7.10", ConsumerGroupInfo{}, 12},
		{"CacheMetric 7.14", CacheMetric{}, 32},
		{"StreamResponse 33+N+4+O", StreamResponse{Name: "abc"}, 33 + 3 + 4},
		{"TopicHeader 50+N+4+E+4+D", TopicHeader{Name: "abc"}, 50 + 3 + 4 + 4},
		{"ConsumerGroupResponse 13+N", ConsumerGroupResponse{Name: "abc"}, 13 + 3},
		{"ConsumerGroupMember 8+4P", ConsumerGroupMember{Partitions: []uint32{1, 2}}, 8 + 8},
		{"ClientResponse 17+N", ClientResponse{Address: "abc"}, 17 + 3},
		{"UserResponse 14+N+4+O", UserResponse{Username: "abc"}, 14 + 3 + 4},
		{"LoginRegisterResponse 17+N", LoginRegisterResponse{ServerVersion: "abc"}, 17 + 3},
		{"PatEntry 1+N+8", PatEntry{Name: "abc"}, 1 + 3 + 8},
		{"ClusterNode 18+N+M", ClusterNode{Name: "ab", IP: "abc"}, 18 + 2 + 3},
		{"Assignment 12+4P", Assignment{}, 12},
	}
	for _, s := range sizes {
		if got := len(s.body.AppendTo(nil)); got != s.want {
			t.Errorf("%s: %d bytes, want %d", s.name, got, s.want)
		}
	}
	// 7.14: the numeric prefix is 108 bytes; the hostname's length follows it.
	stats := respUnhex(respHexStats)
	if got := stats[statsPrefixSize : statsPrefixSize+5]; !bytes.Equal(got, []byte{1, 0, 0, 0, 'h'}) {
		t.Fatalf("bytes at 108 = %x, want the hostname Str32", got)
	}
	empty := Stats{}.AppendTo(nil)
	if want := 108 + 5*4 + 4 + 4 + 4 + 8 + 8; len(empty) != want {
		t.Fatalf("empty stats = %d bytes, want %d", len(empty), want)
	}
}

// TestUserDetailsEcho: AppendTo is canonical (ascending ids, 9.3), AppendEcho
// keeps the decoded entry order for the CreateUser reply.
func TestUserDetailsEcho(t *testing.T) {
	const sentOrder = `
		01 23 00 00 00                  # has permissions, perm_len 35
		00 00 00 00 00 00 00 00 00 00   # global flags
		01                              # has_streams
		05 00 00 00  01 00 00 00 00 00  # stream 5: manage_stream
		00  01                          # no topics, next stream
		03 00 00 00  00 01 00 00 00 00  # stream 3: read_stream
		00  00                          # no topics, last
`
	const canonical = `
		01 23 00 00 00
		00 00 00 00 00 00 00 00 00 00
		01
		03 00 00 00  00 01 00 00 00 00
		00  01
		05 00 00 00  01 00 00 00 00 00
		00  00`
	var u UserDetails
	if err := u.Decode(respUnhex(respHexUserBob + sentOrder)); err != nil {
		t.Fatal(err)
	}
	if got, want := u.AppendEcho(nil), respUnhex(respHexUserBob+sentOrder); !bytes.Equal(got, want) {
		t.Fatalf("echo:\n got %x\nwant %x", got, want)
	}
	if got, want := u.AppendTo(nil), respUnhex(respHexUserBob+canonical); !bytes.Equal(got, want) {
		t.Fatalf("canonical:\n got %x\nwant %x", got, want)
	}
	// No permission set: both forms are the four zero bytes.
	none := UserDetails{UserResponse: respUserRoot}
	if got, want := none.AppendEcho(nil), respUnhex(respHexUserRoot+"00 00 00 00"); !bytes.Equal(got, want) {
		t.Fatalf("echo without set: got %x, want %x", got, want)
	}
}

// TestUserDetailsFlagByte: 7.11 says any nonzero first byte means a set
// follows; encoders write 01.
func TestUserDetailsFlagByte(t *testing.T) {
	in := respUnhex(respHexUserBob + "02 0b 00 00 00  00 00 00 00 00 00 00 00 00 00 00")
	var u UserDetails
	if err := u.Decode(in); err != nil {
		t.Fatal(err)
	}
	if u.Permissions == nil {
		t.Fatal("flag 02 decoded as no permission set")
	}
	if got := u.AppendTo(nil)[len(respUnhex(respHexUserBob))]; got != 1 {
		t.Fatalf("encoder wrote flag %#x, want 01", got)
	}
}

// respPatch returns a copy of the vector with the bytes at off replaced.
func respPatch(vector string, off int, b ...byte) []byte {
	out := respUnhex(vector)
	copy(out[off:], b)
	return out
}

// respSplice returns the vector's first off bytes followed by tail.
func respSplice(vector string, off int, tail string) []byte {
	return append(respUnhex(vector)[:off:off], respUnhex(tail)...)
}

func respJoin(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestResponseMalformed(t *testing.T) {
	nodes := func(count uint32, n int) []byte {
		return respJoin(respUnhex("00 00 00 00"), AppendU32(nil, count), make([]byte, 18*n))
	}
	topic1 := respHexTopicHead + "01 00 00 00" + respHexTopicTail
	// Offsets from client-plane.md 7: user status at 12; stream topics_count
	// at 12, name at 32, options_len at 35 (for "s1"); group members_count at
	// 8; client consumer_groups_count at 13+N; stats hostname at 108 and
	// cache_metrics_count at 140 in respHexStats; node role/status at 17/18 in
	// respHexNodeFollower and 53/54 in respHexCluster.
	cases := []struct {
		name string
		body Body
		in   []byte
	}{
		{"UserResponse status 0", new(UserResponse), respPatch(respHexUserRoot, 12, 0)},
		{"UserResponse status 3", new(UserResponse), respPatch(respHexUserRoot, 12, 3)},
		{"UserDetails status 255", new(UserDetails), respPatch(respHexUserRoot+"00 00 00 00", 12, 0xff)},
		{"Users one bad status fails the list", new(Users), respJoin(respUnhex(respHexUserRoot), respPatch(respHexUserBob, 12, 7))},
		{"UserDetails nonzero bytes after a 0 flag", new(UserDetails), respUnhex(respHexUserRoot + "00 01 00 00")},
		{"UserDetails perm_len larger than the block", new(UserDetails), respJoin(respUnhex(respHexUserRoot+"01 0c 00 00 00"), make([]byte, 12))},
		{"UserDetails perm_len past the end", new(UserDetails), respUnhex(respHexUserRoot + "01 ff ff ff ff 00")},
		{"UserDetails has_streams set but the block ends", new(UserDetails), respUnhex(respHexUserRoot + "01 0b 00 00 00  00 00 00 00 00 00 00 00 00 00 01")},
		{"ClusterNode role 2", new(ClusterNode), respPatch(respHexNodeFollower, 17, 2)},
		{"ClusterNode status 5", new(ClusterNode), respPatch(respHexNodeFollower, 18, 5)},
		{"ClusterMetadata role 2", new(ClusterMetadata), respPatch(respHexCluster, 53, 2)},
		{"ClusterMetadata status 5", new(ClusterMetadata), respPatch(respHexCluster, 54, 5)},
		{"ClusterMetadata nodes_count 65", new(ClusterMetadata), nodes(65, 65)},
		{"ClusterMetadata nodes_count 64 without nodes", new(ClusterMetadata), nodes(64, 0)},
		{"ClusterMetadata name length past the end", new(ClusterMetadata), respUnhex("ff ff ff ff 00 00 00 00")},
		{"Topics count past the input", new(Topics), respUnhex("ff ff ff ff" + topic1)},
		{"Topics count 2 with one topic", new(Topics), respUnhex("02 00 00 00" + topic1)},
		{"StreamDetails topics_count 1 without topics", new(StreamDetails), respUnhex(respHexStreamWithOneTopic)},
		{"StreamDetails topics_count huge", new(StreamDetails), respPatch(respHexStreamWithOneTopic+topic1, 12, 0xff, 0xff, 0xff, 0xff)},
		{"TopicDetails partitions_count huge", new(TopicDetails), respUnhex(respHexTopicHead + "ff ff ff 7f" + respHexTopicTail + respHexPartition0)},
		{"ConsumerGroupDetails members_count huge", new(ConsumerGroupDetails), respPatch(respHexGroupG1+respHexMember0, 8, 0xff, 0xff, 0xff, 0xff)},
		{"ConsumerGroupMember partitions_count huge", new(ConsumerGroupMember), respUnhex("00 00 00 00  ff ff ff ff  00 00 00 00")},
		{"ClientDetails consumer_groups_count huge", new(ClientDetails), respPatch(respHexClientWS+respHexGroupInfo, 23, 0xff, 0xff, 0xff, 0x3f)},
		{"ClientResponse address length huge", new(ClientResponse), respUnhex("05 00 00 00 ff ff ff ff 01 ff ff ff ff 00 00 00 00")},
		{"Assignment partitions_count huge", new(Assignment), respUnhex("07 00 00 00 00 00 00 00  ff ff ff ff  01 00 00 00")},
		{"OptionCatalog count huge", new(OptionCatalog), respUnhex("ff ff ff ff" + respHexDescriptorFsync)},
		{"OptionCatalog count 2 with one", new(OptionCatalog), respUnhex("02 00 00 00" + respHexDescriptorFsync)},
		{"OptionCatalog empty body", new(OptionCatalog), nil},
		{"OptionDescriptor default_len huge", new(OptionDescriptor), respUnhex("01 78 01 ff ff ff ff 00 00 00 00")},
		{"OptionDescriptor empty key", new(OptionDescriptor), respUnhex("00 01 00 00 00 00 00 00 00 00")},
		{"Stats cache_metrics_count huge", new(Stats), respPatch(respHexStats, 140, 0xff, 0xff, 0xff, 0xff)},
		{"Stats hostname length huge", new(Stats), respPatch(respHexStats, 108, 0xff, 0xff, 0xff, 0xff)},
		{"StreamResponse empty name", new(StreamResponse), respSplice(respHexStreamS1, 32, "00  00 00 00 00")},
		{"StreamResponse name not UTF-8", new(StreamResponse), respPatch(respHexStreamS1, 33, 0xc3, 0x28)},
		{"StreamResponse options_len past the end", new(StreamResponse), respPatch(respHexStreamS1, 35, 1)},
		{"StreamResponse options with an odd field count", new(StreamResponse), respSplice(respHexStreamS1, 35, "06 00 00 00  02 01 00 00 00 61")},
		{"StreamResponse options key not a String", new(StreamResponse), respSplice(respHexStreamS1, 35, "0c 00 00 00  01 01 00 00 00 61  09 01 00 00 00 07")},
		{"StreamResponse duplicate option keys", new(StreamResponse), respSplice(respHexStreamS1, 35,
			"18 00 00 00  02 01 00 00 00 61  09 01 00 00 00 07  02 01 00 00 00 61  09 01 00 00 00 07")},
		{"TopicHeader derived value of length 0", new(TopicHeader), respUnhex(respHexTopicHead + "01 00 00 00" +
			strings.Replace(respHexTopicTail, "02 04 00 00 00 6e 6f 6e 65", "02 00 00 00 00 6e 6f 6e 65", 1))},
		{"Streams partial element", new(Streams), respUnhex(respHexStreamS1 + "00")},
		{"PersonalAccessTokens empty name", new(PersonalAccessTokens), respUnhex("00 00 00 00 00 00 00 00 00")},
		{"RawToken empty", new(RawToken), nil},
		{"LoginRegisterResponse empty version", new(LoginRegisterResponse), respUnhex("00 00 00 00 01 00 00 00 00 00 00 00 00 2c 00 00 00")},
		{"StreamDetails empty body", new(StreamDetails), nil},
		{"Assignment empty body (non-member)", new(Assignment), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.body.Decode(tc.in); !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
	// The limits are exact: 64 nodes decode.
	var c ClusterMetadata
	if err := c.Decode(nodes(64, 64)); err != nil || len(c.Nodes) != 64 {
		t.Fatalf("64 nodes: %d nodes, err %v", len(c.Nodes), err)
	}
}

// TestResponseDecodeFailureKeepsReceiver: a failed Decode does not leave a
// half-decoded value behind.
func TestResponseDecodeFailureKeepsReceiver(t *testing.T) {
	s := respStreamOrders
	if err := s.Decode(respUnhex(respHexStreamS1)[:10]); err == nil {
		t.Fatal("truncated body decoded")
	}
	if !reflect.DeepEqual(s, respStreamOrders) {
		t.Fatalf("receiver changed to %+v", s)
	}
	list := Users{respUserRoot}
	if err := list.Decode(respUnhex(respHexUserBob)[:5]); err == nil {
		t.Fatal("truncated list decoded")
	}
	if len(list) != 1 {
		t.Fatalf("receiver changed to %+v", list)
	}
}

// TestDecodedValuesDoNotAliasInput: decoded byte fields are copies.
func TestDecodedValuesDoNotAliasInput(t *testing.T) {
	in := respUnhex(respHexDescriptorFsync)
	var d OptionDescriptor
	if err := d.Decode(in); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = 0xAA
	}
	if !bytes.Equal(d.Default, []byte{0}) || d.Key != OptEnforceFsync {
		t.Fatalf("decoded descriptor changed with its input: %+v", d)
	}
}

// TestResponseOptionsSortedOnEncode: response blocks are emitted in
// ascending key order (10.3) whatever order the value holds.
func TestResponseOptionsSortedOnEncode(t *testing.T) {
	s := respStreamOrders
	s.Options = Options{respStreamOrders.Options[1], respStreamOrders.Options[0]}
	if got, want := s.AppendTo(nil), respUnhex(respHexStreamOrders); !bytes.Equal(got, want) {
		t.Fatalf("got %x\nwant %x", got, want)
	}
}

// TestDetailsCountFromList: a detail type writes its count from its list.
func TestDetailsCountFromList(t *testing.T) {
	d := StreamDetails{StreamResponse: StreamResponse{ID: 1, CreatedAt: 2, TopicsCount: 9, Name: "s"}, Topics: []TopicHeader{respTopicT}}
	if got, want := d.AppendTo(nil), respUnhex(respHexStreamWithOneTopic+respHexTopicHead+"01 00 00 00"+respHexTopicTail); !bytes.Equal(got, want) {
		t.Fatalf("StreamDetails:\n got %x\nwant %x", got, want)
	}
	c := ClientDetails{ClientResponse: respClientWS}
	c.ConsumerGroupsCount = 5
	if got, want := c.AppendTo(nil), respUnhex(strings.Replace(respHexClientWS, "01 00 00 00                 # consumer_groups_count", "00 00 00 00 #", 1)); !bytes.Equal(got, want) {
		t.Fatalf("ClientDetails:\n got %x\nwant %x", got, want)
	}
}

func TestResponseEnumStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{TransportTCP.String(), "tcp"}, {TransportWebSocket.String(), "websocket"}, {TransportKind(9).String(), "transport(9)"},
		{UserActive.String(), "active"}, {UserInactive.String(), "inactive"}, {UserStatus(0).String(), "status(0)"},
		{RoleLeader.String(), "leader"}, {RoleFollower.String(), "follower"}, {NodeRole(2).String(), "role(2)"},
		{NodeHealthy.String(), "healthy"}, {NodeMaintenance.String(), "maintenance"}, {NodeStatus(6).String(), "status(6)"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestTopicOptionCatalog checks the catalog against the table of 10.4:
// order, canonical kinds and default bytes, and a non-empty description.
func TestTopicOptionCatalog(t *testing.T) {
	// [key: Name][kind u8][default_len u32][default], everything before the
	// description, written from the 10.4 table.
	wantPrefixes := [][]byte{
		respUnhex(`15 63 6f 6d 70 72 65 73 73 69 6f 6e 5f 61 6c 67 6f 72 69 74 68 6d   # "compression_algorithm"
			02                      # String
			04 00 00 00 6e 6f 6e 65 # "none"
`),
		respUnhex(`0e 6d 65 73 73 61 67 65 5f 65 78 70 69 72 79   # "message_expiry"
			0c                      # Uint64
			08 00 00 00 ff ff ff ff ff ff ff ff   # never
`),
		respJoin(respUnhex("0e"), []byte(OptMaxTopicSize), respUnhex("0c 08 00 00 00 ff ff ff ff ff ff ff ff")),
		respJoin(respUnhex("0c"), []byte("segment_size"), respUnhex("0c 08 00 00 00 00 00 00 40 00 00 00 00")),
		respJoin(respUnhex("0d"), []byte("enforce_fsync"), respUnhex("03 01 00 00 00 00")),
		respJoin(respUnhex("19"), []byte("messages_required_to_save"), respUnhex("0b 04 00 00 00 00 04 00 00")),
		respJoin(respUnhex("21"), []byte("size_of_messages_required_to_save"), respUnhex("0c 08 00 00 00 00 00 10 00 00 00 00 00")),
		respJoin(respUnhex("14"), []byte("preallocate_segments"), respUnhex("03 01 00 00 00 00")),
	}
	catalog := TopicOptionCatalog()
	if len(catalog) != len(wantPrefixes) {
		t.Fatalf("%d entries, want %d", len(catalog), len(wantPrefixes))
	}
	enc := catalog.AppendTo(nil)
	if !bytes.Equal(enc[:4], []byte{8, 0, 0, 0}) {
		t.Fatalf("count = %x, want 08 00 00 00", enc[:4])
	}
	rest := enc[4:]
	for i, want := range wantPrefixes {
		if !bytes.HasPrefix(rest, want) {
			t.Fatalf("entry %d (%s):\n got %x\nwant %x...", i+1, catalog[i].Key, rest[:min(len(rest), len(want))], want)
		}
		rest = rest[len(want):]
		descLen := int(rest[0]) | int(rest[1])<<8 | int(rest[2])<<16 | int(rest[3])<<24
		desc := string(rest[4 : 4+descLen])
		if desc != catalog[i].Description || !strings.HasSuffix(desc, ".") || strings.Count(desc, ". ") != 0 {
			t.Fatalf("entry %d: description %q is not one sentence", i+1, desc)
		}
		if !strings.ContainsAny(desc, "0123456789") {
			t.Fatalf("entry %d: description %q states no bound", i+1, desc)
		}
		rest = rest[4+descLen:]
	}
	if len(rest) != 0 {
		t.Fatalf("%d bytes after the last entry", len(rest))
	}
	var back OptionCatalog
	if err := back.Decode(enc); err != nil || !reflect.DeepEqual(back, catalog) {
		t.Fatalf("round trip: %v", err)
	}
	// Every call is a fresh copy.
	catalog[0].Default[0] = 'X'
	if TopicOptionCatalog()[0].Default[0] != 'n' {
		t.Fatal("TopicOptionCatalog shares its default bytes between calls")
	}
}

// ClusterMetadata.LastHeardUs: iggynode's opt-in extension round-trips,
// and a roster without it, or with trailing bytes of another shape, decodes
// as the plain roster (7.15: trailing bytes are ignored).
func TestClusterMetadataLastHeardExtension(t *testing.T) {
	md := ClusterMetadata{Name: "c", Nodes: []ClusterNode{{Name: "a", IP: "x"}, {Name: "b", IP: "y", Status: NodeUnreachable}},
		LastHeardUs: []uint64{7, 0}}
	var got ClusterMetadata
	if err := got.Decode(md.AppendTo(nil)); err != nil || !reflect.DeepEqual(got, md) {
		t.Fatalf("round trip %+v, %v", got, err)
	}
	plain := md
	plain.LastHeardUs = nil
	for _, body := range [][]byte{plain.AppendTo(nil), append(plain.AppendTo(nil), 1, 2, 3, 4, 5)} {
		got = ClusterMetadata{}
		if err := got.Decode(body); err != nil || got.LastHeardUs != nil || len(got.Nodes) != 2 {
			t.Fatalf("plain roster %+v, %v", got, err)
		}
	}
	var req GetClusterMetadata
	if b := (GetClusterMetadata{LastHeard: true}).AppendTo(nil); req.Decode(b) != nil || !req.LastHeard || len(b) != 1 {
		t.Fatalf("request %x decodes as %+v", b, req)
	}
	if b := (GetClusterMetadata{}).AppendTo(nil); len(b) != 0 {
		t.Fatalf("plain request body %x, want empty", b)
	}
}
