package metadata

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"iggynode/wire"
)

func u64opt(key string, v uint64) wire.KeyValue { return opt(key, wire.KindUint64, u64le(v)) }

// client-plane.md 8.7.2: the pre-consensus checks of CreateTopic and the
// order in which they answer.
func TestCreateTopicPreConsensusOrder(t *testing.T) {
	const GiB, MiB = 1 << 30, 1 << 20
	cases := []struct {
		name       string
		partitions uint32
		opts       wire.Options
		want       wire.ErrorCode
	}{
		{"unknown key beats a bad value", 1, wire.Options{u64opt("segment_size", 3), str("retention", "x")}, wire.ErrUnsupportedOptionKey},
		{"partitions_count is not an option", 1, wire.Options{opt("partitions_count", wire.KindUint32, u32le(1))}, wire.ErrUnsupportedOptionKey},
		{"key is case-sensitive", 1, wire.Options{str("Compression_Algorithm", "none")}, wire.ErrUnsupportedOptionKey},
		{"wrong kind", 1, wire.Options{opt("message_expiry", wire.KindBool, []byte{1})}, wire.ErrInvalidOptionValue},
		{"bad value beats partitions", 2000, wire.Options{str("compression_algorithm", "zstd")}, wire.ErrInvalidOptionValue},
		{"segment below 1 MiB", 1, wire.Options{u64opt("segment_size", MiB-512)}, wire.ErrInvalidOptionValue},
		{"segment above 1 GiB", 1, wire.Options{u64opt("segment_size", GiB+512)}, wire.ErrInvalidOptionValue},
		{"segment not a multiple of 512", 1, wire.Options{u64opt("segment_size", MiB+1)}, wire.ErrInvalidOptionValue},
		{"preallocation over 64 GiB", 65, wire.Options{opt("preallocate_segments", wire.KindBool, []byte{1})}, wire.ErrInvalidOptionValue},
		{"preallocation beats partitions", 1001, wire.Options{str("preallocate_segments", "true")}, wire.ErrInvalidOptionValue},
		{"too many partitions", 1001, nil, wire.ErrTooManyPartitions},
		{"partitions beat the size floor", 1001, wire.Options{u64opt("max_topic_size", 1)}, wire.ErrTooManyPartitions},
		{"max size below default segment", 1, wire.Options{u64opt("max_topic_size", GiB-1)}, wire.ErrInvalidTopicSize},
		{"max size below explicit segment", 1, wire.Options{str("max_topic_size", "1 MiB"), str("segment_size", "2 MiB")}, wire.ErrInvalidTopicSize},
		{"max size equal to segment", 1, wire.Options{str("max_topic_size", "2MiB"), str("segment_size", "2 MiB")}, 0},
		{"max size sentinel 0", 1, wire.Options{u64opt("max_topic_size", 0)}, 0},
		{"max size unlimited", 1, wire.Options{u64opt("max_topic_size", math.MaxUint64)}, 0},
		{"preallocation at exactly 64 GiB", 64, wire.Options{opt("preallocate_segments", wire.KindBool, []byte{1})}, 0},
		{"zero partitions", 0, nil, 0},
		{"thousand partitions", 1000, nil, 0},
	}
	for _, c := range cases {
		_, got := PlanCreateTopic(c.opts, c.partitions)
		if got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
	// Through Admit, and the undecodable body first of all.
	h := newHarness(t)
	h.createStream("s")
	h.denied(0, wire.OpCreateTopic, hx("01 04 00000000 05000000"), wire.ErrInvalidCommand)
	body := wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 1, Name: "t"}.AppendTo(nil)
	h.denied(0, wire.OpCreateTopic, append(body, 0x02), wire.ErrInvalidCommand) // options block does not tile
	h.denied(0, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 1001, Name: "t"}.AppendTo(nil), wire.ErrTooManyPartitions)
	h.denied(0, wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(7), Name: "t", Options: wire.Options{str("x", "y")}}.AppendTo(nil), wire.ErrUnsupportedOptionKey)
	// Streams take no options: S 4041.
	h.denied(0, wire.OpCreateStream, wire.CreateStream{Name: "x", Options: wire.Options{str("a", "b")}}.AppendTo(nil), wire.ErrUnsupportedOptionKey)
	h.denied(0, wire.OpUpdateStream, wire.UpdateStream{Stream: wire.ID(0), Name: "x", Options: wire.Options{str("a", "b")}}.AppendTo(nil), wire.ErrUnsupportedOptionKey)
}

// client-plane.md 10.4: accepted kinds per key, sentinels, and the
// canonical re-encoding of a present value.
func TestTopicOptionKinds(t *testing.T) {
	const absent = "absent"
	const bad = "bad"
	cases := []struct {
		in   wire.KeyValue
		want string // hex of the canonical value, or absent / bad
		kind wire.HeaderKind
	}{
		{str("compression_algorithm", "none"), "6e6f6e65", wire.KindString},
		{str("compression_algorithm", "GZip"), "677a6970", wire.KindString},
		{opt("compression_algorithm", wire.KindUint8, []byte{1}), "6e6f6e65", wire.KindString},
		{opt("compression_algorithm", wire.KindUint8, []byte{2}), "677a6970", wire.KindString},
		{opt("compression_algorithm", wire.KindUint8, []byte{3}), bad, 0},
		{opt("compression_algorithm", wire.KindUint32, u32le(2)), bad, 0},
		{str("compression_algorithm", "lz4"), bad, 0},

		{u64opt("message_expiry", 0), absent, 0},
		{u64opt("message_expiry", 5), "0500000000000000", wire.KindUint64},
		{u64opt("message_expiry", math.MaxUint64), "ffffffffffffffff", wire.KindUint64},
		{opt("message_expiry", wire.KindUint64, u32le(5)), bad, 0},
		{opt("message_expiry", wire.KindUint32, u32le(5)), bad, 0},
		{str("message_expiry", "none"), "ffffffffffffffff", wire.KindUint64},
		{str("message_expiry", "unlimited"), "ffffffffffffffff", wire.KindUint64},
		{str("message_expiry", "never_expire"), "ffffffffffffffff", wire.KindUint64},
		{str("message_expiry", "default"), absent, 0},
		{str("message_expiry", "server_default"), absent, 0},
		{str("message_expiry", "7 days"), "00a0e3d08c000000", wire.KindUint64}, // 604800 s
		{str("message_expiry", "1h 30m"), "0076dd4101000000", wire.KindUint64}, // 5400 s
		{str("message_expiry", "500ms"), "20a1070000000000", wire.KindUint64},  // 500000 µs
		{str("message_expiry", "4294967295s"), "c0bdf0ff3f420f00", wire.KindUint64},
		{str("message_expiry", "4294967296s"), bad, 0},
		{str("message_expiry", "7"), bad, 0},
		{str("message_expiry", "forever"), bad, 0},

		{u64opt("max_topic_size", 0), absent, 0},
		{u64opt("max_topic_size", math.MaxUint64), "ffffffffffffffff", wire.KindUint64},
		{str("max_topic_size", "unlimited"), "ffffffffffffffff", wire.KindUint64},
		{str("max_topic_size", "0"), absent, 0},
		{str("max_topic_size", "none"), absent, 0},
		{str("max_topic_size", "server_default"), absent, 0},
		{str("max_topic_size", "2 GiB"), "0000008000000000", wire.KindUint64},
		{str("max_topic_size", "2GB"), "0094357700000000", wire.KindUint64},
		{str("max_topic_size", "big"), bad, 0},

		{u64opt("segment_size", 0), absent, 0},
		{str("segment_size", "0"), absent, 0},
		{str("segment_size", "128MiB"), "0000000800000000", wire.KindUint64},
		{str("segment_size", "1048576"), "0000100000000000", wire.KindUint64},
		{u64opt("segment_size", 1<<30), "0000004000000000", wire.KindUint64},

		{opt("enforce_fsync", wire.KindBool, []byte{0}), "00", wire.KindBool},
		{opt("enforce_fsync", wire.KindBool, []byte{1}), "01", wire.KindBool},
		{opt("enforce_fsync", wire.KindBool, []byte{2}), bad, 0},
		{opt("enforce_fsync", wire.KindBool, []byte{1, 0}), bad, 0},
		{str("enforce_fsync", "true"), "01", wire.KindBool},
		{str("enforce_fsync", "false"), "00", wire.KindBool},
		{str("enforce_fsync", "yes"), bad, 0},
		{opt("enforce_fsync", wire.KindUint8, []byte{1}), bad, 0},

		{opt("messages_required_to_save", wire.KindUint32, u32le(1024)), "00040000", wire.KindUint32},
		{opt("messages_required_to_save", wire.KindUint32, u32le(0)), bad, 0},
		{opt("messages_required_to_save", wire.KindUint32, u32le(16_777_217)), bad, 0},
		{str("messages_required_to_save", "16777216"), "00000001", wire.KindUint32},
		{str("messages_required_to_save", "1k"), bad, 0},
		{u64opt("messages_required_to_save", 5), bad, 0},

		{u64opt("size_of_messages_required_to_save", 0), absent, 0},
		{str("size_of_messages_required_to_save", "1 GiB"), "0000004000000000", wire.KindUint64},
		{str("size_of_messages_required_to_save", "1.5 GiB"), bad, 0},
		{str("size_of_messages_required_to_save", "1.5 KiB"), "0006000000000000", wire.KindUint64},

		{opt("preallocate_segments", wire.KindBool, []byte{0}), "00", wire.KindBool},
		{str("preallocate_segments", "TRUE"), "01", wire.KindBool},
	}
	for _, c := range cases {
		v, ok := parseOption(c.in)
		switch {
		case c.want == bad:
			if ok {
				t.Errorf("%s %v % x: accepted, want 4042", c.in.Key, c.in.Kind, c.in.Value)
			}
		case !ok:
			t.Errorf("%s %v %q: rejected", c.in.Key, c.in.Kind, c.in.Value)
		case c.want == absent:
			if !v.absent {
				t.Errorf("%s %q: not a sentinel", c.in.Key, c.in.Value)
			}
		default:
			got := canonical(c.in.Key, v)
			if v.absent || got.Kind != c.kind || !bytes.Equal(got.Value, hx(c.want)) {
				t.Errorf("%s %q: canonical %v % x, want %v %s", c.in.Key, c.in.Value, got.Kind, got.Value, c.kind, c.want)
			}
		}
	}
}

// server-behaviour.md 4.2.6: humantime durations and byte sizes.
func TestHumanDurationsAndSizes(t *testing.T) {
	durations := []struct {
		in    string
		secs  uint64
		nanos uint32
		ok    bool
	}{
		{"7 days", 604800, 0, true},
		{"7days", 604800, 0, true},
		{"1h 30m", 5400, 0, true},
		{"1hour 12min 5s", 4325, 0, true},
		{"2 weeks", 1209600, 0, true},
		{"1M", 2630016, 0, true},
		{"1y", 31557600, 0, true},
		{"500ms", 0, 500_000_000, true},
		{"1s 250ms 3us 7ns", 1, 250_003_007, true},
		{"10µs", 0, 10_000, true},
		{"  15 s  ", 15, 0, true},
		{"", 0, 0, false},
		{"s", 0, 0, false},
		{"10", 0, 0, false},
		{"10 parsecs", 0, 0, false},
		{"1.5h", 0, 0, false},
		{"-5s", 0, 0, false},
		{"99999999999999999999s", 0, 0, false},
	}
	for _, d := range durations {
		secs, nanos, ok := parseHumanDuration(d.in)
		if ok != d.ok || ok && (secs != d.secs || nanos != d.nanos) {
			t.Errorf("duration %q = %d s %d ns %v, want %d s %d ns %v", d.in, secs, nanos, ok, d.secs, d.nanos, d.ok)
		}
	}
	sizes := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"1073741824", 1 << 30, true},
		{"1 GiB", 1 << 30, true},
		{"1GiB", 1 << 30, true},
		{"1 gib", 1 << 30, true},
		{"128MiB", 128 << 20, true},
		{"1 GB", 1_000_000_000, true},
		{"10 KB", 10_000, true},
		{"10 KiB", 10_240, true},
		{"512 B", 512, true},
		{"1.5 MB", 1_500_000, true},
		{"16 EiB", 0, false},
		{"", 0, false},
		{"GiB", 0, false},
		{"1 GiBs", 0, false},
		{"-1 MB", 0, false},
	}
	for _, s := range sizes {
		got, ok := parseByteSize(s.in)
		if ok != s.ok || ok && got != s.want {
			t.Errorf("size %q = %d %v, want %d %v", s.in, got, ok, s.want, s.ok)
		}
	}
}

// client-plane.md 7.3, 10.2: a topic created with an empty block reports
// all eight keys in the derived block, in key order, with the fixed header
// fields at never / none / unlimited; the reply goes out under operation 64
// with zero partition counters.
func TestCreateTopicDerivedBlock(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	res := h.ok(wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 2, Name: "t"}.AppendTo(nil))
	if res.Reply[208] != 64 {
		t.Fatalf("reply operation %d, want 64", res.Reply[208])
	}
	T := h.ts
	derived := bytes.Join([][]byte{
		tlv("compression_algorithm", wire.KindString, []byte("none")),
		tlv("enforce_fsync", wire.KindBool, hx("00")),
		tlv("max_topic_size", wire.KindUint64, hx("ffffffffffffffff")),
		tlv("message_expiry", wire.KindUint64, hx("ffffffffffffffff")),
		tlv("messages_required_to_save", wire.KindUint32, hx("00040000")),
		tlv("preallocate_segments", wire.KindBool, hx("00")),
		tlv("segment_size", wire.KindUint64, hx("0000004000000000")),
		tlv("size_of_messages_required_to_save", wire.KindUint64, hx("0000100000000000")),
	}, nil)
	want := hx("00000000  00000000") // result, topic id 0
	want = append(want, u64le(T)...)
	want = append(want, hx("02000000  ffffffffffffffff  01  ffffffffffffffff  0000000000000000 0000000000000000  01 74  00000000")...)
	want = append(want, u32le(uint32(len(derived)))...)
	want = append(want, derived...)
	for p := 0; p < 2; p++ {
		want = append(want, u32le(uint32(p))...)
		want = append(want, u64le(T)...)
		want = append(want, make([]byte, 28)...)
	}
	if got := res.Reply[256:]; !bytes.Equal(got, want) {
		t.Fatalf("CreateTopic reply\n got % x\nwant % x", got, want)
	}
	// The prepare body is the 64 layout of replica-plane.md 13.1.
	prep := h.log[len(h.log)-1][256:]
	req := wire.CreateTopic{Stream: wire.ID(0), PartitionsCount: 2, Name: "t"}.AppendTo(nil)
	wantPrep := append(u32le(uint32(len(req))), req...)
	wantPrep = append(wantPrep, u32le(uint32(len(derived)))...)
	wantPrep = append(wantPrep, derived...)
	wantPrep = append(wantPrep, hx("02000000  00000000 0100000000000000  01000000 0200000000000000")...)
	if !bytes.Equal(prep, wantPrep) {
		t.Fatalf("prepare body\n got % x\nwant % x", prep, wantPrep)
	}
	if c := res.Effects.CreatedPartitions; len(c) != 2 || c[1].CreationID != 2 || c[1].Group != 1 {
		t.Fatalf("created %+v", c)
	}
}

// client-plane.md 10.2, server-behaviour.md 4.1.6, 4.2.9: sentinels fold
// into derived; other sent values stay explicit in canonical kinds, even
// when equal to the default.
func TestCreateTopicExplicitCanonical(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	opts := wire.Options{
		str("enforce_fsync", "true"),
		str("segment_size", "128MiB"),
		str("message_expiry", "7 days"),
		u64opt("max_topic_size", 0),
		opt("compression_algorithm", wire.KindUint8, []byte{2}),
		opt("messages_required_to_save", wire.KindUint32, u32le(1024)),
		opt("preallocate_segments", wire.KindBool, []byte{0}),
		u64opt("size_of_messages_required_to_save", 0),
	}
	res := h.ok(wire.OpCreateTopic, wire.CreateTopic{Stream: wire.ID(0), Name: "t", Options: opts}.AppendTo(nil))
	var d wire.TopicDetails
	if err := d.Decode(payload(t, res)); err != nil {
		t.Fatal(err)
	}
	wantExplicit := bytes.Join([][]byte{
		tlv("compression_algorithm", wire.KindString, []byte("gzip")),
		tlv("enforce_fsync", wire.KindBool, hx("01")),
		tlv("message_expiry", wire.KindUint64, hx("00a0e3d08c000000")),
		tlv("messages_required_to_save", wire.KindUint32, hx("00040000")),
		tlv("preallocate_segments", wire.KindBool, hx("00")),
		tlv("segment_size", wire.KindUint64, hx("0000000800000000")),
	}, nil)
	wantDerived := bytes.Join([][]byte{
		tlv("max_topic_size", wire.KindUint64, hx("ffffffffffffffff")),
		tlv("size_of_messages_required_to_save", wire.KindUint64, hx("0000100000000000")),
	}, nil)
	if got := wire.AppendOptions(nil, d.ExplicitOptions); !bytes.Equal(got, wantExplicit) {
		t.Errorf("explicit\n got % x\nwant % x", got, wantExplicit)
	}
	if got := wire.AppendOptions(nil, d.DerivedOptions); !bytes.Equal(got, wantDerived) {
		t.Errorf("derived\n got % x\nwant % x", got, wantDerived)
	}
	if d.MessageExpiry != 604_800_000_000 || d.CompressionAlgorithm != 2 || d.MaxTopicSize != math.MaxUint64 {
		t.Errorf("fixed fields %d %d %d", d.MessageExpiry, d.CompressionAlgorithm, d.MaxTopicSize)
	}
	st, _ := h.s.TopicSettings(0, 0)
	want := TopicSettings{MessageExpiry: 604_800_000_000, Compression: 2, MaxTopicSize: math.MaxUint64, SegmentSize: 128 << 20,
		EnforceFsync: true, MessagesRequiredToSave: 1024, SizeOfMessagesRequiredToSave: 1 << 20}
	if st != want {
		t.Errorf("settings %+v, want %+v", st, want)
	}
}

// client-plane.md 8.7.3: UpdateTopic patches the three updatable keys,
// stores values as sent, and a 0 sentinel leaves the header field alone.
func TestUpdateTopicOptions(t *testing.T) {
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "small", 1, wire.Options{str("segment_size", "1 MiB")})
	h.createTopic(wire.ID(0), "big", 1, nil)
	up := func(topic uint32, opts ...wire.KeyValue) []byte {
		return wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(topic), Name: []string{"small", "big"}[topic], Options: opts}.AppendTo(nil)
	}
	h.denied(0, wire.OpUpdateTopic, up(0, u64opt("segment_size", 1<<20)), wire.ErrUnsupportedOptionKey)
	h.denied(0, wire.OpUpdateTopic, up(0, str("compression_algorithm", "zip"), str("nope", "x")), wire.ErrUnsupportedOptionKey)
	h.denied(0, wire.OpUpdateTopic, up(0, str("compression_algorithm", "zip")), wire.ErrInvalidOptionValue)
	h.denied(0, wire.OpUpdateTopic, up(0, str("max_topic_size", "512 KiB")), wire.ErrInvalidTopicSize)
	h.denied(0, wire.OpUpdateTopic, up(1, str("max_topic_size", "2 MiB")), wire.ErrInvalidTopicSize)
	h.ok(wire.OpUpdateTopic, up(0, str("max_topic_size", "2 MiB"), str("compression_algorithm", "GZIP")))
	res := h.ok(wire.OpUpdateTopic, up(0, u64opt("max_topic_size", 0), str("message_expiry", "1h")))
	if len(res.Effects.UpdatedTopics) != 1 {
		t.Fatal("no UpdatedTopics effect")
	}
	status, p, _ := h.s.Read(0, wire.CodeGetTopic, wire.GetTopic{Stream: wire.ID(0), Topic: wire.ID(0)}.AppendTo(nil))
	var d wire.TopicDetails
	if status != 0 || d.Decode(p) != nil {
		t.Fatal("GetTopic failed")
	}
	if d.MaxTopicSize != 2<<20 || d.CompressionAlgorithm != 2 || d.MessageExpiry != 3_600_000_000 {
		t.Errorf("fixed fields %d %d %d", d.MaxTopicSize, d.CompressionAlgorithm, d.MessageExpiry)
	}
	wantExplicit := bytes.Join([][]byte{
		tlv("compression_algorithm", wire.KindString, []byte("GZIP")),
		tlv("max_topic_size", wire.KindUint64, hx("0000000000000000")),
		tlv("message_expiry", wire.KindString, []byte("1h")),
		tlv("segment_size", wire.KindUint64, hx("0000100000000000")),
	}, nil)
	if got := wire.AppendOptions(nil, d.ExplicitOptions); !bytes.Equal(got, wantExplicit) {
		t.Errorf("explicit\n got % x\nwant % x", got, wantExplicit)
	}
	if st, _ := h.s.TopicSettings(0, 0); st.MaxTopicSize != 2<<20 || st.MessageExpiry != 3_600_000_000 {
		t.Errorf("settings %+v", st)
	}
	// An unknown topic skips the size floor at admission; apply reports 2010.
	h.rejected(0, wire.OpUpdateTopic, wire.UpdateTopic{Stream: wire.ID(0), Topic: wire.ID(9), Name: "x",
		Options: wire.Options{u64opt("max_topic_size", 5)}}.AppendTo(nil), wire.ErrTopicIdNotFound)
	_ = binary.LittleEndian
}
