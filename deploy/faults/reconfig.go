package faults

// The reconfiguration experiments of issue 22 (docs/reconfiguration.md):
// the roster of the running cluster changes under the workload. The
// joiners are the compose services of profile "reconfig" (node3, node4,
// node1b), started with --join; the changes go through the SDK's admin
// commands (ClusterAdd, ClusterRemove, ClusterReplace), and each step
// waits, bounded, until ClusterStatus shows it done. The fault mark is
// the start of the first change, the heal the moment the last one is
// done; Cluster.Nodes ends as the final roster, which the common checks
// then read (workload.go, storage.go: every acknowledged write on every
// member of the partition's replica set, identical copies there, the
// same through the other members, which forward reads, and none or a
// stale prefix in their storage; identical metadata; the same roster and
// placement on every member). With one partition of R = 3, grow-3-to-5
// moves nothing (a spread of one replica is even) and shrink-5-to-3
// moves the partition onto the nodes that stay.

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	"iggynode/client"
	"iggynode/wire"
)

// ChangeWithin bounds one cluster change, from the admin command until
// ClusterStatus shows it done (a joiner's catch-up included).
const ChangeWithin = 90 * time.Second

// Change is one cluster change of an experiment and its figures.
type Change struct {
	What string `json:"what"`
	// Accepted is the time from the admin command to its reply (the R
	// that starts the change committed).
	Accepted Millis `json:"accepted_ms"`
	// Done is the time from the admin command until ClusterStatus showed
	// the change finished (no learner, target reached; -1: never).
	Done   Millis `json:"done_ms"`
	Roster string `json:"roster"` // ClusterStatus once done
	Note   string `json:"note,omitempty"`
}

var reconfigExperiments = []Experiment{
	{Name: "grow-3-to-5", Description: "start node3 and node4 with --join and add them with ClusterAdd one after the other under load " +
		"(the second once the first is a voter); end with voters {0..4}; the one partition (R = 3) stays on its three " +
		"replicas (a spread of one needs no move), identical there, read through node3 and node4 by forwarding, absent from their storage",
		Inject: func(ctx context.Context, r *Run) error {
			r.Fault()
			if err := r.grow(ctx, "node3", "node4"); err != nil {
				return err
			}
			r.Heal()
			r.Target(r.index("node3"), r.index("node4"))
			return nil
		}},
	{Name: "shrink-5-to-3", Description: "grow to five (node3, node4), then remove two voters under load, the metadata primary of the moment " +
		"first, then a backup of the first three; the removed answer NodeRemoved and exit after the drain (5 s here)",
		Inject: shrink},
	{Name: "replace-a-dead-host", Description: "SIGKILL a backup (node1) and delete its container and volume, start replica 1 empty at a new " +
		"address (node1b, --join) and ClusterReplace(1, {ID: 1, new address}); it catches up by state transfer",
		Inject: replaceDeadHost},
}

// shrink grows the cluster to five outside the fault window, then
// removes the primary and a backup.
func shrink(ctx context.Context, r *Run) error {
	if err := r.grow(ctx, "node3", "node4"); err != nil {
		return fmt.Errorf("growing to five first: %w", err)
	}
	if err := r.W.WaitAcked(ctx, r.W.Acked()+50, Failover); err != nil {
		return fmt.Errorf("writes on five nodes: %w", err)
	}
	st, err := r.status(ctx, r.C.Nodes[0], "a primary of the five", func(s wire.ClusterStatusReply) bool {
		_, ok := primaryOf(s)
		return ok && s.Voters == 0b11111
	})
	if err != nil {
		return err
	}
	primary, _ := primaryOf(st)
	r.Target() // no catch-up to time: the survivors are the targets below
	r.Fault()
	var removed []Node
	first := r.node(primary)
	r.C.Logf("removing the metadata primary %s", first.Service)
	if err := r.remove(ctx, first); err != nil {
		return err
	}
	removed = append(removed, first)
	// The survivors named a new primary: the planned view change.
	st, err = r.status(ctx, r.survivor(first.ID), "a new primary", func(s wire.ClusterStatusReply) bool {
		p, ok := primaryOf(s)
		return ok && p != first.ID
	})
	if err != nil {
		return err
	}
	r.elected = time.Now()
	newPrimary, _ := primaryOf(st)
	r.C.Logf("new primary %s", r.node(newPrimary).Service)
	// A backup of the first three goes next, so the joiners, whose copies
	// came by transfer, stay.
	i := slices.IndexFunc(r.C.Nodes, func(n Node) bool { return n.ID <= 2 && n.ID != newPrimary })
	if i < 0 {
		return fmt.Errorf("no backup among the first three in %s", rosterLine(st))
	}
	second := r.C.Nodes[i]
	r.C.Logf("removing the backup %s", second.Service)
	if err := r.remove(ctx, second); err != nil {
		return err
	}
	removed = append(removed, second)
	r.Heal()
	r.Target(r.index("node3"), r.index("node4"))
	for _, n := range removed {
		r.After(func(ctx context.Context) error { return r.waitExit(ctx, n) })
	}
	return nil
}

// RingOps is how many sends replace-a-dead-host waits for before the
// fault: more ops than the partition primary's ring of committed
// prepares keeps for repair (partition.evicted_ring_capacity 4096 and
// evicted_ring_bytes_max 16 MiB, about 3000 of the workload's sends), so
// the new host cannot repair from op 1 and takes the partition's state
// by transfer, as a host replacing a long-lived one would.
const RingOps = 4200

// replaceDeadHost moves replica 1 to a new host after the old one died
// with its disk.
func replaceDeadHost(ctx context.Context, r *Run) error {
	if err := r.W.WaitAcked(ctx, RingOps, 2*Failover); err != nil {
		return fmt.Errorf("filling the partition past the repair ring: %w", err)
	}
	st, err := r.status(ctx, r.C.Nodes[0], "a primary", func(s wire.ClusterStatusReply) bool {
		_, ok := primaryOf(s)
		return ok
	})
	if err != nil {
		return err
	}
	old, fresh := r.C.Nodes[r.index("node1")], Joiners["node1b"]
	if p, _ := primaryOf(st); p == old.ID {
		r.C.Logf("note: %s is the metadata primary of the moment: the dead host is the primary", old.Service)
	}
	r.Fault()
	if err := r.C.Destroy(ctx, old.Service); err != nil {
		return err
	}
	l, err := r.C.WaitLeader(ctx, Failover, map[int]bool{r.index(old.Service): true})
	if err != nil {
		return fmt.Errorf("without %s: %w", old.Service, err)
	}
	r.C.Logf("the others agree on leader %s", r.C.Nodes[l].Service)
	if err := r.W.WaitAcked(ctx, r.W.Acked()+30, Failover); err != nil {
		return fmt.Errorf("writes without %s: %w", old.Service, err)
	}
	r.C.Logf("30 more writes acknowledged without %s (%d in all)", old.Service, r.W.Acked())
	if err := r.startJoiner(ctx, fresh); err != nil {
		return err
	}
	epoch := st.Epoch
	c := Change{What: fmt.Sprintf("replace %d by %d at %s", old.ID, fresh.ID, fresh.Spec().ReplicaAddress)}
	done := func(s wire.ClusterStatusReply) bool {
		n, ok := s.Node(fresh.ID)
		return ok && n.Spec.ReplicaAddress == fresh.Spec().ReplicaAddress && n.Role == wire.MemberVoter &&
			s.Epoch > epoch && settled(s)
	}
	err = r.change(ctx, &c, r.survivor(old.ID), done, func(a *client.Client) (wire.ClusterStatusReply, error) {
		return a.ClusterReplace(ctx, old.ID, fresh.Spec())
	})
	if err != nil {
		return err
	}
	// The new host holds the metadata up to the epoch that names it.
	if _, err := r.status(ctx, fresh, fresh.Service+" holds the epoch that names it", func(s wire.ClusterStatusReply) bool {
		n, ok := s.Node(fresh.ID)
		return done(s) && ok && n.Commit >= s.EpochOp
	}); err != nil {
		return err
	}
	r.C.Nodes[r.index(old.Service)] = fresh
	r.Heal()
	r.Target(r.index(fresh.Service))
	r.After(func(ctx context.Context) error { r.logCatchUp(ctx, fresh.Service); return nil })
	return nil
}

// logCatchUp copies into the report how svc's groups caught up, from its
// log: state transfer (installed) or journal repair. For the reader, not
// a check: the checks are the copies.
func (r *Run) logCatchUp(ctx context.Context, svc string) {
	id, err := r.C.ContainerOf(ctx, svc)
	if err != nil {
		return
	}
	out, _ := r.C.docker(ctx, "logs", id)
	repairs := 0
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(line, "state transfer installed"):
			r.C.Logf("%s: %s", svc, line[strings.Index(line, "msg="):])
		case strings.Contains(line, "journal repair started") && strings.Contains(line, "partition="):
			repairs++
		}
	}
	r.C.Logf("%s: %d partition journal repair sessions", svc, repairs)
}

// grow starts each joiner and adds it, the next once the previous is a
// voter.
func (r *Run) grow(ctx context.Context, services ...string) error {
	for _, svc := range services {
		n := Joiners[svc]
		if err := r.startJoiner(ctx, n); err != nil {
			return err
		}
		want := r.voters() | 1<<n.ID
		c := Change{What: fmt.Sprintf("add %s (id %d) at %s", n.Service, n.ID, n.Spec().ReplicaAddress)}
		err := r.change(ctx, &c, r.C.Nodes[0], func(s wire.ClusterStatusReply) bool { return s.Voters == want && settled(s) },
			func(a *client.Client) (wire.ClusterStatusReply, error) { return a.ClusterAdd(ctx, n.Spec()) })
		if err != nil {
			return err
		}
		r.C.Nodes = append(r.C.Nodes, n)
	}
	return nil
}

// remove takes n out of the roster and checks that it then answers
// NodeRemoved, and that a session logged in on it before its removal
// reads ClusterStatus naming it removed.
func (r *Run) remove(ctx context.Context, n Node) error {
	held, err := r.pinned(ctx, n)
	if err != nil {
		return fmt.Errorf("a session on %s before its removal: %w", n.Service, err)
	}
	defer held.Close()
	want := r.voters() &^ (1 << n.ID)
	c := Change{What: fmt.Sprintf("remove %s (id %d)", n.Service, n.ID)}
	err = r.change(ctx, &c, r.survivor(n.ID), func(s wire.ClusterStatusReply) bool {
		_, named := s.Node(n.ID)
		return s.Voters == want && settled(s) && !named
	}, func(a *client.Client) (wire.ClusterStatusReply, error) { return a.ClusterRemove(ctx, n.ID) })
	if err != nil {
		return err
	}
	r.C.Nodes = slices.DeleteFunc(r.C.Nodes, func(m Node) bool { return m.ID == n.ID })
	r.removedAt[n.Service] = time.Now()
	if err := r.answersNodeRemoved(ctx, n); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := held.ClusterStatus(sctx)
	if err != nil {
		return fmt.Errorf("ClusterStatus on %s's session from before its removal: %w", n.Service, err)
	}
	if self, ok := st.Node(n.ID); !ok || self.Role != wire.MemberRemoved {
		return fmt.Errorf("%s's own ClusterStatus does not name it removed: %s %+v", n.Service, rosterLine(st), st.Nodes)
	}
	r.C.Logf("%s's own ClusterStatus (session from before the removal): itself removed; %s", n.Service, rosterLine(st))
	return nil
}

// pinned is a logged-in client that stays on n.
func (r *Run) pinned(ctx context.Context, n Node) (*client.Client, error) {
	o := r.C.Options(0)
	o.Address, o.StayOnNode, o.Reconnect.Retries = n.Addr(), true, 0
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.Connect(cctx, o)
}

// startJoiner starts the container of a joiner and waits until it answers
// a ping (bounded).
func (r *Run) startJoiner(ctx context.Context, n Node) error {
	if err := r.C.StartService(ctx, n.Service); err != nil {
		return err
	}
	o := r.C.Options(0)
	o.Address, o.StayOnNode, o.Reconnect.Retries = n.Addr(), true, 0
	o.Username = "" // a ping needs no login
	for deadline := time.Now().Add(Failover); ; time.Sleep(250 * time.Millisecond) {
		err := func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			cl, err := client.Connect(cctx, o)
			if err != nil {
				return err
			}
			defer cl.Close()
			return cl.Ping(cctx)
		}()
		if err == nil {
			r.C.Logf("%s answers (outside the roster, waiting for a change to name it)", n.Service)
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s does not answer a ping: %w", n.Service, err)
		}
	}
}

// change runs one admin command through a leader-following client that
// dials ask, again while it is answered 57/58 (the SDK moves to a
// primary that moved after a few seconds of those) or 20002, and waits
// until ask's status says done; ask is a member that stays. A command
// whose outcome is unknown (connection lost after it was written, a
// deadline) is not sent again: ClusterStatus tells whether it happened.
func (r *Run) change(ctx context.Context, c *Change, ask Node, done func(wire.ClusterStatusReply) bool,
	run func(*client.Client) (wire.ClusterStatusReply, error)) error {
	r.C.Logf("cluster change: %s", c.What)
	start := time.Now()
	c.Done = -1
	defer func() { r.changes = append(r.changes, *c) }()
	actx, cancel := context.WithTimeout(ctx, ChangeWithin)
	defer cancel()
	o := r.C.Options(0)
	o.Address = ask.Addr()
	admin, err := client.Connect(actx, o)
	if err != nil {
		return fmt.Errorf("%s: admin client: %w", c.What, err)
	}
	defer admin.Close()
	for {
		st, err := run(admin)
		if err == nil {
			c.Accepted = Millis(time.Since(start))
			r.C.Logf("%s accepted after %s: %s", c.What, c.Accepted, rosterLine(st))
			break
		}
		retry := errors.Is(err, wire.ErrTransientNotAccepted) || errors.Is(err, wire.ErrTransientNotCommitted) ||
			errors.Is(err, wire.ErrReconfigurationInProgress)
		if !retry {
			// Unknown outcome or refused: the status says which.
			c.Note = fmt.Sprintf("the command answered %v", err)
			r.C.Logf("%s: %v; reading the status to see whether it happened", c.What, err)
			c.Accepted = -1
			break
		}
		if time.Since(start) > ChangeWithin || actx.Err() != nil {
			return fmt.Errorf("%s: still refused after %v: %w", c.What, ChangeWithin, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	st, err := r.status(ctx, ask, c.What+" done", done)
	c.Roster = rosterLine(st)
	if err != nil {
		return err
	}
	c.Done = Millis(time.Since(start))
	r.C.Logf("%s done after %s: %s", c.What, c.Done, c.Roster)
	return nil
}

// status polls ClusterStatus on n until ok, for at most ChangeWithin,
// over one connection pinned to n (a new one after an error: each login
// and logout is a metadata op, which a poll per login would pile onto the
// group whose change it watches); it returns the last status read.
func (r *Run) status(ctx context.Context, n Node, what string, ok func(wire.ClusterStatusReply) bool) (wire.ClusterStatusReply, error) {
	var last wire.ClusterStatusReply
	var err error
	var cl *client.Client
	defer func() {
		if cl != nil {
			_ = cl.Close()
		}
	}()
	for deadline := time.Now().Add(ChangeWithin); ; time.Sleep(250 * time.Millisecond) {
		if cl == nil {
			cl, err = r.pinned(ctx, n)
		}
		if cl != nil {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			last, err = cl.ClusterStatus(sctx)
			cancel()
			if err != nil {
				_ = cl.Close()
				cl = nil
			}
		}
		if err == nil && ok(last) {
			return last, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return last, fmt.Errorf("%s: not seen at %s within %v (last status %s, err %v)", what, n.Service, ChangeWithin, rosterLine(last), err)
		}
	}
}

// statusOf reads ClusterStatus from n itself.
func statusOf(ctx context.Context, c *Cluster, n Node) (wire.ClusterStatusReply, error) {
	st, _, err := rosterOf(ctx, c, n, false)
	return st, err
}

// rosterOf reads ClusterStatus and, with metadata, GetClusterMetadata
// (what clients are told to dial) from n itself.
func rosterOf(ctx context.Context, c *Cluster, n Node, metadata bool) (wire.ClusterStatusReply, wire.ClusterMetadata, error) {
	o := c.Options(0)
	o.Address, o.StayOnNode, o.Reconnect.Retries, o.RequestTimeout = n.Addr(), true, 0, 3*time.Second
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, o)
	if err != nil {
		return wire.ClusterStatusReply{}, wire.ClusterMetadata{}, err
	}
	defer cl.Close()
	st, err := cl.ClusterStatus(ctx)
	if err != nil || !metadata {
		return st, wire.ClusterMetadata{}, err
	}
	m, err := cl.GetClusterMetadata(ctx)
	if err != nil {
		return st, wire.ClusterMetadata{}, err
	}
	return st, *m, nil
}

// clientView renders what GetClusterMetadata tells clients: name@ip:tcp
// per node, sorted.
func clientView(m wire.ClusterMetadata) string {
	var out []string
	for _, n := range m.Nodes {
		out = append(out, fmt.Sprintf("%s@%s:%d", n.Name, n.IP, n.TCPPort))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// answersNodeRemoved waits (bounded by the drain) until n answers a read
// with NodeRemoved, and logs what its own status says of it.
func (r *Run) answersNodeRemoved(ctx context.Context, n Node) error {
	o := r.C.Options(0)
	o.Address, o.StayOnNode, o.Reconnect.Retries = n.Addr(), true, 0
	var err error
	for deadline := time.Now().Add(DrainInterval); ; time.Sleep(200 * time.Millisecond) {
		err = func() error {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			cl, err := client.Connect(cctx, o)
			if err != nil {
				return fmt.Errorf("login: %w", err)
			}
			defer cl.Close()
			if _, err = cl.GetStreams(cctx); err != nil {
				return fmt.Errorf("GetStreams: %w", err)
			}
			return nil
		}()
		if errors.Is(err, wire.ErrNodeRemoved) {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s, removed, answered %v, want NodeRemoved (20001)", n.Service, err)
		}
	}
	r.C.Logf("%s answers NodeRemoved %s after its removal (a new connection: %v)", n.Service,
		time.Since(r.removedAt[n.Service]).Round(time.Millisecond), err)
	return nil
}

// waitExit waits until the removed node's container exited on its own,
// with status 0, after the drain (bounded: the node stops at the latest
// after 16 quarter-drains, docs/reconfiguration.md 5).
func (r *Run) waitExit(ctx context.Context, n Node) error {
	within := 4*DrainInterval + Failover
	for deadline := r.removedAt[n.Service].Add(within); ; time.Sleep(time.Second) {
		status, code, err := r.C.State(ctx, n.Service)
		if err == nil && status == "exited" {
			after := time.Since(r.removedAt[n.Service]).Round(100 * time.Millisecond)
			r.C.Logf("%s's container exited (code %d) %s after its removal", n.Service, code, after)
			if code != 0 {
				return fmt.Errorf("%s exited with code %d after its removal", n.Service, code)
			}
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s's container is %q (%v) %v after its removal, want exited", n.Service, status, err, within)
		}
	}
}

// sameRoster reads ClusterStatus from every member of r.C.Nodes until
// all report the same settled roster, whose voters are exactly those
// members at the addresses the experiment gave them, and tell clients
// (GetClusterMetadata) those members at those addresses (up to
// Failover); and that they place the workload's partitions alike (the
// same replica set and preferred primary for each, from the metadata
// state). It returns the roster as a line.
func sameRoster(ctx context.Context, c *Cluster, wl workloadTopic) (string, error) {
	var want uint32
	var wantView []string
	for _, n := range c.Nodes {
		want |= 1 << n.ID
		wantView = append(wantView, fmt.Sprintf("%s@%s:8090", n.Service, n.IP))
	}
	slices.Sort(wantView)
	deadline := time.Now().Add(Failover)
	for {
		line, err := func() (string, error) {
			var first wire.ClusterStatusReply
			for i, n := range c.Nodes {
				st, m, err := rosterOf(ctx, c, n, true)
				if err != nil {
					return "", fmt.Errorf("status of %s: %w", n.Service, err)
				}
				if got := clientView(m); got != strings.Join(wantView, " ") {
					return "", fmt.Errorf("%s tells clients %s, want %s", n.Service, got, strings.Join(wantView, " "))
				}
				if st.Voters != want || !settled(st) {
					return "", fmt.Errorf("%s reports %s, want voters %s and no change in progress", n.Service, rosterLine(st), ids(want))
				}
				for _, m := range c.Nodes {
					if e, ok := st.Node(m.ID); !ok || e.Spec.ReplicaAddress != m.Spec().ReplicaAddress || e.Spec.Name != m.Service {
						return "", fmt.Errorf("%s names id %d %q at %q, want %s at %s", n.Service, m.ID, e.Spec.Name,
							e.Spec.ReplicaAddress, m.Service, m.Spec().ReplicaAddress)
					}
				}
				if i > 0 {
					if err := samePlacement(wl, n.Service, st, c.Nodes[0].Service, first); err != nil {
						return "", err
					}
				}
				if i == 0 {
					first = st
				} else if st.Epoch != first.Epoch || st.Voters != first.Voters || st.Learners != first.Learners || st.Target != first.Target {
					// epoch_op is not compared: a replica that entered the
					// epoch by installing a state transfer reports the
					// installed op (vsr InstalledEpoch), one that applied the
					// R reports the R's op.
					return "", fmt.Errorf("%s reports %s, %s %s", n.Service, rosterLine(st), c.Nodes[0].Service, rosterLine(first))
				}
			}
			return rosterLine(first), nil
		}()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return line, err
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// samePlacement compares two nodes' placement of the workload topic.
func samePlacement(wl workloadTopic, name string, st wire.ClusterStatusReply, refName string, ref wire.ClusterStatusReply) error {
	got, want := workloadPartitions(st, wl), workloadPartitions(ref, wl)
	if len(got) != len(want) {
		return fmt.Errorf("%s places %d of the workload's partitions, %s %d", name, len(got), refName, len(want))
	}
	for pid, w := range want {
		if g := got[pid]; g.Replicas != w.Replicas || g.Preferred != w.Preferred {
			return fmt.Errorf("%s places partition %d on %s (preferred %d), %s on %s (preferred %d)", name, pid, ids(g.Replicas),
				g.Preferred, refName, ids(w.Replicas), w.Preferred)
		}
	}
	return nil
}

// settled: no learner and the target reached (no change in progress).
func settled(s wire.ClusterStatusReply) bool { return s.Learners == 0 && s.Target == s.Voters }

func primaryOf(s wire.ClusterStatusReply) (uint8, bool) {
	for _, n := range s.Nodes {
		if n.Primary {
			return n.Spec.ID, true
		}
	}
	return 0, false
}

// rosterLine renders a status for the log and the report.
func rosterLine(s wire.ClusterStatusReply) string {
	primary := "none"
	if p, ok := primaryOf(s); ok {
		primary = fmt.Sprint(p)
	}
	return fmt.Sprintf("epoch %d view %d epoch_op %d voters %s learners %s target %s primary %s",
		s.Epoch, s.View&0xffffff, s.EpochOp, ids(s.Voters), ids(s.Learners), ids(s.Target), primary)
}

// ids renders a roster bitmask as {0,1,2}.
func ids(mask uint32) string {
	var out []string
	for m := mask; m != 0; m &= m - 1 {
		out = append(out, fmt.Sprint(bits.TrailingZeros32(m)))
	}
	return "{" + strings.Join(out, ",") + "}"
}

// voters is the mask of r.C.Nodes' ids.
func (r *Run) voters() uint32 {
	var m uint32
	for _, n := range r.C.Nodes {
		m |= 1 << n.ID
	}
	return m
}

// index is the position of service svc in r.C.Nodes (-1: not a member).
func (r *Run) index(svc string) int {
	return slices.IndexFunc(r.C.Nodes, func(n Node) bool { return n.Service == svc })
}

// node is the member of id (a zero Node if none).
func (r *Run) node(id uint8) Node {
	i := slices.IndexFunc(r.C.Nodes, func(n Node) bool { return n.ID == id })
	if i < 0 {
		return Node{Service: fmt.Sprintf("id %d (not a member)", id), ID: id}
	}
	return r.C.Nodes[i]
}

// survivor is the first member other than id: the one to ask about a
// change that takes id away.
func (r *Run) survivor(id uint8) Node {
	i := slices.IndexFunc(r.C.Nodes, func(n Node) bool { return n.ID != id })
	return r.C.Nodes[i]
}
