package wire

import "fmt"

// RequestHeader is the client-to-server view of a Header (framing.md
// "RequestHeader"; client-plane.md 4.1). On the replica plane the same shape
// carries a routed request with Group in bytes 248..256 (replica-plane.md
// 1.4.19); clients leave it zero and servers zero it on ingress.
type RequestHeader struct {
	Cluster         U128
	Size            uint32
	View            uint32
	Release         uint32
	Replica         uint8
	Client          U128
	RequestChecksum U128
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Session         uint64
	UserID          uint32
	// Code is the command code at 196..200, meaningful for NonReplicated.
	Code CommandCode
	// Group is the routed-request slot at 248..256 (replica plane only).
	Group uint64
}

// Request reads the RequestHeader fields of h without validating them.
func (h *Header) Request() RequestHeader {
	c := h.readCommon()
	r := RequestHeader{
		Cluster: c.Cluster, Size: c.Size, View: c.View, Release: c.Release, Replica: c.Replica,
		Client:          h.u128(128),
		RequestChecksum: h.u128(144),
		Timestamp:       h.u64(160),
		Request:         h.u64(168),
		Operation:       Operation(h[176]),
		Session:         h.u64(184),
		UserID:          h.u32(192),
		Group:           h.u64(248),
	}
	if r.Operation == OpNonReplicated {
		// Bytes 196..200 carry the code only for NonReplicated; for every
		// other operation they are reserved (framing.md).
		r.Code = CommandCode(h.u32(196))
	}
	return r
}

// Encode writes r into h with command 5; every byte it does not set is zero.
func (r *RequestHeader) Encode(h *Header) {
	*h = Header{}
	h.writeCommon(common{r.Cluster, r.Size, r.View, r.Release, r.Replica}, CmdRequest)
	h.putU128(128, r.Client)
	h.putU128(144, r.RequestChecksum)
	h.putU64(160, r.Timestamp)
	h.putU64(168, r.Request)
	h[176] = byte(r.Operation)
	h.putU64(184, r.Session)
	h.putU32(192, r.UserID)
	if r.Operation == OpNonReplicated {
		h.putU32(196, uint32(r.Code))
	}
	h.putU64(248, r.Group)
}

// Validate applies the crate's RequestHeader::validate rules
// (client-plane.md 4.1, 18 #7): nonzero client; defined, nonzero
// operation; Register needs request 0 and session 0; NonReplicated has no
// rule; every other operation needs request > 0 and session > 0. A failure
// means the reference server drops the frame without a reply.
func (r *RequestHeader) Validate() error {
	switch {
	case r.Client.IsZero():
		return decodeErr("client", "zero")
	case !r.Operation.Defined():
		return decodeErr("operation", fmt.Sprintf("undefined discriminant %d", r.Operation))
	case r.Operation == OpReserved:
		return decodeErr("operation", "reserved 0")
	case r.Operation == OpRegister:
		if r.Request != 0 || r.Session != 0 {
			return decodeErr("request", "register needs request 0 and session 0")
		}
	case r.Operation == OpNonReplicated:
	default:
		if r.Request == 0 || r.Session == 0 {
			return decodeErr("request", "request and session must be nonzero")
		}
	}
	return nil
}

// DecodeRequestHeader types h as a request: command must be 5 and the
// header must pass Validate.
func DecodeRequestHeader(h *Header) (RequestHeader, error) {
	if h.Command() != CmdRequest {
		return RequestHeader{}, decodeErr("command", fmt.Sprintf("%v is not Request", h.Command()))
	}
	r := h.Request()
	return r, r.Validate()
}

// ReplyHeader is the server-to-client answer to one request (framing.md
// "ReplyHeader"; field population per class in client-plane.md 4.4).
type ReplyHeader struct {
	Cluster         U128
	Size            uint32
	View            uint32
	Release         uint32
	Replica         uint8
	RequestChecksum U128
	Context         U128
	Client          U128
	Op              uint64
	Commit          uint64
	Timestamp       uint64
	Request         uint64
	Operation       Operation
	Status          uint32
}

// Reply reads the ReplyHeader fields of h without validating them.
func (h *Header) Reply() ReplyHeader {
	c := h.readCommon()
	return ReplyHeader{
		Cluster: c.Cluster, Size: c.Size, View: c.View, Release: c.Release, Replica: c.Replica,
		RequestChecksum: h.u128(128),
		Context:         h.u128(144),
		Client:          h.u128(160),
		Op:              h.u64(176),
		Commit:          h.u64(184),
		Timestamp:       h.u64(192),
		Request:         h.u64(200),
		Operation:       Operation(h[208]),
		Status:          h.u32(216),
	}
}

// Encode writes r into h with command 8; every other byte is zero.
func (r *ReplyHeader) Encode(h *Header) {
	*h = Header{}
	h.writeCommon(common{r.Cluster, r.Size, r.View, r.Release, r.Replica}, CmdReply)
	h.putU128(128, r.RequestChecksum)
	h.putU128(144, r.Context)
	h.putU128(160, r.Client)
	h.putU64(176, r.Op)
	h.putU64(184, r.Commit)
	h.putU64(192, r.Timestamp)
	h.putU64(200, r.Request)
	h[208] = byte(r.Operation)
	h.putU32(216, r.Status)
}

// DecodeReplyHeader types h as a reply: command must be 8. Like the Go SDK
// (client-plane.md 4.4), a status-0 reply must carry a defined operation.
func DecodeReplyHeader(h *Header) (ReplyHeader, error) {
	if h.Command() != CmdReply {
		return ReplyHeader{}, decodeErr("command", fmt.Sprintf("%v is not Reply", h.Command()))
	}
	r := h.Reply()
	if r.Status == 0 && !r.Operation.Defined() {
		return r, decodeErr("operation", fmt.Sprintf("undefined discriminant %d", r.Operation))
	}
	return r, nil
}

// EvictionHeader is the session-terminal, body-less frame (framing.md
// "EvictionHeader"; emission rules in client-plane.md 4.5).
type EvictionHeader struct {
	Cluster U128
	View    uint32
	Replica uint8
	Client  U128
	// MaxVersion and MinVersion are the accepted protocol window, set only
	// for IncompatibleProtocol.
	MaxVersion Version
	MinVersion Version
	Reason     EvictionReason
}

// Eviction reads the EvictionHeader fields of h without validating them.
func (h *Header) Eviction() EvictionHeader {
	return EvictionHeader{
		Cluster: h.Cluster(), View: h.View(), Replica: h.Replica(),
		Client:     h.u128(128),
		MaxVersion: Version(h.u32(144)),
		MinVersion: Version(h.u32(148)),
		Reason:     EvictionReason(h[255]),
	}
}

// Encode writes e into h: command 13, size 256, release 0, everything else zero.
func (e *EvictionHeader) Encode(h *Header) {
	*h = Header{}
	h.writeCommon(common{Cluster: e.Cluster, Size: HeaderSize, View: e.View, Replica: e.Replica}, CmdEviction)
	h.putU128(128, e.Client)
	h.putU32(144, uint32(e.MaxVersion))
	h.putU32(148, uint32(e.MinVersion))
	h[255] = byte(e.Reason)
}

// DecodeEvictionHeader types and validates h as the crate's validator does
// (client-plane.md 4.5): command 13, size 256, nonzero client, nonzero
// reason, zero reserved regions, and the window zero unless the reason is
// IncompatibleProtocol (then 1 <= min <= max). SDKs are laxer (section 16);
// Evicted gives their mapping for any eviction.
func DecodeEvictionHeader(h *Header) (EvictionHeader, error) {
	if h.Command() != CmdEviction {
		return EvictionHeader{}, decodeErr("command", fmt.Sprintf("%v is not Eviction", h.Command()))
	}
	e := h.Eviction()
	switch {
	case h.Size() != HeaderSize:
		return e, decodeErr("size", "an eviction has no body")
	case e.Client.IsZero():
		return e, decodeErr("client", "zero")
	case e.Reason == 0:
		return e, decodeErr("reason", "zero")
	case !h.zero(62, 128) || !h.zero(152, 255):
		return e, decodeErr("reserved", "nonzero")
	case e.Reason == EvictIncompatibleProtocol:
		if e.MinVersion == 0 || e.MinVersion > e.MaxVersion {
			return e, decodeErr("window", "needs 1 <= min <= max")
		}
	case e.MinVersion != 0 || e.MaxVersion != 0:
		return e, decodeErr("window", "set for a reason other than IncompatibleProtocol")
	}
	return e, nil
}

// EvictionError is what a client surfaces for an eviction: the reason, the
// window for IncompatibleProtocol, and the IggyError the SDKs map it to
// (client-plane.md 16), reachable with errors.Is / CodeOf.
type EvictionError struct {
	Reason     EvictionReason
	Client     U128
	MinVersion Version
	MaxVersion Version
}

// Evicted builds the client-side error for an eviction header.
func Evicted(e EvictionHeader) *EvictionError {
	return &EvictionError{Reason: e.Reason, Client: e.Client, MinVersion: e.MinVersion, MaxVersion: e.MaxVersion}
}

// Code is the mapped IggyError. A degenerate IncompatibleProtocol window
// maps to Unauthenticated, as the SDKs do.
func (e *EvictionError) Code() ErrorCode {
	if e.Reason == EvictIncompatibleProtocol && (e.MinVersion == 0 || e.MaxVersion < e.MinVersion) {
		return ErrUnauthenticated
	}
	return e.Reason.ErrorCode()
}

func (e *EvictionError) Error() string {
	if e.Reason == EvictIncompatibleProtocol {
		return fmt.Sprintf("evicted: %v (server accepts %v..%v): %v", e.Reason, e.MinVersion, e.MaxVersion, e.Code())
	}
	return fmt.Sprintf("evicted: %v: %v", e.Reason, e.Code())
}

// Unwrap exposes the mapped code to errors.Is and errors.As.
func (e *EvictionError) Unwrap() error { return e.Code() }
