package actors

import (
	"fmt"
	"testing"
	"time"

	"iggynode/client"
	"iggynode/config"
	"iggynode/metadata"
	replicaplane "iggynode/plane/replica"
	"iggynode/vsr"
	"iggynode/wire"
)

// groupView is one node's replica of one partition group.
type groupView struct {
	group   uint64
	roster  vsr.Roster
	leading bool
	stored  uint64
}

func groupViews(t *testing.T, n *Node) map[uint64]groupView {
	out := map[uint64]groupView{}
	for _, v := range askPartitions(t, n, func(p *partitionActor) groupView {
		return groupView{group: p.ref.Group, roster: p.core.Roster(), leading: p.core.Leading(), stored: p.plog.HighWatermark()}
	}) {
		out[v.group] = v
	}
	return out
}

// placementsOf reads node n's committed placement of every partition.
func placementsOf(n *Node) map[uint64]metadata.Placement {
	out := map[uint64]metadata.Placement{}
	inspect(n, func(m *metadataActor) {
		groups, ps := m.state.Placements()
		for i, g := range groups {
			out[g] = ps[i]
		}
	})
	return out
}

// waitLeaders waits until every placed group is led by its preferred
// primary, and returns how many groups each node leads.
func waitLeaders(t *testing.T, nodes []*Node, within time.Duration) []int {
	t.Helper()
	var led []int
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		placed := placementsOf(nodes[0])
		led, last = make([]int, len(nodes)), ""
		total := 0
		for i, n := range nodes {
			for g, v := range groupViews(t, n) {
				if !v.leading {
					continue
				}
				led[i]++
				total++
				if p := placed[g]; p.Leader != uint8(i) {
					last += fmt.Sprintf(" group %d led by %d, preferred %d;", g, i, p.Leader)
				}
			}
		}
		if last == "" && total == len(placed) && total > 0 {
			return led
		}
		if total != len(placed) {
			last += fmt.Sprintf(" %d groups led of %d placed;", total, len(placed))
		}
	}
	t.Fatalf("leadership not on the preferred primaries:%s (led %v)", last, led)
	return nil
}

// Issue 23 on five real nodes, R = 3: each partition group runs on the
// three nodes of its placement only (the others hold no data and never
// join it), the groups start led by their preferred primaries, spread
// evenly, and a client on any node writes, polls and stores offsets on
// every partition through the forwarding, and reads its statistics.
func TestPlacementRunsGroupsOnTheirReplicaSets(t *testing.T) {
	nodes := startCluster(t, 5)
	ctx, c := rootClient(t, nodes[0])
	s, err := c.CreateStream(ctx, "placed", nil)
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 10
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", partitions, nil); err != nil {
		t.Fatal(err)
	}
	led := waitLeaders(t, nodes, 30*time.Second)
	for i, l := range led {
		if l != 2 {
			t.Fatalf("node %d leads %d partitions, want 2 of 10 (led %v)", i, l, led)
		}
	}
	placed := placementsOf(nodes[0])
	if len(placed) != partitions {
		t.Fatalf("%d partitions placed", len(placed))
	}
	// ClusterStatus says the same: each partition's primary as the
	// members of its group report it.
	statusLeads := map[uint8]int{}
	for i, n := range nodes {
		st, err := rootOn(t, n).ClusterStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Partitions {
			if p.Voters&(1<<i) != 0 && p.Primary == uint8(i) {
				statusLeads[p.Primary]++
			}
		}
	}
	for i := range nodes {
		if statusLeads[uint8(i)] != 2 {
			t.Fatalf("ClusterStatus: node %d leads %d partitions by its own report, want 2 (%v)", i, statusLeads[uint8(i)], statusLeads)
		}
	}
	for i, n := range nodes {
		for deadline := time.Now().Add(5 * time.Second); n.refs.tel.leading.Load() != 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d's iggy.cluster.partitions.led gauge says %d, want 2", i, n.refs.tel.leading.Load())
			}
		}
	}
	for i, n := range nodes {
		if got := placementsOf(n); fmt.Sprint(got) != fmt.Sprint(placed) {
			t.Fatalf("node %d placed differently: %v, node 0: %v", i, got, placed)
		}
	}
	// Write 5 messages to each partition through node 0 (which holds
	// only some of them).
	for p := uint32(0); p < partitions; p++ {
		for k := range 5 {
			msg := client.NewMessage(fmt.Appendf(nil, "p%d-m%d", p, k))
			if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(p), []wire.Message{msg}); err != nil {
				t.Fatalf("send to partition %d: %v", p, err)
			}
		}
	}
	// Members hold the messages, the others nothing and no group.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		bad := ""
		for i, n := range nodes {
			for g, v := range groupViews(t, n) {
				member := placed[g].Voters&(1<<i) != 0
				switch {
				case member && (v.stored != 5 || v.roster.Voters != placed[g].Voters):
					bad += fmt.Sprintf(" node %d group %d: member with %d messages, roster %v;", i, g, v.stored, v.roster)
				case !member && (v.stored != 0 || v.roster.Voter(uint8(i))):
					bad += fmt.Sprintf(" node %d group %d: not placed there, yet %d messages, roster %v;", i, g, v.stored, v.roster)
				}
			}
		}
		if bad == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(bad)
		}
	}
	// Every node answers polls, offsets and statistics of every partition.
	consumer := wire.SingleConsumer(wire.ID(7))
	for i, n := range nodes {
		ctx, ci := rootClient(t, n)
		for p := uint32(0); p < partitions; p++ {
			polled, err := ci.PollMessages(ctx, consumer, wire.ID(s.ID), wire.ID(0), wire.Partition(p), wire.OffsetStrategy(0), 10, false)
			if err != nil || polled.MessagesCount != 5 || polled.PartitionID != p {
				t.Fatalf("node %d poll of partition %d (placed on %b): %+v %v", i, p, placedOn(placed, s.ID, p), polled, err)
			}
			if err := ci.StoreConsumerOffset(ctx, consumer, wire.ID(s.ID), wire.ID(0), wire.Partition(p), uint64(i), wire.AckQuorum); err != nil {
				t.Fatalf("node %d store offset on partition %d: %v", i, p, err)
			}
			// A backup applies the commit with the primary's next message
			// (as in any cluster): the offset reads back within a heartbeat.
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				off, err := ci.GetConsumerOffset(ctx, consumer, wire.ID(s.ID), wire.ID(0), wire.Partition(p))
				if err == nil && off != nil && off.StoredOffset == uint64(i) && off.CurrentOffset == 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("node %d offset of partition %d (placed on %b): %+v %v", i, p, placedOn(placed, s.ID, p), off, err)
				}
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			d, err := ci.GetTopic(ctx, wire.ID(s.ID), wire.ID(0))
			if err != nil {
				t.Fatal(err)
			}
			if d.MessagesCount == 5*partitions {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d reports %d messages in the topic, want %d: %+v", i, d.MessagesCount, 5*partitions, d.Partitions)
			}
		}
	}
}

// placedOn is the replica set of partition p of topic 0 in stream.
func placedOn(placed map[uint64]metadata.Placement, stream, p uint32) uint32 {
	g, _ := wire.PartitionGroup(stream, 0, p)
	return placed[g].Voters
}

// waitPlaced waits until every partition group runs on its placement's
// voters, with no change in progress, on every node of nodes (indexed by
// replica id), and returns the placement.
func waitPlaced(t *testing.T, nodes []*Node) map[uint64]metadata.Placement {
	t.Helper()
	var last string
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		placed := placementsOf(nodes[0])
		last = ""
		for i, n := range nodes {
			for g, v := range groupViews(t, n) {
				p, ok := placed[g]
				if !ok {
					last += fmt.Sprintf(" group %d not placed;", g)
					continue
				}
				voter := v.roster.Voter(uint8(i))
				if want := p.Voters&(1<<i) != 0; voter != want || (voter && (v.roster.Voters != p.Voters || v.roster.Changing())) {
					last += fmt.Sprintf(" node %d group %d: %v, placed on %b;", i, g, v.roster, p.Voters)
				}
			}
		}
		if last == "" {
			return placed
		}
	}
	t.Fatalf("partition groups not on their placement:%s", last)
	return nil
}

// Leadership balance (issue 23): a node that stops loses the groups it
// led to the other members of their replica sets, writes go on, and once
// it is back (live for a balancer pass) each group is handed back to its
// preferred primary by a planned view change, with nothing acknowledged
// lost.
func TestLeadershipReturnsToThePreferredPrimary(t *testing.T) {
	fast := func(o *Options) { o.Config.Cluster.LeaderBalanceInterval = config.Duration(time.Second) }
	nodes := startClusterWith(t, 5, fast)
	ctx, c := rootClient(t, nodes[0])
	s, err := c.CreateStream(ctx, "balanced", nil)
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 10
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", partitions, nil); err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, nodes, 30*time.Second)
	sent := map[uint32]int{}
	sendAll := func(round int) {
		t.Helper()
		for p := uint32(0); p < partitions; p++ {
			msg := client.NewMessage(fmt.Appendf(nil, "p%d-r%d", p, round))
			var err error
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, err = c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(p), []wire.Message{msg}); err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatalf("round %d, partition %d: %v", round, p, err)
			}
			sent[p]++
		}
	}
	sendAll(0)
	const down = 2
	dir, addr := nodes[down].opts.Config.System.Path, nodes[down].ReplicaAddr()
	if err := nodes[down].Close(); err != nil {
		t.Fatal(err)
	}
	sendAll(1) // its groups elect among their other members
	opts := clusterNodeOptions(down, 5, dir)
	opts.ReplicaListen = addr
	fast(&opts)
	nodes[down] = startNode(t, opts)
	if err := nodes[down].SetReplicaRoster(replicaRoster(nodes)); err != nil {
		t.Fatal(err)
	}
	sendAll(2)
	led := waitLeaders(t, nodes, 60*time.Second)
	for i, l := range led {
		if l != 2 {
			t.Fatalf("after the return node %d leads %d partitions, want 2 (led %v)", i, l, led)
		}
	}
	handOvers := int64(0)
	for _, n := range nodes {
		handOvers += n.refs.tel.handOvers.Load()
	}
	if handOvers == 0 {
		t.Fatal("leadership came back without a hand-over")
	}
	_, ci := rootClient(t, nodes[down])
	for p := uint32(0); p < partitions; p++ {
		polled, err := ci.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(s.ID), wire.ID(0), wire.Partition(p), wire.OffsetStrategy(0), 100, false)
		if err != nil || int(polled.MessagesCount) != sent[p] {
			t.Fatalf("partition %d: %d messages polled of %d sent: %v", p, polled.MessagesCount, sent[p], err)
		}
	}
}

// A partition move (issue 23): growing 3 -> 4 moves replicas of some
// partitions from an old node to the new one (learner, transfer,
// promotion, removal); once cluster.removed_drain_interval passed the
// moved-out replica drops the partition's data, answers its reads by
// forwarding, and stays outside the group across a restart.
func TestMovedOutReplicaDropsItsDataAndForwards(t *testing.T) {
	drain := func(o *Options) { o.Config.Cluster.RemovedDrainInterval = config.Duration(time.Second) }
	nodes := startClusterWith(t, 3, drain)
	advertiseClientPorts(nodes)
	ctx, c := rootClient(t, nodes[0])
	s, err := c.CreateStream(ctx, "moves", nil)
	if err != nil {
		t.Fatal(err)
	}
	const partitions = 3
	if _, err := c.CreateTopic(ctx, wire.ID(s.ID), "t", partitions, nil); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < partitions; p++ {
		for k := range 5 {
			var batch []wire.Message
			for j := range 300 {
				batch = append(batch, client.NewMessage(fmt.Appendf(nil, "m%d-%d", k, j)))
			}
			if _, err := c.SendMessages(ctx, wire.ID(s.ID), wire.ID(0), wire.PartitionID(p), batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	opts := joinerOptions(t, 3, nodes, t.TempDir())
	drain(&opts)
	joiner := startNode(t, opts)
	if err := joiner.SetReplicaRoster(replicaRoster(nodes)); err != nil {
		t.Fatal(err)
	}
	c0 := rootOn(t, nodes[0])
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st, err := c0.ClusterStatus(ctx)
		if err == nil {
			if p, ok := primaryOfStatus(st); ok {
				if _, err = rootOn(t, nodes[p]).ClusterAdd(ctx, wire.NodeSpec{ID: 3, ReplicaAddress: joiner.ReplicaAddr(), IP: "127.0.0.1", TCPPort: tcpPort(t, joiner)}); err == nil {
					break
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterAdd: %v", err)
		}
	}
	waitStatus(t, c0, "node 3 a voter", func(s wire.ClusterStatusReply) bool { return s.Voters == 0b1111 && s.Learners == 0 })
	all := append(nodes[:3:3], joiner)
	placed := waitPlaced(t, all)
	moved := map[int][]uint64{} // old node -> groups it left
	for g, p := range placed {
		for i := range 3 {
			if p.Voters&(1<<i) == 0 {
				moved[i] = append(moved[i], g)
			}
		}
	}
	if len(moved) == 0 {
		t.Fatalf("no replica moved growing 3 -> 4: %v", placed)
	}
	for i, groups := range moved {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			views, left := groupViews(t, all[i]), 0
			for _, g := range groups {
				// Restarted as a non-member: an actor runs, without data.
				if v, running := views[g]; running && v.stored == 0 && !v.roster.Voter(uint8(i)) {
					left++
				}
			}
			if left == len(groups) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d still holds the data of groups it left %v: %+v", i, groups, views)
			}
		}
	}
	// Reads through a node that left still see every message, before and
	// after it restarts.
	check := func(n *Node, what string) {
		t.Helper()
		_, ci := rootClient(t, n)
		for p := uint32(0); p < partitions; p++ {
			var polled *wire.PolledMessages
			var err error
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				polled, err = ci.PollMessages(ctx, wire.SingleConsumer(wire.ID(1)), wire.ID(s.ID), wire.ID(0), wire.Partition(p), wire.OffsetStrategy(0), 1000, false)
				if (err == nil && polled.MessagesCount == 1000) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil || polled.MessagesCount != 1000 {
				t.Fatalf("%s: partition %d: %+v %v", what, p, polled, err)
			}
		}
	}
	var out int
	for i := range moved {
		out = i
	}
	served, moving := int64(0), int64(0)
	for _, n := range all {
		served += n.refs.tel.transferBytes.Load()
		moving += n.refs.tel.moving.Load()
	}
	if served == 0 || moving != 0 {
		t.Fatalf("after the moves: %d transfer bytes served, %d groups still moving (gauges)", served, moving)
	}
	check(all[out], "the node that left, running")
	dir, addr := all[out].opts.Config.System.Path, all[out].ReplicaAddr()
	if err := all[out].Close(); err != nil {
		t.Fatal(err)
	}
	ro := clusterNodeOptions(out, 3, dir)
	ro.ReplicaListen = addr
	drain(&ro)
	all[out] = startNode(t, ro)
	if err := all[out].SetReplicaRoster(append(replicaRoster(nodes[:3]), replicaplane.Peer{ID: 3, Addr: joiner.ReplicaAddr()})); err != nil {
		t.Fatal(err)
	}
	for _, g := range moved[out] {
		if v := groupViews(t, all[out])[g]; v.stored != 0 || v.roster.Voter(uint8(out)) {
			t.Fatalf("restarted, node %d is back in group %d it left: %+v", out, g, v)
		}
	}
	check(all[out], "the node that left, restarted")
}

func primaryOfStatus(s wire.ClusterStatusReply) (int, bool) {
	for _, n := range s.Nodes {
		if n.Primary {
			return int(n.Spec.ID), true
		}
	}
	return 0, false
}

// cluster.transfer_bandwidth paces the chunks a node serves: at 1 MiB/s,
// eight 256 KiB chunks asked at one instant go out over a second (the
// first MiB is the burst), and 0 paces nothing.
func TestTransferBandwidthPacesChunks(t *testing.T) {
	if transferBudgetOf(0) != nil {
		t.Fatal("transfer_bandwidth 0 must not pace")
	}
	b := transferBudgetOf(config.Size(1 << 20))
	now := time.Now()
	var last time.Duration
	for range 8 {
		r := b.ReserveN(now, 256<<10)
		if !r.OK() {
			t.Fatal("a chunk larger than the burst")
		}
		last = r.DelayFrom(now)
	}
	if last < 900*time.Millisecond || last > 1100*time.Millisecond {
		t.Fatalf("the eighth chunk waits %v, want about 1 s at 1 MiB/s", last)
	}
}
