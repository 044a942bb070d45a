// Package vsr is the pure Viewstamped Replication core of one consensus
// group (replica-plane.md sections 4 and 5): a value you call, with no
// goroutines, clocks, sockets or actor imports, in the style of etcd's raft
// (Step/Ready) and TigerBeetle's VSR.
//
// Inputs enter through one door each: Submit (a request admitted by the
// shell at the primary), Step (a replica-plane frame), Journaled (the shell
// finished a journal append), Tick (10 ms of virtual time). Outputs are
// collected in a Ready value: prepares to append to the journal, frames to
// send, and committed ops to apply, in order. The shell's rule, as etcd's
// MustSync: append every Ready.Journal entry durably and report it with
// Journaled before sending anything that depends on it. The core enforces
// the other half itself: it never acknowledges or forwards a prepare before
// Journaled reported it (replica-plane.md 9.5 rules 1-2).
//
// A node alone is a cluster of one: the same path with a quorum of one
// (q_rep = 1), so a single node's writes are prepared, journaled,
// self-acknowledged and committed exactly as a primary's are in a cluster.
//
// This package covers normal operation (section 5), view change and the
// restart probe (6.2-6.14, viewchange.go; the merge of 6.7 in merge.go)
// and journal repair (7.2-7.5, repair.go). A backup whose primary goes
// silent elects a new one (StartViewChange, DoViewChange with the log
// suffix, the merge, StartView); a restarted replica rejoins through
// Recover in Recovering, probes with RequestStartView and never resumes
// primaryship on its own; a backup whose commit walk stops at a hole below
// commit_max pulls the missing prepares from the primary, and a
// primary-elect pulls what its merged log lacks from a DVC sender. Ready
// carries the durable view state (State) the shell must write before the
// Ready's sends, and the journal truncations (Truncate) view changes
// decide. When repair cannot reach what a replica lacks (a metadata
// RangeEvicted, a partition window that cannot connect to its segments)
// the core sets NeedTransfer; the shell runs a TransferSession
// (transfer.go, 7.6-7.7) and hands back the installed commit point
// (Installed). Unlike 6.12 rule 1 a restarted metadata replica does not arm
// a transfer at boot: it repairs, and transfers only if repair is refused.
//
// Prepares travel down the chain of 4.6 (P, P+1, ..., P-1). When a hop of
// that chain is down, the replicas after it hear a prepare only from the
// primary's retransmission (5.11), so with the default Prepare timer each
// write on a three-node cluster with one dead backup waits about 250 ms; the
// timer restarts with every commit, so that wait never grows with backoff.
// This is the spec's order, kept as is; lower
// cluster.prepare_retransmit_interval to trade bandwidth for latency.
//
// Scale (issue 16; DESIGN.md "Scale and budgets"): a node hosts
// thousands of partition groups, so an idle group must cost nothing.
// Three extensions of the spec serve that, none of them part of any
// safety argument (they only decide when timers run):
//   - quiescence (quiesce.go): an idle group goes quiet on every replica,
//     with no timer armed and no heartbeat of its own; any input wakes it;
//   - the node-level heartbeat (liveness.go, wire/nodeheartbeat.go): one
//     frame per peer link per interval carries the quiescence entries of
//     every group, and failure detection for quiet groups is per node
//     (PeerLost runs the election a heartbeat timeout would);
//   - deadline ticking (clock.go): IdleTicks and Advance let a shell touch
//     a group only when one of its timers is due.
//
// A whole-cluster restart elects as soon as the probers hear a quorum of
// each other probing (viewchange.go, recoveringQuorum) instead of after
// view_probe_attempts_max unanswered probes: thousands of groups each
// waiting 5 s made a restarted cluster slow to take writes.
//
// Reconfiguration (issue 22, reconfig.go): the group's membership changes
// by VSR-revisited's epochs. A reconfiguration op (wire.OpReconfigure)
// committed in epoch e opens epoch e+1, whose views are the next range of
// view numbers (the epoch rides in the view's top 8 bits); learners join
// by state transfer, count toward no quorum, and are promoted by a
// second op; a removed replica (the primary too: a planned view change)
// stops taking part and says so. The rules S1-S6 and why epochs rather
// than joint consensus are in reconfig.go.
//
// Invariants asserted (a violation is a bug, not bad input, and panics with
// the invariant's name): commit_min <= commit_max, commit_min <= sequencer,
// view >= log_view, the pipeline is contiguous and hash-chained. Peer input
// never panics: malformed or out-of-range frames are dropped and counted.
package vsr
