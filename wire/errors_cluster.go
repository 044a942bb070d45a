package wire

// IggyError codes of iggynode's cluster admin surface, outside the spec's
// table (client-plane.md 15, whose highest code is 14003; see
// docs/reconfiguration.md, "Admin surface"). errors_table.go is generated
// from the spec, so these live here and join its maps at init: Name,
// Meaning, Known and ErrorCodes report them like any other code.
const (
	// ErrNodeRemoved answers every request but Ping, GetClusterMetadata
	// and ClusterStatus on a node that left the roster.
	ErrNodeRemoved ErrorCode = 20001
	// ErrReconfigurationInProgress answers ClusterAdd, ClusterRemove and
	// ClusterReplace while another change is in progress.
	ErrReconfigurationInProgress ErrorCode = 20002
)

func init() {
	for _, e := range []struct {
		code          ErrorCode
		name, meaning string
	}{
		{ErrNodeRemoved, "NodeRemoved", "node removed from the cluster"},
		{ErrReconfigurationInProgress, "ReconfigurationInProgress", "a cluster change is in progress"},
	} {
		if _, taken := errorNames[e.code]; taken {
			panic("wire: error code " + e.name + " is already in the generated table")
		}
		errorNames[e.code] = e.name
		errorMeanings[e.code] = e.meaning
	}
}
