package vsr

import (
	"testing"

	"iggynode/wire"
)

func newTestLiveness(self uint8) *Liveness {
	return NewLiveness(LivenessConfig{Cluster: wire.U128{Lo: 7}, Self: self, Replicas: 3, IntervalTicks: 10, TimeoutTicks: 50,
		Incarnation: wire.U128{Lo: uint64(self) + 1}, MaxEntries: 2})
}

// One frame per peer per interval; entries ride it, the latest of a
// (group, kind) winning, split over several frames beyond MaxEntries.
func TestLivenessSendsOneFramePerPeerPerInterval(t *testing.T) {
	l := newTestLiveness(0)
	l.Post(5, QuietEntry{To: 1, Kind: QuietNotice, View: 1, Commit: 3})
	l.Post(5, QuietEntry{To: 1, Kind: QuietNotice, View: 1, Commit: 4}) // replaces the first
	l.Post(6, QuietEntry{To: 1, Kind: QuietNotice, View: 1, Commit: 9})
	l.Post(7, QuietEntry{To: 1, Kind: QuietConfirm, View: 2, Commit: 1})
	l.Post(8, QuietEntry{To: 0, Kind: QuietNotice}) // to itself: ignored
	var frames []Envelope
	for range 10 {
		l.Tick()
		frames = append(frames, l.Ready().Send...)
	}
	var to1 []wire.NodeHeartbeat
	for _, e := range frames {
		m, err := wire.DecodeNodeHeartbeat(e.Head)
		if err != nil {
			t.Fatal(err)
		}
		if e.To == 1 {
			to1 = append(to1, m)
		}
	}
	if len(frames) != 3 || len(to1) != 2 {
		t.Fatalf("%d frames, %d to peer 1; want one to peer 2 and two to peer 1 (three entries, two a frame)", len(frames), len(to1))
	}
	got := append(to1[0].Entries, to1[1].Entries...)
	if len(got) != 3 || got[0] != (wire.NodeHeartbeatEntry{Group: 5, Commit: 4, View: 1, Kind: 1}) || got[2].Group != 7 || got[2].Kind != 2 {
		t.Fatalf("entries %+v", got)
	}
	if l.Pending(1) != 0 {
		t.Fatal("entries left after the interval's frames")
	}
	for range 10 {
		l.Tick()
		for _, e := range l.Ready().Send {
			if m, _ := wire.DecodeNodeHeartbeat(e.Head); len(m.Entries) != 0 {
				t.Fatal("a sent entry was sent again: the groups repost what they need")
			}
		}
	}
}

// A peer silent for the timeout is lost, and found on its next frame.
func TestLivenessLosesASilentPeerAndFindsItAgain(t *testing.T) {
	a, b := newTestLiveness(0), newTestLiveness(1)
	var lost, found []uint8
	for tick := 0; tick < 200; tick++ {
		a.Tick()
		b.Tick()
		for _, e := range b.Ready().Send {
			if e.To == 0 && (tick < 60 || tick > 150) { // b's frames stop reaching a in between
				a.Step(e.Head)
			}
		}
		rd := a.Ready()
		lost, found = append(lost, rd.Lost...), append(found, rd.Found...)
		if tick == 55 && !a.Alive(1) {
			t.Fatal("a peer heard within the timeout was lost")
		}
	}
	// Peer 2 never spoke: lost once at the timeout; peer 1 lost once, found once.
	if len(lost) != 2 || len(found) != 1 || found[0] != 1 || !a.Alive(1) || a.Alive(2) {
		t.Fatalf("lost %v found %v alive(1)=%v alive(2)=%v", lost, found, a.Alive(1), a.Alive(2))
	}
}

// Frames of another cluster, from an unknown replica or damaged, are
// dropped and count as no heartbeat.
func TestLivenessDropsForeignFrames(t *testing.T) {
	a := newTestLiveness(0)
	other := NewLiveness(LivenessConfig{Cluster: wire.U128{Lo: 8}, Self: 1, Replicas: 3, IntervalTicks: 1})
	other.Tick()
	a.Step(other.Ready().Send[0].Head)
	a.Step(make([]byte, 300))
	if a.Dropped["node heartbeat of another cluster"] != 1 || a.Dropped["bad node heartbeat"] != 1 {
		t.Fatalf("dropped %v", a.Dropped)
	}
}

// IdleTicks: nothing happens before the tick it names, so a shell that
// wakes only then misses no frame and no loss.
func TestLivenessIdleTicksMissNothing(t *testing.T) {
	l := newTestLiveness(0)
	events := 0
	for tick := 0; tick < 400; {
		k := l.IdleTicks()
		for i := 1; i <= k; i++ {
			l.Tick()
			tick++
			rd := l.Ready()
			if len(rd.Send)+len(rd.Lost) > 0 {
				if i < k {
					t.Fatalf("tick %d: output %d ticks before the tick IdleTicks named", tick, k-i)
				}
				events++
			}
		}
	}
	if events < 40 {
		t.Fatalf("%d ticks with output in 400 (a frame every 10)", events)
	}
}

// Only members are heartbeated and watched: a table of 32 with members
// {0, 2} sends to 2 alone and loses nobody else; a member added starts a
// fresh timeout, one removed is not lost however long it is silent.
func TestLivenessFollowsItsMembers(t *testing.T) {
	l := NewLiveness(LivenessConfig{Cluster: wire.U128{Lo: 7}, Self: 0, Replicas: MaxReplicas, IntervalTicks: 10, TimeoutTicks: 50,
		Incarnation: wire.U128{Lo: 1}, Members: 0b101})
	sentTo := map[uint8]int{}
	var lost []uint8
	run := func(n int) {
		for range n {
			l.Tick()
			rd := l.Ready()
			for _, e := range rd.Send {
				sentTo[e.To]++
			}
			lost = append(lost, rd.Lost...)
		}
	}
	run(20)
	if len(sentTo) != 1 || sentTo[2] != 2 {
		t.Fatalf("sent %v, want two frames to peer 2 only", sentTo)
	}
	l.Post(9, QuietEntry{To: 5, Kind: QuietNotice}) // not a member: dropped
	if l.Pending(5) != 0 {
		t.Fatal("an entry for a non-member was queued")
	}
	run(40) // tick 60: peer 2 silent for the timeout
	if len(lost) != 1 || lost[0] != 2 {
		t.Fatalf("lost %v, want peer 2 only", lost)
	}
	l.SetMembers(0b100001) // 2 leaves, 5 joins
	lost = nil
	run(45)
	if len(lost) != 0 || !l.Alive(5) {
		t.Fatalf("within its fresh timeout: lost %v, 5 alive %v", lost, l.Alive(5))
	}
	run(10)
	if len(lost) != 1 || lost[0] != 5 {
		t.Fatalf("lost %v after the joiner's timeout, want 5 (and never 2 again)", lost)
	}
}
