package wire

import "fmt"

// Cluster admin requests: iggynode's own commands 9001..9004, outside the
// spec's 1..606 (docs/reconfiguration.md, "Admin surface"). They travel as
// non-replicated requests (operation 2, the code at header bytes 196..200)
// and are answered with a ClusterStatusReply.
//
// Unlike the spec's fixed-shape requests, which ignore trailing bytes
// (client-plane.md 2.9), these decoders are strict: a body must be exactly
// its layout, so a client built against a later layout is told so
// (InvalidCommand) instead of having part of its request dropped.

// MaxNodeID is the highest replica id a roster can hold (vsr.MaxReplicas-1:
// rosters are u32 bitmasks over ids 0..31).
const MaxNodeID = 31

// NodeSpec is a node as clients and replicas reach it: the body of
// ClusterAdd, the tail of ClusterReplace, and (without its id) part of each
// ClusterStatusReply node.
//
//	[id u8][replica_address Str8][name Str8][ip Str8]
//	[tcp_port u16][quic_port u16][http_port u16][websocket_port u16]
//
// ReplicaAddress is 1..=255 bytes; Name and IP may be empty (the node then
// uses iggy-node-<id> and the host of ReplicaAddress); a port 0 means the
// transport is not offered.
type NodeSpec struct {
	ID             uint8
	ReplicaAddress string
	Name           string
	IP             string
	TCPPort        uint16
	QUICPort       uint16
	HTTPPort       uint16
	WebSocketPort  uint16
}

// nodeSpecTailMin is the smallest encoding of a NodeSpec without its id:
// a 1-byte replica address, empty name and ip, four ports.
const nodeSpecTailMin = 1 + 1 + 1 + 1 + 4*2

func (s NodeSpec) AppendTo(b []byte) []byte { return s.appendTail(append(b, s.ID)) }

// appendTail appends everything but the id.
func (s NodeSpec) appendTail(b []byte) []byte {
	b = AppendStr8(b, s.ReplicaAddress)
	b = AppendStr8(b, s.Name)
	b = AppendStr8(b, s.IP)
	b = AppendU16(b, s.TCPPort)
	b = AppendU16(b, s.QUICPort)
	b = AppendU16(b, s.HTTPPort)
	return AppendU16(b, s.WebSocketPort)
}

// Decode reads a whole body that is exactly one NodeSpec.
func (s *NodeSpec) Decode(body []byte) error {
	return respDecode(s, body, "node spec", true, (*NodeSpec).read)
}

func (s *NodeSpec) read(r *Reader) {
	s.ID = readNodeID(r, "node id")
	s.readTail(r)
}

// readTail reads everything but the id and applies the codec rules.
func (s *NodeSpec) readTail(r *Reader) {
	s.ReplicaAddress = r.Str8("replica_address")
	if r.err == nil && s.ReplicaAddress == "" {
		r.Fail("replica_address", "must be 1..=255 bytes of UTF-8")
	}
	s.Name = r.Str8("node name")
	s.IP = r.Str8("node ip")
	s.TCPPort = r.U16("tcp_port")
	s.QUICPort = r.U16("quic_port")
	s.HTTPPort = r.U16("http_port")
	s.WebSocketPort = r.U16("websocket_port")
}

// Validate checks the codec rules the decoder applies: id 0..=31,
// replica_address 1..=255 bytes, name and ip 0..=255 bytes, all UTF-8.
// That replica_address is a host:port is the node's check, not the codec's.
func (s NodeSpec) Validate() error {
	return reqFirstErr(checkNodeID("node id", s.ID), reqCheckName("replica_address", s.ReplicaAddress),
		reqCheckStr8("node name", s.Name), reqCheckStr8("node ip", s.IP))
}

func checkNodeID(field string, id uint8) error {
	if id > MaxNodeID {
		return decodeErr(field, fmt.Sprintf("%d outside 0..=%d", id, MaxNodeID))
	}
	return nil
}

// readNodeID reads a u8 replica id and checks it is 0..=31.
func readNodeID(r *Reader, field string) uint8 {
	id := r.U8(field)
	if r.err == nil {
		r.respFailWith(checkNodeID(field, id))
	}
	return id
}

// ClusterAdd (9001): [NodeSpec]. Adds the node as a learner (R1); the reply
// comes once R1 committed, and the primary promotes it to voter (R2) once
// it holds the log.
type ClusterAdd struct{ Spec NodeSpec }

func (ClusterAdd) Code() CommandCode { return CodeClusterAdd }

func (x ClusterAdd) AppendTo(b []byte) []byte { return x.Spec.AppendTo(b) }

func (x *ClusterAdd) Decode(body []byte) error {
	return respDecode(x, body, "ClusterAdd", true, func(x *ClusterAdd, r *Reader) { x.Spec.read(r) })
}

func (x ClusterAdd) Validate() error { return x.Spec.Validate() }

// ClusterRemove (9002): [id u8]. The reply comes once the R that starts the
// removal committed.
type ClusterRemove struct{ ID uint8 }

func (ClusterRemove) Code() CommandCode { return CodeClusterRemove }

func (x ClusterRemove) AppendTo(b []byte) []byte { return append(b, x.ID) }

func (x *ClusterRemove) Decode(body []byte) error {
	return respDecode(x, body, "ClusterRemove", true, func(x *ClusterRemove, r *Reader) { x.ID = readNodeID(r, "id") })
}

func (x ClusterRemove) Validate() error { return checkNodeID("id", x.ID) }

// ClusterReplace (9003): [old_id u8][NodeSpec]. With OldID == Spec.ID it
// moves that replica to a new address; otherwise the new id joins as a
// learner and replaces OldID among the voters when promoted.
type ClusterReplace struct {
	OldID uint8
	Spec  NodeSpec
}

func (ClusterReplace) Code() CommandCode { return CodeClusterReplace }

func (x ClusterReplace) AppendTo(b []byte) []byte { return x.Spec.AppendTo(append(b, x.OldID)) }

func (x *ClusterReplace) Decode(body []byte) error {
	return respDecode(x, body, "ClusterReplace", true, func(x *ClusterReplace, r *Reader) {
		x.OldID = readNodeID(r, "old_id")
		x.Spec.read(r)
	})
}

func (x ClusterReplace) Validate() error {
	return reqFirstErr(checkNodeID("old_id", x.OldID), x.Spec.Validate())
}

// ClusterStatus (9004): empty body, and only empty (strict, see above).
type ClusterStatus struct{}

func (ClusterStatus) Code() CommandCode { return CodeClusterStatus }

func (ClusterStatus) AppendTo(b []byte) []byte { return b }

func (x *ClusterStatus) Decode(body []byte) error {
	if len(body) != 0 {
		return decodeErr("ClusterStatus", "trailing bytes")
	}
	return nil
}
