package vsr

// Quorums of replica-plane.md 4.5 for n replicas.

// QuorumReplication is q_rep: PrepareOks (own included) needed to commit.
func QuorumReplication(n int) int {
	if n == 2 {
		return 2
	}
	return min((n+1)/2, 3)
}

// QuorumViewChange is q_vc: DoViewChanges (own included) to start a view.
func QuorumViewChange(n int) int {
	if n == 2 {
		return 2
	}
	return n - QuorumReplication(n) + 1
}

// QuorumNack is q_nack: nacks needed to discard an op in a view change.
func QuorumNack(n int) int { return n - QuorumReplication(n) + 1 }

// Faults is f: other replicas' StartViewChanges needed before a DoViewChange.
func Faults(n int) int { return (n - 1) / 2 }

// PrimaryIndex is the primary of view v (4.4).
func PrimaryIndex(view uint32, n int) uint8 { return uint8(view % uint32(n)) }
