// Package lean is a minimal Iggy 0.11.0 client with nothing but the
// framing: log in, send one prebuilt batch again and again, poll into a
// reused buffer. It is the client side of the ceilings (cmd/bench
// ceilings, docs/benchmarks.md, issue 20): what a client costs when it does
// no more than the protocol demands, so the SDK (package client) and the
// node can be compared with it. It does not import package client nor
// package wire: every byte is laid out here from docs/spec, so it also
// checks the spec against the node from the other side.
//
// Frames (client-plane.md 3, framing page): a 256-byte header then the
// body, both directions, no other prefix. A request header carries size at
// 48, command 5 at 60, client (u128, nonzero) at 128, request at 168,
// operation at 176, session at 184 and, for reads (operation 2), the
// command code at 196. A reply header carries size at 48, command at 60
// (8 reply, 13 eviction with the reason at 255), request at 200, operation
// at 208 and status at 216.
//
// A Conn is lockstep (one request in flight, transports.md 1.3), like the
// first-party SDKs. Its loops allocate nothing: the SendMessages frame is
// built once by PrepareSend and written as it is by every Send (the same
// bytes each time: same ids, same origin timestamp, valid checksums; the
// node stamps offsets and times itself); the poll request is restamped in
// place; every reply is read into one buffer that grows only when a reply
// is larger than any before it.
package lean

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/zeebo/xxh3"
)

// Layout constants (client-plane.md 1, 4.1, 4.4; framing and messages pages).
const (
	HeaderSize       = 256
	BatchHeaderSize  = 256
	FrameHeaderSize  = 48
	MaxFrameSize     = 64 << 20
	ProtocolVersion  = 0x2C00 // 0.11.0 packed
	commandRequest   = 5
	commandReply     = 8
	commandEviction  = 13
	opRegister       = 1
	opNonReplicated  = 2
	opSendMessages   = 160
	codePollMessages = 100

	// request header offsets
	offSize      = 48
	offCommand   = 60
	offClient    = 128
	offRequest   = 168
	offOperation = 176
	offSession   = 184
	offCode      = 196
	// reply header offsets
	offReplyRequest   = 200
	offReplyOperation = 208
	offReplyStatus    = 216
	offEvictionReason = 255

	// sendMetadataLength is stream, topic (numeric Identifiers, 6 bytes
	// each), PartitionId partitioning (6) and messages_count (4).
	sendMetadataLength = 6 + 6 + 6 + 4
	// pollBodyLength: consumer (1 + 6), stream, topic, partition flag and
	// id (5), strategy (9), count (4), auto_commit (1).
	pollBodyLength = 7 + 6 + 6 + 5 + 9 + 4 + 1
	// polledHeaderSize is a poll reply's prefix (7.17).
	polledHeaderSize = 16
)

// StatusError is a reply with a nonzero status: an IggyError code.
type StatusError struct{ Code uint32 }

func (e *StatusError) Error() string { return fmt.Sprintf("lean: status %d", e.Code) }

// EvictionError is an eviction frame: the session is dead.
type EvictionError struct{ Reason uint8 }

func (e *EvictionError) Error() string { return fmt.Sprintf("lean: evicted, reason %d", e.Reason) }

// Conn is one logged-in TCP connection.
type Conn struct {
	nc      net.Conn
	r       *bufio.Reader
	client  [16]byte
	session uint64
	request uint64 // the request number partition ops and reads carry

	reply []byte // the last reply frame, in a reused buffer
	send  []byte // the prepared SendMessages frame
	poll  []byte // the poll request frame, restamped per poll

	sendCount uint32 // messages in the prepared batch
}

// Dial connects to addr over TCP (Nagle off) and logs in with a password
// (Register, client-plane.md 5.2). ctx bounds the dial and the login.
func Dial(ctx context.Context, addr, username, password string) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), reply: make([]byte, 0, 64<<10)}
	if _, err := rand.Read(c.client[:]); err != nil {
		_ = nc.Close()
		return nil, err
	}
	c.client[0] |= 1 // nonzero (4.1)
	if deadline, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(deadline)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) }) // a cancel ends the login too
	err = c.login(username, password)
	if !stop() || err != nil {
		_ = nc.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("lean: login: %w", err)
	}
	_ = nc.SetDeadline(time.Time{})
	return c, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Session is the epoch the login reply bound.
func (c *Conn) Session() uint64 { return c.session }

// SetDeadline bounds every read and write from now on (zero: none).
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// header writes a request header over frame[:256]: the frame's size,
// command 5, the client id, request, operation, session and (reads) code.
func (c *Conn) header(frame []byte, op uint8, request, session uint64, code uint32) {
	h := frame[:HeaderSize]
	clear(h)
	binary.LittleEndian.PutUint32(h[offSize:], uint32(len(frame)))
	h[offCommand] = commandRequest
	copy(h[offClient:], c.client[:])
	binary.LittleEndian.PutUint64(h[offRequest:], request)
	h[offOperation] = op
	binary.LittleEndian.PutUint64(h[offSession:], session)
	binary.LittleEndian.PutUint32(h[offCode:], code)
}

// login sends Register (operation 1, request 0, session 0) with the
// ClientVersionInfo prefix and the password shape, and reads the class G
// reply: result count 0, user_id, session.
func (c *Conn) login(username, password string) error {
	if len(username) == 0 || len(username) > 255 || len(password) > 255 {
		return errors.New("username or password length out of range")
	}
	frame := make([]byte, HeaderSize, HeaderSize+64+len(username)+len(password))
	frame = binary.LittleEndian.AppendUint32(frame, ProtocolVersion)
	frame = appendName(frame, "iggynode-lean")
	frame = appendName(frame, "0.11.0")
	frame = appendName(frame, username)
	frame = appendName(frame, password)                // Str8: same shape
	frame = binary.LittleEndian.AppendUint32(frame, 0) // context: none
	c.header(frame, opRegister, 0, 0, 0)
	body, err := c.roundTrip(frame, 0, opRegister)
	if err != nil {
		return err
	}
	if len(body) < 4+4+8 {
		return fmt.Errorf("login reply of %d bytes", len(body))
	}
	if n := binary.LittleEndian.Uint32(body); n != 0 {
		if len(body) >= 12 {
			return &StatusError{Code: binary.LittleEndian.Uint32(body[8:])} // result rejection [1][0][code]
		}
		return fmt.Errorf("login result count %d", n)
	}
	c.session = binary.LittleEndian.Uint64(body[8:])
	if c.session == 0 {
		return errors.New("login bound session 0")
	}
	c.request = 1 // the SDKs' counter after login, read but not advanced by partition ops (5.3)
	return nil
}

func appendName(b []byte, s string) []byte { return append(append(b, byte(len(s))), s...) }

// roundTrip writes frame in one write and reads its reply into c.reply,
// returning the body. The reply must be a Reply echoing request, with
// operation op and status 0.
func (c *Conn) roundTrip(frame []byte, request uint64, op uint8) ([]byte, error) {
	if _, err := c.nc.Write(frame); err != nil {
		return nil, err
	}
	return c.readReply(request, op)
}

func (c *Conn) readReply(request uint64, op uint8) ([]byte, error) {
	h := c.reply[:HeaderSize]
	if _, err := io.ReadFull(c.r, h); err != nil {
		return nil, err
	}
	size := binary.LittleEndian.Uint32(h[offSize:])
	if size < HeaderSize || size > MaxFrameSize {
		return nil, fmt.Errorf("lean: reply size %d", size)
	}
	switch h[offCommand] {
	case commandReply:
	case commandEviction:
		return nil, &EvictionError{Reason: h[offEvictionReason]}
	default:
		return nil, fmt.Errorf("lean: reply command %d", h[offCommand])
	}
	if int(size) > cap(c.reply) {
		grown := make([]byte, size, size+size/4)
		copy(grown, h)
		c.reply = grown
	}
	c.reply = c.reply[:size]
	if _, err := io.ReadFull(c.r, c.reply[HeaderSize:]); err != nil {
		return nil, err
	}
	h = c.reply[:HeaderSize]
	if got := binary.LittleEndian.Uint64(h[offReplyRequest:]); got != request {
		return nil, fmt.Errorf("lean: reply to request %d, want %d", got, request)
	}
	if status := binary.LittleEndian.Uint32(h[offReplyStatus:]); status != 0 {
		return nil, &StatusError{Code: status}
	}
	if h[offReplyOperation] != op {
		return nil, fmt.Errorf("lean: reply operation %d, want %d", h[offReplyOperation], op)
	}
	return c.reply[HeaderSize:], nil
}

// PrepareSend builds, once, the SendMessages frame every Send writes:
// stream, topic and partition by numeric id (PartitionId partitioning),
// one batch of count messages of size payload bytes. Message ids are the
// connection's client id's high half and the message index; the origin
// timestamp is now.
func (c *Conn) PrepareSend(stream, topic, partition uint32, count, size int) error {
	if count < 1 || size < 0 {
		return fmt.Errorf("lean: %d messages of %d bytes", count, size)
	}
	batchLen := BatchHeaderSize + count*(FrameHeaderSize+size)
	total := HeaderSize + 4 + sendMetadataLength + batchLen
	if total > MaxFrameSize {
		return fmt.Errorf("lean: a %d-byte frame is above the %d-byte limit", total, MaxFrameSize)
	}
	frame := make([]byte, HeaderSize, total)
	frame = binary.LittleEndian.AppendUint32(frame, sendMetadataLength)
	frame = appendNumericID(frame, stream)
	frame = appendNumericID(frame, topic)
	frame = append(frame, 2, 4) // PartitionId (2.5)
	frame = binary.LittleEndian.AppendUint32(frame, partition)
	frame = binary.LittleEndian.AppendUint32(frame, uint32(count))
	frame = AppendBatch(frame, count, size, binary.LittleEndian.Uint64(c.client[8:]), uint64(time.Now().UnixMicro()))
	c.header(frame, opSendMessages, c.request, c.session, 0)
	c.send, c.sendCount = frame, uint32(count)
	return nil
}

func appendNumericID(b []byte, id uint32) []byte {
	return binary.LittleEndian.AppendUint32(append(b, 1, 4), id) // Identifier kind 1, length 4 (2.2)
}

// AppendBatch appends one batch (messages page; checksums client-plane.md
// 12.1, 12.2) of count frames of size payload bytes ('a'..'z' repeated):
// ids {lo: index+1, hi: idHigh}, offset deltas 0..count-1, timestamp
// deltas 0, no user headers, partition id, base offset and base timestamp
// zero for the server to stamp.
func AppendBatch(b []byte, count, size int, idHigh, originMicros uint64) []byte {
	start := len(b)
	batchLen := BatchHeaderSize + count*(FrameHeaderSize+size)
	b = append(b, make([]byte, batchLen)...)
	batch := b[start:]
	binary.LittleEndian.PutUint64(batch[24:], originMicros)
	binary.LittleEndian.PutUint64(batch[32:], uint64(batchLen))
	binary.LittleEndian.PutUint32(batch[48:], uint32(count))
	// The batch checksum hashes header bytes 0..40, message_count (48..52)
	// and each frame's checksum.
	sums := make([]byte, 0, 44+8*count)
	sums = append(sums, batch[:40]...)
	sums = append(sums, batch[48:52]...)
	at := BatchHeaderSize
	for i := range count {
		f := batch[at : at+FrameHeaderSize+size]
		binary.LittleEndian.PutUint64(f[8:], uint64(i)+1)
		binary.LittleEndian.PutUint64(f[16:], idHigh)
		binary.LittleEndian.PutUint32(f[24:], uint32(i))
		binary.LittleEndian.PutUint32(f[36:], uint32(size))
		for j := range size {
			f[FrameHeaderSize+j] = byte('a' + j%26)
		}
		binary.LittleEndian.PutUint64(f, xxh3.Hash(f[8:]))
		sums = append(sums, f[:8]...)
		at += len(f)
	}
	binary.LittleEndian.PutUint64(batch[40:], xxh3.Hash(sums))
	return b
}

// Send writes the prepared frame and reads the confirmation (7.18),
// returning the base offset of the batch.
func (c *Conn) Send() (uint64, error) {
	if c.send == nil {
		return 0, errors.New("lean: Send before PrepareSend")
	}
	body, err := c.roundTrip(c.send, c.request, opSendMessages)
	if err != nil {
		return 0, err
	}
	if len(body) != 4+20 || binary.LittleEndian.Uint32(body) != 1 {
		return 0, fmt.Errorf("lean: confirmation of %d bytes", len(body))
	}
	return binary.LittleEndian.Uint64(body[4+12:]), nil
}

// SendFrameSize is the prepared SendMessages frame's size in bytes.
func (c *Conn) SendFrameSize() int { return len(c.send) }

// Polled is what one poll read.
type Polled struct {
	Messages     uint32 // messages served (the frames counted, equal to the prefix count)
	PayloadBytes uint64 // their payload bytes
	LastOffset   uint64 // offset of the last message served
	Body         []byte // the reply body, valid until the next request
}

// Poll reads up to count messages of a partition from offset (Offset
// strategy, plain consumer by numeric id, no auto commit; 8.4.1) into the
// reused reply buffer and walks its records (13.4) to count messages and
// payload bytes and find the last offset.
func (c *Conn) Poll(consumer, stream, topic, partition uint32, offset uint64, count uint32) (Polled, error) {
	if c.poll == nil {
		c.poll = make([]byte, HeaderSize+pollBodyLength)
		c.header(c.poll, opNonReplicated, c.request, c.session, codePollMessages)
	}
	b := c.poll[HeaderSize:HeaderSize]
	b = append(b, 1) // consumer kind 1 (2.3)
	b = appendNumericID(b, consumer)
	b = appendNumericID(b, stream)
	b = appendNumericID(b, topic)
	b = append(b, 1) // partition present (2.4)
	b = binary.LittleEndian.AppendUint32(b, partition)
	b = append(b, 1) // Offset strategy (2.6)
	b = binary.LittleEndian.AppendUint64(b, offset)
	b = binary.LittleEndian.AppendUint32(b, count)
	_ = append(b, 0) // auto_commit off
	body, err := c.roundTrip(c.poll, c.request, opNonReplicated)
	if err != nil {
		return Polled{}, err
	}
	return walkPolled(body)
}

// walkPolled checks a PolledMessages body (7.17) and tallies its records.
func walkPolled(body []byte) (Polled, error) {
	p := Polled{Body: body}
	if len(body) < polledHeaderSize {
		return p, fmt.Errorf("lean: poll reply of %d bytes", len(body))
	}
	want := binary.LittleEndian.Uint32(body[12:])
	for rest := body[polledHeaderSize:]; len(rest) > 0; {
		if len(rest) < BatchHeaderSize {
			return p, fmt.Errorf("lean: a %d-byte record", len(rest))
		}
		n := binary.LittleEndian.Uint64(rest[32:])
		if n < BatchHeaderSize || n > uint64(len(rest)) {
			return p, fmt.Errorf("lean: record length %d with %d bytes left", n, len(rest))
		}
		base := binary.LittleEndian.Uint64(rest[8:])
		count := binary.LittleEndian.Uint32(rest[48:])
		frames := rest[BatchHeaderSize:n]
		for range count {
			if len(frames) < FrameHeaderSize {
				return p, errors.New("lean: frames do not tile the record")
			}
			payload := uint64(binary.LittleEndian.Uint32(frames[36:]))
			size := FrameHeaderSize + payload + uint64(binary.LittleEndian.Uint32(frames[32:]))
			if size > uint64(len(frames)) {
				return p, errors.New("lean: a frame runs past its record")
			}
			p.LastOffset = base + uint64(binary.LittleEndian.Uint32(frames[24:]))
			p.PayloadBytes += payload
			frames = frames[size:]
		}
		if len(frames) != 0 {
			return p, errors.New("lean: frames do not tile the record")
		}
		p.Messages += count
		rest = rest[n:]
	}
	if p.Messages != want {
		return p, fmt.Errorf("lean: poll prefix counts %d messages, records hold %d", want, p.Messages)
	}
	return p, nil
}
