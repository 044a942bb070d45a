package wire

import "sort"

// GlobalPermissions are the 10 global flags, in wire order (client-plane.md 9.2).
type GlobalPermissions struct {
	ManageServers bool
	ReadServers   bool
	ManageUsers   bool
	ReadUsers     bool
	ManageStreams bool
	ReadStreams   bool
	ManageTopics  bool
	ReadTopics    bool
	PollMessages  bool
	SendMessages  bool
}

// StreamPermissions are the 6 per-stream flags and the stream's topic entries.
type StreamPermissions struct {
	ManageStream bool
	ReadStream   bool
	ManageTopics bool
	ReadTopics   bool
	PollMessages bool
	SendMessages bool
	Topics       map[uint32]TopicPermissions
}

// TopicPermissions are the 4 per-topic flags.
type TopicPermissions struct {
	ManageTopic  bool
	ReadTopic    bool
	PollMessages bool
	SendMessages bool
}

// Permissions is a user's permission set (client-plane.md 9). Streams maps a
// numeric stream id to its entry. Order holds the stream entries' order as
// decoded (a CreateUser reply echoes it); the canonical encoding is
// ascending ids.
type Permissions struct {
	Global  GlobalPermissions
	Streams map[uint32]StreamPermissions
	// order and topicOrder remember the decoded entry order for echoing.
	order      []uint32
	topicOrder map[uint32][]uint32
}

func appendFlags(b []byte, flags ...bool) []byte {
	for _, f := range flags {
		b = AppendBool8(b, f)
	}
	return b
}

// EncodedLen is 11 + sum(12 + 9 x topics) (client-plane.md 9.3).
func (p *Permissions) EncodedLen() int {
	n := 11
	for _, s := range p.Streams {
		n += 12 + 9*len(s.Topics)
	}
	return n
}

// AppendCanonical appends the canonical encoding: streams and topics in
// ascending id order, flags as 00/01.
func (p *Permissions) AppendCanonical(b []byte) []byte {
	return p.appendOrdered(b, sortedKeys(p.Streams), func(sid uint32) []uint32 {
		return sortedKeys(p.Streams[sid].Topics)
	})
}

// AppendEcho appends the encoding in the order the set was decoded in
// (duplicates collapsed to their last value), as a CreateUser reply echoes
// the block the client sent (9.3). A set built in Go has no decoded order
// and is encoded canonically.
func (p *Permissions) AppendEcho(b []byte) []byte {
	if p.order == nil {
		return p.AppendCanonical(b)
	}
	return p.appendOrdered(b, p.order, func(sid uint32) []uint32 { return p.topicOrder[sid] })
}

func (p *Permissions) appendOrdered(b []byte, streams []uint32, topics func(uint32) []uint32) []byte {
	g := p.Global
	b = appendFlags(b, g.ManageServers, g.ReadServers, g.ManageUsers, g.ReadUsers, g.ManageStreams,
		g.ReadStreams, g.ManageTopics, g.ReadTopics, g.PollMessages, g.SendMessages)
	b = AppendBool8(b, len(streams) > 0)
	for i, sid := range streams {
		s := p.Streams[sid]
		b = AppendU32(b, sid)
		b = appendFlags(b, s.ManageStream, s.ReadStream, s.ManageTopics, s.ReadTopics, s.PollMessages, s.SendMessages)
		tids := topics(sid)
		b = AppendBool8(b, len(tids) > 0)
		for j, tid := range tids {
			t := s.Topics[tid]
			b = AppendU32(b, tid)
			b = appendFlags(b, t.ManageTopic, t.ReadTopic, t.PollMessages, t.SendMessages)
			b = AppendBool8(b, j < len(tids)-1)
		}
		b = AppendBool8(b, i < len(streams)-1)
	}
	return b
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

// DecodePermissions decodes a permission block that must fill b exactly
// (the declared u32 length equals the bytes consumed, 11.1).
func DecodePermissions(b []byte) (*Permissions, error) {
	r := NewReader(b)
	p := r.permissions("permissions")
	if r.err != nil {
		return nil, r.err
	}
	if r.Len() != 0 {
		return nil, decodeErr("permissions", "length does not match the block")
	}
	return p, nil
}

func (r *Reader) permissions(field string) *Permissions {
	p := &Permissions{}
	g := &p.Global
	for _, f := range []*bool{&g.ManageServers, &g.ReadServers, &g.ManageUsers, &g.ReadUsers, &g.ManageStreams,
		&g.ReadStreams, &g.ManageTopics, &g.ReadTopics, &g.PollMessages, &g.SendMessages} {
		*f = r.Bool8(field)
	}
	more := r.Bool8(field)
	for more && r.err == nil {
		sid := r.U32(field)
		var s StreamPermissions
		for _, f := range []*bool{&s.ManageStream, &s.ReadStream, &s.ManageTopics, &s.ReadTopics, &s.PollMessages, &s.SendMessages} {
			*f = r.Bool8(field)
		}
		var tids []uint32
		moreTopics := r.Bool8(field)
		for moreTopics && r.err == nil {
			tid := r.U32(field)
			var t TopicPermissions
			for _, f := range []*bool{&t.ManageTopic, &t.ReadTopic, &t.PollMessages, &t.SendMessages} {
				*f = r.Bool8(field)
			}
			if s.Topics == nil {
				s.Topics = make(map[uint32]TopicPermissions)
			}
			if _, dup := s.Topics[tid]; !dup {
				tids = append(tids, tid)
			}
			s.Topics[tid] = t
			moreTopics = r.Bool8(field)
		}
		if p.Streams == nil {
			p.Streams = make(map[uint32]StreamPermissions)
			p.topicOrder = make(map[uint32][]uint32)
		}
		if _, dup := p.Streams[sid]; !dup {
			p.order = append(p.order, sid)
		}
		p.Streams[sid] = s
		p.topicOrder[sid] = tids
		more = r.Bool8(field)
	}
	if p.order == nil {
		p.order = []uint32{}
	}
	return p
}
