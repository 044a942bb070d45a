// Package sim is the deterministic cluster simulator of replica-plane.md
// section 11: N pure VSR cores (package vsr) driven from one seed, with no
// sockets, no goroutines and a virtual clock of 10 ms ticks.
//
// Each step moves the faults on, lets clients submit, ticks every live
// replica and runs its shell to quiescence (journal, send, apply), then
// delivers the packets that are due. The network (network.go) has every
// per-link fault of 11.2: exponential delay, reordering among due packets,
// loss, duplication (replay), bounded link capacity with random eviction,
// symmetric and asymmetric partitions, and clogging. Replicas go down and
// come back (11.3 rule 4, never below a quorum).
//
// Checked every tick: commit and view never go back on any replica (within
// one incarnation), commit_min <= commit_max, at most one leading primary
// per view. Checked on every journal append: no op above a hole. Checked
// on every apply: each replica applies ops in order, on an intact hash
// chain, the same op (identity and body; the view byte a prepare was last
// sent with may differ, 2.2) every other replica applied there; a request
// answered twice is answered with one result. At quiescence (faults off, traffic drained): every request answered
// and every replica normal in the leader's view at its commit within
// LivenessTicks, no replica beyond the leader, and the
// client history is linearizable against an append-only log
// (github.com/anishathalye/porcupine). The same seed gives the same run
// (Result.Digest covers the timeline and every applied op).
//
// Any replica, the primary included, goes down (never more than the
// quorum allows) and either keeps its memory (a pause, an isolated
// process) or, in two seeds of three, restarts from what it kept durable
// through vsr.Recover: the metadata journal and superblock state (view,
// log_view, commit_max), replayed up to the highest commit its headers
// name; or a partition's stored batches and the op it applied last. A
// restarted partition replica forgot the prepares it journaled in memory
// (9.4 rule 6), so it counts as faulty until it has caught up. A dead
// primary is replaced by a view change; clients send to whichever replica
// leads, time out after 300 ticks and retry, and the simulated state
// machine applies each (client, request) once, as the client table does.
// One seed in five runs with a small repair ring (16 or 64 ops), which
// reaches RangeEvicted and the partition floor rule; one in four fails 1%
// of journal appends (the core truncates, the shell stops that Ready, the
// op is asked again).
//
// On the partition plane one request in five stores a consumer offset
// (the leader's committed message count when it is sent); every replica
// checks at the apply that it never passes its own high watermark.
//
// Checked at quiescence besides the rules above: every acknowledged
// request's value is in every replica's applied log at the position it was
// answered with (11.5 rule 1).
//
// With Config.Groups above one (cmd/sim --groups N) every node hosts N
// partition groups with quiescence and the node-level heartbeat on
// (vsr/quiesce.go, vsr/liveness.go), most of them quiet: clients write
// mostly to two hot groups, now and then to any. Checked besides, every
// tick: each replica's quiescence invariants (Replica.QuietCheck), and a
// quiet primary counts a backup's confirmation only of a point that
// backup has applied (a quiet group never misses a commit); at the end,
// every group quiet on every replica at its primary's commit point. Each
// core is advanced only when a timer is due (Config.Deadlines, as the
// node's shell does); that this is the very run ticking every core every
// tick gives is checked over many seeds (TestDeadlineTickingMatchesTicks).
// TestDeadPrimaryNodesQuietGroupsAllElect kills the node leading 64
// quiet groups and checks they all elect within the node-level timeout.
//
// With Config.Reconfig (cmd/sim --reconfig; reconfig.go) the metadata
// group changes its members while it runs (issue 22, vsr/reconfig.go):
// voters {0,1,2} on 4 or 5 nodes, the others joiners, moved through a
// plan drawn from the seed (3 -> 5 -> 3, two replacements, 3 -> 2 -> 3)
// under every fault above, with crashes allowed on any node as long as
// no voter set in use loses its quorum. Checked besides: one primary per
// view across old and new members (every node is in the check), every
// committed R and everything below it kept at its op on every final
// member, and at quiescence the plan's last roster on every member with
// no change in progress and every other node reporting Removed. Runs
// without the flag are the runs they were.
//
// With Config.Placement (cmd/sim --placement 3 --replicas 5; issue 23's
// scale-out) every partition group runs on 3 of the 5 nodes, drawn from
// the seed, its first primary spread by vsr.Config.StartView, the other
// nodes hosting a joiner, with quiescence and the node-level heartbeat
// as Groups > 1 runs; at seed-drawn ticks a group moves one replica (its
// leader is asked to Reconfigure to its voters minus one plus a node
// outside them: learner, transfer, promotion, the old member removed),
// several groups at once, a node leaving a group and coming back to it,
// under every fault above and planned hand-overs. Checked per group,
// besides every rule above (reconfig.go, one place per rule): one leading
// primary per view across old and new members, no replica sending a
// view-scoped frame or applying an op of an epoch whose roster does not
// name it, crashes never beyond what a voter set in use tolerates
// (counting replicas restarted without their journal), and at the end
// every op any replica applied held at its op by every final member, the
// plan's last roster on every member with no change in progress, every
// other node that was ever a member Removed, and one that never was
// untouched. The liveness phase gets moveTicks more per move a plan has
// left when the faults end.
//
// State transfer runs as the protocol it is (transfer.go): a replica whose
// repair cannot reach what it lacks fetches an offer from the caught-up
// primary over the simulated network and installs it, so every run must
// end quiet; a replica that cannot catch up fails liveness. Ops are
// opaque prepares (the partition plane with a stamped batch header) and
// transferred artifacts are stand-ins for them; the node's state machines
// and artifact encodings are tested elsewhere.
package sim
