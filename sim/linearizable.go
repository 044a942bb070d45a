package sim

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// appendLog is the sequential specification the replicated log must meet:
// each request appends one value and is answered with its position
// (the op number), so a history is linearizable iff positions can be
// assigned in an order that respects real time.
var appendLog = porcupine.Model{
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		n := state.(uint64)
		return output.(uint64) == n+1, n + 1
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("append(%x) -> %d", input, output)
	},
}

// checkLinearizable runs porcupine over every answered request (11.5 and
// the linearizability rule). Requests never answered cannot be in
// a quiet run, which the liveness check already demands.
func (g *group) checkLinearizable() {
	r := g.r
	var ops []porcupine.Operation
	for _, c := range r.calls {
		if !c.done || c.group != g.idx {
			continue
		}
		ops = append(ops, porcupine.Operation{ClientId: c.client, Input: c.value, Output: c.index,
			Call: int64(c.callAt), Return: int64(c.retAt)})
	}
	switch porcupine.CheckOperationsTimeout(appendLog, ops, 10*time.Second) {
	case porcupine.Illegal:
		r.violate(fmt.Sprintf("%sthe history of %d requests is not linearizable", g.name(), len(ops)))
	case porcupine.Unknown:
		r.violate("linearizability check timed out")
	}
}
