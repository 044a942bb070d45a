package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"iggynode/diag"
	"iggynode/wire"
)

// stats is GetStats (7.14): process and host figures from diag, counters
// from metadata and the connection list.
func (m *metadataActor) stats() []byte {
	c := m.entityCounts()
	t := c.totals
	s := m.n.collector.Collect(diag.Counters{
		MessagesSizeBytes: t.SizeBytes, StreamsCount: t.Streams, TopicsCount: t.Topics,
		PartitionsCount: t.Partitions, SegmentsCount: t.Segments, MessagesCount: t.MessagesCount,
		ClientsCount: uint32(c.clients), ConsumerGroupsCount: t.ConsumerGroups,
	})
	return s.AppendTo(nil)
}

// entityCounts are the counters GetStats and the entity gauges report.
func (m *metadataActor) entityCounts() *entityCounts {
	return &entityCounts{totals: m.state.Totals(), clients: len(m.conns)}
}

// snapshot builds the GetSnapshot archive off the actor's mailbox (it
// reads /proc and log files) and answers the connection directly.
func (m *metadataActor) snapshot(ctx actor.Context, req *clientRequest) {
	cfg := m.n.opts.Config
	env := diag.SnapshotEnv{
		LogDir:         cfg.LogDir(),
		ConfigPath:     cfg.RuntimeConfigPath(),
		MaxArchiveSize: int(cfg.MessageBus.MaxMessageSize) - wire.HeaderSize,
	}
	body := req.frame[wire.HeaderSize:]
	commit := m.commit()
	root := m.n.root()
	go func() {
		archive, code := diag.SnapshotFromBody(body, env)
		root.Send(req.conn, &replyOut{frame: readReply(&req.hdr, commit, code, archive)})
	}()
}
