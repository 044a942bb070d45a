package metadata

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"iggynode/internal/units"
	"iggynode/vsr"
	"iggynode/wire"
)

// Topic option catalog (client-plane.md 10.4; server-behaviour.md 4.2).

// Compression codes of the TopicHeader (client-plane.md 7.3).
const (
	CompressionNone uint8 = 1
	CompressionGzip uint8 = 2
)

// Bounds of the catalog (10.4).
const (
	Never                       = math.MaxUint64 // message_expiry never / max_topic_size unlimited
	minSegmentSize              = 1 << 20
	maxSegmentSize              = 1 << 30
	segmentSizeAlign            = 512
	maxMessagesRequiredToSave   = 16_777_216
	maxSizeOfMessagesToSave     = 1 << 30
	maxPreallocatedBytes        = 64 << 30
	maxExpirySeconds            = math.MaxUint32
	defaultSegmentSize          = 1 << 30
	defaultMessagesToSave       = 1024
	defaultSizeOfMessagesToSave = 1 << 20
)

// TopicSettings are a topic's effective settings: explicit wins over
// derived, and the three updatable ones follow the fixed header fields.
type TopicSettings struct {
	MessageExpiry                uint64 // µs; Never = never expire
	Compression                  uint8  // CompressionNone or CompressionGzip
	MaxTopicSize                 uint64 // bytes; Never = unlimited
	SegmentSize                  uint64 // bytes
	EnforceFsync                 bool
	MessagesRequiredToSave       uint32
	SizeOfMessagesRequiredToSave uint64 // bytes
	PreallocateSegments          bool
	// ReplicationFactor is the extension key's value (0: the default,
	// placement.go); CreateTopic only, never in the derived block.
	ReplicationFactor uint8
}

// DefaultTopicSettings are the build-time defaults (4.2.4).
func DefaultTopicSettings() TopicSettings {
	return TopicSettings{
		MessageExpiry: Never, Compression: CompressionNone, MaxTopicSize: Never,
		SegmentSize: defaultSegmentSize, MessagesRequiredToSave: defaultMessagesToSave,
		SizeOfMessagesRequiredToSave: defaultSizeOfMessagesToSave,
	}
}

// catalogOrder is the catalog's key order (10.4).
var catalogOrder = []string{
	wire.OptCompressionAlgorithm, wire.OptMessageExpiry, wire.OptMaxTopicSize, wire.OptSegmentSize,
	wire.OptEnforceFsync, wire.OptMessagesRequiredToSave, wire.OptSizeOfMessagesRequiredToSave,
	wire.OptPreallocateSegments,
}

// createKey reports the keys CreateTopic accepts: the catalog's and the
// replication_factor extension.
func createKey(key string) bool { return inCatalog(key) || key == wire.OptReplicationFactor }

func inCatalog(key string) bool {
	for _, k := range catalogOrder {
		if k == key {
			return true
		}
	}
	return false
}

// updatable reports the keys UpdateTopic may carry (4.2.2).
func updatable(key string) bool {
	return key == wire.OptCompressionAlgorithm || key == wire.OptMessageExpiry || key == wire.OptMaxTopicSize
}

// optionValue is one parsed option. absent marks a server-default sentinel
// (4.2.9): the key counts as not sent.
type optionValue struct {
	absent bool
	num    uint64 // u64 keys, messages_required_to_save, compression code
	flag   bool   // bool keys
}

// parseOption parses one catalog key's value in any accepted kind (10.4),
// checking its own range; ok is false for InvalidOptionValue (4042).
func parseOption(kv wire.KeyValue) (optionValue, bool) {
	switch kv.Key {
	case wire.OptCompressionAlgorithm:
		return parseCompression(kv)
	case wire.OptMessageExpiry:
		return parseMessageExpiry(kv)
	case wire.OptMaxTopicSize:
		return parseMaxTopicSize(kv)
	case wire.OptSegmentSize:
		v, ok := parseByteSizeOption(kv)
		if ok && !v.absent && (v.num < minSegmentSize || v.num > maxSegmentSize || v.num%segmentSizeAlign != 0) {
			return v, false
		}
		return v, ok
	case wire.OptEnforceFsync, wire.OptPreallocateSegments:
		return parseBool(kv)
	case wire.OptMessagesRequiredToSave:
		return parseMessagesRequiredToSave(kv)
	case wire.OptReplicationFactor:
		return parseReplicationFactor(kv)
	case wire.OptSizeOfMessagesRequiredToSave:
		v, ok := parseByteSizeOption(kv)
		if ok && !v.absent && v.num > maxSizeOfMessagesToSave {
			return v, false
		}
		return v, ok
	}
	return optionValue{}, false
}

func asString(kv wire.KeyValue) (string, bool) {
	if kv.Kind != wire.KindString || !utf8.Valid(kv.Value) {
		return "", false
	}
	return strings.TrimSpace(string(kv.Value)), true
}

func asU64(kv wire.KeyValue) (uint64, bool) {
	if kv.Kind != wire.KindUint64 || len(kv.Value) != 8 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(kv.Value), true
}

func parseCompression(kv wire.KeyValue) (optionValue, bool) {
	if kv.Kind == wire.KindUint8 {
		if len(kv.Value) == 1 && (kv.Value[0] == CompressionNone || kv.Value[0] == CompressionGzip) {
			return optionValue{num: uint64(kv.Value[0])}, true
		}
		return optionValue{}, false
	}
	s, ok := asString(kv)
	switch {
	case !ok:
		return optionValue{}, false
	case strings.EqualFold(s, "none"):
		return optionValue{num: uint64(CompressionNone)}, true
	case strings.EqualFold(s, "gzip"):
		return optionValue{num: uint64(CompressionGzip)}, true
	}
	return optionValue{}, false
}

func parseMessageExpiry(kv wire.KeyValue) (optionValue, bool) {
	if v, ok := asU64(kv); ok {
		return optionValue{absent: v == 0, num: v}, true
	}
	s, ok := asString(kv)
	if !ok {
		return optionValue{}, false
	}
	switch strings.ToLower(s) {
	case "none", "unlimited", "never_expire":
		return optionValue{num: Never}, true
	case "default", "server_default":
		return optionValue{absent: true}, true
	}
	secs, nanos, ok := parseHumanDuration(s)
	if !ok || secs > maxExpirySeconds {
		return optionValue{}, false
	}
	us := secs*1_000_000 + uint64(nanos)/1000
	return optionValue{absent: us == 0, num: us}, true
}

func parseMaxTopicSize(kv wire.KeyValue) (optionValue, bool) {
	if v, ok := asU64(kv); ok {
		return optionValue{absent: v == 0, num: v}, true
	}
	s, ok := asString(kv)
	if !ok {
		return optionValue{}, false
	}
	switch strings.ToLower(s) {
	case "unlimited":
		return optionValue{num: Never}, true
	case "0", "none", "server_default":
		return optionValue{absent: true}, true
	}
	n, ok := parseByteSize(s)
	return optionValue{absent: n == 0, num: n}, ok
}

// parseByteSizeOption reads a Uint64 or a byte-size String; 0 is absent.
func parseByteSizeOption(kv wire.KeyValue) (optionValue, bool) {
	if v, ok := asU64(kv); ok {
		return optionValue{absent: v == 0, num: v}, true
	}
	s, ok := asString(kv)
	if !ok {
		return optionValue{}, false
	}
	n, ok := parseByteSize(s)
	return optionValue{absent: n == 0, num: n}, ok
}

func parseBool(kv wire.KeyValue) (optionValue, bool) {
	if kv.Kind == wire.KindBool {
		if len(kv.Value) == 1 && kv.Value[0] <= 1 {
			return optionValue{flag: kv.Value[0] == 1}, true
		}
		return optionValue{}, false
	}
	s, ok := asString(kv)
	switch {
	case !ok:
		return optionValue{}, false
	case strings.EqualFold(s, "true"):
		return optionValue{flag: true}, true
	case strings.EqualFold(s, "false"):
		return optionValue{flag: false}, true
	}
	return optionValue{}, false
}

func parseMessagesRequiredToSave(kv wire.KeyValue) (optionValue, bool) {
	n, ok := parseU32OrDecimal(kv)
	if !ok || n < 1 || n > maxMessagesRequiredToSave {
		return optionValue{}, false
	}
	return optionValue{num: n}, true
}

// parseReplicationFactor takes Uint8, Uint32 or a decimal String; 0 is
// the server default. The range (1..=vsr.MaxReplicas, and at most the
// cluster's voters) is InvalidReplicationFactor, checked by the caller.
func parseReplicationFactor(kv wire.KeyValue) (optionValue, bool) {
	if kv.Kind == wire.KindUint8 && len(kv.Value) == 1 {
		return optionValue{absent: kv.Value[0] == 0, num: uint64(kv.Value[0])}, true
	}
	n, ok := parseU32OrDecimal(kv)
	return optionValue{absent: n == 0, num: n}, ok
}

// parseU32OrDecimal reads a Uint32 (4 bytes) or a decimal String below 2^32.
func parseU32OrDecimal(kv wire.KeyValue) (uint64, bool) {
	switch kv.Kind {
	case wire.KindUint32:
		if len(kv.Value) != 4 {
			return 0, false
		}
		return uint64(binary.LittleEndian.Uint32(kv.Value)), true
	case wire.KindString:
		s, ok := asString(kv)
		if !ok {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 10, 32)
		return v, err == nil
	}
	return 0, false
}

// canonical encodes a present value in its key's canonical kind (4.1.6).
func canonical(key string, v optionValue) wire.KeyValue {
	switch key {
	case wire.OptCompressionAlgorithm:
		name := "none"
		if uint8(v.num) == CompressionGzip {
			name = "gzip"
		}
		return wire.KeyValue{Key: key, Kind: wire.KindString, Value: []byte(name)}
	case wire.OptEnforceFsync, wire.OptPreallocateSegments:
		b := byte(0)
		if v.flag {
			b = 1
		}
		return wire.KeyValue{Key: key, Kind: wire.KindBool, Value: []byte{b}}
	case wire.OptMessagesRequiredToSave:
		return wire.KeyValue{Key: key, Kind: wire.KindUint32, Value: binary.LittleEndian.AppendUint32(nil, uint32(v.num))}
	case wire.OptReplicationFactor:
		return wire.KeyValue{Key: key, Kind: wire.KindUint8, Value: []byte{uint8(v.num)}}
	}
	return wire.KeyValue{Key: key, Kind: wire.KindUint64, Value: binary.LittleEndian.AppendUint64(nil, v.num)}
}

// set stores a present value of key into st.
func (st *TopicSettings) set(key string, v optionValue) {
	switch key {
	case wire.OptCompressionAlgorithm:
		st.Compression = uint8(v.num)
	case wire.OptMessageExpiry:
		st.MessageExpiry = v.num
	case wire.OptMaxTopicSize:
		st.MaxTopicSize = v.num
	case wire.OptSegmentSize:
		st.SegmentSize = v.num
	case wire.OptEnforceFsync:
		st.EnforceFsync = v.flag
	case wire.OptMessagesRequiredToSave:
		st.MessagesRequiredToSave = uint32(v.num)
	case wire.OptSizeOfMessagesRequiredToSave:
		st.SizeOfMessagesRequiredToSave = v.num
	case wire.OptPreallocateSegments:
		st.PreallocateSegments = v.flag
	case wire.OptReplicationFactor:
		st.ReplicationFactor = uint8(v.num)
	}
}

// value returns st's value of key in canonical form.
func (st TopicSettings) value(key string) optionValue {
	switch key {
	case wire.OptCompressionAlgorithm:
		return optionValue{num: uint64(st.Compression)}
	case wire.OptMessageExpiry:
		return optionValue{num: st.MessageExpiry}
	case wire.OptMaxTopicSize:
		return optionValue{num: st.MaxTopicSize}
	case wire.OptSegmentSize:
		return optionValue{num: st.SegmentSize}
	case wire.OptEnforceFsync:
		return optionValue{flag: st.EnforceFsync}
	case wire.OptMessagesRequiredToSave:
		return optionValue{num: uint64(st.MessagesRequiredToSave)}
	case wire.OptSizeOfMessagesRequiredToSave:
		return optionValue{num: st.SizeOfMessagesRequiredToSave}
	}
	return optionValue{flag: st.PreallocateSegments}
}

// TopicOptionsPlan is what CreateTopic admission resolves from the options
// block: the explicit block as the topic stores it, the derived block, and
// the effective settings.
type TopicOptionsPlan struct {
	Explicit wire.Options // sent keys, sentinels dropped, canonical kinds, sorted by key
	Derived  wire.Options // every other catalog key at its default, sorted by key
	Settings TopicSettings
}

// PlanCreateTopic runs the pre-consensus checks of CreateTopic after the
// body decoded, in the order of client-plane.md 8.7.2: unknown key (4041),
// value kind/parse/range (4042), segment_size bounds (4042), preallocation
// budget (4042), partitions_count <= 1000 (2015), explicit max_topic_size
// below the effective segment size (1019). It returns 0 on success.
func PlanCreateTopic(opts wire.Options, partitionsCount uint32) (TopicOptionsPlan, wire.ErrorCode) {
	for _, kv := range opts {
		if !createKey(kv.Key) {
			return TopicOptionsPlan{}, wire.ErrUnsupportedOptionKey
		}
	}
	plan := TopicOptionsPlan{Settings: DefaultTopicSettings()}
	sent := make(map[string]bool, len(opts))
	rf := uint64(0)
	for _, kv := range opts {
		v, ok := parseOption(kv)
		if !ok {
			return TopicOptionsPlan{}, wire.ErrInvalidOptionValue
		}
		if v.absent {
			continue
		}
		if kv.Key == wire.OptReplicationFactor {
			rf = v.num
		}
		sent[kv.Key] = true
		plan.Settings.set(kv.Key, v)
		plan.Explicit = append(plan.Explicit, canonical(kv.Key, v))
	}
	st := plan.Settings
	if st.PreallocateSegments && st.SegmentSize*uint64(partitionsCount) > maxPreallocatedBytes {
		return TopicOptionsPlan{}, wire.ErrInvalidOptionValue
	}
	if partitionsCount > MaxPartitionsPerChange {
		return TopicOptionsPlan{}, wire.ErrTooManyPartitions
	}
	if sent[wire.OptMaxTopicSize] && st.MaxTopicSize < st.SegmentSize {
		return TopicOptionsPlan{}, wire.ErrInvalidTopicSize
	}
	if rf > vsr.MaxReplicas {
		return TopicOptionsPlan{}, wire.ErrInvalidReplicationFactor
	}
	for _, key := range catalogOrder {
		if !sent[key] {
			plan.Derived = append(plan.Derived, canonical(key, st.value(key)))
		}
	}
	plan.Explicit, plan.Derived = plan.Explicit.Sorted(), plan.Derived.Sorted()
	return plan, 0
}

// topicPatch is a parsed UpdateTopic options block.
type topicPatch struct {
	set      map[string]optionValue // present (non-sentinel) values
	verbatim wire.Options           // every sent pair, stored as sent (8.7.3)
}

// PlanUpdateTopic runs UpdateTopic's option checks (client-plane.md 8.7.3):
// a key other than the three updatable ones (4041), a bad value (4042), a
// new max_topic_size (other than 0) below segmentSize, the topic's own
// segment size (1019). It returns 0 on success.
func PlanUpdateTopic(opts wire.Options, segmentSize uint64) wire.ErrorCode {
	_, code := planUpdateTopic(opts, segmentSize)
	return code
}

func planUpdateTopic(opts wire.Options, segmentSize uint64) (topicPatch, wire.ErrorCode) {
	for _, kv := range opts {
		if !updatable(kv.Key) {
			return topicPatch{}, wire.ErrUnsupportedOptionKey
		}
	}
	p := topicPatch{set: make(map[string]optionValue), verbatim: opts}
	for _, kv := range opts {
		v, ok := parseOption(kv)
		if !ok {
			return topicPatch{}, wire.ErrInvalidOptionValue
		}
		if !v.absent {
			p.set[kv.Key] = v
		}
	}
	if v, ok := p.set[wire.OptMaxTopicSize]; ok && v.num < segmentSize {
		return topicPatch{}, wire.ErrInvalidTopicSize
	}
	return p, 0
}

// settingsOf resolves the effective settings of stored explicit and
// derived blocks (explicit wins). ok is false when a stored value does not
// parse, which only a corrupt prepare can produce.
func settingsOf(explicit, derived wire.Options) (TopicSettings, bool) {
	st := DefaultTopicSettings()
	for _, block := range []wire.Options{derived, explicit} {
		for _, kv := range block {
			if !createKey(kv.Key) {
				return st, false
			}
			v, ok := parseOption(kv)
			if !ok {
				return st, false
			}
			if !v.absent {
				st.set(kv.Key, v)
			}
		}
	}
	return st, true
}

// mergeExplicit patches the explicit block with pairs stored as sent.
func mergeExplicit(explicit, patch wire.Options) wire.Options {
	out := make(wire.Options, 0, len(explicit)+len(patch))
	for _, kv := range explicit {
		if _, replaced := patch.Get(kv.Key); !replaced {
			out = append(out, kv)
		}
	}
	out = append(out, patch...)
	return out.Sorted()
}

// parseHumanDuration and parseByteSize are the spec's string forms
// (4.2.6), parsed by the one parser of sizes and durations.
func parseHumanDuration(s string) (secs uint64, nanos uint32, ok bool) {
	return units.ParseHumanDuration(s)
}

func parseByteSize(s string) (uint64, bool) {
	n, err := units.ParseSize(s)
	return n, err == nil
}
