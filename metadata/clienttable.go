package metadata

import (
	"iggynode/wire"
)

// The replicated client table of the metadata group (replica-plane.md
// 5.12; client-plane.md 5.3). Every mutation is deterministic and happens
// at commit, identically on every replica.

// ReplyRingSize is the number of committed replies kept per client (5.12.1).
const ReplyRingSize = 5

// Verdict is check_request's answer (replica-plane.md 5.12.2).
type Verdict uint8

const (
	// VerdictNew: request > watermark, dispatch it (gaps allowed).
	VerdictNew Verdict = iota + 1
	// VerdictNoSession: no entry; answer Eviction(NoSession).
	VerdictNoSession
	// VerdictFenced: epoch below the entry's; answer Eviction(SessionTooLow).
	VerdictFenced
	// VerdictEpochAhead: epoch above the entry's; drop (client bug).
	VerdictEpochAhead
	// VerdictChecksumMismatch: request number reused for another body; drop.
	VerdictChecksumMismatch
	// VerdictDuplicate: resend the cached reply verbatim.
	VerdictDuplicate
	// VerdictAlreadyApplied: committed but no longer cached; result rejection 59.
	VerdictAlreadyApplied
)

func (v Verdict) String() string {
	switch v {
	case VerdictNew:
		return "new"
	case VerdictNoSession:
		return "no_session"
	case VerdictFenced:
		return "fenced"
	case VerdictEpochAhead:
		return "epoch_ahead"
	case VerdictChecksumMismatch:
		return "checksum_mismatch"
	case VerdictDuplicate:
		return "duplicate"
	case VerdictAlreadyApplied:
		return "already_applied"
	}
	return "verdict?"
}

// cachedReply is one reply of the ring with the header fields the table
// consults.
type cachedReply struct {
	request  uint64
	checksum wire.U128 // the reply's request_checksum
	commit   uint64
	frame    []byte
}

func newCachedReply(frame []byte) cachedReply {
	r := wire.HeaderOf(frame).Reply()
	return cachedReply{request: r.Request, checksum: r.RequestChecksum, commit: r.Commit, frame: frame}
}

// ClientEntry is one client's session record (5.12.1).
type ClientEntry struct {
	Client            wire.U128
	Epoch             uint64
	UserID            uint32
	Watermark         uint64
	WatermarkChecksum wire.U128
	LatestCommit      uint64
	ring              []cachedReply // oldest first, at most ReplyRingSize
}

// Replies returns the cached reply frames, oldest first (read-only).
func (e *ClientEntry) Replies() [][]byte {
	out := make([][]byte, len(e.ring))
	for i, r := range e.ring {
		out[i] = r.frame
	}
	return out
}

func (e *ClientEntry) push(r cachedReply) {
	if len(e.ring) == ReplyRingSize {
		e.ring = append(e.ring[:0:0], e.ring[1:]...)
	}
	e.ring = append(e.ring, r)
}

func (e *ClientEntry) find(request uint64) int {
	for i, r := range e.ring {
		if r.request == request {
			return i
		}
	}
	return -1
}

// ClientTable holds the sessions in slots 0..capacity-1.
type ClientTable struct {
	capacity int
	slots    []*ClientEntry // nil = free; grows up to capacity
	index    map[wire.U128]int
}

// NewClientTable returns an empty table of the given capacity.
func NewClientTable(capacity int) *ClientTable {
	return &ClientTable{capacity: capacity, index: make(map[wire.U128]int)}
}

// Capacity is the number of slots.
func (t *ClientTable) Capacity() int { return t.capacity }

// Len is the number of occupied slots.
func (t *ClientTable) Len() int { return len(t.index) }

// Lookup returns the entry of client (read-only), if any.
func (t *ClientTable) Lookup(client wire.U128) (*ClientEntry, bool) {
	i, ok := t.index[client]
	if !ok {
		return nil, false
	}
	return t.slots[i], true
}

// Check is check_request(client, epoch, request, request_checksum)
// (5.12.2). For VerdictDuplicate it also returns the cached reply frame.
func (t *ClientTable) Check(client wire.U128, epoch, request uint64, requestChecksum wire.U128) (Verdict, []byte) {
	e, ok := t.Lookup(client)
	switch {
	case !ok:
		return VerdictNoSession, nil
	case epoch < e.Epoch:
		return VerdictFenced, nil
	case epoch > e.Epoch:
		return VerdictEpochAhead, nil
	case request > e.Watermark:
		return VerdictNew, nil
	case request == e.Watermark && conflict(e.WatermarkChecksum, requestChecksum):
		return VerdictChecksumMismatch, nil
	}
	if i := e.find(request); i >= 0 {
		if conflict(e.ring[i].checksum, requestChecksum) {
			return VerdictChecksumMismatch, nil
		}
		return VerdictDuplicate, e.ring[i].frame
	}
	return VerdictAlreadyApplied, nil
}

// conflict: both checksums stamped and different.
func conflict(a, b wire.U128) bool { return !a.IsZero() && !b.IsZero() && a != b }

// OwnedByOther is the Register ownership gate (5.3.2 rule 3): the table
// holds client for a different user.
func (t *ClientTable) OwnedByOther(client wire.U128, userID uint32) bool {
	e, ok := t.Lookup(client)
	return ok && e.UserID != userID
}

// CommitRegister records a committed Register (5.12.3 rule 1); the epoch
// is the reply's commit (the Register's op).
func (t *ClientTable) CommitRegister(client wire.U128, userID uint32, reply []byte) {
	r := newCachedReply(reply)
	if e, ok := t.Lookup(client); ok {
		e.Epoch, e.UserID = r.commit, userID
		if i := e.find(0); i >= 0 {
			e.ring = append(e.ring[:i:i], e.ring[i+1:]...)
		}
		e.push(r)
		e.LatestCommit = r.commit
		return
	}
	if t.Len() >= t.capacity {
		t.evictOldest()
	}
	e := &ClientEntry{Client: client, Epoch: r.commit, UserID: userID, LatestCommit: r.commit, ring: []cachedReply{r}}
	t.insert(e)
}

func (t *ClientTable) insert(e *ClientEntry) {
	for i, s := range t.slots {
		if s == nil {
			t.slots[i] = e
			t.index[e.Client] = i
			return
		}
	}
	t.slots = append(t.slots, e)
	t.index[e.Client] = len(t.slots) - 1
}

// evictOldest frees the occupied slot with the smallest latest_commit, the
// lowest slot on ties (5.12.3 rule 4).
func (t *ClientTable) evictOldest() {
	victim := -1
	for i, s := range t.slots {
		if s != nil && (victim < 0 || s.LatestCommit < t.slots[victim].LatestCommit) {
			victim = i
		}
	}
	if victim >= 0 {
		t.remove(victim)
	}
}

func (t *ClientTable) remove(slot int) {
	delete(t.index, t.slots[slot].Client)
	t.slots[slot] = nil
	for len(t.slots) > 0 && t.slots[len(t.slots)-1] == nil {
		t.slots = t.slots[:len(t.slots)-1]
	}
}

// CommitReply caches the committed reply of a non-session operation
// (5.12.3 rule 2). Missing entries and regressions are skipped.
func (t *ClientTable) CommitReply(client wire.U128, reply []byte) {
	e, ok := t.Lookup(client)
	if !ok {
		return
	}
	r := newCachedReply(reply)
	if r.commit < e.LatestCommit || r.request < e.Watermark {
		return
	}
	if r.request == e.Watermark {
		if i := e.find(r.request); i >= 0 {
			e.ring[i] = r
		} else {
			e.push(r)
		}
	} else {
		e.push(r)
		e.Watermark = r.request
	}
	e.WatermarkChecksum = r.checksum
	e.LatestCommit = r.commit
}

// Logout removes client's entry (5.12.3 rule 3) and returns its epoch (0
// when there was none).
func (t *ClientTable) Logout(client wire.U128) uint64 {
	i, ok := t.index[client]
	if !ok {
		return 0
	}
	epoch := t.slots[i].Epoch
	t.remove(i)
	return epoch
}

// entries returns the occupied slots in slot order.
// Clients lists the client ids that hold a session, in slot order.
func (t *ClientTable) Clients() []wire.U128 {
	var out []wire.U128
	for _, e := range t.entries() {
		out = append(out, e.Client)
	}
	return out
}

func (t *ClientTable) entries() []*ClientEntry {
	out := make([]*ClientEntry, 0, len(t.index))
	for _, s := range t.slots {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Preflight is the table part of the metadata preflight (client-plane.md
// 5.3), after the shell's "not primary", "in pipeline" and "not caught up"
// rows.
type Preflight struct {
	Verdict Verdict
	// Reply is the cached frame to resend verbatim (VerdictDuplicate).
	Reply []byte
	// Code is the result-section rejection to answer instead of
	// dispatching: 59 for VerdictAlreadyApplied, and 51 for a replayed
	// CreatePersonalAccessToken whose cached reply was a success (5.3).
	Code wire.ErrorCode
}

// Preflight checks a metadata request against the client table:
//
//	VerdictNoSession        -> Eviction(NoSession)
//	VerdictFenced           -> Eviction(SessionTooLow)
//	VerdictEpochAhead, VerdictChecksumMismatch -> no reply
//	VerdictNew              -> Admit and submit
//	VerdictDuplicate        -> resend Reply (or answer Code when set)
//	VerdictAlreadyApplied   -> result rejection Code (59)
func (s *State) Preflight(client wire.U128, epoch, request uint64, requestChecksum wire.U128) Preflight {
	v, reply := s.clients.Check(client, epoch, request, requestChecksum)
	switch v {
	case VerdictAlreadyApplied:
		return Preflight{Verdict: v, Code: wire.ErrRequestAlreadyApplied}
	case VerdictDuplicate:
		h := wire.HeaderOf(reply).Reply()
		if h.Operation == wire.OpCreatePersonalAccessToken && isResultSuccess(reply[wire.HeaderSize:]) {
			return Preflight{Verdict: v, Code: wire.ErrPersonalAccessTokenAlreadyExists}
		}
		return Preflight{Verdict: v, Reply: reply}
	}
	return Preflight{Verdict: v}
}

func isResultSuccess(body []byte) bool {
	return len(body) >= 4 && body[0]|body[1]|body[2]|body[3] == 0
}
