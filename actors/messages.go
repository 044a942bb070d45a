package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"iggynode/internal/framebuf"
	"iggynode/metadata"
	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// Messages between the node's actors. Pointers travel; receivers treat them
// as owned.

// frameIn carries one client frame from the edge to its connection actor.
type frameIn struct {
	buf   []byte
	batch wire.SendVerdict // the edge's verdict on a SendMessages batch
	owner *framebuf.Buf    // buf's pooled buffer (nil: a plain allocation)
}

// connClosed tells a connection actor that its transport ended.
type connClosed struct{}

// replyOut is the answer to the connection's current request: a complete
// reply (or eviction) frame, and what it does to the connection's binding.
type replyOut struct {
	frame  []byte
	bind   *binding // set by a successful Register
	unbind bool     // set by a Logout, and by fencing
	close  bool     // close the transport after sending
	pooled bool     // frame came from clientplane.GetFrame: recycle after the write
	// splices, with pooled: frame is the built part of a reply that
	// carries these bytes by reference (wire.Splice; a poll's cached
	// batches), written without a copy.
	splices []wire.Splice
}

// binding is a connection's session (client-plane.md 5.1).
type binding struct {
	client wire.U128
	epoch  uint64
	userID uint32
}

// clientRequest is a validated request the connection hands to the actor
// that owns its plane. The receiver answers the connection with exactly one
// replyOut.
type clientRequest struct {
	conn   *actor.PID
	connID uint32
	hdr    wire.RequestHeader
	frame  []byte
	// owner is frame's pooled buffer (nil: none), with the reference the
	// edge handed over: a partition that caches the batch takes it over
	// (pooled.go, pooledOwner); any other path leaves the buffer to
	// the collector.
	owner   *framebuf.Buf
	bound   *binding // nil before login
	address string
	relay   *relay // set when another replica forwarded it (partition_forward.go)
	// http is set for a request of the HTTP plane's virtual connections
	// (http.go): the user the plane verified, and verify-only logins.
	http *httpAssertion
	// span is the request's span when tracing (its op spans link to it).
	span *spanRecord
	// readsSources: the connection reads stored batches from their files
	// as it writes the reply, so a poll may reply with stored sources.
	readsSources bool
	// batch is a SendMessages batch's verdict, reached on the connection's
	// turn (checkBatch).
	batch batchVerdict
}

// batchVerdict is what wire.ValidateBatchIndexed said of a SendMessages
// batch before the request reached its partition, with the frame table it
// gathered (kept by the partition log, partition.Log.ApplySendIndexed).
type batchVerdict struct {
	checked bool
	err     error
	table   wire.FrameTable
}

// checkBatch validates a SendMessages request's batch (client-plane.md
// 13.1 steps 3-6: layout, message count, every checksum) on the
// connection actor's turn, one pass over the bytes while they are fresh
// from the socket, in parallel across connections, or takes edge's
// verdict, reached while the frame arrived (wire.SendCheck), when it is on
// this batch; the partition actor,
// which every producer of a partition shares, only reads the verdict
// (partitionActor.onSend), after the routing checks, so the order
// of the errors a client sees is the spec's. A body that does not decode
// is left to the metadata actor, which answers it. The frame table comes
// with the verdict (an encrypted log drops it: its records are opened,
// never sliced). It returns the decoded body, for the connection's own
// routing (routing.go).
func (r *clientRequest) checkBatch(edge *wire.SendVerdict) (s wire.SendMessages, ok bool) {
	if s.Decode(r.frame[wire.HeaderSize:]) != nil {
		return s, false
	}
	if edge.Covers(r.frame, s.Batch) {
		r.batch = batchVerdict{checked: true, err: edge.Err, table: edge.Table}
		return s, true
	}
	table, err := wire.ValidateBatchIndexed(s.Batch, s.MessagesCount)
	r.batch = batchVerdict{checked: true, err: err, table: table}
	return s, true
}

// validate is the verdict on m's batch: the connection's, or reached now
// (a forwarded send, an HTTP one).
func (m *partitionSend) validate() error {
	if m.req.batch.checked {
		return m.req.batch.err
	}
	return wire.ValidateBatch(m.batch, m.messagesCount)
}

// countEntities asks the metadata actor for entityCounts (the entity
// gauges, read at collection).
type countEntities struct{}

// entityCounts are the node's streams, topics, partitions, segments,
// messages and users, and its open client connections.
type entityCounts struct {
	totals  metadata.Totals
	clients int
}

// connInfo registers a connection in the node's client list (8.6).
type connInfo struct {
	pid       *actor.PID
	id        uint32
	address   string
	transport clientplane.Transport
	userID    uint32 // 0xFFFFFFFF when not logged in
	client    wire.U128
}

// connGone removes a connection from the client list.
type connGone struct{ id uint32 }

// connBound updates a connection's user in the client list.
type connBound struct {
	id     uint32
	userID uint32
	client wire.U128
}

// unbindClient tells a connection that a newer registration of its client
// id fenced it (client-plane.md 5.4).
type unbindClient struct{ client wire.U128 }

// connCrash makes a connection actor panic: fault injection that proves a
// failing connection is contained by its supervisor.
type connCrash struct{}

// listConns asks the metadata actor for the connection list (fault
// injection and diagnostics).
type listConns struct{ reply chan<- []*actor.PID }

// listPartitions asks the metadata actor for the partition actors.
type listPartitions struct{ reply chan<- map[uint64]*actor.PID }

// maintainNow runs the node's periodic maintenance once (segment cleaner).
type maintainNow struct {
	nowUs uint64
	done  chan<- struct{}
}

// staleCheck asks a connection whether it has been idle for longer than
// idleUs at nowUs (heartbeat verifier).
type staleCheck struct {
	nowUs  uint64
	idleUs uint64
}

// heartbeatTick runs the heartbeat verifier once at nowUs.
type heartbeatTick struct{ nowUs uint64 }

// inspectMetadata runs fn on the metadata actor (tests and diagnostics).
type inspectMetadata struct {
	fn   func(*metadataActor)
	done chan struct{}
}

// groupProgress reports a consumer group's progress on one partition: the
// last offset a poll served it and the offset it committed (server-behaviour.md
// 7.4.5: a partition is in flight while polled > committed).
type groupProgress struct {
	ref          metadata.GroupRef
	partition    uint32
	polled       uint64
	hasPolled    bool
	committed    uint64
	hasCommitted bool
}
