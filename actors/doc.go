// Package actors is the node: the actors of docs/DESIGN.md (connection,
// metadata, partition, peer, liveness) on protoactor-go, the shells that
// feed the pure cores (vsr, metadata, partition) their messages and ticks
// and carry their outputs to storage and the network.
//
// # Where the node improves on the reference server
//
//   - The cluster roster (GetClusterMetadata, client-plane.md 7.15) reports
//     node health: a node this node's node-level heartbeat (liveness.go)
//     has not heard within cluster.heartbeat_timeout is Unreachable, and
//     Healthy again once heard. The reference reports every node Healthy,
//     so first-party SDKs keep a dead node as a reconnect candidate. With
//     cluster.quiescence off there is no node-level heartbeat and every
//     node is Healthy, as there. A client that asks (a GetClusterMetadata
//     body of wire.RosterExtLastHeard, ignored by the reference) also gets
//     when each node was last heard (wire.ClusterMetadata.LastHeardUs).
package actors
