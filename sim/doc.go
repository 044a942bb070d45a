// Package sim is the deterministic cluster simulator of replica-plane.md
// section 11: N pure VSR cores (package vsr) driven from one seed, with no
// sockets, no goroutines and a virtual clock of 10 ms ticks.
//
// Each step moves the faults on, lets clients submit, ticks every live
// replica and runs its shell to quiescence (journal, send, apply), then
// delivers the packets that are due. The network (network.go) has every
// per-link fault of 11.2: exponential delay, reordering among due packets,
// loss, duplication (replay), bounded link capacity with random eviction,
// symmetric and asymmetric partitions, and clogging. Backups go down and
// come back (11.3 rule 4, never below a quorum).
//
// Checked every tick: commit and view never go back on any replica,
// commit_min <= commit_max, no backup beyond the primary, at most one
// primary per view. Checked on every journal append: no op above a hole.
// Checked on every apply: each replica applies ops in
// order, on an intact hash chain, with exactly the bytes every other
// replica applied at that op; each request is answered once, with its own
// op. At quiescence (faults off, traffic drained): every request answered
// and every replica at the primary's commit within LivenessTicks, and the
// client history is linearizable against an append-only log
// (github.com/anishathalye/porcupine). The same seed gives the same run
// (Result.Digest covers the timeline and every applied op).
//
// A backup that goes down either keeps its memory (a pause, an isolated
// process) or, in two seeds of three, restarts from what it kept durable
// (the metadata journal; a partition's stored batches). One seed in five
// runs with a small repair ring (16 or 64 ops), which reaches RangeEvicted
// and the partition floor rule; one in four fails 1% of journal appends
// (the core truncates, the shell stops that Ready, the op is asked again).
//
// What it does not model yet, because the node does not have it yet: view
// change (the primary of view 0 never fails) and state transfer. A run
// whose lagging backup lacks ops the primary no longer holds ends with
// Result.NeedsTransfer instead of failing liveness; any other backup that
// does not catch up fails it. Ops are opaque prepares (the partition plane
// with a stamped batch header); the node's state machines are tested
// elsewhere.
package sim
