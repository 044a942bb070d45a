package jsonmodel

import (
	"math"

	"iggynode/wire"
)

// To* convert JSON replies back into the binary reply types, for clients
// of the HTTP API that speak package wire (the SDK's HTTP transport).
// Option values come back as String options: the JSON carries text.

func toOptions(m OptionsMap) (explicit, derived wire.Options) {
	for k, v := range m {
		kv := wire.KeyValue{Key: k, Kind: wire.KindString, Value: []byte(v.Value)}
		if v.Explicit {
			explicit = append(explicit, kv)
		} else {
			derived = append(derived, kv)
		}
	}
	sortOptions(explicit)
	sortOptions(derived)
	return explicit, derived
}

func (s Stream) ToWire() wire.StreamResponse {
	o, _ := toOptions(s.Options)
	return wire.StreamResponse{ID: s.ID, CreatedAt: s.CreatedAt, TopicsCount: s.TopicsCount, SizeBytes: uint64(s.Size),
		MessagesCount: s.MessagesCount, Name: s.Name, Options: o}
}

func (s StreamDetails) ToWire() wire.StreamDetails {
	head := Stream{ID: s.ID, CreatedAt: s.CreatedAt, Name: s.Name, Size: s.Size, MessagesCount: s.MessagesCount,
		TopicsCount: s.TopicsCount, Options: s.Options}.ToWire()
	out := wire.StreamDetails{StreamResponse: head}
	for _, t := range s.Topics {
		out.Topics = append(out.Topics, t.ToWire())
	}
	out.TopicsCount = uint32(len(out.Topics))
	return out
}

func compressionCode(name string) uint8 {
	if name == "gzip" {
		return 2
	}
	return 1
}

func (t Topic) ToWire() wire.TopicHeader {
	e, d := toOptions(t.Options)
	return wire.TopicHeader{ID: t.ID, CreatedAt: t.CreatedAt, PartitionsCount: t.PartitionsCount, MessageExpiry: t.MessageExpiry,
		CompressionAlgorithm: compressionCode(t.CompressionAlgorithm), MaxTopicSize: t.MaxTopicSize, SizeBytes: uint64(t.Size),
		MessagesCount: t.MessagesCount, Name: t.Name, ExplicitOptions: e, DerivedOptions: d}
}

func (t TopicDetails) ToWire() wire.TopicDetails {
	head := Topic{ID: t.ID, CreatedAt: t.CreatedAt, Name: t.Name, Size: t.Size, MessageExpiry: t.MessageExpiry,
		CompressionAlgorithm: t.CompressionAlgorithm, MaxTopicSize: t.MaxTopicSize, MessagesCount: t.MessagesCount,
		PartitionsCount: t.PartitionsCount, Options: t.Options}.ToWire()
	out := wire.TopicDetails{TopicHeader: head}
	for _, p := range t.Partitions {
		out.Partitions = append(out.Partitions, wire.PartitionResponse{ID: p.ID, CreatedAt: p.CreatedAt, SegmentsCount: p.SegmentsCount,
			CurrentOffset: p.CurrentOffset, SizeBytes: uint64(p.Size), MessagesCount: p.MessagesCount})
	}
	out.PartitionsCount = uint32(len(out.Partitions))
	return out
}

func (g ConsumerGroup) ToWire() wire.ConsumerGroupResponse {
	return wire.ConsumerGroupResponse{ID: g.ID, PartitionsCount: g.PartitionsCount, MembersCount: g.MembersCount, Name: g.Name}
}

func (g ConsumerGroupDetails) ToWire() wire.ConsumerGroupDetails {
	out := wire.ConsumerGroupDetails{ConsumerGroupResponse: wire.ConsumerGroupResponse{ID: g.ID, PartitionsCount: g.PartitionsCount,
		MembersCount: g.MembersCount, Name: g.Name}}
	for _, m := range g.Members {
		out.Members = append(out.Members, wire.ConsumerGroupMember{ID: m.ID, Partitions: m.Partitions})
	}
	return out
}

func userStatus(s string) wire.UserStatus {
	st, err := ParseStatus(s)
	if err != nil {
		return wire.UserActive
	}
	return st
}

func (u UserInfo) ToWire() wire.UserResponse {
	return wire.UserResponse{ID: u.ID, CreatedAt: u.CreatedAt, Status: userStatus(u.Status), Username: u.Username}
}

func (u UserInfoDetails) ToWire() wire.UserDetails {
	return wire.UserDetails{UserResponse: wire.UserResponse{ID: u.ID, CreatedAt: u.CreatedAt, Status: userStatus(u.Status),
		Username: u.Username}, Permissions: u.Permissions.ToWire()}
}

func (p PersonalAccessTokenInfo) ToWire() wire.PersonalAccessTokenInfo {
	out := wire.PersonalAccessTokenInfo{Name: p.Name}
	if p.ExpiryAt != nil {
		out.ExpiryAt = *p.ExpiryAt
	}
	return out
}

func (s Stats) ToWire() wire.Stats {
	out := wire.Stats{ProcessID: s.ProcessID, CPUUsage: s.CPUUsage, TotalCPUUsage: s.TotalCPUUsage, MemoryUsage: uint64(s.MemoryUsage),
		TotalMemory: uint64(s.TotalMemory), AvailableMemory: uint64(s.AvailableMemory), RunTime: s.RunTime, StartTime: s.StartTime,
		ReadBytes: uint64(s.ReadBytes), WrittenBytes: uint64(s.WrittenBytes), MessagesSizeBytes: uint64(s.MessagesSizeBytes),
		StreamsCount: s.StreamsCount, TopicsCount: s.TopicsCount, PartitionsCount: s.PartitionsCount, SegmentsCount: s.SegmentsCount,
		MessagesCount: s.MessagesCount, ClientsCount: s.ClientsCount, ConsumerGroupsCount: s.ConsumerGroupsCount,
		Hostname: s.Hostname, OSName: s.OSName, OSVersion: s.OSVersion, KernelVersion: s.KernelVersion,
		IggyServerVersion: s.IggyServerVersion, ThreadsCount: s.ThreadsCount, FreeDiskSpace: uint64(s.FreeDiskSpace),
		TotalDiskSpace: uint64(s.TotalDiskSpace)}
	if s.IggyServerSemver != nil {
		out.IggyServerSemver = *s.IggyServerSemver
	}
	return out
}

func transportKind(name string) wire.TransportKind {
	for k := wire.TransportKind(1); k <= 4; k++ {
		if TransportName(k) == name {
			return k
		}
	}
	return 0
}

func (c ClientInfo) ToWire() wire.ClientResponse {
	uid := wire.UserIDNone
	if c.UserID != nil {
		uid = *c.UserID
	}
	return wire.ClientResponse{ClientID: c.ClientID, UserID: uid, Transport: transportKind(c.Transport), Address: c.Address,
		ConsumerGroupsCount: c.ConsumerGroupsCount}
}

func (c ClientInfoDetails) ToWire() wire.ClientDetails {
	out := wire.ClientDetails{ClientResponse: ClientInfo{ClientID: c.ClientID, UserID: c.UserID, Address: c.Address,
		Transport: c.Transport, ConsumerGroupsCount: c.ConsumerGroupsCount}.ToWire()}
	for _, g := range c.ConsumerGroups {
		out.ConsumerGroups = append(out.ConsumerGroups, wire.ConsumerGroupInfo{StreamID: g.StreamID, TopicID: g.TopicID, GroupID: g.GroupID})
	}
	return out
}

func (m ClusterMetadata) ToWire() wire.ClusterMetadata {
	out := wire.ClusterMetadata{Name: m.Name}
	for _, n := range m.Nodes {
		cn := wire.ClusterNode{Name: n.Name, IP: n.IP, TCPPort: n.Endpoints.TCP, QUICPort: n.Endpoints.QUIC,
			HTTPPort: n.Endpoints.HTTP, WebSocketPort: n.Endpoints.WebSocket, Role: wire.RoleFollower, Status: wire.NodeUnknown}
		if n.Role == "leader" {
			cn.Role = wire.RoleLeader
		}
		for s := wire.NodeHealthy; s <= wire.NodeUnknown; s++ {
			if s.String() == n.Status {
				cn.Status = s
			}
		}
		out.Nodes = append(out.Nodes, cn)
	}
	return out
}

func (o OptionSpec) ToWire() wire.OptionDescriptor {
	kind, _ := KindByName(o.Kind)
	return wire.OptionDescriptor{Key: o.Key, Kind: kind, Default: []byte(o.DefaultValue), Description: o.Description}
}

func (c SendMessagesConfirmations) ToWire() wire.SendConfirmations {
	out := wire.SendConfirmations{}
	for _, x := range c.Confirmations {
		out = append(out, wire.SendConfirmation{StreamID: x.StreamID, TopicID: x.TopicID, PartitionID: x.PartitionID, BaseOffset: x.BaseOffset})
	}
	return out
}

// ToWire rebuilds a poll reply: one stored batch per message, stamped with
// its offset and server timestamp (checksums are recomputed, not the
// server's: clients do not verify them, CP 13.4).
func (p PolledMessages) ToWire() (wire.PolledMessages, error) {
	out := wire.PolledMessages{PartitionID: p.PartitionID, CurrentOffset: p.CurrentOffset, MessagesCount: uint32(len(p.Messages))}
	for _, m := range p.Messages {
		var hs wire.UserHeaders
		if m.UserHeaders.Raw != nil {
			hs, _ = wire.DecodeUserHeaders(m.UserHeaders.Raw)
		}
		for _, e := range m.UserHeaders.Entries {
			kind, _ := KindByName(e.Value.Kind)
			hs = append(hs, wire.KeyValue{Key: string(e.Key.Value), Kind: kind, Value: e.Value.Value})
		}
		start := len(out.Records)
		var err error
		out.Records, err = wire.AppendBatch(out.Records, []wire.Message{{ID: wire.U128(m.Header.ID),
			OriginTimestamp: m.Header.OriginTimestamp, Payload: m.Payload, Headers: hs}})
		if err != nil {
			return out, err
		}
		wire.Batch(out.Records[start:]).StampAppend(m.Header.Offset, m.Header.Timestamp)
	}
	return out, nil
}

// NeverExpires is the PAT expiry JSON writes as null.
const NeverExpires uint64 = math.MaxUint64
