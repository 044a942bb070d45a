package spanfile

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// The consensus vocabulary: span, event and attribute names the node's
// instrumentation, the simulator and the timeline agree on. One place, so
// a simulated run and a real run read the same way.

// Span names.
const (
	// SpanRequest is a client request, from frame decode to reply.
	SpanRequest = "iggy.request"
	// SpanOp is one replicated op on one replica: from admission (primary)
	// or the first prepare seen (backup) to applied (or replied). Its
	// trace id is derived from (cluster, group, op) (OpTraceID), so the
	// spans of all replicas for one op form one trace.
	SpanOp = "vsr.op"
	// SpanViewChange runs from entering a view change to normal status in
	// the new (or a later) view.
	SpanViewChange = "vsr.view_change"
	// SpanRecovery runs from boot in recovering status to normal.
	SpanRecovery = "vsr.recovery"
	// SpanRepair is one journal repair session.
	SpanRepair = "vsr.repair"
	// SpanStateTransfer is one state transfer (fetch and install).
	SpanStateTransfer = "vsr.state_transfer"
	// SpanEpoch marks a committed reconfiguration: the group entered a
	// new epoch (an instant; its reason names the roster).
	SpanEpoch = "vsr.epoch"
)

// Event names inside SpanOp, in the order an op meets them.
const (
	EventAdmitted  = "admitted"   // primary: the request entered the pipeline
	EventPrepared  = "prepared"   // primary: the prepare was built (op, view)
	EventJournaled = "journaled"  // the replica's journal holds the prepare
	EventForwarded = "forwarded"  // the prepare was sent on to AttrPeer
	EventPrepareOK = "prepare_ok" // primary: a PrepareOk from AttrPeer arrived
	EventCommitted = "committed"  // the replica's commit point passed the op
	EventApplied   = "applied"    // the state machine applied it
	EventReplied   = "replied"    // primary: the client got its reply
)

// Attribute keys.
const (
	AttrCluster = "iggy.cluster" // u128 cluster id, as hex
	AttrReplica = "iggy.replica" // the replica the span was recorded on (resource and span)
	AttrGroup   = "iggy.group"   // consensus group id
	AttrOp      = "iggy.op"      // op number
	AttrView    = "iggy.view"    // view number
	AttrPeer    = "iggy.peer"    // the other replica of an event
	AttrCommand = "iggy.command" // request command name
	AttrStream  = "iggy.stream"  // request stream identifier
	AttrTopic   = "iggy.topic"   // request topic identifier
	AttrPart    = "iggy.partition"
	// AttrStreamName and AttrTopicName name a partition group's stream and
	// topic on any span of the group; the timeline labels the group with
	// them when present (else with the ids the group id holds).
	AttrStreamName = "iggy.stream.name"
	AttrTopicName  = "iggy.topic.name"
	AttrStatus     = "iggy.status"   // reply status code
	AttrBytesIn    = "iggy.bytes_in" // request frame bytes
	AttrBytesOut   = "iggy.bytes_out"
	AttrReason     = "iggy.reason"  // why a view change, repair or transfer began
	AttrOutcome    = "iggy.outcome" // how it ended
	// A repair or state transfer span's commit point and target when it began.
	AttrCommitMin = "iggy.commit_min"
	AttrCommitMax = "iggy.commit_max"
	// AttrSimTick marks records the simulator wrote: times are virtual
	// (tick * TickNs from zero).
	AttrSimTick = "sim.tick"
)

// TickNs is the simulator's virtual tick length in its span files.
const TickNs = 10_000_000

// OpTraceID is the trace id of op in group of a cluster (its id as two
// 64-bit halves): every replica derives the same one, so their SpanOp
// spans form one trace without carrying context on the wire (which has no
// room for it). Never zero (an invalid trace id).
func OpTraceID(clusterLo, clusterHi, group, op uint64) [16]byte {
	var b [32]byte
	binary.LittleEndian.PutUint64(b[0:], clusterLo)
	binary.LittleEndian.PutUint64(b[8:], clusterHi)
	binary.LittleEndian.PutUint64(b[16:], group)
	binary.LittleEndian.PutUint64(b[24:], op)
	id := xxh3.Hash128(b[:]).Bytes()
	if id == ([16]byte{}) {
		id[15] = 1
	}
	return id
}
