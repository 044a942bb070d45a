package metadata

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"

	"iggynode/wire"
)

// Snapshot payload IMD1 (replica-plane.md 13.2) and the ICT2 client table
// (7.8.2), both followed by an H64 trailer. Layouts are exactly as 13.2
// proposes; doc.go lists them.

const (
	snapshotMagic   = "IMD1"
	snapshotVersion = 1
	ict2Magic       = "ICT2"
	maxICT2Entries  = 65536

	tagUsers       = 1
	tagStreams     = 2
	tagClientTable = 3
	tagRoster      = 4 // only once an OpReconfigure committed (roster.go)
	tagPlacement   = 5 // only in a cluster with placed partitions (placement.go)

	tokenHashLen = 64
)

// ErrSnapshot is wrapped by every snapshot and client-table decode failure.
var ErrSnapshot = errors.New("metadata: bad snapshot")

func snapErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrSnapshot, fmt.Sprintf(format, args...))
}

// Snapshot encodes the replicated state as the IMD1 payload at the last
// applied op (replica-plane.md 13.2): equal states give equal bytes. The
// client table keeps only the latest reply per entry.
func (s *State) Snapshot() []byte {
	b := []byte(snapshotMagic)
	b = wire.AppendU16(b, snapshotVersion)
	b = wire.AppendU16(b, 0)
	b = wire.AppendU64(b, s.appliedOp)
	b = wire.AppendU64(b, s.appliedTimestamp)
	sections := uint32(3)
	if s.roster != nil {
		sections++
	}
	if len(s.placement) > 0 {
		sections++
	}
	b = wire.AppendU32(b, sections)
	b = appendSection(b, tagUsers, s.appendUsers(nil))
	b = appendSection(b, tagStreams, s.appendStreams(nil))
	b = appendSection(b, tagClientTable, s.clients.EncodeICT2(false))
	if s.roster != nil {
		// An extension of 13.2: a cluster that never reconfigured writes
		// the three sections it always wrote, byte for byte.
		b = appendSection(b, tagRoster, s.appendRoster(nil))
	}
	if len(s.placement) > 0 {
		b = appendSection(b, tagPlacement, s.appendPlacement(nil))
	}
	return wire.AppendU64(b, xxh3.Hash(b))
}

func appendSection(b []byte, tag uint8, body []byte) []byte {
	b = wire.AppendU32(append(b, tag), uint32(len(body)))
	return append(b, body...)
}

func appendBytes32(b, v []byte) []byte { return append(wire.AppendU32(b, uint32(len(v))), v...) }

func (s *State) appendUsers(b []byte) []byte {
	users := s.sortedUsers()
	b = wire.AppendU32(b, uint32(len(users)))
	for _, u := range users {
		b = wire.AppendU32(b, u.ID)
		b = wire.AppendU64(b, u.CreatedAt)
		b = wire.AppendU8(b, uint8(u.Status))
		b = wire.AppendStr32(b, u.Username)
		b = wire.AppendStr32(b, u.PasswordHash)
		var perms []byte
		if u.Permissions != nil {
			perms = u.Permissions.AppendCanonical(nil)
		}
		b = appendBytes32(b, perms)
		b = appendBytes32(b, wire.AppendOptions(nil, u.Options))
		tokens := sortedTokens(u)
		b = wire.AppendU32(b, uint32(len(tokens)))
		for _, t := range tokens {
			b = wire.AppendStr32(b, t.Name)
			b = append(b, t.Hash...)
			b = wire.AppendU64(b, t.ExpiryAt)
		}
	}
	return b
}

func (s *State) appendStreams(b []byte) []byte {
	b = wire.AppendU64(b, s.nextCreationID)
	streams := s.sortedStreams()
	b = wire.AppendU32(b, uint32(len(streams)))
	for _, st := range streams {
		b = wire.AppendU32(b, st.ID)
		b = wire.AppendU64(b, st.CreatedAt)
		b = wire.AppendStr32(b, st.Name)
		b = appendBytes32(b, wire.AppendOptions(nil, st.Options))
		topics := st.sortedTopics()
		b = wire.AppendU32(b, uint32(len(topics)))
		for _, t := range topics {
			b = appendTopic(b, t)
		}
	}
	return b
}

func appendTopic(b []byte, t *Topic) []byte {
	b = wire.AppendU32(b, t.ID)
	b = wire.AppendU64(b, t.CreatedAt)
	b = wire.AppendStr32(b, t.Name)
	b = wire.AppendU64(b, t.MessageExpiry)
	b = wire.AppendU8(b, t.Compression)
	b = wire.AppendU64(b, t.MaxTopicSize)
	b = appendBytes32(b, wire.AppendOptions(nil, t.Explicit))
	b = appendBytes32(b, wire.AppendOptions(nil, t.Derived))
	b = wire.AppendU32(b, t.NextGroupID)
	b = wire.AppendU32(b, uint32(len(t.Partitions)))
	for _, p := range t.Partitions {
		b = wire.AppendU32(b, p.ID)
		b = wire.AppendU64(b, p.CreatedAt)
		b = wire.AppendU64(b, p.CreationID)
		b = wire.AppendU64(b, p.DeleteBelow)
		b = wire.AppendU64(b, p.PurgeGeneration)
	}
	groups := t.sortedGroups()
	b = wire.AppendU32(b, uint32(len(groups)))
	for _, g := range groups {
		b = wire.AppendU32(b, g.ID)
		b = wire.AppendU64(b, g.Generation)
		b = wire.AppendStr32(b, g.Name)
		b = wire.AppendU32(b, uint32(len(g.Members)))
		for _, m := range g.Members {
			b = wire.AppendU32(b, m.Slot)
			b = wire.AppendU128(b, m.Client)
			b = wire.AppendU32(b, uint32(len(m.Partitions)))
			for _, p := range m.Partitions {
				b = wire.AppendU32(b, p)
			}
			b = wire.AppendU32(b, uint32(len(m.Revocations)))
			for _, r := range m.Revocations {
				b = wire.AppendU64(wire.AppendU32(wire.AppendU32(b, r.PartitionID), r.TargetSlot), r.Since)
			}
		}
	}
	return b
}

// checkTrailer verifies and strips an H64 trailer.
func checkTrailer(b []byte, what string) ([]byte, error) {
	if len(b) < 8 {
		return nil, snapErr("%s: shorter than its trailer", what)
	}
	body := b[:len(b)-8]
	if xxh3.Hash(body) != binary.LittleEndian.Uint64(b[len(b)-8:]) {
		return nil, snapErr("%s: trailer checksum mismatch", what)
	}
	return body, nil
}

// Restore decodes an IMD1 payload into a fresh state (replica-plane.md
// 13.2 decode rules: trailer first, magic, version, section order and
// presence, exact lengths, strictly ascending keys). Non-replicated parts
// (statistics, cursors) start empty; the allocator starts at the stored
// next_creation_id.
func Restore(cfg Config, payload []byte) (*State, error) {
	body, err := checkTrailer(payload, "snapshot")
	if err != nil {
		return nil, err
	}
	r := wire.NewReader(body)
	magic := r.Bytes("magic", 4)
	version := r.U16("format_version")
	reserved := r.U16("reserved")
	s := New(cfg)
	s.appliedOp = r.U64("sequence_number")
	s.appliedTimestamp = r.U64("timestamp")
	sections := r.U32("section_count")
	switch {
	case r.Err() != nil:
		return nil, snapErr("header: %v", r.Err())
	case string(magic) != snapshotMagic:
		return nil, snapErr("magic %q", magic)
	case version != snapshotVersion:
		return nil, snapErr("unknown format version %d", version)
	case reserved != 0:
		return nil, snapErr("reserved bytes nonzero")
	case sections < 3 || sections > 5:
		return nil, snapErr("%d sections, want 3 to 5", sections)
	}
	decoders := map[uint8]func(*State, []byte) error{tagUsers: (*State).decodeUsers, tagStreams: (*State).decodeStreams,
		tagClientTable: (*State).decodeClientTable, tagRoster: (*State).decodeRoster, tagPlacement: (*State).decodePlacement}
	// Tags 1-3 always, in order; then the optional roster and placement
	// sections, each at most once and in tag order.
	prev := uint8(0)
	for i := uint32(0); i < sections; i++ {
		tag := r.U8("section tag")
		n := r.U32("section length")
		if r.Err() == nil && uint64(n) > uint64(r.Len()) {
			return nil, snapErr("section %d overruns the payload", tag)
		}
		sec := r.Bytes("section", int(n))
		if r.Err() != nil {
			return nil, snapErr("sections: %v", r.Err())
		}
		decode := decoders[tag]
		if (i < 3 && uint32(tag) != i+1) || tag <= prev || decode == nil {
			return nil, snapErr("section tag %d where %d belongs", tag, i+1)
		}
		prev = tag
		if err := decode(s, sec); err != nil {
			return nil, err
		}
	}
	if r.Len() != 0 {
		return nil, snapErr("trailing bytes after the sections")
	}
	s.allocator = s.nextCreationID
	return s, nil
}

// finish checks that a section reader consumed its body exactly.
func finish(r *wire.Reader, what string) error {
	if r.Err() != nil {
		return snapErr("%s: %v", what, r.Err())
	}
	if r.Len() != 0 {
		return snapErr("%s: trailing bytes", what)
	}
	return nil
}

func readBytes32(r *wire.Reader, field string) []byte {
	n := r.U32(field)
	if r.Err() == nil && uint64(n) > uint64(r.Len()) {
		r.Fail(field, "length exceeds the section")
		return nil
	}
	return r.Bytes(field, int(n))
}

// readOptions reads an options TLV block behind a u32 length.
func readOptions(r *wire.Reader, field string) wire.Options {
	raw := readBytes32(r, field)
	if r.Err() != nil {
		return nil
	}
	o, err := wire.DecodeOptions(raw)
	if err != nil {
		r.Fail(field, err.Error())
	}
	return o
}

func (s *State) decodeUsers(sec []byte) error {
	r := wire.NewReader(sec)
	n := r.Count("users count", 4+8+1+4+4+4+4+4)
	var prev int64 = -1
	for i := 0; i < n && r.Err() == nil; i++ {
		u := &User{ID: r.U32("user id"), CreatedAt: r.U64("user created_at"), Status: wire.UserStatus(r.U8("user status"))}
		u.Username = r.Str32("username")
		u.PasswordHash = r.Str32("password_hash")
		perms := readBytes32(r, "permissions")
		u.Options = readOptions(r, "user options")
		if r.Err() != nil {
			break
		}
		if !u.Status.Valid() {
			return snapErr("user %d: status %d", u.ID, u.Status)
		}
		if len(perms) > 0 {
			p, err := wire.DecodePermissions(perms)
			if err != nil || !bytes.Equal(p.AppendCanonical(nil), perms) {
				return snapErr("user %d: permissions not canonical", u.ID)
			}
			u.Permissions = p
		}
		if err := s.decodeTokens(r, u); err != nil {
			return err
		}
		if int64(u.ID) <= prev {
			return snapErr("user ids not ascending at %d", u.ID)
		}
		prev = int64(u.ID)
		if !wire.ValidName(u.Username) {
			return snapErr("user %d: username is not a Name", u.ID)
		}
		if _, dup := s.userByName[u.Username]; dup {
			return snapErr("duplicate username %q", u.Username)
		}
		s.addUser(u)
	}
	return finish(r, "users")
}

func (s *State) decodeTokens(r *wire.Reader, u *User) error {
	n := r.Count("pat count", 4+tokenHashLen+8)
	u.Tokens = make(map[string]*Token, n)
	prev := ""
	for i := 0; i < n && r.Err() == nil; i++ {
		t := &Token{OwnerID: u.ID, Name: r.Str32("pat name")}
		hash := r.Bytes("pat token_hash", tokenHashLen)
		t.ExpiryAt = r.U64("pat expiry_at")
		if r.Err() != nil {
			break
		}
		if !isLowerHex(hash) {
			return snapErr("user %d: token hash is not lowercase hex", u.ID)
		}
		if !wire.ValidName(t.Name) {
			return snapErr("user %d: token name is not a Name", u.ID)
		}
		if i > 0 && t.Name <= prev {
			return snapErr("user %d: token names not ascending", u.ID)
		}
		t.Hash, prev = string(hash), t.Name
		if _, dup := s.tokenByHash[t.Hash]; dup {
			return snapErr("user %d: duplicate token hash", u.ID)
		}
		u.Tokens[t.Name] = t
		s.tokenByHash[t.Hash] = t
	}
	return r.Err()
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func (s *State) decodeStreams(sec []byte) error {
	r := wire.NewReader(sec)
	s.nextCreationID = r.U64("next_creation_id")
	n := r.Count("streams count", 4+8+4+4+4)
	var prev int64 = -1
	for i := 0; i < n && r.Err() == nil; i++ {
		id, createdAt, name := r.U32("stream id"), r.U64("stream created_at"), r.Str32("stream name")
		opts := readOptions(r, "stream options")
		if r.Err() != nil {
			break
		}
		if int64(id) <= prev || id >= MaxStreams || !wire.ValidName(name) {
			return snapErr("stream %d: id or name invalid", id)
		}
		if _, dup := s.streamByName[name]; dup {
			return snapErr("duplicate stream name %q", name)
		}
		prev = int64(id)
		st := newStream(id, createdAt, name, opts)
		if err := s.decodeTopics(r, st); err != nil {
			return err
		}
		s.streams[id] = st
		s.streamByName[name] = id
	}
	if r.Err() == nil && s.nextCreationID == 0 {
		return snapErr("next_creation_id 0")
	}
	return finish(r, "streams")
}

func (s *State) decodeTopics(r *wire.Reader, st *Stream) error {
	n := r.Count("topics count", 4+8+4+8+1+8+4+4+4+4+4)
	var prev int64 = -1
	for i := 0; i < n && r.Err() == nil; i++ {
		t := &Topic{ID: r.U32("topic id"), CreatedAt: r.U64("topic created_at"), Name: r.Str32("topic name")}
		t.MessageExpiry, t.Compression, t.MaxTopicSize = r.U64("message_expiry"), r.U8("compression"), r.U64("max_topic_size")
		t.Explicit, t.Derived = readOptions(r, "explicit"), readOptions(r, "derived")
		t.NextGroupID = r.U32("next_group_id")
		if r.Err() != nil {
			break
		}
		if int64(t.ID) <= prev || t.ID >= MaxTopicsPerStream || !wire.ValidName(t.Name) {
			return snapErr("stream %d topic %d: id or name invalid", st.ID, t.ID)
		}
		if _, dup := st.topicByName[t.Name]; dup {
			return snapErr("stream %d: duplicate topic name %q", st.ID, t.Name)
		}
		if t.Compression != CompressionNone && t.Compression != CompressionGzip {
			return snapErr("topic %d: compression %d", t.ID, t.Compression)
		}
		settings, ok := settingsOf(t.Explicit, t.Derived)
		if !ok {
			return snapErr("topic %d: options do not parse", t.ID)
		}
		settings.MessageExpiry, settings.Compression, settings.MaxTopicSize = t.MessageExpiry, t.Compression, t.MaxTopicSize
		t.settings = settings
		prev = int64(t.ID)
		if err := decodePartitions(r, t); err != nil {
			return err
		}
		st.addTopic(t)
		if err := decodeGroups(r, t); err != nil {
			return err
		}
	}
	return r.Err()
}

func decodePartitions(r *wire.Reader, t *Topic) error {
	n := r.Count("partitions count", 4+8*4)
	if n > MaxPartitionID+1 {
		return snapErr("topic %d: %d partitions", t.ID, n)
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		p := &Partition{ID: r.U32("partition id"), CreatedAt: r.U64("partition created_at"), CreationID: r.U64("creation_id"),
			DeleteBelow: r.U64("delete_below"), PurgeGeneration: r.U64("purge_generation")}
		if r.Err() == nil && p.ID != uint32(i) {
			return snapErr("topic %d: partition ids not dense at %d", t.ID, p.ID)
		}
		t.Partitions = append(t.Partitions, p)
	}
	return r.Err()
}

func decodeGroups(r *wire.Reader, t *Topic) error {
	n := r.Count("groups count", 4+8+4+4)
	var prev int64 = -1
	for i := 0; i < n && r.Err() == nil; i++ {
		g := &ConsumerGroup{ID: r.U32("group id"), Generation: r.U64("generation"), Name: r.Str32("group name")}
		if r.Err() != nil {
			break
		}
		if int64(g.ID) <= prev || g.ID >= t.NextGroupID || !wire.ValidName(g.Name) {
			return snapErr("topic %d group %d: id or name invalid", t.ID, g.ID)
		}
		if _, dup := t.groupByName[g.Name]; dup {
			return snapErr("topic %d: duplicate group name %q", t.ID, g.Name)
		}
		prev = int64(g.ID)
		if err := decodeMembers(r, g); err != nil {
			return err
		}
		if r.Err() == nil {
			if err := checkMembers(g, len(t.Partitions)); err != nil {
				return err
			}
		}
		t.addGroup(g)
	}
	return r.Err()
}

func decodeMembers(r *wire.Reader, g *ConsumerGroup) error {
	n := r.Count("members count", 4+16+4+4)
	var prev int64 = -1
	for i := 0; i < n && r.Err() == nil; i++ {
		m := &GroupMember{Slot: r.U32("member slot"), Client: r.U128("member client")}
		k := r.Count("member partitions", 4)
		for j := 0; j < k && r.Err() == nil; j++ {
			m.Partitions = append(m.Partitions, r.U32("member partition"))
		}
		k = r.Count("member revocations", 16)
		var prevRev int64 = -1
		for j := 0; j < k && r.Err() == nil; j++ {
			rv := Revocation{PartitionID: r.U32("revocation partition"), TargetSlot: r.U32("revocation target"), Since: r.U64("revocation since")}
			if r.Err() == nil && int64(rv.PartitionID) <= prevRev {
				return snapErr("group %d: revocations not ascending", g.ID)
			}
			prevRev = int64(rv.PartitionID)
			m.Revocations = append(m.Revocations, rv)
		}
		if r.Err() != nil {
			break
		}
		if int64(m.Slot) <= prev {
			return snapErr("group %d: member slots not ascending", g.ID)
		}
		prev = int64(m.Slot)
		g.Members = append(g.Members, m)
	}
	return r.Err()
}

// checkMembers refuses assignments apply could never produce: a partition
// the topic does not have or owned twice, a pending revocation of a
// partition its member does not own, a client in two slots.
func checkMembers(g *ConsumerGroup, partitions int) error {
	owner := make(map[uint32]bool)
	clients := make(map[wire.U128]bool)
	for _, m := range g.Members {
		if clients[m.Client] {
			return snapErr("group %d: client in two slots", g.ID)
		}
		clients[m.Client] = true
		for _, p := range m.Partitions {
			if int64(p) >= int64(partitions) || owner[p] {
				return snapErr("group %d: partition %d not in the topic or owned twice", g.ID, p)
			}
			owner[p] = true
		}
		for _, rv := range m.Revocations {
			if !m.owns(rv.PartitionID) {
				return snapErr("group %d: revocation of a partition its member does not own", g.ID)
			}
		}
	}
	return nil
}

func (s *State) decodeClientTable(sec []byte) error {
	t, err := DecodeICT2(sec, s.cfg.ClientsTableMax)
	if err != nil {
		return err
	}
	s.clients = t
	return nil
}

// EncodeICT2 encodes the table as ICT2 (replica-plane.md 7.8.2): entries
// in slot order, compacted. full keeps the whole reply ring (state
// transfer); otherwise only the latest reply (checkpoint, 7.9.3).
func (t *ClientTable) EncodeICT2(full bool) []byte {
	b := []byte(ict2Magic)
	entries := t.entries()
	b = wire.AppendU32(b, uint32(len(entries)))
	for _, e := range entries {
		b = wire.AppendU128(b, e.Client)
		b = wire.AppendU64(b, e.Epoch)
		b = wire.AppendU32(b, e.UserID)
		b = wire.AppendU64(b, e.Watermark)
		b = wire.AppendU128(b, e.WatermarkChecksum)
		ring := e.ring
		if !full && len(ring) > 1 {
			ring = ring[len(ring)-1:]
		}
		b = append(b, uint8(len(ring)))
		for _, r := range ring {
			b = appendBytes32(b, r.frame)
		}
	}
	return wire.AppendU64(b, xxh3.Hash(b))
}

// DecodeICT2 decodes an ICT2 table (7.8.2): trailer, magic, count <=
// 65536, ring_len 1..=5, every reply a Reply frame, no duplicate client
// ids, no trailing bytes. Entries take slots 0..count-1; the capacity is
// max(capacity, count); latest_commit comes from the last ring reply.
func DecodeICT2(b []byte, capacity int) (*ClientTable, error) {
	body, err := checkTrailer(b, "client table")
	if err != nil {
		return nil, err
	}
	r := wire.NewReader(body)
	magic := r.Bytes("magic", 4)
	count := r.U32("count")
	if r.Err() != nil || string(magic) != ict2Magic || count > maxICT2Entries {
		return nil, snapErr("client table header")
	}
	if uint64(count)*(16+8+4+8+16+1+4+wire.HeaderSize) > uint64(r.Len()) {
		return nil, snapErr("client table count exceeds input")
	}
	t := NewClientTable(max(capacity, int(count)))
	for i := uint32(0); i < count; i++ {
		e := &ClientEntry{Client: r.U128("client"), Epoch: r.U64("epoch"), UserID: r.U32("user_id"),
			Watermark: r.U64("watermark"), WatermarkChecksum: r.U128("watermark_checksum")}
		ringLen := r.U8("ring_len")
		if r.Err() != nil {
			return nil, snapErr("client table: %v", r.Err())
		}
		if ringLen == 0 || ringLen > ReplyRingSize {
			return nil, snapErr("client table: ring_len %d", ringLen)
		}
		for j := 0; j < int(ringLen); j++ {
			frame := readBytes32(r, "reply")
			if r.Err() != nil {
				return nil, snapErr("client table: %v", r.Err())
			}
			if !isReplyFrame(frame) {
				return nil, snapErr("client table: ring entry is not a reply frame")
			}
			e.ring = append(e.ring, newCachedReply(append([]byte(nil), frame...)))
		}
		e.LatestCommit = e.ring[len(e.ring)-1].commit
		if e.Client.IsZero() {
			return nil, snapErr("client table: client id 0")
		}
		if _, dup := t.index[e.Client]; dup {
			return nil, snapErr("client table: duplicate client %v", e.Client)
		}
		t.slots = append(t.slots, e)
		t.index[e.Client] = len(t.slots) - 1
	}
	if r.Len() != 0 {
		return nil, snapErr("client table: trailing bytes")
	}
	return t, nil
}

func isReplyFrame(f []byte) bool {
	if len(f) < wire.HeaderSize {
		return false
	}
	h := wire.HeaderOf(f)
	if _, err := wire.DecodeReplyHeader(h); err != nil {
		return false
	}
	return int(h.Size()) == len(f)
}

// ReplaceClientTable installs a client table fetched by state transfer
// (replica-plane.md 7.9.4 step 3): its ICT2 encoding carries every reply
// ring, where a snapshot keeps only the latest reply of each client.
func (s *State) ReplaceClientTable(ict2 []byte) error { return s.decodeClientTable(ict2) }
