package config

import (
	"errors"
	"fmt"
	"time"
)

// MinSharedSecretLen is the floor on cluster.auth secrets (replica-plane.md
// 10.1).
const MinSharedSecretLen = 32

// Validate applies the rules under which the reference server refuses to
// boot (server-behaviour.md 11.3, replica-plane.md 10.1 and 10.3) to the
// keys this node reads, and the node's own refusals; it returns every
// violation at once, each naming its key. Constraints on keys the node
// ignores (memory_pool, sharding, log rotation, ...) are not checked:
// those keys only warn.
func Validate(c Config) error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	validateSystem(c, check)
	validateDisk(c, check)
	validateTransports(c, check)
	validateBehaviour(c, check)
	validateConsensus(c, check)
	validateCluster(c, check)
	validateRosterAddresses(c, check)
	if err := validateTelemetry(c); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

type checkFunc func(ok bool, format string, args ...any)

func validateSystem(c Config, check checkFunc) {
	check(!c.System.Segment.ArchiveExpired,
		"system.segment.archive_expired = true is an unsupported placeholder; the reference server refuses to boot with it")
	check(!c.System.Recovery.RecreateMissingState,
		"system.recovery.recreate_missing_state = true is an unsupported placeholder; the reference server refuses to boot with it")
	if e := c.System.Encryption; e.Enabled {
		if _, err := e.KeyBytes(); err != nil {
			check(false, "%w", err)
		}
	}
}

func validateTransports(c Config, check checkFunc) {
	q := c.QUIC
	check(q.InitialMTU >= 1200, "quic.initial_mtu = %d, must be >= 1200", q.InitialMTU)
	check(q.StreamReceiveWindow <= q.ReceiveWindow, "quic.stream_receive_window (%d) must be <= quic.receive_window (%d)",
		q.StreamReceiveWindow, q.ReceiveWindow)
	if ws := c.WebSocket.MaxMessageSize; ws != 0 {
		check(ws <= c.MessageBus.MaxMessageSize, "websocket.max_message_size (%d) must be <= message_bus.max_message_size (%d)",
			ws, c.MessageBus.MaxMessageSize)
	}
	validateHTTP(c, check)
}

func validateBehaviour(c Config, check checkFunc) {
	m := c.DataMaintenance.Messages
	check(!m.CleanerEnabled || m.Interval > 0, "data_maintenance.messages.interval must be non-zero when cleaner_enabled")
	p := c.PersonalAccessToken
	check(p.MaxTokensPerUser > 0, "personal_access_token.max_tokens_per_user must be non-zero")
}

func validateConsensus(c Config, check checkFunc) {
	md, pt, mb := c.Metadata, c.Partition, c.MessageBus
	check(md.PrepareQueueDepth >= 1 && md.PrepareQueueDepth <= 127, "metadata.prepare_queue_depth = %d, must be 1..127", md.PrepareQueueDepth)
	floor := 4 * max(64, md.PrepareQueueDepth)
	check(md.JournalSlots >= floor && md.JournalSlots <= 1<<20, "metadata.journal_slots = %d, must be %d..%d (4 x max(64, prepare_queue_depth) .. 2^20)",
		md.JournalSlots, floor, 1<<20)
	check(md.ClientsTableMax >= 2 && md.ClientsTableMax <= 65536, "metadata.clients_table_max = %d, must be 2..65536", md.ClientsTableMax)
	check(pt.PrepareQueueDepth >= 1 && pt.PrepareQueueDepth <= 127, "partition.prepare_queue_depth = %d, must be 1..127", pt.PrepareQueueDepth)
	check(pt.EvictedRingCapacity >= 1 && pt.EvictedRingCapacity <= 65536, "partition.evicted_ring_capacity = %d, must be 1..65536", pt.EvictedRingCapacity)
	check(pt.EvictedRingBytesMax > 0 && pt.EvictedRingBytesMax <= 256<<20, "partition.evicted_ring_bytes_max = %d, must be > 0 and <= 256 MiB", pt.EvictedRingBytesMax)
	check(pt.TransferServedCacheBytesMax > 0 && pt.TransferServedCacheBytesMax <= 64<<30, "partition.transfer_served_cache_bytes_max = %d, must be > 0 and <= 64 GiB", pt.TransferServedCacheBytesMax)
	check(mb.MaxBatch >= 1 && mb.MaxBatch <= 512, "message_bus.max_batch = %d, must be 1..512", mb.MaxBatch)
	check(mb.MaxMessageSize > 256, "message_bus.max_message_size = %d, must exceed 256", mb.MaxMessageSize)
	check(mb.PeerQueueCapacity > c.Cluster.RepairChunkMax, "message_bus.peer_queue_capacity (%d) must exceed cluster.repair_chunk_max (%d)",
		mb.PeerQueueCapacity, c.Cluster.RepairChunkMax)
}

func validateCluster(c Config, check checkFunc) {
	cl := c.Cluster
	check(cl.HeartbeatTimeout.D() >= 2*time.Second && cl.HeartbeatTimeout >= 4*cl.CommitBroadcastInterval,
		"cluster.heartbeat_timeout = %v, must be >= 2s and >= 4 x cluster.commit_broadcast_interval (%v)",
		cl.HeartbeatTimeout, cl.CommitBroadcastInterval)
	for key, d := range map[string]Duration{
		"cluster.commit_broadcast_interval":              cl.CommitBroadcastInterval,
		"cluster.prepare_retransmit_interval":            cl.PrepareRetransmitInterval,
		"cluster.view_change_retransmit_interval":        cl.ViewChangeRetransmitInterval,
		"cluster.request_start_view_retransmit_interval": cl.RequestStartViewRetransmitInterval,
		"cluster.repair_retry_interval":                  cl.RepairRetryInterval,
	} {
		check(d > 0, "%s must be non-zero", key)
	}
	check(cl.NodeHeartbeatInterval == 0 || cl.HeartbeatTimeout >= 4*cl.NodeHeartbeatInterval,
		"cluster.node_heartbeat_interval = %v, must be 0 (the commit broadcast interval) or at most a quarter of cluster.heartbeat_timeout (%v)",
		cl.NodeHeartbeatInterval, cl.HeartbeatTimeout)
	check(cl.ViewChangeStatusTimeout >= 4*cl.ViewChangeRetransmitInterval,
		"cluster.view_change_status_timeout = %v, must be >= 4 x cluster.view_change_retransmit_interval (%v)",
		cl.ViewChangeStatusTimeout, cl.ViewChangeRetransmitInterval)
	check(cl.ViewProbeAttemptsMax >= 1 && cl.ViewProbeAttemptsMax <= 100, "cluster.view_probe_attempts_max = %d, must be 1..100", cl.ViewProbeAttemptsMax)
	check(cl.RepairChunkMax >= 1 && cl.RepairChunkMax <= 1024, "cluster.repair_chunk_max = %d, must be 1..1024", cl.RepairChunkMax)
	w := cl.SuperblockWedgedFatalTimeout.D()
	check(w == 0 || w >= 30*time.Second, "cluster.superblock_wedged_fatal_timeout = %v, must be 0 (disabled) or >= 30s", w)
	if a := cl.Auth; a.Enabled {
		// Secrets: lengths only, never the values.
		check(len(a.SharedSecret) >= MinSharedSecretLen, "cluster.auth.shared_secret is %d bytes, must be at least %d when cluster.auth.enabled",
			len(a.SharedSecret), MinSharedSecretLen)
		if a.PreviousSharedSecret != "" {
			check(len(a.PreviousSharedSecret) >= MinSharedSecretLen, "cluster.auth.previous_shared_secret is %d bytes, must be at least %d",
				len(a.PreviousSharedSecret), MinSharedSecretLen)
			check(a.PreviousSharedSecret != a.SharedSecret, "cluster.auth.previous_shared_secret must differ from cluster.auth.shared_secret")
		}
	}
	if t := cl.TLS; t.Enabled {
		check(cl.Auth.Enabled, "cluster.tls.enabled requires cluster.auth.enabled (replica-plane.md 3.7)")
		if !t.SelfSigned {
			check(t.CertFile != "" && t.KeyFile != "" && t.CAFile != "",
				"cluster.tls needs cert_file, key_file and ca_file unless self_signed (got %q, %q, %q)", t.CertFile, t.KeyFile, t.CAFile)
		}
	}
}
