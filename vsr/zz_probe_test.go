package vsr

import (
	"testing"

	"iggynode/wire"
)

// settleGated is settle with a shell that persists Ready.State (failing it
// when fail says so) and checks every view-scoped send against the state
// it has made durable.
func (c *cluster) settleGated(t *testing.T, durable []State, fail func(i int) bool) {
	t.Helper()
	for progress := true; progress; {
		progress = false
		for i, r := range c.reps {
			if c.down[uint8(i)] {
				r.Ready()
				continue
			}
			for r.HasReady() {
				progress = true
				rd := r.Ready()
				if rd.State != nil {
					if fail(i) {
						r.StateFailed()
						rd.Send = nil
					} else {
						durable[i] = *rd.State
						r.StatePersisted()
					}
				}
				for _, f := range rd.Journal {
					r.Journaled(wire.HeaderOf(f).Prepare().Op, nil)
				}
				c.committed[i] = append(c.committed[i], rd.Commit...)
				for _, e := range rd.Send {
					h := wire.HeaderOf(e.Head)
					switch h.Command() {
					case wire.CmdStartViewChange, wire.CmdDoViewChange, wire.CmdStartView, wire.CmdCommit, wire.CmdPrepareOk:
						v := h.View()
						if v > durable[i].View {
							t.Fatalf("replica %d sent %v of view %d with durable view %d", i, h.Command(), v, durable[i].View)
						}
						if h.Command() == wire.CmdDoViewChange && h.DoViewChange().LogView > durable[i].LogView {
							t.Fatalf("replica %d sent DVC log_view %d with durable %d", i, h.DoViewChange().LogView, durable[i].LogView)
						}
						if (h.Command() == wire.CmdStartView || h.Command() == wire.CmdCommit) && v > durable[i].LogView {
							t.Fatalf("replica %d sent %v of view %d with durable log_view %d", i, h.Command(), v, durable[i].LogView)
						}
						if h.Command() == wire.CmdPrepareOk && r.LogView() > durable[i].LogView && v == r.View() {
							t.Logf("replica %d PrepareOk view %d with log_view %d not durable (%d)", i, v, r.LogView(), durable[i].LogView)
						}
					}
					if !c.down[e.To] && (c.lose == nil || !c.lose(e)) {
						c.reps[e.To].Step(frameOf(e))
					}
				}
			}
		}
	}
}

func TestProbeGate(t *testing.T) {
	for seed := uint64(1); seed < 300; seed++ {
		c := newCluster(3)
		durable := make([]State, 3)
		rng := seed*2654435761 | 1
		fail := func(i int) bool {
			rng ^= rng << 13
			rng ^= rng >> 7
			rng ^= rng << 17
			return rng%4 != 0
		}
		step := func(n int) {
			for range n {
				for j, r := range c.reps {
					if !c.down[uint8(j)] {
						r.Tick()
					}
				}
				c.settleGated(t, durable, fail)
			}
		}
		for op := 0; op < 3; op++ {
			if c.reps[0].Leading() {
				c.reps[0].Submit(Request{Client: wire.U128{Lo: 7}, Request: 1, Operation: wire.OpCreateStream, Frame: frameWith("x")}, uint64(100+op))
			}
			c.settleGated(t, durable, fail)
		}
		step(60)
		c.down = map[uint8]bool{0: true}
		ok := false
		for i := 0; i < 6000 && !ok; i++ {
			step(1)
			for j := 1; j < 3; j++ {
				if c.reps[j].Leading() && c.reps[3-j].Status() == StatusNormal && c.reps[3-j].View() == c.reps[j].View() {
					ok = true
				}
			}
		}
		if !ok {
			t.Fatalf("seed %d: no view: %v/%v %v/%v", seed, c.reps[1].Status(), c.reps[1].View(), c.reps[2].Status(), c.reps[2].View())
		}
		l := 1
		if !c.reps[1].Leading() {
			l = 2
		}
		before := c.reps[l].CommitMax()
		c.reps[l].Submit(Request{Client: wire.U128{Lo: 7}, Request: 1, Operation: wire.OpCreateStream, Frame: frameWith("y")}, 1000)
		for i := 0; i < 3000 && c.reps[l].CommitMax() == before; i++ {
			step(1)
		}
		if c.reps[l].CommitMax() == before {
			t.Fatalf("seed %d: no commit after view change", seed)
		}
	}
}
