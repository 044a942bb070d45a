package actors

import (
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"

	"iggynode/vsr"
)

// statusBehaviour makes a group actor (metadata, partition) an actor state
// machine over its core's status (DESIGN.md, replica-plane.md 6.1): it
// receives with one behaviour in Normal, another in ViewChange and another
// in Recovering, and switches after each step of the core. The non-normal
// behaviours answer writes at once with TransientNotAccepted (58) instead
// of offering them to a core that cannot take them, and hand everything
// else (reads, peer frames, ticks, transfers) to the normal one.
type statusBehaviour struct {
	actor.Behavior
	status vsr.Status
	view   uint32
	primary,
	started bool
	normal, electing, recovering actor.ReceiveFunc
}

func newStatusBehaviour(normal, electing, recovering actor.ReceiveFunc) *statusBehaviour {
	b := &statusBehaviour{Behavior: actor.NewBehavior(), normal: normal, electing: electing, recovering: recovering}
	b.Become(normal)
	return b
}

// follow switches to the behaviour of the core's status and logs each
// change of status, view or role.
func (b *statusBehaviour) follow(core *vsr.Replica, log *slog.Logger, group uint64, tr *groupTrace) {
	status, view, primary := core.Status(), core.View(), core.Leading()
	if b.started && status == b.status && view == b.view && primary == b.primary {
		return
	}
	first, changed := !b.started, !b.started || status != b.status
	b.started, b.status, b.view, b.primary = true, status, view, primary
	if changed {
		switch status {
		case vsr.StatusNormal:
			b.Become(b.normal)
		case vsr.StatusViewChange:
			b.Become(b.electing)
		case vsr.StatusRecovering:
			b.Become(b.recovering)
		}
	}
	if core.ReplicaCount() == 1 || first && status == vsr.StatusNormal && view == 0 {
		return // a fresh group in view 0 is not news
	}
	role := "backup"
	if primary {
		role = "primary"
	}
	// A line carries the span it is about: the view change or recovery
	// that begins, or, when the replica settles, the one that ends.
	ended := tr.statusContext()
	tr.statusChanged(status, view, role)
	ctx := tr.statusContext()
	if status == vsr.StatusNormal {
		ctx = ended
	}
	switch status {
	case vsr.StatusNormal:
		log.InfoContext(ctx, "view settled", "group", group, "view", view, "role", role, "commit", core.CommitMin())
	case vsr.StatusViewChange:
		log.InfoContext(ctx, "view change", "group", group, "view", view, "commit", core.CommitMin())
	case vsr.StatusRecovering:
		log.InfoContext(ctx, "recovering: probing for the current view", "group", group, "view", view)
	}
}
