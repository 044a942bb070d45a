package client

import (
	"context"

	"iggynode/wire"
)

// Cluster admin commands 9001..9004 (docs/reconfiguration.md, "Admin
// surface"). They travel as non-replicated requests on the client's one
// connection, the one its metadata writes use: after login that is the
// metadata primary's node when the roster names one (leader redirection),
// and any node forwards 9001..9003 to the primary anyway. Each answers the
// roster as the answering node sees it after the change, a
// wire.ClusterStatusReply. Errors arrive as status codes: Unauthorized (41)
// without manage_servers (read_servers for 9004), InvalidCommand (3) for a
// change the roster refuses, wire.ErrReconfigurationInProgress while another
// change runs, wire.ErrNodeRemoved from a node that left the roster.

// ClusterAdd adds a node to the metadata roster (code 9001): it joins as a
// learner, and the reply comes once that change (R1) committed; the
// primary promotes it to voter once it holds the log (poll ClusterStatus).
func (c *Client) ClusterAdd(ctx context.Context, spec wire.NodeSpec) (wire.ClusterStatusReply, error) {
	return fetchList[wire.ClusterStatusReply](ctx, c, wire.ClusterAdd{Spec: spec})
}

// ClusterRemove removes a node from the roster (code 9002); the reply comes
// once the change that starts the removal committed.
func (c *Client) ClusterRemove(ctx context.Context, id uint8) (wire.ClusterStatusReply, error) {
	return fetchList[wire.ClusterStatusReply](ctx, c, wire.ClusterRemove{ID: id})
}

// ClusterReplace replaces voter oldID by spec (code 9003): with spec.ID ==
// oldID it moves that replica to a new address; otherwise spec.ID joins as
// a learner and takes oldID's place among the voters when promoted.
func (c *Client) ClusterReplace(ctx context.Context, oldID uint8, spec wire.NodeSpec) (wire.ClusterStatusReply, error) {
	return fetchList[wire.ClusterStatusReply](ctx, c, wire.ClusterReplace{OldID: oldID, Spec: spec})
}

// ClusterStatus reads the metadata roster, each member's role, liveness
// and commit as the answering node knows them (code 9004).
func (c *Client) ClusterStatus(ctx context.Context) (wire.ClusterStatusReply, error) {
	return fetchList[wire.ClusterStatusReply](ctx, c, wire.ClusterStatus{})
}

// adminWrite reports the cluster changes 9001..9003: non-replicated on
// the wire, but each one changes the roster and the node does not
// deduplicate them, so a written one is not resent after a lost
// connection (ClusterStatus tells whether it happened).
func adminWrite(code wire.CommandCode) bool {
	return code == wire.CodeClusterAdd || code == wire.CodeClusterRemove || code == wire.CodeClusterReplace
}
