package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// NetConfig holds the per-link faults of replica-plane.md 11.2.
type NetConfig struct {
	DelayMin  int     // ticks, default 1
	DelayMean int     // ticks, default 3; each packet waits max(min, Exp(mean))
	Loss      float64 // probability a packet is dropped at delivery
	Replay    float64 // probability a delivered packet is queued again
	Capacity  int     // packets per directed link, default 64; overflow evicts a random one
	// Partitions: each tick with PartitionProbability (when whole) the
	// network splits, with UnpartitionProbability (when split) it heals.
	PartitionProbability   float64
	UnpartitionProbability float64
	// Asymmetric partitions cut only one direction of each crossing link.
	Asymmetric bool
	// Clogging: each tick a link clogs with ClogProbability and then
	// delivers nothing for Exp(ClogMean) ticks.
	ClogProbability float64
	ClogMean        int
}

func (c *NetConfig) setDefaults() {
	if c.DelayMin == 0 {
		c.DelayMin = 1
	}
	if c.DelayMean == 0 {
		c.DelayMean = 3
	}
	if c.Capacity == 0 {
		c.Capacity = 64
	}
	if c.ClogMean == 0 {
		c.ClogMean = 20
	}
}

type packet struct {
	at    int // tick it becomes deliverable
	frame []byte
}

type link struct {
	queue     []packet
	clogUntil int
	cut       bool // by the current partition
}

// network is the simulated replica plane: one queue per directed link.
type network struct {
	cfg   NetConfig
	rng   *rand.Rand
	n     int
	links [][]*link // [from][to]
	split bool
	stats NetStats
}

// NetStats counts what the network did to packets.
type NetStats struct {
	Sent, Delivered, Lost, Replayed, Evicted, Cut uint64
	Partitions, Clogs                             uint64
}

func newNetwork(cfg NetConfig, n int, rng *rand.Rand) *network {
	net := &network{cfg: cfg, rng: rng, n: n, links: make([][]*link, n)}
	for i := range net.links {
		net.links[i] = make([]*link, n)
		for j := range net.links[i] {
			net.links[i][j] = &link{}
		}
	}
	return net
}

func (net *network) delay() int {
	exp := -math.Log(1-net.rng.Float64()) * float64(net.cfg.DelayMean)
	return max(net.cfg.DelayMin, int(exp))
}

// send queues frame from -> to, deliverable after a random delay.
func (net *network) send(now int, from, to int, frame []byte) {
	net.stats.Sent++
	l := net.links[from][to]
	if len(l.queue) >= net.cfg.Capacity {
		i := net.rng.IntN(len(l.queue))
		l.queue[i] = l.queue[len(l.queue)-1]
		l.queue = l.queue[:len(l.queue)-1]
		net.stats.Evicted++
	}
	l.queue = append(l.queue, packet{at: now + net.delay(), frame: frame})
}

// tick moves partitions and clogs on by one tick.
func (net *network) tick(now int, faults bool) {
	if !faults {
		net.heal()
		return
	}
	switch {
	case !net.split && net.rng.Float64() < net.cfg.PartitionProbability:
		net.partition()
	case net.split && net.rng.Float64() < net.cfg.UnpartitionProbability:
		net.heal()
	}
	if net.cfg.ClogProbability > 0 {
		for _, row := range net.links {
			for _, l := range row {
				if l.clogUntil <= now && net.rng.Float64() < net.cfg.ClogProbability {
					l.clogUntil = now + max(1, int(-math.Log(1-net.rng.Float64())*float64(net.cfg.ClogMean)))
					net.stats.Clogs++
				}
			}
		}
	}
}

// partition splits the replicas in two random non-empty sides (UniformSize
// of 11.2), cutting both directions or, when asymmetric, one.
func (net *network) partition() {
	side := make([]bool, net.n)
	for {
		any, all := false, true
		for i := range side {
			side[i] = net.rng.IntN(2) == 0
			any = any || side[i]
			all = all && side[i]
		}
		if any && !all {
			break
		}
	}
	for i := range net.links {
		for j := range net.links[i] {
			if side[i] != side[j] && (!net.cfg.Asymmetric || side[i]) {
				net.links[i][j].cut = true
			}
		}
	}
	net.split = true
	net.stats.Partitions++
}

func (net *network) heal() {
	for _, row := range net.links {
		for _, l := range row {
			l.cut, l.clogUntil = false, 0
		}
	}
	net.split = false
}

// deliver hands every packet that is due to deliver(from, to, frame), in a
// random order across and within links (11.2 reordering). Loss and replay
// apply only while faults are on; cut and clogged links hold their packets.
func (net *network) deliver(now int, faults bool, down func(int) bool, deliver func(from, to int, frame []byte)) {
	type due struct{ from, to int }
	var ready []due
	for from, row := range net.links {
		for to, l := range row {
			if l.clogUntil > now {
				continue
			}
			for _, p := range l.queue {
				if p.at <= now {
					ready = append(ready, due{from, to})
				}
			}
		}
	}
	net.rng.Shuffle(len(ready), func(i, j int) { ready[i], ready[j] = ready[j], ready[i] })
	for _, d := range ready {
		l := net.links[d.from][d.to]
		// Take a random due packet of this link.
		var idx []int
		for i, p := range l.queue {
			if p.at <= now {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		i := idx[net.rng.IntN(len(idx))]
		p := l.queue[i]
		l.queue = append(l.queue[:i], l.queue[i+1:]...)
		switch {
		case l.cut || down(d.from) || down(d.to):
			net.stats.Cut++
		case faults && net.rng.Float64() < net.cfg.Loss:
			net.stats.Lost++
		default:
			frame := p.frame // the replica owns what it gets
			if faults && net.rng.Float64() < net.cfg.Replay {
				l.queue = append(l.queue, packet{at: now + net.delay(), frame: p.frame})
				net.stats.Replayed++
				frame = append([]byte(nil), p.frame...) // the queued copy stays as sent
			}
			net.stats.Delivered++
			deliver(d.from, d.to, frame)
		}
	}
}

// describe lists the cut directed links.
func (net *network) describe() string {
	var cut []string
	for i, row := range net.links {
		for j, l := range row {
			if l.cut {
				cut = append(cut, fmt.Sprintf("%d->%d", i, j))
			}
		}
	}
	return strings.Join(cut, " ")
}
