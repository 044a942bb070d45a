package wire

// System requests (client-plane.md 8.1).

// Ping (1): empty body, the only command accepted before login (8.1.1).
type Ping struct{ Empty }

func (Ping) Code() CommandCode { return CodePing }

// GetStats (10): empty body.
type GetStats struct{ Empty }

func (GetStats) Code() CommandCode { return CodeGetStats }

// GetSnapshot (11): [compression u8][types_count u8][type u8 x types_count]
// (8.1.3). Decode checks the structure only; which compression and type
// codes exist, and the All (100) exclusivity, are checked by the server (S 3).
type GetSnapshot struct {
	Compression uint8
	Types       []uint8
}

func (GetSnapshot) Code() CommandCode { return CodeGetSnapshot }

func (x GetSnapshot) AppendTo(b []byte) []byte {
	b = append(b, x.Compression, uint8(len(x.Types)))
	return append(b, x.Types...)
}

func (x *GetSnapshot) Decode(body []byte) error {
	r := NewReader(body)
	compression := r.U8("compression")
	n := r.U8("types_count")
	types := r.Bytes("types", int(n))
	if err := r.Err(); err != nil {
		return err
	}
	*x = GetSnapshot{Compression: compression, Types: append([]uint8(nil), types...)}
	return nil
}

// Validate checks that the type list fits its u8 count.
func (x GetSnapshot) Validate() error {
	if len(x.Types) > 255 {
		return decodeErr("types_count", "more than 255 types")
	}
	return nil
}

// GetClusterMetadata (12): empty body; not accepted before login (8.1.4).
// LastHeard asks for iggynode's roster extension (ClusterMetadata.LastHeardUs):
// the body is then the one byte RosterExtLastHeard, which the reference
// server ignores like any trailing byte (2.9), answering the plain roster.
type GetClusterMetadata struct{ LastHeard bool }

// RosterExtLastHeard is the GetClusterMetadata body byte that asks for the
// last-heard extension.
const RosterExtLastHeard = 1

func (GetClusterMetadata) Code() CommandCode { return CodeGetClusterMetadata }

func (x GetClusterMetadata) AppendTo(b []byte) []byte {
	if x.LastHeard {
		b = append(b, RosterExtLastHeard)
	}
	return b
}

// Decode never fails: the body is empty for every first-party SDK, and
// anything else is ignored except the extension byte.
func (x *GetClusterMetadata) Decode(body []byte) error {
	x.LastHeard = len(body) > 0 && body[0] == RosterExtLastHeard
	return nil
}

// DescribeOptions (13): [scope u8], 1 topic, 2 stream, 3 user. A scope
// outside 1..=3 fails to decode (11.1), which the server answers S 3.
type DescribeOptions struct{ Scope uint8 }

func (DescribeOptions) Code() CommandCode { return CodeDescribeOptions }

func (x DescribeOptions) AppendTo(b []byte) []byte { return append(b, x.Scope) }

func (x *DescribeOptions) Decode(body []byte) error {
	r := NewReader(body)
	x.Scope = r.U8("scope")
	if err := r.Err(); err != nil {
		return err
	}
	return x.Validate()
}

func (x DescribeOptions) Validate() error {
	if x.Scope < 1 || x.Scope > 3 {
		return decodeErr("scope", "must be 1..=3")
	}
	return nil
}

// GetMe (20): empty body.
type GetMe struct{ Empty }

func (GetMe) Code() CommandCode { return CodeGetMe }

// GetClient (21): [client_id u32], a connection number from GetClients or
// GetMe (8.1.7). A short body fails to decode; the server answers Z.
type GetClient struct{ ClientID uint32 }

func (GetClient) Code() CommandCode { return CodeGetClient }

func (x GetClient) AppendTo(b []byte) []byte { return AppendU32(b, x.ClientID) }

func (x *GetClient) Decode(body []byte) error {
	r := NewReader(body)
	x.ClientID = r.U32("client_id")
	return r.Err()
}

// GetClients (22): empty body.
type GetClients struct{ Empty }

func (GetClients) Code() CommandCode { return CodeGetClients }
