package actors

import (
	"log/slog"
	"sync/atomic"

	"iggynode/vsr"
)

// readiness is the node's readiness to serve clients (GET /ready on the
// HTTP listener, a Kubernetes readiness probe; CaughtUp). It is stricter
// than metadataCaughtUp, which lets partitions join their groups: a
// node booted on an empty volume into a running cluster starts as a
// normal backup of view 0 with nothing to apply, and would count as
// caught up before it has heard how far the cluster got. Ready means one
// of:
//   - a cluster of one;
//   - the metadata primary of a settled view with everything it knows
//     committed applied, past its recovery barrier (CaughtUpPrimary);
//   - a backup in normal status, not pulling a state transfer, that has
//     stepped a frame of its view's primary (which carries the primary's
//     commit point) and applied everything committed up to that point.
//
// It latches: a later view change is the cluster's business, and a probe
// that flapped with it would pull every pod from the Service at once.
type readiness struct {
	ready atomic.Bool
	// heardView is the last view whose primary this node heard from,
	// heard whether it heard one at all; the metadata actor's only.
	heardView uint32
	heard     bool
}

// CaughtUp reports the node's readiness (see readiness).
func (n *Node) CaughtUp() bool { return !n.cluster.clustered() || n.readiness.ready.Load() }

// stepped notes a metadata frame from peer from in view view, just
// stepped into core.
func (r *readiness) stepped(core *vsr.Replica, from uint8, view uint32) {
	if from == core.Primary() && view == core.View() {
		r.heard, r.heardView = true, view
	}
}

// observe latches readiness once the metadata replica is caught up.
func (r *readiness) observe(n *Node, core *vsr.Replica, log *slog.Logger) {
	if r.ready.Load() {
		return
	}
	backupCaughtUp := core.Status() == vsr.StatusNormal && !core.Transferring() &&
		core.CommitMin() == core.CommitMax() && r.heard && r.heardView == core.View()
	if !n.cluster.clustered() || core.CaughtUpPrimary() || backupCaughtUp {
		r.ready.Store(true)
		if n.cluster.clustered() {
			log.Info("ready: caught up with the cluster", "view", core.View(), "commit", core.CommitMin())
		}
	}
}
