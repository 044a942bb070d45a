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
	// Partitions is the optional placement section (issue 23): present
	// only when the cluster places partitions.
	Partitions []ClusterStatusPartition
}

// ClusterStatusPartition is one partition's placement, as the answering
// node knows it:
//
//	[stream u32][topic u32][partition u32][replicas u32][voters u32][preferred u8][primary u8]
//
// Replicas is the replica set the metadata group placed it on, Voters the
// group's roster the answering node last saw (they differ while the
// partition moves; 0: unknown), Preferred its preferred primary and
// Primary the primary the answering node knows (NoPrimary: unknown).
type ClusterStatusPartition struct {
	Stream, Topic, Partition uint32
	Replicas, Voters         uint32
	Preferred, Primary       uint8
}

// NoPrimary is a ClusterStatusPartition.Primary that is not known.
const NoPrimary uint8 = 0xFF

// Moving reports a partition whose group is not on its replica set yet.
func (p ClusterStatusPartition) Moving() bool { return p.Voters != 0 && p.Voters != p.Replicas }

const (
	clusterStatusPartitionSize = 22
	// MaxStatusPartitions bounds partitions_count (a node carries at most
	// this many partitions per reply).
	MaxStatusPartitions = 1 << 20
)

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
	if len(s.Partitions) == 0 {
		return b
	}
	b = AppendU32(b, uint32(len(s.Partitions)))
	for _, p := range s.Partitions {
		b = AppendU32(b, p.Stream)
		b = AppendU32(b, p.Topic)
		b = AppendU32(b, p.Partition)
		b = AppendU32(b, p.Replicas)
		b = AppendU32(b, p.Voters)
		b = append(b, p.Preferred, p.Primary)
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
	if r.err != nil || r.Len() == 0 {
		return
	}
	// The optional placement section: a count, then exactly that many
	// entries, none empty and none naming an id above 31.
	n = r.U32("partitions_count")
	if r.err == nil && (n == 0 || n > MaxStatusPartitions || uint64(n)*clusterStatusPartitionSize != uint64(r.Len())) {
		r.Fail("partitions_count", fmt.Sprintf("%d entries in %d bytes", n, r.Len()))
		return
	}
	for i := uint32(0); i < n && r.err == nil; i++ {
		p := ClusterStatusPartition{Stream: r.U32("stream"), Topic: r.U32("topic"), Partition: r.U32("partition"),
			Replicas: r.U32("replicas"), Voters: r.U32("voters"), Preferred: r.U8("preferred"), Primary: r.U8("primary")}
		if err := p.Validate(); err != nil && r.err == nil {
			r.Fail("partition", err.Error())
		}
		s.Partitions = append(s.Partitions, p)
	}
}

// Validate checks what the decoder refuses of one partition entry.
func (p ClusterStatusPartition) Validate() error {
	switch {
	case p.Replicas == 0:
		return decodeErr("replicas", "an empty replica set")
	case p.Preferred > MaxNodeID || p.Replicas&(1<<p.Preferred) == 0:
		return decodeErr("preferred", fmt.Sprintf("%d is not in the replica set %b", p.Preferred, p.Replicas))
	case p.Primary != NoPrimary && p.Primary > MaxNodeID:
		return decodeErr("primary", fmt.Sprintf("%d is neither a node id nor 0xff", p.Primary))
	}
	return nil
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
	if len(s.Partitions) > MaxStatusPartitions {
		return decodeErr("partitions_count", fmt.Sprintf("%d exceeds %d", len(s.Partitions), MaxStatusPartitions))
	}
	for _, p := range s.Partitions {
		if err := p.Validate(); err != nil {
			return err
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
