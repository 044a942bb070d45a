package faults

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"iggynode/internal/faultcheck"
	"iggynode/wire"
)

func fiveNodes() *Cluster {
	c := &Cluster{Logf: func(string, ...any) {}}
	for id := uint8(0); id < 5; id++ {
		c.Nodes = append(c.Nodes, Node{Service: "node" + string('0'+rune(id)), ID: id})
	}
	return c
}

func TestOnPlacementAndLeads(t *testing.T) {
	c := fiveNodes()
	wl := workloadTopic{stream: 1, topic: 1, partitions: []uint32{0, 1}}
	entry := func(pid, replicas, voters uint32, preferred, primary uint8) wire.ClusterStatusPartition {
		return wire.ClusterStatusPartition{Stream: 1, Topic: 1, Partition: pid, Replicas: replicas, Voters: voters, Preferred: preferred, Primary: primary}
	}
	// Partition 0 on {0,3,4} settled; partition 1 on {1,2,3} still on
	// {0,1,2} as its old members see it.
	sts := make([]wire.ClusterStatusReply, 5)
	for i := range sts {
		id := uint32(i)
		p0 := entry(0, 0b11001, 0, 3, 3)
		if 0b11001&(1<<id) != 0 {
			p0.Voters = 0b11001
		}
		p1 := entry(1, 0b01110, 0, 1, 1)
		if 0b00111&(1<<id) != 0 {
			p1.Voters = 0b00111
		}
		sts[i].Partitions = []wire.ClusterStatusPartition{p0, p1, entry(7, 1, 1, 0, 0)}
		sts[i].Partitions[2].Stream = 2 // another topic's: ignored
	}
	place, placed, why, err := onPlacement(c, wl, sts)
	if err != nil || placed != 1 || len(place) != 2 || !strings.Contains(why, "1 on {1,2,3}") {
		t.Fatalf("placed %d (%s) %v", placed, why, err)
	}
	ls, known := leads(c, wl, sts)
	if known != 2 || ls[3] != 1 || ls[1] != 1 {
		t.Fatalf("leads %v known %d", ls, known)
	}
	if !onPreferred(c, wl, sts) {
		t.Fatal("on preferred")
	}
	sts[3].Partitions[0].Primary = 4 // members disagree: not known
	if ls, known = leads(c, wl, sts); known != 1 || ls[3] != 0 {
		t.Fatalf("leads %v known %d", ls, known)
	}
	sts[1].Partitions[1].Replicas = 0b10110
	if _, _, why, _ := onPlacement(c, wl, sts); !strings.Contains(why, "node1 places partition 1") {
		t.Fatalf("placement that differs between nodes: %s", why)
	}
}

func TestSpreadAndCounts(t *testing.T) {
	c := fiveNodes()
	place := map[uint32]wire.ClusterStatusPartition{}
	for pid := range uint32(30) {
		// Three consecutive nodes from pid%5: 18 replicas and 6 preferred each.
		m := uint32(0b111) << (pid % 5)
		m = (m | m>>5) & 0b11111
		place[pid] = wire.ClusterStatusPartition{Partition: pid, Replicas: m, Preferred: uint8(pid % 5)}
	}
	reps, prefs := counts(place)
	if !spread(c.Nodes, reps, 90, 1) || !spread(c.Nodes, prefs, 30, 1) || reps[4] != 18 || prefs[2] != 6 {
		t.Fatalf("replicas %v preferred %v", reps, prefs)
	}
	if spread(c.Nodes, map[uint8]int{0: 20, 1: 18, 2: 18, 3: 18, 4: 16}, 90, 1) {
		t.Fatal("20 and 16 of 90 on five is not within one of 18")
	}
	if !spread(c.Nodes, map[uint8]int{0: 19, 1: 18, 2: 18, 3: 18, 4: 17}, 90, 1) {
		t.Fatal("19 and 17 are")
	}
	if spread(c.Nodes, map[uint8]int{0: 18, 1: 18, 2: 18, 3: 18, 4: 18, 7: 1}, 91, 1) {
		t.Fatal("a count on an id outside the nodes")
	}
}

func TestVerdictByPartition(t *testing.T) {
	var hs []faultcheck.History
	var pcs []partitionCopies
	now := time.Now()
	for pid := range uint32(2) {
		h := faultcheck.History{Acked: map[uint64]bool{}}
		var cp [][]byte
		for a := uint64(1); a <= 3; a++ {
			h.Acked[a], h.Order, h.AckTimes = true, append(h.Order, a), append(h.AckTimes, now)
			_, p := faultcheck.Batch(a)
			cp = append(cp, p...)
		}
		if pid == 1 { // send 2 stored twice
			_, p := faultcheck.Batch(2)
			cp = append(cp, p...)
		}
		hs = append(hs, h)
		pcs = append(pcs, partitionCopies{pid: pid, names: []string{"node0", "node1"}, copies: [][][]byte{cp, cp},
			forwarded: []string{"node3"}, fwCopies: [][][]byte{cp}, fwErrs: []error{nil}})
	}
	v := verdict(hs, pcs)
	if v.AckedSends != 6 || v.Lost != 0 || v.Duplicates != 1 || len(v.Problems) != 2 ||
		!strings.Contains(v.Problems[1], "partition 1: send 2 stored at offsets [20 60]") {
		t.Fatalf("verdict %+v", v)
	}
	pcs[0].fwCopies[0] = pcs[0].copies[0][:20]
	pcs[1].copies[1] = pcs[1].copies[1][:60]
	v = verdict(hs, pcs)
	if v.OK() || !strings.Contains(strings.Join(v.Problems, "\n"), "a read through node3 (forwarded) returns 20 messages") ||
		!strings.Contains(strings.Join(v.Problems, "\n"), "partition 1: node1 holds 60 messages") {
		t.Fatalf("verdict %+v", v.Problems)
	}
	figs := replicaFigures(fiveNodes(), pcs)
	if figs[0].Partitions != 2 || figs[1].Messages != 60+60 || figs[3].Partitions != 0 {
		t.Fatalf("figures %+v", figs)
	}
	m := merged(hs)
	if len(m.AckTimes) != 6 || len(m.Order) != 0 {
		t.Fatalf("merged %+v", m)
	}
}

func TestStoredPrefix(t *testing.T) {
	d := func(b byte) [sha256.Size]byte { return sha256.Sum256([]byte{b}) }
	full := stored{Files: 1, Bytes: 30, Batches: [][sha256.Size]byte{d(1), d(2), d(3)}}
	if !(stored{}).prefixOf(full) || !(stored{Batches: full.Batches[:2]}).prefixOf(full) || !full.prefixOf(full) {
		t.Fatal("prefixes")
	}
	if (stored{Batches: [][sha256.Size]byte{d(1), d(3)}}).prefixOf(full) || (stored{Batches: append(full.Batches, d(4))}).prefixOf(full) {
		t.Fatal("not prefixes")
	}
	if !full.same(full) || (stored{Files: 2, Bytes: 30, Batches: full.Batches}).same(full) {
		t.Fatal("same")
	}
	if got := firstDiff(stored{Batches: [][sha256.Size]byte{d(1), d(3)}}, full); got != "; batch 1 differs" {
		t.Fatalf("first diff %q", got)
	}
}
