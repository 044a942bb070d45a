package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"iggynode/vsr"
	"iggynode/wire"
)

// The cluster roster (issue 22): the metadata group's OpReconfigure
// (wire.OpReconfigure, 120, server-internal) carries the next roster of
// the group, the consensus core's membership (vsr.Roster: epoch, voters,
// learners, target) followed by the address of every node it names. The
// core reads the first vsr.RosterBodySize bytes and changes its epoch
// when the op commits (vsr/reconfig.go); this state machine keeps the
// whole roster, so every replica serves the same one to clients (10.4)
// and to the partition groups that follow it, and carries it in the
// snapshot.
//
// Body: the vsr roster (20 bytes), u32 from_voters (the voters of the
// roster the change starts from: the epoch before the first R names the
// configured roster, which only the shell knows), u16 node count, then
// per node in
// ascending id order: u8 id, u16 address length, the replica-plane
// address (UTF-8, host:port, 1..255 bytes), then what clients are told
// of it (GetClusterMetadata, client-plane.md 7.15): name (u8 length +
// UTF-8), ip (u8 length + UTF-8), and u16 tcp, quic, http and websocket
// ports (0: not offered). Every voter and learner has exactly one
// entry; entries of other ids are dropped (the core proposes the R2 that
// ends a change with the trailer of R1, which still names the nodes R2
// removes).

// RosterNode is one node of the roster: its replica-plane Address and
// the client-facing name, IP and ports GetClusterMetadata reports.
type RosterNode struct {
	ID      uint8
	Address string
	Name    string
	IP      string
	Ports   NodePorts
}

// NodePorts are a node's client-facing ports (0: not offered).
type NodePorts struct{ TCP, QUIC, HTTP, WebSocket uint16 }

// Roster is the membership the metadata group committed last.
type Roster struct {
	vsr.Roster
	// FromVoters are the voters of the roster this R changed: what the
	// partitions existing at the first R were started on.
	FromVoters uint32
	Nodes      []RosterNode
}

// Role names a node's part in r: "voter", "learner" or "" (not in it).
func (r Roster) Role(id uint8) string {
	switch {
	case r.Voter(id):
		return "voter"
	case r.Learner(id):
		return "learner"
	}
	return ""
}

// Address is the replica-plane address of node id ("" when r does not
// name it).
func (r Roster) Address(id uint8) string {
	n, _ := r.Node(id)
	return n.Address
}

// Node is the entry of node id.
func (r Roster) Node(id uint8) (RosterNode, bool) {
	for _, n := range r.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return RosterNode{}, false
}

// maxRosterAddress bounds one address.
const maxRosterAddress = 255

// EncodeRoster appends the body of a metadata OpReconfigure prepare.
func EncodeRoster(dst []byte, r Roster) []byte {
	dst = vsr.EncodeRoster(dst, r.Roster)
	dst = wire.AppendU32(dst, r.FromVoters)
	nodes := slices.SortedFunc(slices.Values(r.Nodes), func(a, b RosterNode) int { return cmp.Compare(a.ID, b.ID) })
	dst = wire.AppendU16(dst, uint16(len(nodes)))
	for _, n := range nodes {
		dst = append(dst, n.ID)
		dst = wire.AppendU16(dst, uint16(len(n.Address)))
		dst = append(dst, n.Address...)
		dst = append(dst, uint8(len(n.Name)))
		dst = append(dst, n.Name...)
		dst = append(dst, uint8(len(n.IP)))
		dst = append(dst, n.IP...)
		for _, p := range []uint16{n.Ports.TCP, n.Ports.QUIC, n.Ports.HTTP, n.Ports.WebSocket} {
			dst = wire.AppendU16(dst, p)
		}
	}
	return dst
}

// DecodeRoster reads a metadata OpReconfigure body, strictly: the vsr
// roster valid, ids ascending and unique, one address per member and
// none for any other id, nothing after the last node.
func DecodeRoster(b []byte) (Roster, error) {
	ro, err := vsr.DecodeRoster(b)
	if err != nil {
		return Roster{}, err
	}
	r := wire.NewReader(b[vsr.RosterBodySize:])
	out := Roster{Roster: ro, FromVoters: r.U32("from_voters")}
	count := int(r.U16("node_count"))
	var named uint32
	for i := 0; i < count && r.Err() == nil; i++ {
		id := r.U8("id")
		n := int(r.U16("address_len"))
		if r.Err() != nil {
			break
		}
		if n == 0 || n > maxRosterAddress {
			return Roster{}, fmt.Errorf("metadata: roster node %d: address of %d bytes", id, n)
		}
		addr := r.Bytes("address", n)
		name := r.Bytes("name", int(r.U8("name_len")))
		ip := r.Bytes("ip", int(r.U8("ip_len")))
		ports := NodePorts{TCP: r.U16("tcp_port"), QUIC: r.U16("quic_port"), HTTP: r.U16("http_port"), WebSocket: r.U16("websocket_port")}
		if r.Err() != nil {
			break
		}
		if id >= vsr.MaxReplicas || (i > 0 && id <= out.Nodes[i-1].ID) {
			return Roster{}, fmt.Errorf("metadata: roster node ids not ascending at %d", id)
		}
		named |= 1 << id
		out.Nodes = append(out.Nodes, RosterNode{ID: id, Address: string(addr), Name: string(name), IP: string(ip), Ports: ports})
	}
	switch {
	case r.Err() != nil:
		return Roster{}, fmt.Errorf("metadata: roster: %v", r.Err())
	case r.Len() != 0:
		return Roster{}, fmt.Errorf("metadata: roster: %d trailing bytes", r.Len())
	case named&ro.Members() != ro.Members():
		return Roster{}, fmt.Errorf("metadata: roster names nodes %b, its members are %b", named, ro.Members())
	}
	out.Nodes = slices.DeleteFunc(out.Nodes, func(n RosterNode) bool { return !ro.Member(n.ID) })
	return out, nil
}

// Roster is the roster the last applied OpReconfigure committed (ok
// false while the cluster runs on its configured roster, epoch 0).
func (s *State) Roster() (Roster, bool) {
	if s.roster == nil {
		return Roster{}, false
	}
	r := *s.roster
	r.Nodes = slices.Clone(r.Nodes)
	return r, true
}

// applyReconfigure records the committed roster. The consensus core took
// the epoch at this op already; a roster that does not decode, or is not
// the next epoch, is refused with InvalidCommand on every replica alike
// (the core refuses the same R: reconfig.go's enterEpoch drops an epoch
// not ahead), so replicas never disagree on it.
func (s *State) applyReconfigure(c *applyCtx) (wire.ErrorCode, []byte) {
	r, err := DecodeRoster(c.body)
	if err != nil {
		return wire.ErrInvalidCommand, nil
	}
	current := uint32(0)
	if s.roster != nil {
		current = s.roster.Epoch
	}
	if r.Epoch <= current {
		return wire.ErrInvalidCommand, nil
	}
	if s.roster == nil {
		// The partitions of the configured roster's time started on the
		// voters this first R changes.
		s.partVoters = map[uint64]uint32{}
		for _, p := range s.Partitions() {
			s.partVoters[p.Group] = r.FromVoters
		}
	}
	s.roster = &r
	if !r.Changing() {
		s.rebalance(r.Voters)
	}
	return 0, nil
}

// followPartitions records the voters of the partitions an op created
// (the committed roster's) and forgets those it deleted.
func (s *State) followPartitions(e Effects) {
	if s.roster == nil {
		return
	}
	for _, p := range e.DeletedPartitions {
		delete(s.partVoters, p.Group)
	}
	for _, p := range e.CreatedPartitions {
		s.partVoters[p.Group] = s.roster.Voters
	}
}

// PartitionVoters are the voters partition group started on (ok false
// while no roster committed and placement put it nowhere: the configured
// roster's).
func (s *State) PartitionVoters(group uint64) (uint32, bool) {
	if p, ok := s.placement[group]; ok {
		return p.StartVoters, true
	}
	v, ok := s.partVoters[group]
	return v, ok
}

// appendRoster is the snapshot's roster section (tag 4): u32 length and
// the body of the OpReconfigure that committed it, then u32 count and,
// by ascending group, u64 group and u32 voters (PartitionVoters).
func (s *State) appendRoster(b []byte) []byte {
	body := EncodeRoster(nil, *s.roster)
	b = wire.AppendU32(b, uint32(len(body)))
	b = append(b, body...)
	groups := slices.Sorted(maps.Keys(s.partVoters))
	b = wire.AppendU32(b, uint32(len(groups)))
	for _, g := range groups {
		b = wire.AppendU64(b, g)
		b = wire.AppendU32(b, s.partVoters[g])
	}
	return b
}

func (s *State) decodeRoster(sec []byte) error {
	rd := wire.NewReader(sec)
	body := rd.Bytes("roster", int(rd.U32("roster_len")))
	if rd.Err() != nil {
		return snapErr("roster: %v", rd.Err())
	}
	r, err := DecodeRoster(body)
	if err != nil {
		return snapErr("roster: %v", err)
	}
	n := rd.U32("partition_voters_count")
	if rd.Err() != nil || uint64(n)*12 != uint64(rd.Len()) {
		return snapErr("roster: %d partition voters in %d bytes", n, rd.Len())
	}
	voters := make(map[uint64]uint32, n)
	last := uint64(0)
	for i := uint32(0); i < n; i++ {
		g, v := rd.U64("group"), rd.U32("voters")
		if i > 0 && g <= last {
			return snapErr("roster: partition voters not ascending at group %d", g)
		}
		voters[g], last = v, g
	}
	s.roster, s.partVoters = &r, voters
	return nil
}
