package actors

import (
	"encoding/binary"
	"fmt"
	"time"

	"iggynode/wire"
)

// tailKey holds a cluster partition replica's committedTail.
func tailKey(group uint64) string { return fmt.Sprintf("partition/%d/tail", group) }

// tailSaveInterval spaces the tail's saves: it is a liveness aid, not a
// durability record, and writing ~8 KB with every Ready cost 12-20% of a
// cluster's small-batch throughput. The core uses a tail only if it ends
// at the recovered commit point, so what counts is the save at the
// actor's stop (a graceful restart) and, after a crash, a save made since
// the partition's last commit (one that has gone quiet).
const tailSaveInterval = 200 * time.Millisecond

// saveTail stores the tail when it changed and, unless now, the last save
// is tailSaveInterval old; never after a committed batch failed to store
// (stopForStore): the tail would name a batch the segments lack.
func (p *partitionActor) saveTail(now bool) {
	if !p.tailDirty || !p.storeAtCommit || p.storeFailed != "" || (!now && time.Since(p.tailSavedAt) < tailSaveInterval) {
		return
	}
	if err := p.node.store.Put(tailKey(p.ref.Group), p.tail.appendTo(make([]byte, 0, p.tail.encodedSize())), false); err != nil {
		p.log.Warn("saving the committed tail", "err", err)
		return
	}
	p.tailSavedAt, p.tailDirty = time.Now(), false
}

// committedTail keeps a partition replica's last committed ops in a form
// cheap to store (tailKey): each op's 256-byte
// prepare header, and its body only when the segments do not hold it (a
// consumer-offset write; a SendMessages body is the batch stored at its
// base offset). After a restart the prepares are rebuilt from it and the
// segments and handed to the core as vsr.Recovery.Retained, so the replica
// can serve them to repair: the journal is memory (replica-plane.md 9.4),
// and after a whole-cluster restart ops that only one replica knew to be
// committed exist nowhere else. The core checks the rebuilt chain (each
// prepare's identity and body seal, parents, the recovered commit point)
// and ignores a tail that does not hold.
type committedTail struct {
	ops []tailOp
}

type tailOp struct {
	head   []byte // the prepare header
	inline bool   // the body is kept here, not in the segments
	base   uint64 // SendMessages: the batch's base offset
	body   []byte // inline: the body itself
}

// tailCap is how many committed ops the tail keeps: a backup can lag the
// primary's commit point by at most a pipeline of prepares.
func (p *partitionActor) tailCap() int {
	return int(max(p.node.opts.Config.Partition.PrepareQueueDepth, 1))
}

// add keeps the committed prepare frame, dropping the oldest beyond limit;
// the dropped op's buffers hold the new one, so a full tail allocates
// nothing per commit.
func (t *committedTail) add(frame []byte, limit int) {
	var reuse tailOp
	if len(t.ops) >= limit {
		reuse = t.ops[0]
		n := copy(t.ops, t.ops[len(t.ops)-limit+1:])
		clear(t.ops[n:])
		t.ops = t.ops[:n]
	}
	op := tailOp{head: append(reuse.head[:0], frame[:wire.HeaderSize]...)}
	body := frame[wire.HeaderSize:]
	if wire.HeaderOf(frame).Prepare().Operation == wire.OpSendMessages && len(body) >= wire.BatchHeaderSize {
		op.base = wire.Batch(body).BaseOffset()
	} else {
		op.inline, op.body = true, append(reuse.body[:0], body...)
	}
	t.ops = append(t.ops, op)
}

// Encoding, per op: header (256), kind u8 (0: base u64; 1: u32 length and
// the body).
func (t *committedTail) encodedSize() int {
	n := 0
	for _, op := range t.ops {
		if op.inline {
			n += wire.HeaderSize + 1 + 4 + len(op.body)
		} else {
			n += wire.HeaderSize + 1 + 8
		}
	}
	return n
}

func (t *committedTail) appendTo(b []byte) []byte {
	for _, op := range t.ops {
		b = append(b, op.head...)
		if !op.inline {
			b = append(b, 0)
			b = binary.LittleEndian.AppendUint64(b, op.base)
			continue
		}
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(op.body)))
		b = append(b, op.body...)
	}
	return b
}

// decodeCommittedTail reads what appendTo wrote; a damaged record ends the
// tail there (the core would refuse an incomplete chain anyway).
func decodeCommittedTail(b []byte) committedTail {
	var t committedTail
	for len(b) >= wire.HeaderSize+1 {
		op := tailOp{head: append([]byte(nil), b[:wire.HeaderSize]...)}
		kind := b[wire.HeaderSize]
		b = b[wire.HeaderSize+1:]
		switch {
		case kind == 0 && len(b) >= 8:
			op.base = binary.LittleEndian.Uint64(b)
			b = b[8:]
		case kind == 1 && len(b) >= 4 && uint64(len(b)-4) >= uint64(binary.LittleEndian.Uint32(b)):
			n := binary.LittleEndian.Uint32(b)
			op.inline, op.body = true, append([]byte{}, b[4:4+n]...)
			b = b[4+n:]
		default:
			return t
		}
		t.ops = append(t.ops, op)
	}
	return t
}

// frames rebuilds the prepare frames, reading batches with read. An op
// whose batch cannot be read (retention removed its segment) cuts the tail
// there: only the ops after it are returned.
func (t *committedTail) frames(read func(base uint64) ([]byte, error)) [][]byte {
	var out [][]byte
	for _, op := range t.ops {
		body := op.body
		if !op.inline {
			batch, err := read(op.base)
			if err != nil {
				out = nil
				continue
			}
			body = batch
		}
		out = append(out, append(append(make([]byte, 0, len(op.head)+len(body)), op.head...), body...))
	}
	return out
}
