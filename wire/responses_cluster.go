package wire

import "fmt"

// MemberRole is a ClusterStatusNode's place in the metadata roster
// (docs/reconfiguration.md, "Admin surface").
type MemberRole uint8

const (
	MemberVoter   MemberRole = 0
	MemberLearner MemberRole = 1
	// MemberRemoved is reported by a node that left the roster, for itself.
	MemberRemoved MemberRole = 2
)

var memberRoleNames = [...]string{"voter", "learner", "removed"}

func (r MemberRole) String() string {
	if int(r) < len(memberRoleNames) {
		return memberRoleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// MemberStatus is whether the answering node hears from a member.
type MemberStatus uint8

const (
	MemberLive MemberStatus = 0
	// MemberUnreachable: no frame from it within the heartbeat timeout.
	MemberUnreachable MemberStatus = 1
)

var memberStatusNames = [...]string{"live", "unreachable"}

func (s MemberStatus) String() string {
	if int(s) < len(memberStatusNames) {
		return memberStatusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// ClusterStatusReply is the reply of 9001..9004:
//
//	[epoch u32][voters u32][learners u32][target u32][epoch_op u64][view u32]
//	[nodes_count u32][node x nodes_count]
//
// Voters, Learners and Target are bitmasks over ids 0..31 (vsr.Roster):
// Target equals Voters unless a change is in progress. The decoder is
// strict: no trailing bytes, at most 32 nodes in strictly ascending id,
// every role, primary and status value known.
type ClusterStatusReply struct {
	Epoch    uint32
	Voters   uint32
	Learners uint32
	Target   uint32
	EpochOp  uint64 // op of the R that opened the epoch; 0 in epoch 0
	View     uint32 // the answering node's metadata view
	Nodes    []ClusterStatusNode
}

// MaxStatusNodes bounds nodes_count: one entry per id 0..31.
const MaxStatusNodes = MaxNodeID + 1

// clusterStatusNodeMin is the smallest node entry.
const clusterStatusNodeMin = 4 + 8 + nodeSpecTailMin

func (s ClusterStatusReply) AppendTo(b []byte) []byte {
	b = AppendU32(b, s.Epoch)
	b = AppendU32(b, s.Voters)
	b = AppendU32(b, s.Learners)
	b = AppendU32(b, s.Target)
	b = AppendU64(b, s.EpochOp)
	b = AppendU32(b, s.View)
	b = AppendU32(b, uint32(len(s.Nodes)))
	for _, n := range s.Nodes {
		b = n.appendTo(b)
	}
	return b
}

func (s *ClusterStatusReply) Decode(body []byte) error {
	return respDecode(s, body, "cluster status", true, (*ClusterStatusReply).read)
}

func (s *ClusterStatusReply) read(r *Reader) {
	s.Epoch = r.U32("epoch")
	s.Voters = r.U32("voters")
	s.Learners = r.U32("learners")
	s.Target = r.U32("target")
	s.EpochOp = r.U64("epoch_op")
	s.View = r.U32("view")
	n := r.U32("nodes_count")
	if r.err == nil && n > MaxStatusNodes {
		r.Fail("nodes_count", fmt.Sprintf("%d exceeds %d", n, MaxStatusNodes))
		return
	}
	s.Nodes = respReadN(r, r.respFitCount("nodes_count", n, clusterStatusNodeMin), (*ClusterStatusNode).read)
	for i := 1; i < len(s.Nodes) && r.err == nil; i++ {
		if s.Nodes[i].Spec.ID <= s.Nodes[i-1].Spec.ID {
			r.Fail("node id", fmt.Sprintf("%d after %d: ids must ascend", s.Nodes[i].Spec.ID, s.Nodes[i-1].Spec.ID))
		}
	}
}

// Validate checks what the decoder would refuse: node count, ascending ids
// and every node's values.
func (s ClusterStatusReply) Validate() error {
	if len(s.Nodes) > MaxStatusNodes {
		return decodeErr("nodes_count", fmt.Sprintf("%d exceeds %d", len(s.Nodes), MaxStatusNodes))
	}
	for i, n := range s.Nodes {
		if err := n.Validate(); err != nil {
			return err
		}
		if i > 0 && n.Spec.ID <= s.Nodes[i-1].Spec.ID {
			return decodeErr("node id", "ids must ascend")
		}
	}
	return nil
}

// Node returns the entry of id, if the reply lists it.
func (s ClusterStatusReply) Node(id uint8) (ClusterStatusNode, bool) {
	for _, n := range s.Nodes {
		if n.Spec.ID == id {
			return n, true
		}
	}
	return ClusterStatusNode{}, false
}

// ClusterStatusNode is one node of a ClusterStatusReply:
//
//	[id u8][role u8][primary u8][status u8][commit u64][NodeSpec without id]
//
// Spec.ID is the leading id. Commit is the highest metadata op the
// answering node knows the node holds (its own commit for itself; 0 when
// unknown).
type ClusterStatusNode struct {
	Spec    NodeSpec
	Role    MemberRole
	Primary bool // the metadata primary of the reply's view
	Status  MemberStatus
	Commit  uint64
}

func (n ClusterStatusNode) appendTo(b []byte) []byte {
	b = append(b, n.Spec.ID, byte(n.Role))
	b = AppendBool8(b, n.Primary)
	b = append(b, byte(n.Status))
	b = AppendU64(b, n.Commit)
	return n.Spec.appendTail(b)
}

func (n *ClusterStatusNode) read(r *Reader) {
	n.Spec.ID = readNodeID(r, "node id")
	n.Role = MemberRole(r.U8("node role"))
	primary := r.U8("node primary")
	n.Status = MemberStatus(r.U8("node status"))
	n.Commit = r.U64("node commit")
	if r.err != nil {
		return
	}
	switch {
	case n.Role > MemberRemoved:
		r.Fail("node role", fmt.Sprintf("%d outside 0..=2", uint8(n.Role)))
	case primary > 1:
		r.Fail("node primary", fmt.Sprintf("%d is neither 0 nor 1", primary))
	case n.Status > MemberUnreachable:
		r.Fail("node status", fmt.Sprintf("%d is neither 0 nor 1", uint8(n.Status)))
	}
	n.Primary = primary == 1
	n.Spec.readTail(r)
}

// Validate checks the values the decoder refuses.
func (n ClusterStatusNode) Validate() error {
	switch {
	case n.Role > MemberRemoved:
		return decodeErr("node role", fmt.Sprintf("%d outside 0..=2", uint8(n.Role)))
	case n.Status > MemberUnreachable:
		return decodeErr("node status", fmt.Sprintf("%d is neither 0 nor 1", uint8(n.Status)))
	}
	return n.Spec.Validate()
}
