package partition

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"iggynode/wire"
)

var (
	cryptKey = bytes.Repeat([]byte{7}, 32)
	otherKey = bytes.Repeat([]byte{8}, 32)
)

func batchCipher(t testing.TB, key []byte) *wire.BatchCipher {
	t.Helper()
	c, err := wire.NewBatchCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// appendingStore adds the AppendReader extension to memStore, as the
// node's storage has it, so evicted whole batches are read into the reply.
type appendingStore struct{ *memStore }

func (a appendingStore) AppendBatchTo(dst []byte, base uint64) ([]byte, error) {
	b, err := a.ReadBatch(base)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// twinLogs are two logs fed the same batches, one plaintext and one
// sealed as the shell seals them (before the stamp), both with the same
// configuration and store kind.
type twinLogs struct {
	plain, sealed *harness
	cipher        *wire.BatchCipher
}

func newTwinLogs(t *testing.T, cfg Config, appending bool) *twinLogs {
	c := batchCipher(t, cryptKey)
	tw := &twinLogs{plain: newHarness(t, cfg), cipher: c}
	sealedCfg := cfg
	sealedCfg.Cipher = c
	tw.sealed = newHarness(t, sealedCfg)
	if appending {
		tw.plain.log.store = appendingStore{tw.plain.store}
		tw.sealed.log.store = appendingStore{tw.sealed.store}
	}
	return tw
}

// send commits batches of the given message counts to both logs.
func (tw *twinLogs) send(t *testing.T, payloadSize int, counts ...int) {
	t.Helper()
	for _, n := range counts {
		tw.plain.commit(tw.plain.stamp(n, payloadSize))
		b := batchOf(t, tw.sealed.log.JournalNext(), n, payloadSize)
		sealed, err := tw.cipher.AppendSealedBatch(nil, b)
		if err != nil {
			t.Fatal(err)
		}
		tw.sealed.ts += 1000
		tw.sealed.log.StampNext(sealed, tw.sealed.ts)
		tw.sealed.commit(sealed)
	}
}

// client-plane.md 13.4, last item: an encrypted log serves, for every
// strategy, whole and sliced, from the cache and read back from the store
// (into the reply and through ReadBatch), exactly the records a log
// without encryption serves; the store holds sealed bytes only.
func TestEncryptedPollServesThePlaintextRecords(t *testing.T) {
	polls := []struct {
		s     wire.PollingStrategy
		count uint32
	}{
		{wire.OffsetStrategy(0), 100}, {wire.OffsetStrategy(0), 2}, {wire.OffsetStrategy(4), 2},
		{wire.OffsetStrategy(5), 4}, {wire.OffsetStrategy(1), 10}, {wire.OffsetStrategy(3), 4},
		{wire.OffsetStrategy(11), 5}, {wire.TimestampStrategy(1_001_500), 100}, {wire.FirstStrategy(), 3},
		{wire.LastStrategy(), 5}, {wire.LastStrategy(), 3}, {wire.NextStrategy(), 4},
	}
	for _, tc := range []struct {
		name      string
		cache     uint64
		appending bool
	}{{"cached", 0, false}, {"evicted, ReadBatch", 1, false}, {"evicted, read into the reply", 1, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tw := newTwinLogs(t, Config{CacheBytes: tc.cache}, tc.appending)
			tw.send(t, 24, 3, 4, 5)
			if tc.cache == 1 && tw.sealed.log.CachedBytes() != 0 {
				t.Fatalf("%d bytes still cached", tw.sealed.log.CachedBytes())
			}
			for base, b := range tw.sealed.store.batches {
				if err := wire.ValidateBatch(b, wire.Batch(b).MessageCount()); err != nil {
					t.Fatalf("stored sealed batch does not validate: %v", err)
				}
				for it := wire.Batch(tw.plain.store.batches[base]).Frames(); ; {
					f, ok := it.Next()
					if !ok {
						break
					}
					if bytes.Contains(b, f.Payload()) {
						t.Fatalf("the stored batch at %d holds a payload in plaintext", base)
					}
				}
			}
			for _, p := range polls {
				want, wp, err := tw.plain.log.Poll([]byte("x"), p.s, p.count, 0, false)
				if err != nil {
					t.Fatal(err)
				}
				got, gp, err := tw.sealed.log.Poll([]byte("x"), p.s, p.count, 0, false)
				if err != nil || gp != wp || !bytes.Equal(got, want) {
					t.Fatalf("%+v x %d: %+v (%v), want %+v; equal %v", p.s, p.count, gp, err, wp, bytes.Equal(got, want))
				}
				if wp.Count > 0 {
					checkMessages(t, got[1:], decodeRecords(t, got[1:], wp.Count), wp.First, wp.Last)
				}
			}
		})
	}
}

// A stored batch that does not authenticate (tampered with, checksums
// fixed up; or read under another key) fails the poll with
// CannotDecryptData and serves nothing, never the ciphertext.
func TestEncryptedPollRefusesWhatDoesNotAuthenticate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		appending bool
	}{{"ReadBatch", false}, {"read into the reply", true}} {
		t.Run(tc.name, func(t *testing.T) {
			tw := newTwinLogs(t, Config{CacheBytes: 1}, tc.appending)
			tw.send(t, 24, 3, 4)
			b := tw.sealed.store.batches[3]
			b[len(b)-1] ^= 1 // the last tag
			fixFrameChecksums(b)
			got, p, err := tw.sealed.log.Poll([]byte("x"), wire.OffsetStrategy(0), 100, 0, false)
			if !errors.Is(err, wire.ErrCannotDecryptData) || string(got) != "x" || p.Count != 0 {
				t.Fatalf("poll: %d bytes, %+v, %v; want CannotDecryptData and nothing served", len(got), p, err)
			}
			body, _, err := tw.sealed.log.AppendPollReply(nil, 0, wire.OffsetStrategy(0), 100, 0, false)
			if !errors.Is(err, wire.ErrCannotDecryptData) || len(body) != wire.PolledMessagesHeaderSize {
				t.Fatalf("poll reply: %d bytes, %v", len(body), err)
			}
			// The batch before it still serves.
			if _, p, err := tw.sealed.log.Poll(nil, wire.OffsetStrategy(0), 3, 0, false); err != nil || p.Count != 3 {
				t.Fatalf("the untouched batch: %+v, %v", p, err)
			}
		})
	}
	// Another key: a log restored over sealed batches it cannot open.
	tw := newTwinLogs(t, Config{CacheBytes: 1}, false)
	tw.send(t, 24, 2)
	l := New(Config{Cipher: batchCipher(t, otherKey)}, tw.sealed.store)
	if err := l.Restore(tw.sealed.store.infos(t), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Poll(nil, wire.FirstStrategy(), 10, 0, false); !errors.Is(err, wire.ErrCannotDecryptData) {
		t.Fatalf("poll under another key: %v", err)
	}
}

// fixFrameChecksums recomputes b's frame checksums and batch checksum.
func fixFrameChecksums(b []byte) {
	for it := wire.Batch(b).Frames(); ; {
		f, ok := it.Next()
		if !ok {
			break
		}
		sum := wire.FrameChecksum(f)
		for i := range 8 {
			f[i] = byte(sum >> (8 * i))
		}
	}
	wire.Batch(b).StampAppend(wire.Batch(b).BaseOffset(), wire.Batch(b).BaseTimestamp())
}

// DESIGN.md, performance rules: an encrypted poll from the cache
// allocates nothing but the reply's growth.
func TestEncryptedPollDoesNotAllocate(t *testing.T) {
	tw := newTwinLogs(t, Config{}, false)
	tw.send(t, 1000, 100, 100)
	dst := make([]byte, 0, 1<<20)
	if n := testing.AllocsPerRun(20, func() {
		_, _, _ = tw.sealed.log.Poll(dst, wire.OffsetStrategy(50), math.MaxUint32, 0, false)
	}); n != 0 {
		t.Fatalf("%v allocs per poll", n)
	}
}
