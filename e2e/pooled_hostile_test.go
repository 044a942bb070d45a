package e2e

// Hostile tests of pooled request buffers (internal/framebuf,
// actors/pooled.go): every test tries to make the node serve bytes of a
// released buffer, crash on a reference count, or leak, and checks every
// polled payload against what was sent at its offset. Released buffers
// are poisoned (framebuf.SetPoison), so a reader of released bytes sees
// 0xDB at once.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/internal/framebuf"
	"iggynode/wire"
)

// hpSize is every hostile payload's size: 100 of them make a 200 KB frame,
// well over the 64 KiB from which frames are pooled.
const hpSize = 2000

// hpKey is what a hostile payload says of itself: the offset it was sent
// at (or a producer's sequence number), a generation (bumped by purges and
// deletions), its partition and a tag (a producer's id).
type hpKey struct {
	off            uint64
	gen, part, tag uint32
}

func (k hpKey) seed() byte {
	return byte(k.off*7 + uint64(k.gen)*13 + uint64(k.part)*31 + uint64(k.tag)*3)
}

func hpPayload(k hpKey) []byte {
	p := make([]byte, hpSize)
	binary.LittleEndian.PutUint64(p, k.off)
	binary.LittleEndian.PutUint32(p[8:], k.gen)
	binary.LittleEndian.PutUint32(p[12:], k.part)
	binary.LittleEndian.PutUint32(p[16:], k.tag)
	s := k.seed()
	for j := 20; j < hpSize; j++ {
		p[j] = s + byte(j)
	}
	return p
}

func poisonCount(p []byte) int { return bytes.Count(p, []byte{framebuf.PoisonByte}) }

// hpDecode reads a payload's key and checks the rest of it.
func hpDecode(p []byte) (hpKey, error) {
	if len(p) != hpSize {
		return hpKey{}, fmt.Errorf("a payload of %d bytes (%d poison bytes)", len(p), poisonCount(p))
	}
	k := hpKey{off: binary.LittleEndian.Uint64(p), gen: binary.LittleEndian.Uint32(p[8:]),
		part: binary.LittleEndian.Uint32(p[12:]), tag: binary.LittleEndian.Uint32(p[16:])}
	s := k.seed()
	for j := 20; j < hpSize; j++ {
		if p[j] != s+byte(j) {
			return k, fmt.Errorf("the payload claiming %+v differs from it at byte %d (%d poison bytes, % x...)", k, j, poisonCount(p), p[:24])
		}
	}
	return k, nil
}

func hpMessages(keys ...hpKey) []wire.Message {
	msgs := make([]wire.Message, len(keys))
	for i, k := range keys {
		msgs[i] = client.NewMessage(hpPayload(k))
	}
	return msgs
}

// hpBatch is n messages of gen at partition part from offset from.
func hpBatch(gen, part uint32, from uint64, n int) []wire.Message {
	keys := make([]hpKey, n)
	for i := range keys {
		keys[i] = hpKey{off: from + uint64(i), gen: gen, part: part}
	}
	return hpMessages(keys...)
}

// hpSend sends one batch and checks it landed at from.
func hpSend(ctx context.Context, c *client.Client, stream, topic wire.Identifier, gen, part uint32, from uint64, n int) error {
	conf, err := c.SendMessages(ctx, stream, topic, wire.PartitionID(part), hpBatch(gen, part, from, n))
	if err != nil {
		return fmt.Errorf("send gen %d at %d: %w", gen, from, err)
	}
	if len(conf) != 1 || conf[0].BaseOffset != from || conf[0].PartitionID != part {
		return fmt.Errorf("send gen %d at %d: confirmed %+v", gen, from, conf)
	}
	return nil
}

// hpReply is what one poll reply served.
type hpReply struct {
	first uint64
	n     int
	gen   uint32
	keys  []hpKey
}

// hpCheck checks one reply: the partition, messages_count, contiguous
// offsets, payloads that match their pattern and, with derived, the offset
// they claim (offset-derived payloads); one generation per reply (a poll
// is served in one partition turn).
func hpCheck(p *wire.PolledMessages, part uint32, derived bool) (hpReply, error) {
	var r hpReply
	if p == nil {
		return r, errors.New("nil poll")
	}
	for i, m := range client.Messages(p) {
		if i == 0 {
			r.first = m.Offset
		} else if m.Offset != r.first+uint64(i) {
			return r, fmt.Errorf("offset %d at position %d of a reply from %d (poison in headers?)", m.Offset, i, r.first)
		}
		k, err := hpDecode(m.Payload)
		if err != nil {
			return r, fmt.Errorf("offset %d: %w", m.Offset, err)
		}
		if derived && k.off != m.Offset {
			return r, fmt.Errorf("offset %d carries the payload sent at %d (gen %d)", m.Offset, k.off, k.gen)
		}
		if k.part != part {
			return r, fmt.Errorf("offset %d of partition %d carries a payload of partition %d", m.Offset, part, k.part)
		}
		if i == 0 {
			r.gen = k.gen
		} else if k.gen != r.gen {
			return r, fmt.Errorf("one reply mixes generations %d and %d (offset %d)", r.gen, k.gen, m.Offset)
		}
		r.keys = append(r.keys, k)
		r.n++
	}
	if uint32(r.n) != p.MessagesCount {
		return r, fmt.Errorf("messages_count %d, %d messages in the records", p.MessagesCount, r.n)
	}
	if r.n > 0 && p.PartitionID != part {
		return r, fmt.Errorf("reply of partition %d, asked %d", p.PartitionID, part)
	}
	return r, nil
}

// hErrs collects the failures of a test's goroutines; the first few are
// reported.
type hErrs struct {
	mu   sync.Mutex
	list []string
	bad  atomic.Bool
}

func (e *hErrs) add(format string, args ...any) {
	e.bad.Store(true)
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) < 8 {
		e.list = append(e.list, fmt.Sprintf(format, args...))
	}
}

func (e *hErrs) report(t *testing.T) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.list {
		t.Error(s)
	}
	if len(e.list) > 0 {
		t.FailNow()
	}
}

// hostileOver runs fn in a subtest per named transport (transports_test.go).
func hostileOver(t *testing.T, names []string, fn func(t *testing.T)) {
	for _, tc := range transports {
		if !slices.Contains(names, tc.name) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			transportOfTest.Store(t.Name(), tc)
			defer transportOfTest.Delete(t.Name())
			fn(t)
		})
	}
}

// hostileNode starts a node with released buffers poisoned and checks at
// the end that no actor failed (a framebuf panic in an actor is caught by
// its supervisor and counted; one in the edge ends the process).
func hostileNode(t *testing.T, dir string, tune func(*config.Config)) *testNode {
	t.Helper()
	framebuf.SetPoison(true)
	t.Cleanup(func() { framebuf.SetPoison(false) })
	n := startNodeWith(t, dir, tune, nil)
	t.Cleanup(func() {
		if r := n.Restarts(); r != 0 {
			t.Errorf("%d actor failures (restarts) during the test", r)
		}
		_ = n.Close()
	})
	return n
}

func smallBudget(c *config.Config) { c.Partition.MemoryBudget = 1 << 20 }

func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// readAll polls partition part from 0 to total with each step and checks
// every payload is gen's, sent at its offset.
func readAll(t *testing.T, ctx context.Context, c *client.Client, stream, topic wire.Identifier, part, gen uint32, total uint64, steps ...uint32) {
	t.Helper()
	for _, step := range steps {
		hpReadThrough(t, ctx, c, 99, stream, topic, part, 0, total, step, true, func(off uint64, _ *wire.PolledMessages, r hpReply) {
			if r.gen != gen {
				t.Fatalf("read back %d at %d: %d messages from %d of gen %d, want gen %d", step, off, r.n, r.first, r.gen, gen)
			}
		})
	}
}

// hpReadThrough polls partition part from offset from up to end, count at
// a time, as consumer: every reply must pass hpCheck, be non-empty and
// start where the last one ended; each, if not nil, checks it further.
func hpReadThrough(t *testing.T, ctx context.Context, c *client.Client, consumer uint32, stream, topic wire.Identifier, part uint32, from, end uint64, count uint32, derived bool, each func(off uint64, p *wire.PolledMessages, r hpReply)) {
	t.Helper()
	for off := from; off < end; {
		p, err := c.PollMessages(ctx, wire.SingleConsumer(wire.ID(consumer)), stream, topic, wire.Partition(part), wire.OffsetStrategy(off), count, false)
		if err != nil {
			t.Fatalf("read back %d at %d: %v", count, off, err)
		}
		r, err := hpCheck(p, part, derived)
		if err != nil {
			t.Fatalf("read back %d at %d: %v", count, off, err)
		}
		if r.n == 0 || r.first != off {
			t.Fatalf("read back %d at %d: %d messages from %d (gen %d)", count, off, r.n, r.first, r.gen)
		}
		if each != nil {
			each(off, p, r)
		}
		off += uint64(r.n)
	}
}

func isStatus(err error) bool {
	var s *wire.StatusError
	var r *wire.ResultError
	return errors.As(err, &s) || errors.As(err, &r)
}

// hpStream creates the stream "hs".
func hpStream(t *testing.T, ctx context.Context, c *client.Client) wire.Identifier {
	t.Helper()
	_, err := c.CreateStream(ctx, "hs", nil)
	mustT(t, err)
	return wire.Named("hs")
}

// hpTopic creates the stream "hs" and in it the topic "ht" of parts
// partitions, where most tests send and poll.
func hpTopic(t *testing.T, ctx context.Context, c *client.Client, parts uint32) (stream, topic wire.Identifier) {
	t.Helper()
	stream = hpStream(t, ctx, c)
	_, err := c.CreateTopic(ctx, stream, "ht", parts, nil)
	mustT(t, err)
	return stream, wire.Named("ht")
}

// hostileTopic starts a hostile node tuned by tune, connects an admin
// client and creates the stream "hs" with the topic "ht" of parts
// partitions (hpTopic), the setup of most tests.
func hostileTopic(t *testing.T, tune func(*config.Config), parts uint32) (n *testNode, admin *client.Client, ctx context.Context, stream, topic wire.Identifier) {
	t.Helper()
	n = hostileNode(t, t.TempDir(), tune)
	admin = connect(t, n)
	ctx = ctxT(t)
	stream, topic = hpTopic(t, ctx, admin, parts)
	return n, admin, ctx, stream, topic
}

// hpFill sends batches from to to-1 of per messages of gen to partition
// part, batch b at offset b*per (hpSend), and after each stores its end in
// high, if not nil: pollers ask up to what is committed.
func hpFill(ctx context.Context, c *client.Client, stream, topic wire.Identifier, gen, part uint32, from, to, per int, high *atomic.Uint64) error {
	for b := from; b < to; b++ {
		if err := hpSend(ctx, c, stream, topic, gen, part, uint64(b*per), per); err != nil {
			return err
		}
		if high != nil {
			high.Store(uint64((b + 1) * per))
		}
	}
	return nil
}

// hpTagged is n messages of producer tag, numbered from seq on: producers
// interleave, so their payloads carry a sequence number, not an offset.
func hpTagged(tag uint32, seq uint64, n int) []wire.Message {
	keys := make([]hpKey, n)
	for i := range keys {
		keys[i] = hpKey{off: seq + uint64(i), tag: tag}
	}
	return hpMessages(keys...)
}

// hpProduce runs producers, each on a connection of its own sending
// batches of per messages tagged with its index and numbered from 0
// (hpTagged), and returns when all are done. sent sees the outcome of
// every send and returns false to stop that producer.
func hpProduce(t *testing.T, ctx context.Context, n *testNode, stream, topic wire.Identifier, producers, batches, per int, sent func(pr int, conf wire.SendConfirmations, err error) bool) {
	t.Helper()
	var wg sync.WaitGroup
	for pr := range producers {
		c := connect(t, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				conf, err := c.SendMessages(ctx, stream, topic, wire.PartitionID(0), hpTagged(uint32(pr), uint64(b*per), per))
				if !sent(pr, conf, err) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// hpDial connects a new client to n over t's transport as root, its
// requests bounded by timeout; the caller closes it.
func hpDial(ctx context.Context, t *testing.T, n *testNode, timeout time.Duration) (*client.Client, error) {
	o := clientOptions(t, n)
	o.Username, o.Password, o.RequestTimeout = "iggy", "iggy", timeout
	return client.Connect(ctx, o)
}

// hpBackground runs a test's background goroutines (pollers, a purger)
// while the test sends, purges and deletes, until finish or the first
// failure of any of them, and gathers their failures.
type hpBackground struct {
	t       *testing.T
	ctx     context.Context
	n       *testNode
	errs    *hErrs
	stop    chan struct{}
	stopped sync.Once
	wg      sync.WaitGroup
	// reconnects: some pollers are hPollers, so drops is worth a log line
	reconnects bool
	drops      atomic.Int64 // poll connections the node ended (hPoller)
	polls      atomic.Int64 // polls answered
	served     atomic.Int64 // messages those served
	refused    atomic.Int64 // polls refused with a status (hpPolling.refusable)
}

func newHPBackground(t *testing.T, ctx context.Context, n *testNode) *hpBackground {
	b := &hpBackground{t: t, ctx: ctx, n: n, errs: &hErrs{}, stop: make(chan struct{})}
	// Registered after hostileNode's cleanup, so it runs before it: a test
	// that fails early does not leave its goroutines polling a closed node.
	t.Cleanup(func() {
		b.halt()
		if b.reconnects {
			t.Logf("%d poll connections closed by the node (reconnected)", b.drops.Load())
		}
	})
	return b
}

// halt stops the goroutines and waits for them.
func (b *hpBackground) halt() {
	b.stopped.Do(func() { close(b.stop) })
	b.wg.Wait()
}

// finish stops the goroutines, waits for them and fails the test with
// what they found.
func (b *hpBackground) finish() {
	b.t.Helper()
	b.halt()
	b.errs.report(b.t)
}

// repeat runs step on a goroutine of its own until finish, a failure of
// any goroutine of the test, or step returning false; with a pause it
// waits that long (or for finish) before each step.
func (b *hpBackground) repeat(pause time.Duration, step func() bool) {
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for !b.errs.bad.Load() {
			if pause > 0 {
				select {
				case <-b.stop:
					return
				case <-time.After(pause):
				}
			} else {
				select {
				case <-b.stop:
					return
				default:
				}
			}
			if !step() {
				return
			}
		}
	}()
}

// reconnecting is a new poll connection that the node may end (hPoller).
func (b *hpBackground) reconnecting() *hPoller {
	b.reconnects = true
	return newHPoller(b.t, b.n, &b.drops)
}

// hpPollClient is a *client.Client, or an *hPoller where the node may end
// the connection.
type hpPollClient interface {
	PollMessages(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, strategy wire.PollingStrategy, count uint32, autoCommit bool) (*wire.PolledMessages, error)
}

// hpAsk is one poll of a background poller.
type hpAsk struct {
	strategy wire.PollingStrategy
	off      uint64 // the offset asked (0 for First and Last)
	count    uint32
	// answered is the generation the test had answered (purges,
	// deletions: hpPolling.generation) before the poll was sent.
	answered uint32
}

// hpAt asks count messages at offset off.
func hpAt(off uint64, count uint32) hpAsk {
	return hpAsk{strategy: wire.OffsetStrategy(off), off: off, count: count}
}

func (a hpAsk) String() string {
	return fmt.Sprintf("poll %d at %d (gen %d answered)", a.count, a.off, a.answered)
}

// hpPolling is what a background poller polls and what it accepts.
type hpPolling struct {
	stream, topic wire.Identifier
	consumer      uint32
	derived       bool // payloads carry the offset they were sent at (hpCheck)
	// refusable: a status reply (a deleted stream or topic) is counted in
	// refused and polled again, not a failure.
	refusable bool
	// generation, if not nil, is what the test has answered so far; it is
	// read before each poll into hpAsk.answered.
	generation *atomic.Uint32
	// next chooses the i-th poll; false: nothing to poll yet.
	next func(i int) (hpAsk, bool)
	// accept checks a reply that passed hpCheck (partition 0) against its
	// ask, adding to the errors what it does not accept; nil accepts all.
	accept func(a hpAsk, r hpReply)
}

// poll runs a poller over c on a goroutine of its own (repeat). A failed
// poll or a reply that fails hpCheck ends it.
func (b *hpBackground) poll(c hpPollClient, p hpPolling) {
	i := 0
	b.repeat(0, func() bool {
		var answered uint32
		if p.generation != nil {
			answered = p.generation.Load()
		}
		a, ok := p.next(i)
		if !ok {
			time.Sleep(time.Millisecond)
			return true
		}
		i++
		a.answered = answered
		m, err := c.PollMessages(b.ctx, wire.SingleConsumer(wire.ID(p.consumer)), p.stream, p.topic, wire.Partition(0), a.strategy, a.count, false)
		if err != nil {
			if p.refusable && isStatus(err) {
				b.refused.Add(1)
				return true
			}
			b.errs.add("topic %v: %v: %v", p.topic, a, err)
			return false
		}
		b.polls.Add(1)
		r, err := hpCheck(m, 0, p.derived)
		if err != nil {
			b.errs.add("topic %v: %v: %v", p.topic, a, err)
			return false
		}
		b.served.Add(int64(r.n))
		if p.accept != nil {
			p.accept(a, r)
		}
		return true
	})
}

// generations sends gens generations of batches of per messages to
// partition 0 over c, each but the last ended by purge(g): high follows
// the current generation's committed end and gen counts the purges
// answered, for the pollers. It stops at the first failure, or once a
// background goroutine failed.
func (b *hpBackground) generations(c *client.Client, stream, topic wire.Identifier, gens uint32, batches, per int, high *atomic.Uint64, gen *atomic.Uint32, purge func(g uint32) error) error {
	for g := uint32(0); g < gens && !b.errs.bad.Load(); g++ {
		if err := hpFill(b.ctx, c, stream, topic, g, 0, 0, batches, per, high); err != nil {
			return err
		}
		if g == gens-1 {
			break
		}
		if err := purge(g); err != nil {
			return fmt.Errorf("purge: %w", err)
		}
		high.Store(0)
		gen.Store(g + 1)
	}
	return nil
}

// 1. Polls at random offsets with slicing counts while the producer fills
// generation after generation, each ended by a PurgeTopic or PurgeStream:
// a purge hands every cached batch's buffer back (Log.Purge), while polls
// carry them by reference. No reply may carry poison, mix generations, or
// carry a generation older than one a purge already answered.
func TestHostilePooledPollsAcrossPurges(t *testing.T) {
	hostileOver(t, []string{"tcp", "tls", "quic", "ws", "http"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, smallBudget, 1)
		const gens, batches, per = 6, 12, 100
		var gen atomic.Uint32  // purges answered
		var high atomic.Uint64 // the current generation's committed end
		bg := newHPBackground(t, ctx, n)
		for w, count := range []uint32{37, 1, 250, 100} {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			bg.poll(bg.reconnecting(), hpPolling{stream: s, topic: tp, consumer: uint32(w + 1), derived: true, generation: &gen,
				next: func(int) (hpAsk, bool) {
					a := hpAt(rng.Uint64N(high.Load()+60), count)
					if rng.IntN(8) == 0 {
						a = hpAsk{strategy: wire.LastStrategy(), count: count}
					}
					return a, true
				},
				accept: func(a hpAsk, r hpReply) {
					if r.n == 0 {
						return
					}
					if r.gen < a.answered {
						bg.errs.add("%v started after purge %d was answered and served gen %d", a, a.answered, r.gen)
					}
					if a.strategy.Kind == wire.PollOffset && r.first != a.off {
						bg.errs.add("%v served from %d", a, r.first)
					}
				}})
		}
		err := bg.generations(admin, s, tp, gens, batches, per, &high, &gen, func(g uint32) error {
			if g%2 == 0 {
				return admin.PurgeTopic(ctx, s, tp)
			}
			return admin.PurgeStream(ctx, s)
		})
		if err != nil {
			bg.errs.add("%v", err)
		}
		time.Sleep(100 * time.Millisecond) // the pollers see the last generation whole
		bg.finish()
		readAll(t, ctx, admin, s, tp, 0, gens-1, batches*per, 250, 37)
		t.Logf("%d polls served %d messages; pool %+v", bg.polls.Load(), bg.served.Load(), framebuf.ReadStats())
	})
}

// 2. DeleteTopic and DeleteStream while consumers poll, then the same
// names created again (ids are reused, so are partition groups): a
// stopping partition sheds its cache (pooled.go) under polls in flight.
func TestHostilePooledDeleteWhilePolling(t *testing.T) {
	hostileOver(t, []string{"tcp", "ws"}, func(t *testing.T) {
		n := hostileNode(t, t.TempDir(), smallBudget)
		admin := connect(t, n)
		ctx := ctxT(t)
		s, tp := wire.Named("hd"), wire.Named("ht")
		const rounds, batches, per = 5, 8, 100
		var deleted atomic.Uint32 // the last round whose deletion was answered (rounds from 1)
		bg := newHPBackground(t, ctx, n)
		for w, count := range []uint32{37, 250, 1} {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			// Polls of a deleted topic are refused with a status.
			bg.poll(bg.reconnecting(), hpPolling{stream: s, topic: tp, consumer: 1, derived: true, refusable: true, generation: &deleted,
				next: func(int) (hpAsk, bool) { return hpAt(rng.Uint64N(batches*per+50), count), true },
				accept: func(a hpAsk, r hpReply) {
					if r.n > 0 && r.gen <= a.answered {
						bg.errs.add("%v started after round %d's topic was deleted and served its data (gen %d)", a, a.answered, r.gen)
					}
				}})
		}
		for r := uint32(1); r <= rounds && !bg.errs.bad.Load(); r++ {
			if r == 1 || r%2 == 1 {
				if _, err := admin.CreateStream(ctx, "hd", nil); err != nil {
					t.Fatalf("round %d: create stream: %v", r, err)
				}
			}
			if _, err := admin.CreateTopic(ctx, s, "ht", 1, nil); err != nil {
				t.Fatalf("round %d: create topic: %v", r, err)
			}
			if err := hpFill(ctx, admin, s, tp, r, 0, 0, batches, per, nil); err != nil {
				bg.errs.add("round %d: %v", r, err)
			}
			time.Sleep(50 * time.Millisecond) // polls of the whole round, cached
			var err error
			if r%2 == 0 {
				err = admin.DeleteStream(ctx, s)
			} else {
				err = admin.DeleteTopic(ctx, s, tp)
			}
			if err != nil {
				t.Fatalf("round %d: delete: %v", r, err)
			}
			deleted.Store(r)
		}
		bg.finish()
		t.Logf("%d polls served, %d refused (deleted); pool %+v", bg.polls.Load(), bg.refused.Load(), framebuf.ReadStats())
	})
}

// 3. DeleteSegments and size retention (max_topic_size, run by Maintain)
// while the producer fills 1 MiB segments and consumers poll from the
// oldest retained offset on: removeSegments drops cached batches
// (dropCachedBefore, popCached) under polls that carry them.
func TestHostilePooledSegmentsDeletedWhilePolling(t *testing.T) {
	n := hostileNode(t, t.TempDir(), func(c *config.Config) {
		c.Partition.MemoryBudget = 4 << 20
		c.MessageBus.MaxMessageSize = 1 << 20
		c.DataMaintenance.Messages.CleanerEnabled = false
	})
	admin := connect(t, n)
	ctx := ctxT(t)
	s := hpStream(t, ctx, admin)
	seg := wire.KeyValue{Key: wire.OptSegmentSize, Kind: wire.KindString, Value: []byte("1 MiB")}
	_, err := admin.CreateTopic(ctx, s, "deleted", 1, wire.Options{seg})
	mustT(t, err)
	_, err = admin.CreateTopic(ctx, s, "capped", 1, wire.Options{seg, {Key: wire.OptMaxTopicSize, Kind: wire.KindString, Value: []byte("3 MiB")}})
	mustT(t, err)
	topics := []wire.Identifier{wire.Named("deleted"), wire.Named("capped")}
	const batches, per = 60, 100
	var high [2]atomic.Uint64
	var clamped atomic.Int64
	bg := newHPBackground(t, ctx, n)
	for w, count := range []uint32{37, 250, 1, 100} {
		ti := w % 2
		rng := rand.New(rand.NewPCG(uint64(w), 3))
		bg.poll(bg.reconnecting(), hpPolling{stream: s, topic: topics[ti], consumer: 1, derived: true,
			next: func(int) (hpAsk, bool) {
				a := hpAt(rng.Uint64N(high[ti].Load()+1), count)
				if rng.IntN(4) == 0 {
					a = hpAsk{strategy: wire.FirstStrategy(), count: count}
				}
				return a, true
			},
			accept: func(a hpAsk, r hpReply) {
				if r.n > 0 && r.first < a.off {
					bg.errs.add("%v served from %d", a, r.first)
				}
				if r.n > 0 && r.first > a.off {
					clamped.Add(1)
				}
			}})
	}
	for b := range batches {
		for ti, topic := range topics {
			if err := hpSend(ctx, admin, s, topic, 0, 0, uint64(b*per), per); err != nil {
				t.Fatal(err)
			}
			high[ti].Store(uint64((b + 1) * per))
		}
		if b%6 == 5 {
			if err := admin.DeleteSegments(ctx, s, topics[0], 0, 2); err != nil {
				t.Fatalf("delete segments: %v", err)
			}
			n.Maintain()
		}
	}
	bg.finish()
	if clamped.Load() == 0 {
		t.Fatal("no poll was clamped to a truncated partition's oldest offset: nothing was deleted under the polls")
	}
	t.Logf("%d polls, %d clamped up to the oldest retained; pool %+v", bg.polls.Load(), clamped.Load(), framebuf.ReadStats())
}

// 4. A memory budget so small that every batch leaves the cache at once
// (its buffer recycled right after its commit) and polls that slice the
// batches (counts 37, 1, 250) from offsets inside them, during the sends
// and after.
func TestHostilePooledEvictEverything(t *testing.T) {
	hostileOver(t, []string{"tcp", "ws", "quic"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, func(c *config.Config) { c.Partition.MemoryBudget = 1 }, 1)
		consumer := connect(t, n)
		const batches, per = 30, 100
		before := framebuf.ReadStats()
		var high atomic.Uint64
		bg := newHPBackground(t, ctx, n)
		counts := []uint32{37, 1, 250}
		rng := rand.New(rand.NewPCG(1, 2))
		bg.poll(consumer, hpPolling{stream: s, topic: tp, consumer: 1, derived: true,
			next: func(i int) (hpAsk, bool) {
				h := high.Load()
				if h == 0 {
					return hpAsk{}, false // nothing committed yet
				}
				return hpAt(rng.Uint64N(h), counts[i%len(counts)]), true
			},
			accept: func(a hpAsk, r hpReply) {
				if r.n == 0 || r.first != a.off {
					bg.errs.add("%v: %d messages from %d", a, r.n, r.first)
				}
			}})
		mustT(t, hpFill(ctx, admin, s, tp, 0, 0, 0, batches, per, &high))
		bg.finish()
		readAll(t, ctx, consumer, s, tp, 0, 0, batches*per, 37, 1, 250)
		after := framebuf.ReadStats()
		if transportFor(t).kind != client.TransportHTTP && after.Recycled-before.Recycled < batches/2 {
			t.Fatalf("only %d of %d pooled frames recycled with a budget of one byte", after.Recycled-before.Recycled, after.Gets-before.Gets)
		}
		t.Logf("pool %+v", after)
	})
}

// hraw is a raw TCP connection with its own client id, for pipelining.
type hraw struct {
	*raw
	id      wire.U128
	session uint64
}

var hrawIDs atomic.Uint64

func dialHraw(t *testing.T, n *testNode) *hraw {
	t.Helper()
	r := &hraw{raw: dialRaw(t, n), id: wire.U128{Lo: 0x1000 + hrawIDs.Add(1), Hi: 0xabcd}}
	body := wire.LoginRegister{ClientInfo: wire.ClientVersionInfo{Version: wire.ProtocolVersion, SDKName: "hostile", SDKVersion: "1"},
		Username: "iggy", Password: "iggy"}.AppendTo(nil)
	r.send(r.request(wire.OpRegister, 0, 0, body))
	f := r.read()
	if f == nil || wire.HeaderOf(f).Reply().Status != 0 {
		t.Fatal("raw login failed")
	}
	var lr wire.LoginRegisterResponse
	if err := lr.Decode(f[wire.HeaderSize+4:]); err != nil {
		t.Fatalf("raw login: %v", err)
	}
	r.session = lr.Session
	return r
}

func (r *hraw) request(op wire.Operation, code wire.CommandCode, req uint64, body []byte) []byte {
	f := make([]byte, wire.HeaderSize+len(body))
	h := wire.RequestHeader{Size: uint32(len(f)), Client: r.id, Request: req, Operation: op, Session: r.session, Code: code}
	h.Encode(wire.HeaderOf(f))
	copy(f[wire.HeaderSize:], body)
	return f
}

func (r *hraw) poll(consumer uint32, stream, topic wire.Identifier, strategy wire.PollingStrategy, count uint32, autoCommit bool) []byte {
	return r.request(wire.OpNonReplicated, wire.CodePollMessages, 1, wire.PollMessages{
		Consumer: wire.SingleConsumer(wire.ID(consumer)), Stream: stream, Topic: topic,
		Partition: wire.Partition(0), Strategy: strategy, Count: count, AutoCommit: autoCommit}.AppendTo(nil))
}

// readPolled reads one poll reply off the raw connection.
func (r *hraw) readPolled(t *testing.T) *wire.PolledMessages {
	t.Helper()
	f := r.read()
	if f == nil {
		t.Fatal("the node closed the raw connection")
	}
	h := wire.HeaderOf(f).Reply()
	if h.Status != 0 {
		t.Fatalf("poll reply status %d", h.Status)
	}
	var p wire.PolledMessages
	if err := p.Decode(f[wire.HeaderSize:]); err != nil {
		t.Fatalf("poll reply: %v", err)
	}
	return &p
}

// waitStored waits until consumer's stored offset on partition 0 is want:
// the node has served every poll pipelined before the auto-committing one.
func waitStored(t *testing.T, c *client.Client, consumer uint32, stream, topic wire.Identifier, want uint64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		o, err := c.GetConsumerOffset(ctxT(t), wire.SingleConsumer(wire.ID(consumer)), stream, topic, wire.Partition(0))
		if err != nil {
			t.Fatal(err)
		}
		if o != nil && o.StoredOffset == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pipelined polls were not all served: stored %+v, want %d", o, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type pipelined struct {
	strategy wire.PollingStrategy
	count    uint32
}

// pipelinePlan is n polls, the i-th at offAt(i), of counts in turn.
func pipelinePlan(n int, counts []uint32, offAt func(i int) uint64) []pipelined {
	plan := make([]pipelined, n)
	for i := range plan {
		plan[i] = pipelined{wire.OffsetStrategy(offAt(i)), counts[i%len(counts)]}
	}
	return plan
}

// pipeline sends every poll of plan as consumer 5 and reads no reply,
// then a marker (consumer 77 polls 1 at 1999, the last of 2000 messages,
// and auto-commits), and waits until the marker is stored: the node has
// built every reply of the plan.
func (r *hraw) pipeline(t *testing.T, admin *client.Client, stream, topic wire.Identifier, plan []pipelined) {
	t.Helper()
	for _, p := range plan {
		r.send(r.poll(5, stream, topic, p.strategy, p.count, false))
	}
	r.send(r.poll(77, stream, topic, wire.OffsetStrategy(1999), 1, true))
	waitStored(t, admin, 77, stream, topic, 1999)
}

// 5. A consumer that pipelines 120 polls of the cached batches and reads
// none of the replies: the connection's writer blocks on the socket with
// the replies queued, each pinning its batches' buffers. Then the producer
// sends 40 more batches (the cache evicts and releases those buffers,
// poison, reuse) and purges and refills the partition; only then does the
// consumer read. Every reply must carry the batches as they were.
func TestHostilePooledSlowReaderPins(t *testing.T) {
	n, admin, ctx, s, tp := hostileTopic(t, smallBudget, 1)
	const per = 100
	mustT(t, hpFill(ctx, admin, s, tp, 1, 0, 0, 20, per, nil))
	r := dialHraw(t, n)
	plan := pipelinePlan(120, []uint32{100, 250, 37, 1, 100}, func(i int) uint64 {
		off := uint64(1600 + (i*53)%400)
		if i%5 == 0 {
			off = off / per * per // whole cached batches
		}
		return off
	})
	r.pipeline(t, admin, s, tp, plan)
	statsPinned := framebuf.ReadStats()
	mustT(t, hpFill(ctx, admin, s, tp, 1, 0, 20, 60, per, nil))
	mustT(t, admin.PurgeTopic(ctx, s, tp))
	mustT(t, hpFill(ctx, admin, s, tp, 2, 0, 0, 20, per, nil))
	statsFlooded := framebuf.ReadStats()
	for i, p := range plan {
		pm := r.readPolled(t)
		rep, err := hpCheck(pm, 0, true)
		if err != nil {
			t.Fatalf("pipelined poll %d (%d at %d): %v", i, p.count, p.strategy.Value, err)
		}
		want := min(uint64(p.count), 2000-p.strategy.Value)
		if rep.first != p.strategy.Value || uint64(rep.n) != want || rep.gen != 1 {
			t.Fatalf("pipelined poll %d (%d at %d): %d messages from %d of gen %d, want %d of gen 1", i, p.count, p.strategy.Value, rep.n, rep.first, rep.gen, want)
		}
	}
	if rep, err := hpCheck(r.readPolled(t), 0, true); err != nil || rep.n != 1 || rep.first != 1999 {
		t.Fatalf("marker poll: %+v %v", rep, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for framebuf.ReadStats().Recycled == statsFlooded.Recycled && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	end := framebuf.ReadStats()
	t.Logf("pool when pinned %+v, flooded %+v, after the reads %+v", statsPinned, statsFlooded, end)
	if end.Recycled == statsFlooded.Recycled {
		t.Fatal("the pinned buffers were not recycled once the replies were written")
	}
	readAll(t, ctx, admin, s, tp, 0, 2, 20*per, 250, 37)
}

// 6. The same slow reader, but every poll served from the files (the
// node restarted, so nothing is cached): a TCP connection's writer reads
// a stored batch from its file when it writes the reply
// (wire.SpliceSource). While the replies wait, the partition is purged and
// refilled, so the purged files come back under the same names (offsets
// restart at 0): with batches of the same layout ("same layout"), of half
// the size ("other layout"), or not at all ("no refill"); or the topic is
// deleted and created again (its ids, so its partition group's directory,
// are reused). Evicted by a restart, the batches have no frame tables and
// only whole ones are file sources; evicted by a budget of one byte, they
// keep their tables and slices are file sources too. Every reply was
// built before the purge (waitStored) and must carry generation 1 whole,
// or the write fail and the connection end (storage.BatchSource: a file
// that left the index before fails the write). It found that a source
// used to read its file by path, so it read the new file of the same
// name, checked only by base_offset and batch_length for a whole batch
// and not at all for a slice (fixed in storage/batchsource.go).
func TestHostilePooledStaleSourcesAcrossPurge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refill  int  // messages per batch of generation 2
		restart bool // evicted by a restart (no frame tables kept) or by a budget of one byte
		// recreate: DeleteTopic and CreateTopic (the ids, so the partition
		// group and its directory, are reused) instead of PurgeTopic
		recreate bool
	}{
		{"same layout after a restart", 100, true, false},
		{"other layout after a restart", 50, true, false},
		{"same layout, budget of one byte", 100, false, false},
		{"other layout, budget of one byte", 50, false, false},
		{"topic deleted and created again, after a restart", 100, true, true},
		{"no refill after a restart", 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) { staleSourcesAcrossPurge(t, tc.refill, tc.restart, tc.recreate) })
	}
}

func staleSourcesAcrossPurge(t *testing.T, refill int, restart, recreate bool) {
	dir := t.TempDir()
	const per, batches = 100, 20
	s, tp := wire.Named("hs"), wire.Named("ht")
	fill := func(n *testNode) {
		c := connect(t, n)
		ctx := ctxT(t)
		hpTopic(t, ctx, c, 1)
		mustT(t, hpFill(ctx, c, s, tp, 1, 0, 0, batches, per, nil))
	}
	var n *testNode
	if restart {
		first := startNodeWith(t, dir, smallBudget, nil)
		fill(first)
		mustT(t, first.Close())
		n = hostileNode(t, dir, smallBudget)
	} else {
		n = hostileNode(t, dir, func(c *config.Config) { c.Partition.MemoryBudget = 1 })
		fill(n)
	}
	admin := connect(t, n)
	ctx := ctxT(t)
	r := dialHraw(t, n)
	plan := pipelinePlan(100, []uint32{100, 37, 250, 1}, func(i int) uint64 {
		off := uint64((i * 137) % (batches * per))
		if i%2 == 0 {
			off = off / per * per // whole stored batches
		}
		return off
	})
	r.pipeline(t, admin, s, tp, plan)
	if recreate {
		mustT(t, admin.DeleteTopic(ctx, s, tp))
		_, err := admin.CreateTopic(ctx, s, "ht", 1, nil)
		mustT(t, err)
	} else {
		mustT(t, admin.PurgeTopic(ctx, s, tp))
	}
	if refill > 0 {
		mustT(t, hpFill(ctx, admin, s, tp, 2, 0, 0, batches*per/refill, refill, nil))
	}
	var wrong []string
	good := 0
	for i, p := range plan {
		_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		var h wire.Header
		if _, err := io.ReadFull(r.nc, h[:]); err != nil {
			t.Logf("after %d good replies the connection ended at reply %d: %v (the write failed, as designed)", good, i, err)
			break
		}
		f := make([]byte, h.Size())
		copy(f, h[:])
		if _, err := io.ReadFull(r.nc, f[wire.HeaderSize:]); err != nil {
			t.Logf("after %d good replies the connection ended inside reply %d: %v", good, i, err)
			break
		}
		var pm wire.PolledMessages
		if err := pm.Decode(f[wire.HeaderSize:]); err != nil {
			wrong = append(wrong, fmt.Sprintf("poll %d (%d at %d): undecodable reply: %v", i, p.count, p.strategy.Value, err))
			continue
		}
		var gens []string
		bad := ""
		want := min(uint64(p.count), batches*per-p.strategy.Value)
		got := 0
		for j, m := range client.Messages(&pm) {
			got++
			k, err := hpDecode(m.Payload)
			switch {
			case err != nil:
				bad = fmt.Sprintf("offset %d: %v", m.Offset, err)
			case m.Offset != p.strategy.Value+uint64(j) || k.off != m.Offset:
				bad = fmt.Sprintf("position %d: offset %d carries the payload of %d", j, m.Offset, k.off)
			case k.gen != 1:
				gens = append(gens, fmt.Sprintf("%d:gen%d", m.Offset, k.gen))
			}
			if bad != "" {
				break
			}
		}
		switch {
		case bad != "":
			wrong = append(wrong, fmt.Sprintf("poll %d (%d at %d): %s", i, p.count, p.strategy.Value, bad))
		case len(gens) > 0:
			wrong = append(wrong, fmt.Sprintf("poll %d (%d at %d, built with current_offset %d): %d of %d messages of generation 2, from %s to %s",
				i, p.count, p.strategy.Value, pm.CurrentOffset, len(gens), got, gens[0], gens[len(gens)-1]))
		case uint64(got) != want:
			wrong = append(wrong, fmt.Sprintf("poll %d (%d at %d): %d messages, want %d", i, p.count, p.strategy.Value, got, want))
		default:
			good++
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("%d good replies; %d of the %d replies built before the purge or deletion do not carry generation 1 as it was:\n%s",
			good, len(wrong), len(plan), joinLines(wrong, 12))
	}
}

func joinLines(lines []string, most int) string {
	var b bytes.Buffer
	for i, l := range lines {
		if i == most {
			fmt.Fprintf(&b, "  ... and %d more\n", len(lines)-most)
			break
		}
		fmt.Fprintf(&b, "  %s\n", l)
	}
	return b.String()
}

// 7. Consumers that hang up in the middle of large replies: raw TCP
// connections that pipeline polls of 1000 messages and close without
// reading (or after part of a reply), and SDK clients closed while a poll
// is in flight, while the producer sends. The writer's frames dropped with
// their pins must neither crash the node nor leak: goroutines come back
// down and the heap stays bounded.
func TestHostilePooledConsumersHangUp(t *testing.T) {
	hostileOver(t, []string{"tcp", "ws", "quic"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, smallBudget, 1)
		const per = 100
		next := uint64(0)
		send := func(k int) {
			for range k {
				mustT(t, hpSend(ctx, admin, s, tp, 0, 0, next, per))
				next += per
			}
		}
		send(20)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapBefore, goBefore := ms.HeapAlloc, runtime.NumGoroutine()
		tc := transportFor(t)
		for i := range 30 {
			if tc.kind == client.TransportTCP && i%2 == 0 {
				r := dialHraw(t, n)
				for j := range 12 {
					off := next - 1500 + uint64(j*97)
					r.send(r.poll(5, s, tp, wire.OffsetStrategy(off), 1000, false))
				}
				if i%4 == 0 {
					buf := make([]byte, 300_000)
					_ = r.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
					_, _ = io.ReadFull(r.nc, buf) // part of the first replies
				}
				_ = r.nc.Close()
			} else {
				c, err := hpDial(ctx, t, n, 5*time.Second)
				mustT(t, err)
				go func() {
					time.Sleep(time.Duration(i%5) * time.Millisecond)
					_ = c.Close()
				}()
				for j := range 4 {
					_, _ = c.PollMessages(ctx, wire.SingleConsumer(wire.ID(5)), s, tp, wire.Partition(0), wire.OffsetStrategy(next-1500+uint64(j*211)), 1000, false)
				}
				_ = c.Close()
			}
			send(1)
		}
		readAll(t, ctx, admin, s, tp, 0, 0, next, 250, 37)
		deadline := time.Now().Add(15 * time.Second)
		for runtime.NumGoroutine() > goBefore+25 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		t.Logf("goroutines %d -> %d, heap %d MB -> %d MB; pool %+v", goBefore, runtime.NumGoroutine(), heapBefore>>20, ms.HeapAlloc>>20, framebuf.ReadStats())
		if g := runtime.NumGoroutine(); g > goBefore+25 {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d -> %d after the hang-ups:\n%s", goBefore, g, buf[:runtime.Stack(buf, true)])
		}
		if ms.HeapAlloc > heapBefore+200<<20 {
			t.Fatalf("heap %d MB -> %d MB after the hang-ups", heapBefore>>20, ms.HeapAlloc>>20)
		}
	})
}

// 8. Four producers and four consumers on one partition: batches of
// producers interleave, so each payload names its producer and sequence
// number; every offset must serve the same message to every consumer,
// and the whole partition every message exactly once.
func TestHostilePooledManyProducersAndConsumers(t *testing.T) {
	hostileOver(t, []string{"tcp", "quic", "wss"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, smallBudget, 1)
		const producers, batches, per = 4, 12, 100
		var seen sync.Map // offset -> hpKey
		var high atomic.Uint64
		bg := newHPBackground(t, ctx, n)
		record := func(off uint64, k hpKey) {
			if prev, loaded := seen.LoadOrStore(off, k); loaded && prev.(hpKey) != k {
				bg.errs.add("offset %d served %+v and %+v", off, prev, k)
			}
		}
		for w, count := range []uint32{37, 1, 250, 100} {
			rng := rand.New(rand.NewPCG(uint64(w), 11))
			// A plain client: a connection the node ends is a failure here.
			bg.poll(connect(t, n), hpPolling{stream: s, topic: tp, consumer: uint32(w + 1),
				next: func(int) (hpAsk, bool) { return hpAt(rng.Uint64N(high.Load()+1), count), true },
				accept: func(_ hpAsk, r hpReply) {
					for i, k := range r.keys {
						record(r.first+uint64(i), k)
					}
				}})
		}
		hpProduce(t, ctx, n, s, tp, producers, batches, per, func(pr int, conf wire.SendConfirmations, err error) bool {
			if err != nil || len(conf) != 1 {
				bg.errs.add("producer %d: %v", pr, err)
				return false
			}
			for {
				h := high.Load()
				if end := conf[0].BaseOffset + per; end <= h || high.CompareAndSwap(h, end) {
					return true
				}
			}
		})
		bg.finish()
		const total = producers * batches * per
		nextSeq := make([]uint64, producers)
		hpReadThrough(t, ctx, admin, 9, s, tp, 0, 0, total, 250, false, func(off uint64, _ *wire.PolledMessages, r hpReply) {
			for i, k := range r.keys {
				record(off+uint64(i), k)
				if k.tag >= producers || k.off != nextSeq[k.tag] {
					t.Fatalf("offset %d: %+v, want producer %d's message %d next", off+uint64(i), k, k.tag, nextSeq[min(k.tag, producers-1)])
				}
				nextSeq[k.tag]++
			}
		})
		bg.errs.report(t)
	})
}

// 9. A consumer group over three partitions and single consumers, all
// polling Next with auto-commit while the producer sends to every
// partition: each partition's messages reach the group exactly once, in
// order, whole.
func TestHostilePooledGroupsAndAutoCommit(t *testing.T) {
	const parts, batches, per = 3, 10, 100
	n, admin, ctx, s, tp := hostileTopic(t, smallBudget, parts)
	_, err := admin.CreateConsumerGroup(ctx, s, tp, "g")
	mustT(t, err)
	g := wire.Named("g")
	members := []*client.Client{connect(t, n), connect(t, n)}
	for _, m := range members {
		mustT(t, m.JoinConsumerGroup(ctx, s, tp, g))
	}
	errs := &hErrs{}
	var mu sync.Mutex
	groupNext := make([]uint64, parts) // the next offset the group is due per partition
	singleNext := make([]uint64, parts)
	deliver := func(next []uint64, p *wire.PolledMessages, what string) {
		if p == nil || p.MessagesCount == 0 {
			return
		}
		part := p.PartitionID
		if part >= parts {
			errs.add("%s: partition %d", what, part)
			return
		}
		r, err := hpCheck(p, part, true)
		if err != nil {
			errs.add("%s: %v", what, err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if r.first != next[part] {
			errs.add("%s: partition %d delivered from %d, %d was due", what, part, r.first, next[part])
			return
		}
		next[part] += uint64(r.n)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	complete := func(next []uint64) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, v := range next {
			if v < batches*per {
				return false
			}
		}
		return true
	}
	// consume polls with poll and delivers into next (the group's or the
	// single consumers') until every partition is complete, or done.
	consume := func(what, whose string, next []uint64, poll func() (*wire.PolledMessages, error)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !errs.bad.Load() && !complete(next) {
				select {
				case <-done:
					mu.Lock()
					errs.add("%s did not receive everything: %v", whose, next)
					mu.Unlock()
					return
				default:
				}
				p, err := poll()
				if err != nil {
					errs.add("%s: poll: %v", what, err)
					return
				}
				deliver(next, p, what)
			}
		}()
	}
	for i, m := range members {
		count := []uint32{37, 250}[i]
		consume(fmt.Sprintf("member %d", i), "the group", groupNext, func() (*wire.PolledMessages, error) {
			return m.PollConsumerGroup(ctx, s, tp, g, wire.NextStrategy(), count, true)
		})
	}
	for part := range uint32(parts) {
		c := connect(t, n)
		consume(fmt.Sprintf("single consumer of %d", part), "single consumers", singleNext, func() (*wire.PolledMessages, error) {
			return c.PollMessages(ctx, wire.SingleConsumer(wire.ID(40)), s, tp, wire.Partition(part), wire.NextStrategy(), 1+part*60, true)
		})
	}
	for b := range batches {
		for part := range uint32(parts) {
			if err := hpSend(ctx, admin, s, tp, 0, part, uint64(b*per), per); err != nil {
				t.Fatal(err)
			}
		}
	}
	timer := time.AfterFunc(20*time.Second, func() { close(done) })
	wg.Wait()
	timer.Stop()
	errs.report(t)
}

// 10. Restart: a node fills a partition with buffers recycled under
// polls, stops; a new node over the same directory serves every payload
// from the files, then takes new sends into pooled buffers and serves
// those too.
func TestHostilePooledRestart(t *testing.T) {
	dir := t.TempDir()
	const per = 100
	n1 := hostileNode(t, dir, smallBudget)
	c1 := connect(t, n1)
	ctx := ctxT(t)
	s, tp := hpTopic(t, ctx, c1, 1)
	for b := range 20 {
		mustT(t, hpSend(ctx, c1, s, tp, 0, 0, uint64(b*per), per))
		if b%3 == 2 {
			p, err := c1.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), s, tp, wire.Partition(0), wire.OffsetStrategy(uint64(b*per-150)), 250, true)
			mustT(t, err)
			if _, err := hpCheck(p, 0, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = c1.Close()
	mustT(t, n1.Close())
	n2 := hostileNode(t, dir, smallBudget)
	c2 := connect(t, n2)
	readAll(t, ctx, c2, s, tp, 0, 0, 20*per, 37, 250, 1)
	mustT(t, hpFill(ctx, c2, s, tp, 0, 0, 20, 40, per, nil))
	readAll(t, ctx, c2, s, tp, 0, 0, 40*per, 250, 37)
	// Auto-commit of the first node survived, Next goes on from it.
	p, err := c2.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), s, tp, wire.Partition(0), wire.NextStrategy(), 100, true)
	mustT(t, err)
	if r, err := hpCheck(p, 0, true); err != nil || r.n == 0 {
		t.Fatalf("next after restart: %+v %v", r, err)
	}
}

// 11. Encryption at rest: sealed batches are not in the request's buffer
// (pooledOwner refuses them); the request buffers must still come back
// safely and every poll (opened records) serve the payloads, across a
// purge.
func TestHostilePooledEncryptedAtRest(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, config.EncryptionKeySize))
	n, admin, ctx, s, tp := hostileTopic(t, func(c *config.Config) {
		smallBudget(c)
		c.System.Encryption = config.Encryption{Enabled: true, Key: key}
	}, 1)
	bg := newHPBackground(t, ctx, n)
	consumer := bg.reconnecting()
	const per = 100
	var high atomic.Uint64
	var gen atomic.Uint32
	counts := []uint32{37, 1, 250}
	rng := rand.New(rand.NewPCG(5, 5))
	bg.poll(consumer, hpPolling{stream: s, topic: tp, consumer: 1, derived: true, generation: &gen,
		next: func(i int) (hpAsk, bool) { return hpAt(rng.Uint64N(high.Load()+1), counts[i%len(counts)]), true },
		accept: func(a hpAsk, r hpReply) {
			if r.n > 0 && r.gen < a.answered {
				bg.errs.add("%v after purge %d served gen %d", a, a.answered, r.gen)
			}
		}})
	mustT(t, bg.generations(admin, s, tp, 3, 10, per, &high, &gen, func(uint32) error { return admin.PurgeTopic(ctx, s, tp) }))
	bg.finish()
	readAll(t, ctx, admin, s, tp, 0, 2, 10*per, 37, 250)
}

// 12. Polls cut at MaxPollBytes (64 MiB of records by default): a reply
// stops before the batch that would pass the bound, and that batch's pin,
// already taken, is dropped again (partition.unpinFrom). 340 cached
// batches of 200 KB, polled with counts far above what fits, from batch
// boundaries and from inside batches. Then a purge must give every
// pooled buffer back: none may be lost by a missed unpin, none released
// twice.
func TestHostilePooledPollsCutAtMaxPollBytes(t *testing.T) {
	hostileOver(t, []string{"tcp", "ws"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, func(c *config.Config) { c.Partition.MemoryBudget = 512 << 20 }, 1)
		consumer := connect(t, n)
		const batches, per = 340, 100
		before := framebuf.ReadStats()
		mustT(t, hpFill(ctx, admin, s, tp, 0, 0, 0, batches, per, nil))
		cut := 0
		for _, from := range []uint64{0, 50, 12345, 1} {
			hpReadThrough(t, ctx, consumer, 1, s, tp, 0, from, batches*per, 40000, true, func(off uint64, p *wire.PolledMessages, r hpReply) {
				if len(p.Records) > 64<<20 {
					t.Fatalf("poll at %d: %d record bytes", off, len(p.Records))
				}
				if off+uint64(r.n) < batches*per && r.n < 40000 {
					cut++
				}
			})
		}
		if cut == 0 {
			t.Fatal("no poll was cut at MaxPollBytes")
		}
		mid := framebuf.ReadStats()
		mustT(t, admin.PurgeTopic(ctx, s, tp))
		want := mid.Gets - before.Gets
		deadline := time.Now().Add(10 * time.Second)
		var got uint64
		for {
			got = framebuf.ReadStats().Recycled - before.Recycled
			if got >= want || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("%d polls cut; %d pooled frames, %d recycled after the purge", cut, want, got)
		if transportFor(t).kind != client.TransportHTTP && got != want {
			t.Fatalf("%d pooled frames, %d recycled after the purge: %d lost to the collector (a pin not dropped)", want, got, int64(want)-int64(got))
		}
	})
}

// 13. Purges racing concurrent producers and pollers: batches stamped
// before a purge and committed after it are refused by the log
// (ErrNotContiguous) with their buffer's reference taken (pooledOwner);
// the cache is wiped under polls. Payloads name their producer and
// sequence number; every reply must be whole and consistent.
func TestHostilePooledPurgesRaceProducers(t *testing.T) {
	hostileOver(t, []string{"tcp", "quic"}, func(t *testing.T) {
		n, admin, ctx, s, tp := hostileTopic(t, smallBudget, 1)
		var high atomic.Uint64
		var purges atomic.Int64
		bg := newHPBackground(t, ctx, n)
		for w, count := range []uint32{37, 1, 250} {
			rng := rand.New(rand.NewPCG(uint64(w), 13))
			bg.poll(bg.reconnecting(), hpPolling{stream: s, topic: tp, consumer: uint32(w + 1),
				next: func(int) (hpAsk, bool) { return hpAt(rng.Uint64N(high.Load()+200), count), true }})
		}
		purger := connect(t, n)
		bg.repeat(15*time.Millisecond, func() bool {
			if err := purger.PurgeTopic(ctx, s, tp); err != nil {
				bg.errs.add("purge: %v", err)
				return false
			}
			purges.Add(1)
			return true
		})
		hpProduce(t, ctx, n, s, tp, 3, 40, 100, func(pr int, conf wire.SendConfirmations, err error) bool {
			if err != nil {
				if isStatus(err) {
					return true // refused around a purge
				}
				bg.errs.add("producer %d: %v", pr, err)
				return false
			}
			if len(conf) == 1 {
				high.Store(conf[0].BaseOffset + 100)
			}
			return true
		})
		bg.finish()
		t.Logf("%d purges, %d polls served %d messages; pool %+v", purges.Load(), bg.polls.Load(), bg.served.Load(), framebuf.ReadStats())
		// The partition still works: a last generation reads back whole.
		mustT(t, admin.PurgeTopic(ctx, s, tp))
		mustT(t, hpFill(ctx, admin, s, tp, 7, 0, 0, 10, 100, nil))
		readAll(t, ctx, admin, s, tp, 0, 7, 1000, 37, 250)
	})
}

// hPoller is a polling client that the node may disconnect: a cold
// reply whose batch file a purge, a deletion or retention removed before
// the writer read it fails its write and ends the connection
// (storage.BatchSource). It counts such ends and polls again over a new
// connection; wrong data is never retried.
type hPoller struct {
	t     *testing.T
	n     *testNode
	mu    sync.Mutex
	c     *client.Client
	drops *atomic.Int64
}

func newHPoller(t *testing.T, n *testNode, drops *atomic.Int64) *hPoller {
	return &hPoller{t: t, n: n, c: connect(t, n), drops: drops}
}

func (p *hPoller) PollMessages(ctx context.Context, consumer wire.Consumer, stream, topic wire.Identifier, partition wire.OptionalPartition, strategy wire.PollingStrategy, count uint32, autoCommit bool) (*wire.PolledMessages, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for attempt := 0; ; attempt++ {
		m, err := p.c.PollMessages(ctx, consumer, stream, topic, partition, strategy, count, autoCommit)
		if err == nil || isStatus(err) || !errors.Is(err, wire.ErrDisconnected) || attempt == 3 {
			return m, err
		}
		p.drops.Add(1)
		_ = p.c.Close()
		c, derr := hpDial(ctx, p.t, p.n, 10*time.Second)
		if derr != nil {
			return nil, fmt.Errorf("reconnect after %w: %w", err, derr)
		}
		p.t.Cleanup(func() { _ = c.Close() })
		p.c = c
	}
}
