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
// What it does not model yet, because the node does not have it yet: view
// change (the primary of view 0 never fails), restart from durable state
// (a backup that goes down keeps its memory, as a long pause or an
// isolated process would), and state transfer (a backup whose hole reaches
// below the primary's retained ring fails the liveness check, which
// TestStuckReplicaFailsLiveness shows). Ops are opaque metadata-plane
// prepares; the node's state machines are tested elsewhere.
package sim
