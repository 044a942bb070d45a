package vsr

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"iggynode/wire"
)

var probeSeeds = flag.Int("probe.seeds", 200, "")
var probeN = flag.Int("probe.n", 3, "")
var probeLong = flag.Float64("probe.long", 0.02, "")
var probeMeta = flag.Bool("probe.meta", true, "")
var probeSameSeed = flag.Bool("probe.sameseed", false, "")

type prep struct {
	core     *Replica
	journal  map[uint64][]byte
	last     uint64
	state    State
	applied  []Committed
	down     bool
	boots    int
}

type pkt struct {
	at   int
	to   int
	data []byte
}

type probeRun struct {
	rng   *rand.Rand
	n     int
	reps  []*prep
	net   []pkt
	now   int
	log   []string
	err   string
	meta  bool
}

func (p *probeRun) cfg(i int) Config {
	seed := uint64(i)*7919 + 1
	if !*probeSameSeed {
		seed += uint64(p.reps[i].boots) * 104729
	}
	c := Config{Cluster: wire.U128{Lo: 1}, Group: 5, Replica: uint8(i), ReplicaCount: p.n, Seed: seed, Metadata: p.meta}
	if p.meta {
		rp := p.reps[i]
		c.ReadJournal = func(op uint64) []byte { return rp.journal[op] }
		c.JournalFloor = func() uint64 { return 1 }
	}
	return c
}

func (p *probeRun) check(i int, c Committed) {
	rp := p.reps[i]
	if uint64(len(rp.applied))+1 != c.Op {
		p.fail(fmt.Sprintf("replica %d applied op %d after %d", i, c.Op, len(rp.applied)))
		return
	}
	rp.applied = append(rp.applied, c)
	id := wire.HeaderOf(c.Frame).Prepare().Checksum
	for j, o := range p.reps {
		if j != i && uint64(len(o.applied)) >= c.Op {
			oc := o.applied[c.Op-1]
			if wire.HeaderOf(oc.Frame).Prepare().Checksum != id || !bytes.Equal(oc.Frame[wire.HeaderSize:], c.Frame[wire.HeaderSize:]) {
				p.fail(fmt.Sprintf("t=%d replica %d applied op %d = %q, replica %d applied %q", p.now, i, c.Op, c.Frame[wire.HeaderSize:], j, oc.Frame[wire.HeaderSize:]))
			}
		}
	}
}

func (p *probeRun) fail(s string) {
	if p.err == "" {
		p.err = s
	}
}

func (p *probeRun) drive(i int) {
	rp := p.reps[i]
	for rp.core.HasReady() {
		rd := rp.core.Ready()
		if rd.State != nil {
			rp.state = *rd.State
			rp.core.StatePersisted()
		}
		if rd.Truncate != 0 {
			if rd.Truncate <= uint64(len(rp.applied)) {
				p.fail(fmt.Sprintf("replica %d truncates %d at/below applied %d", i, rd.Truncate, len(rp.applied)))
			}
			for op := rd.Truncate; op <= rp.last; op++ {
				delete(rp.journal, op)
			}
			rp.last = min(rp.last, rd.Truncate-1)
		}
		for _, f := range rd.Journal {
			op := wire.HeaderOf(f).Prepare().Op
			rp.journal[op] = f
			rp.last = max(rp.last, op)
			rp.core.Journaled(op, nil)
		}
		for _, e := range rd.Send {
			p.send(int(e.To), frameOf(e))
		}
		for _, c := range rd.Commit {
			p.check(i, c)
		}
	}
}

func (p *probeRun) send(to int, data []byte) {
	if p.rng.Float64() < 0.02 {
		return
	}
	d := 1 + p.rng.IntN(4)
	if p.rng.Float64() < *probeLong {
		d = 20 + p.rng.IntN(1500)
	}
	p.net = append(p.net, pkt{p.now + d, to, data})
	if p.rng.Float64() < 0.02 {
		p.net = append(p.net, pkt{p.now + 1 + p.rng.IntN(1500), to, append([]byte(nil), data...)})
	}
}

func (p *probeRun) restart(i int) {
	rp := p.reps[i]
	rp.boots++
	var head, w uint64
	for head = 0; rp.journal[head+1] != nil; head++ {
		w = max(w, wire.HeaderOf(rp.journal[head+1]).Prepare().Commit)
	}
	for op := head + 1; op <= rp.last; op++ {
		delete(rp.journal, op)
	}
	rp.last = head
	w = min(w, head)
	w = max(w, min(uint64(len(rp.applied)), head))
	rc := Recovery{View: rp.state.View, LogView: rp.state.LogView, CommitMax: rp.state.CommitMax}
	if uint64(len(rp.applied)) > w {
		rp.applied = rp.applied[:w]
	}
	for op := uint64(len(rp.applied)) + 1; op <= w; op++ {
		p.check(i, Committed{Op: op, Frame: rp.journal[op]})
	}
	rc.Commit = w
	if w > 0 {
		ph := wire.HeaderOf(rp.journal[w]).Prepare()
		rc.CommitChecksum, rc.CommitTimestamp = ph.Checksum, ph.Timestamp
	}
	for op := w + 1; op <= head; op++ {
		rc.Journal = append(rc.Journal, rp.journal[op])
	}
	rp.core = New(p.cfg(i))
	rp.core.Recover(rc)
	rp.down = false
	p.drive(i)
}

func runProbe(seed uint64, n int, ticks int) *probeRun {
	p := &probeRun{rng: rand.New(rand.NewPCG(seed, seed^77)), n: n, meta: *probeMeta}
	for i := 0; i < n; i++ {
		p.reps = append(p.reps, &prep{journal: map[uint64][]byte{}})
	}
	for i := 0; i < n; i++ {
		p.reps[i].core = New(p.cfg(i))
	}
	req := uint64(0)
	for p.now = 0; p.now < ticks && p.err == ""; p.now++ {
		// crash / restart
		if p.rng.Float64() < 0.003 {
			i := p.rng.IntN(n)
			downs := 0
			for _, r := range p.reps {
				if r.down {
					downs++
				}
			}
			if !p.reps[i].down && downs < (n-1)/2 {
				p.reps[i].down = true
			}
		}
		for i, r := range p.reps {
			if r.down && p.rng.Float64() < 0.005 {
				p.restart(i)
			}
		}
		for i, r := range p.reps {
			if !r.down {
				r.core.Tick()
				p.drive(i)
			}
		}
		if p.now < ticks-3000 && p.rng.Float64() < 0.05 {
			for i, r := range p.reps {
				if !r.down && r.core.Leading() {
					req++
					r.core.Submit(Request{Client: wire.U128{Lo: req}, Request: 1, Operation: wire.OpCreateStream, Frame: frameWith(fmt.Sprintf("r%d", req))}, uint64(p.now*10000))
					p.drive(i)
				}
			}
		}
		var due, later []pkt
		for _, k := range p.net {
			if k.at <= p.now {
				due = append(due, k)
			} else {
				later = append(later, k)
			}
		}
		p.net = later
		p.rng.Shuffle(len(due), func(a, b int) { due[a], due[b] = due[b], due[a] })
		for _, k := range due {
			if p.reps[k.to].down {
				continue
			}
			p.reps[k.to].core.Step(k.data)
			p.drive(k.to)
		}
	}
	return p
}

func TestProbeFuzz(t *testing.T) {
	bad := map[string][]uint64{}
	for s := 1; s <= *probeSeeds; s++ {
		p := func() (p *probeRun) {
			defer func() {
				if r := recover(); r != nil {
					p = &probeRun{err: fmt.Sprint("panic: ", r)}
				}
			}()
			return runProbe(uint64(s), *probeN, 20000)
		}()
		if p.err != "" {
			key := p.err
			if len(key) > 60 {
				key = key[:60]
			}
			bad[key] = append(bad[key], uint64(s))
		}
	}
	keys := make([]string, 0, len(bad))
	for k := range bad {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%d seeds e.g. %v: %s", len(bad[k]), bad[k][:min(5, len(bad[k]))], k)
	}
}

func TestProbeStats(t *testing.T) {
	p := runProbe(3, *probeN, 20000)
	for i, r := range p.reps {
		t.Logf("rep %d applied %d view %d status %v vcs %d adopted %d started %d probes %d repairs %d boots %d drops %v", i, len(r.applied), r.core.View(), r.core.Status(), r.core.ViewChangesStarted, r.core.ViewsAdopted, r.core.ViewsStarted, r.core.Probes, r.core.Repairs, r.boots, r.core.Dropped)
	}
}
