package wire

import "fmt"

// Stats is GetStats' reply (client-plane.md 7.14): a 108-byte numeric
// prefix, five Str32 strings, the semver, count-driven cache metrics, the
// thread count and the disk figures.
type Stats struct {
	ProcessID           uint32
	CPUUsage            float32 // percent, this process
	TotalCPUUsage       float32 // percent, whole host
	MemoryUsage         uint64  // bytes, this process
	TotalMemory         uint64
	AvailableMemory     uint64
	RunTime             uint64 // µs
	StartTime           uint64 // µs since epoch
	ReadBytes           uint64
	WrittenBytes        uint64
	MessagesSizeBytes   uint64
	StreamsCount        uint32
	TopicsCount         uint32
	PartitionsCount     uint32
	SegmentsCount       uint32
	MessagesCount       uint64
	ClientsCount        uint32
	ConsumerGroupsCount uint32
	Hostname            string
	OSName              string
	OSVersion           string
	KernelVersion       string
	IggyServerVersion   string
	// IggyServerSemver is major*1_000_000 + minor*1_000 + patch; 0 unknown.
	IggyServerSemver uint32
	CacheMetrics     []CacheMetric // the reference always sends none
	ThreadsCount     uint32
	FreeDiskSpace    uint64 // bytes; 0 unknown
	TotalDiskSpace   uint64 // bytes; 0 unknown
}

func (s Stats) AppendTo(b []byte) []byte {
	b = AppendU32(b, s.ProcessID)
	b = AppendF32(b, s.CPUUsage)
	b = AppendF32(b, s.TotalCPUUsage)
	for _, v := range []uint64{s.MemoryUsage, s.TotalMemory, s.AvailableMemory, s.RunTime,
		s.StartTime, s.ReadBytes, s.WrittenBytes, s.MessagesSizeBytes} {
		b = AppendU64(b, v)
	}
	b = AppendU32(b, s.StreamsCount)
	b = AppendU32(b, s.TopicsCount)
	b = AppendU32(b, s.PartitionsCount)
	b = AppendU32(b, s.SegmentsCount)
	b = AppendU64(b, s.MessagesCount)
	b = AppendU32(b, s.ClientsCount)
	b = AppendU32(b, s.ConsumerGroupsCount)
	for _, v := range []string{s.Hostname, s.OSName, s.OSVersion, s.KernelVersion, s.IggyServerVersion} {
		b = AppendStr32(b, v)
	}
	b = AppendU32(b, s.IggyServerSemver)
	b = AppendU32(b, uint32(len(s.CacheMetrics)))
	for _, m := range s.CacheMetrics {
		b = m.AppendTo(b)
	}
	b = AppendU32(b, s.ThreadsCount)
	b = AppendU64(b, s.FreeDiskSpace)
	return AppendU64(b, s.TotalDiskSpace)
}

func (s *Stats) Decode(body []byte) error {
	return respDecode(s, body, "stats", true, (*Stats).read)
}

func (s *Stats) read(r *Reader) {
	s.ProcessID = r.U32("stats process_id")
	s.CPUUsage = r.F32("stats cpu_usage")
	s.TotalCPUUsage = r.F32("stats total_cpu_usage")
	for _, p := range []*uint64{&s.MemoryUsage, &s.TotalMemory, &s.AvailableMemory, &s.RunTime,
		&s.StartTime, &s.ReadBytes, &s.WrittenBytes, &s.MessagesSizeBytes} {
		*p = r.U64("stats")
	}
	s.StreamsCount = r.U32("stats streams_count")
	s.TopicsCount = r.U32("stats topics_count")
	s.PartitionsCount = r.U32("stats partitions_count")
	s.SegmentsCount = r.U32("stats segments_count")
	s.MessagesCount = r.U64("stats messages_count")
	s.ClientsCount = r.U32("stats clients_count")
	s.ConsumerGroupsCount = r.U32("stats consumer_groups_count")
	s.Hostname = r.Str32("stats hostname")
	s.OSName = r.Str32("stats os_name")
	s.OSVersion = r.Str32("stats os_version")
	s.KernelVersion = r.Str32("stats kernel_version")
	s.IggyServerVersion = r.Str32("stats iggy_server_version")
	s.IggyServerSemver = r.U32("stats iggy_server_semver")
	n := r.Count("stats cache_metrics_count", cacheMetricSize)
	s.CacheMetrics = respReadN(r, n, (*CacheMetric).read)
	s.ThreadsCount = r.U32("stats threads_count")
	s.FreeDiskSpace = r.U64("stats free_disk_space")
	s.TotalDiskSpace = r.U64("stats total_disk_space")
}

// CacheMetric is one partition's cache figures in Stats (7.14, 32 bytes).
type CacheMetric struct {
	StreamID    uint32
	TopicID     uint32
	PartitionID uint32
	Hits        uint64
	Misses      uint64
	HitRatio    float32
}

func (m CacheMetric) AppendTo(b []byte) []byte {
	b = AppendU32(b, m.StreamID)
	b = AppendU32(b, m.TopicID)
	b = AppendU32(b, m.PartitionID)
	b = AppendU64(b, m.Hits)
	b = AppendU64(b, m.Misses)
	return AppendF32(b, m.HitRatio)
}

func (m *CacheMetric) Decode(body []byte) error {
	return respDecode(m, body, "cache metric", true, (*CacheMetric).read)
}

func (m *CacheMetric) read(r *Reader) {
	m.StreamID = r.U32("cache stream_id")
	m.TopicID = r.U32("cache topic_id")
	m.PartitionID = r.U32("cache partition_id")
	m.Hits = r.U64("cache hits")
	m.Misses = r.U64("cache misses")
	m.HitRatio = r.F32("cache hit_ratio")
}

// NodeRole is a ClusterNode's role (7.15).
type NodeRole uint8

const (
	RoleLeader   NodeRole = 0
	RoleFollower NodeRole = 1
)

func (r NodeRole) String() string {
	switch r {
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// NodeStatus is a ClusterNode's status (7.15).
type NodeStatus uint8

const (
	NodeHealthy     NodeStatus = 0
	NodeStarting    NodeStatus = 1
	NodeStopping    NodeStatus = 2
	NodeUnreachable NodeStatus = 3
	NodeMaintenance NodeStatus = 4
	// NodeUnknown exists in the crate but SDKs reject it; never send it.
	NodeUnknown NodeStatus = 5
)

var nodeStatusNames = [...]string{"healthy", "starting", "stopping", "unreachable", "maintenance", "unknown"}

func (s NodeStatus) String() string {
	if int(s) < len(nodeStatusNames) {
		return nodeStatusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// MaxClusterNodes is the largest nodes_count the Go SDK decodes (7.15).
const MaxClusterNodes = 64

// ClusterMetadata is GetClusterMetadata's reply (7.15). Its decoder applies
// the Go SDK's limits (at most 64 nodes, role 0/1, status 0..=4) and, like
// it, ignores trailing bytes.
//
// LastHeardUs is iggynode's extension, sent only to a request that asked
// for it (GetClusterMetadata.LastHeard) and so never seen by a first-party
// SDK: after the nodes, `[count: u32][last_heard_us: u64 x count]`, one
// per node in roster order, when the answering node last heard from that
// node (µs since the Unix epoch; its own entry is the time of the answer,
// 0 = never heard or not tracked). A decoder takes it when the trailing
// bytes are exactly that shape and ignores them otherwise.
type ClusterMetadata struct {
	Name        string
	Nodes       []ClusterNode
	LastHeardUs []uint64
}

func (c ClusterMetadata) AppendTo(b []byte) []byte {
	b = AppendStr32(b, c.Name)
	b = AppendU32(b, uint32(len(c.Nodes)))
	for _, n := range c.Nodes {
		b = n.AppendTo(b)
	}
	if c.LastHeardUs != nil {
		b = AppendU32(b, uint32(len(c.LastHeardUs)))
		for _, us := range c.LastHeardUs {
			b = AppendU64(b, us)
		}
	}
	return b
}

func (c *ClusterMetadata) Decode(body []byte) error {
	return respDecode(c, body, "cluster metadata", false, func(c *ClusterMetadata, r *Reader) {
		c.Name = r.Str32("cluster name")
		n := r.U32("cluster nodes_count")
		if r.err == nil && n > MaxClusterNodes {
			r.Fail("cluster nodes_count", fmt.Sprintf("%d exceeds %d", n, MaxClusterNodes))
			return
		}
		c.Nodes = respReadN(r, r.respFitCount("cluster nodes_count", n, minClusterNodeSize), (*ClusterNode).read)
		if r.err == nil && r.Len() >= 4 && len(c.Nodes) > 0 {
			rest := NewReader(r.Rest())
			if k := rest.U32("last heard count"); int(k) == len(c.Nodes) && rest.Len() == 8*int(k) {
				c.LastHeardUs = make([]uint64, k)
				for i := range c.LastHeardUs {
					c.LastHeardUs[i] = rest.U64("last heard")
				}
			}
		}
	})
}

// ClusterNode is one node of ClusterMetadata (7.15, 18 + N + M bytes).
type ClusterNode struct {
	Name          string
	IP            string // the address the client should dial
	TCPPort       uint16 // 0 = transport disabled
	QUICPort      uint16
	HTTPPort      uint16
	WebSocketPort uint16
	Role          NodeRole
	Status        NodeStatus
}

func (n ClusterNode) AppendTo(b []byte) []byte {
	b = AppendStr32(b, n.Name)
	b = AppendStr32(b, n.IP)
	b = AppendU16(b, n.TCPPort)
	b = AppendU16(b, n.QUICPort)
	b = AppendU16(b, n.HTTPPort)
	b = AppendU16(b, n.WebSocketPort)
	return append(b, byte(n.Role), byte(n.Status))
}

// Decode applies the same limits as ClusterMetadata and, being a single
// node, rejects trailing bytes.
func (n *ClusterNode) Decode(body []byte) error {
	return respDecode(n, body, "cluster node", true, (*ClusterNode).read)
}

func (n *ClusterNode) read(r *Reader) {
	n.Name = r.Str32("node name")
	n.IP = r.Str32("node ip")
	n.TCPPort = r.U16("node tcp_port")
	n.QUICPort = r.U16("node quic_port")
	n.HTTPPort = r.U16("node http_port")
	n.WebSocketPort = r.U16("node websocket_port")
	n.Role = NodeRole(r.U8("node role"))
	n.Status = NodeStatus(r.U8("node status"))
	if r.err != nil {
		return
	}
	if n.Role > RoleFollower {
		r.Fail("node role", fmt.Sprintf("%d is neither 0 nor 1", uint8(n.Role)))
	} else if n.Status > NodeMaintenance {
		r.Fail("node status", fmt.Sprintf("%d outside 0..=4", uint8(n.Status)))
	}
}

// OptionCatalog is DescribeOptions' reply (7.16): [count u32] descriptors.
// An empty catalog is 00 00 00 00 (an empty body does not decode).
type OptionCatalog []OptionDescriptor

func (c OptionCatalog) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(len(c)))
	for _, d := range c {
		b = d.AppendTo(b)
	}
	return b
}

func (c *OptionCatalog) Decode(body []byte) error {
	return respDecode(c, body, "option catalog", true, func(c *OptionCatalog, r *Reader) {
		n := r.Count("option catalog count", minOptionDescriptorSize)
		*c = respReadN(r, n, (*OptionDescriptor).read)
	})
}

// OptionDescriptor describes one option key (7.16). Default is encoded in
// Kind's encoding; empty means no default.
type OptionDescriptor struct {
	Key         string
	Kind        HeaderKind
	Default     []byte
	Description string
}

func (d OptionDescriptor) AppendTo(b []byte) []byte {
	b = AppendName(b, d.Key)
	b = AppendU8(b, uint8(d.Kind))
	b = AppendU32(b, uint32(len(d.Default)))
	b = append(b, d.Default...)
	return AppendStr32(b, d.Description)
}

func (d *OptionDescriptor) Decode(body []byte) error {
	return respDecode(d, body, "option descriptor", true, (*OptionDescriptor).read)
}

func (d *OptionDescriptor) read(r *Reader) {
	d.Key = r.Name("option key")
	d.Kind = HeaderKind(r.U8("option kind"))
	n := r.U32("option default_len")
	if r.err == nil && uint64(n) > uint64(r.Len()) {
		r.Fail("option default", errShort)
		return
	}
	d.Default = respCopyBytes(r.Bytes("option default", int(n)))
	d.Description = r.Str32("option description")
}
