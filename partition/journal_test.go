package partition

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"iggynode/wire"
)

// vector175Batch is the batch of client-plane.md 17.5 (body offsets
// 0x1a..0x14f), written by hand from the spec's hex.
func vector175Batch(t *testing.T) []byte {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("0000000000000000")                   // partition_id
	sb.WriteString("0000000000000000")                   // base_offset
	sb.WriteString("0000000000000000")                   // base_timestamp
	sb.WriteString("00401e18240a0600")                   // origin_timestamp
	sb.WriteString("3501000000000000")                   // batch_length = 309
	sb.WriteString("c30f947c3dc33789")                   // batch_checksum
	sb.WriteString("01000000")                           // message_count
	sb.WriteString(strings.Repeat("00", 204))            // reserved
	sb.WriteString("8e5ca59edbbdbfb9")                   // frame checksum
	sb.WriteString("01000000000000000000000000000000")   // id = 1
	sb.WriteString("00000000" + "00000000" + "00000000") // offset_delta, timestamp_delta, user_headers_length
	sb.WriteString("05000000" + "0000000000000000")      // payload_length, reserved
	sb.WriteString("68656c6c6f")                         // "hello"
	b, err := hex.DecodeString(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 309 {
		t.Fatalf("vector is %d bytes", len(b))
	}
	return b
}

// client-plane.md 17.5: stamping base_offset 100 and base_timestamp
// origin + 5 gives batch checksum 0xDB08AC825BFA5C09.
func TestStampNextSpecVector(t *testing.T) {
	b := vector175Batch(t)
	if err := wire.ValidateBatch(b, 1); err != nil {
		t.Fatalf("vector as sent: %v", err)
	}
	l := New(Config{}, nil)
	if err := l.Restore(nil, 100, nil); err != nil {
		t.Fatal(err)
	}
	origin := uint64(1_700_000_000_000_000)
	if base := l.StampNext(b, origin+5); base != 100 {
		t.Fatalf("base offset %d, want 100", base)
	}
	if got := hex.EncodeToString(b[40:48]); got != "095cfa5b82ac08db" {
		t.Fatalf("stamped checksum bytes %s, want 09 5c fa 5b 82 ac 08 db", got)
	}
	if got := hex.EncodeToString(b[8:24]); got != "6400000000000000"+"05401e18240a0600" {
		t.Fatalf("stamped base_offset/base_timestamp bytes %s", got)
	}
	if l.JournalNext() != 101 || l.HighWatermark() != 100 {
		t.Fatalf("journal next %d, frontier %d", l.JournalNext(), l.HighWatermark())
	}
}

// replica-plane.md 5.13 rule 3: the next offset counts every journaled
// batch, committed or still pipelined.
func TestStampNextPipelined(t *testing.T) {
	h := newHarness(t, Config{})
	b1 := h.stamp(3, 16)
	h.commit(b1)
	b2 := h.stamp(2, 16) // pipelined: not committed yet
	b3 := h.stamp(4, 16)
	for i, c := range []struct {
		b        []byte
		base, ts uint64
	}{{b1, 0, 1_001_000}, {b2, 3, 1_002_000}, {b3, 5, 1_003_000}} {
		bt := wire.Batch(c.b)
		if bt.BaseOffset() != c.base || bt.BaseTimestamp() != c.ts {
			t.Errorf("batch %d stamped (%d, %d), want (%d, %d)", i, bt.BaseOffset(), bt.BaseTimestamp(), c.base, c.ts)
		}
		if err := wire.ValidateBatch(c.b, bt.MessageCount()); err != nil {
			t.Errorf("batch %d checksum not recomputed: %v", i, err)
		}
	}
	if h.log.JournalNext() != 9 || h.log.HighWatermark() != 3 || h.log.CurrentOffset() != 2 {
		t.Fatalf("journal next %d, frontier %d, current %d", h.log.JournalNext(), h.log.HighWatermark(), h.log.CurrentOffset())
	}
}

func TestRollbackJournal(t *testing.T) {
	h := newHarness(t, Config{})
	h.send(8, 3)             // committed 0..2
	h.stamp(2, 8)            // 3..4
	h.stamp(4, 8)            // 5..8
	h.log.RollbackJournal(5) // the append of 5..8 failed
	if got := h.log.JournalNext(); got != 5 {
		t.Fatalf("after rollback to 5: journal next %d", got)
	}
	h.log.RollbackJournal(9) // above the journal: no change
	if got := h.log.JournalNext(); got != 5 {
		t.Fatalf("rollback above the journal moved it to %d", got)
	}
	h.log.RollbackJournal(1) // never below the commit frontier
	if got := h.log.JournalNext(); got != 3 {
		t.Fatalf("rollback below the frontier: journal next %d, want 3", got)
	}
	if again := h.stamp(2, 8); wire.Batch(again).BaseOffset() != 3 {
		t.Fatalf("restamped at %d, want 3", wire.Batch(again).BaseOffset())
	}
}

// replica-plane.md 5.13 rule 4.
func TestVerifyStamp(t *testing.T) {
	primary := newHarness(t, Config{})
	primary.send(8, 2) // 0..1 committed everywhere
	good := primary.stamp(3, 8)
	ts := primary.ts

	corrupt := func(b []byte, at int) []byte {
		c := append([]byte(nil), b...)
		c[at] ^= 1
		return c
	}
	wrongOffset := append([]byte(nil), good...)
	wire.Batch(wrongOffset).StampAppend(5, ts)
	zero := batchOf(t, 0, 1, 8)
	wire.Batch(zero).StampAppend(2, ts)

	cases := []struct {
		name    string
		batch   []byte
		ts      uint64
		wantErr error
		code    wire.ErrorCode
	}{
		{"valid", good, ts, nil, 0},
		{"wrong timestamp", good, ts + 1, ErrStampMismatch, 0},
		{"wrong offset", wrongOffset, ts, ErrStampMismatch, 0},
		{"batch checksum", corrupt(good, wire.BatchChecksumOffset), ts, nil, wire.ErrInvalidBatchChecksum},
		{"payload bit flip", corrupt(good, len(good)-1), ts, nil, wire.ErrInvalidMessageChecksum},
		{"short", good[:100], ts, ErrBadBatch, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			backup := newHarness(t, Config{})
			backup.send(8, 2)
			err := backup.log.VerifyStamp(c.batch, c.ts)
			switch {
			case c.wantErr == nil && c.code == 0:
				if err != nil {
					t.Fatalf("VerifyStamp: %v", err)
				}
				if backup.log.JournalNext() != 5 {
					t.Fatalf("journal next %d after a verified batch, want 5", backup.log.JournalNext())
				}
				return
			case c.code != 0:
				if code, ok := wire.CodeOf(err); !ok || code != c.code {
					t.Fatalf("err %v, want code %d", err, c.code)
				}
			default:
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
			}
			if backup.log.JournalNext() != 2 {
				t.Fatalf("a refused batch moved the journal to %d", backup.log.JournalNext())
			}
		})
	}
}

func TestApplySendRefusesGapsAndJunk(t *testing.T) {
	h := newHarness(t, Config{})
	h.send(8, 2)
	b := batchOf(t, 0, 1, 8)
	wire.Batch(b).StampAppend(5, 1)
	if err := h.log.ApplySend(b); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("gap: %v", err)
	}
	wire.Batch(b).StampAppend(0, 1)
	if err := h.log.ApplySend(b); !errors.Is(err, ErrNotContiguous) {
		t.Fatalf("replay: %v", err)
	}
	if err := h.log.ApplySend(b[:200]); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("short: %v", err)
	}
	if err := h.log.ApplySend(b[:len(b)-1]); !errors.Is(err, ErrBadBatch) {
		t.Fatalf("batch_length mismatch: %v", err)
	}
	if h.log.HighWatermark() != 2 {
		t.Fatalf("refused batches moved the frontier to %d", h.log.HighWatermark())
	}
}
