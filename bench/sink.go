package bench

import (
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"iggynode/internal/framebuf"
	clientplane "iggynode/plane/client"
	"iggynode/wire"
)

// DefaultSinkMessageSize is the payload size of the messages in the sink's
// canned poll replies when SinkOptions leaves it unset.
const DefaultSinkMessageSize = 1000

// sinkMaxPartitions mirrors the server's CreateTopic bound (client-plane.md
// 8.7.2: partitions_count <= 1000, else S 2015).
const sinkMaxPartitions = 1000

// SinkOptions tunes the sink.
type SinkOptions struct {
	// PollMessageSize is the payload size of each message of a canned poll
	// reply; 0 means DefaultSinkMessageSize.
	PollMessageSize int
	// EmptyPolls answers every poll with the 16-byte empty reply instead of
	// a canned batch.
	EmptyPolls bool
	// Logger receives the edge's warnings; nil discards them.
	Logger *slog.Logger
	// Transport is the carriage the sink listens on: "tcp" (default),
	// "tls", "quic", "ws" or "wss". TLS carriages use a self-signed
	// certificate generated at start.
	Transport string
	// StoreDir, when set, makes a storing sink: every SendMessages batch
	// (the bytes after the metadata section, as they arrived) is appended
	// to one file per partition in this directory before the reply is
	// sent. The least a server that keeps its data does: the storage
	// ceiling. The directory must exist.
	StoreDir string
	// StoreFsync syncs the partition file after every stored batch, before
	// the reply (a topic with enforce_fsync).
	StoreFsync bool
}

// SinkStats counts what the sink answered.
type SinkStats struct {
	Requests       uint64 // frames answered (every kind)
	Logins         uint64
	Sends          uint64 // SendMessages requests
	SentMessages   uint64 // messages_count summed over the sends
	Polls          uint64
	PolledMessages uint64 // messages served in canned batches
}

// Sink is a server that answers every request with the smallest reply the
// Go SDK accepts and stores nothing: the transport ceiling a client can
// reach against this machine (see the package doc for the replies).
type Sink struct {
	ln interface {
		Addr() net.Addr
		Close()
	}
	transport   string
	host        string
	port        uint16
	messageSize int
	emptyPolls  bool
	maxPoll     uint32 // the most messages one canned reply holds (64 MiB frame limit)

	epochs  atomic.Uint64 // session epochs handed out by logins
	streams atomic.Uint32 // ids handed out by CreateStream
	topics  atomic.Uint32 // ids handed out by CreateTopic

	mu      sync.Mutex
	offsets map[partitionKey]uint64 // next base offset per partition written
	// partitions is each created topic's partition count by topic id, so
	// consumer groups can be assigned every partition of their topic.
	partitions map[uint32]uint32
	groups     atomic.Uint32 // ids handed out by CreateConsumerGroup

	requests, logins, sends, sentMessages, polls, polledMessages atomic.Uint64

	store  *sinkStore // nil unless SinkOptions.StoreDir is set
	logger *slog.Logger
}

type partitionKey struct{ stream, topic, partition uint32 }

// StartSink starts a sink with default options on addr (host:port; port 0
// picks a free one).
func StartSink(addr string) (*Sink, error) { return StartSinkWith(addr, SinkOptions{}) }

// StartSinkWith starts a sink with the given options.
func StartSinkWith(addr string, o SinkOptions) (*Sink, error) {
	if o.PollMessageSize <= 0 {
		o.PollMessageSize = DefaultSinkMessageSize
	}
	if o.PollMessageSize > wire.MaxMessagePayloadSize {
		o.PollMessageSize = wire.MaxMessagePayloadSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	perMessage := uint32(wire.FrameHeaderSize + o.PollMessageSize)
	s := &Sink{
		messageSize: o.PollMessageSize,
		emptyPolls:  o.EmptyPolls,
		maxPoll:     (wire.DefaultMaxFrameSize - wire.HeaderSize - wire.PolledMessagesHeaderSize - wire.BatchHeaderSize) / perMessage,
		offsets:     map[partitionKey]uint64{},
		partitions:  map[uint32]uint32{},
		logger:      o.Logger,
	}
	if o.StoreDir != "" {
		s.store = &sinkStore{dir: o.StoreDir, fsync: o.StoreFsync, files: map[partitionKey]*storeFile{}}
	}
	cfg := clientplane.Config{Logger: o.Logger}
	if o.Transport == "tls" || o.Transport == "wss" || o.Transport == "quic" {
		cert, err := clientplane.GenerateSelfSigned()
		if err != nil {
			return nil, err
		}
		cfg.TLS = cert.ServerConfig()
		if o.Transport == "quic" {
			cfg.TLS = cert.QUICConfig()
		}
	}
	var err error
	switch o.Transport {
	case "", "tcp", "tls":
		s.ln, err = clientplane.ListenTCP(addr, cfg, s)
	case "quic":
		s.ln, err = clientplane.ListenQUIC(addr, cfg, clientplane.DefaultQUICConfig(), s)
	case "ws", "wss":
		s.ln, err = clientplane.ListenWebSocket(addr, cfg, clientplane.WebSocketConfig{}, s)
	default:
		return nil, fmt.Errorf("sink: unknown transport %q", o.Transport)
	}
	if err != nil {
		return nil, err
	}
	s.transport = o.Transport
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	p, _ := strconv.Atoi(port)
	s.host, s.port = host, uint16(p)
	return s, nil
}

// Addr is the bound host:port.
func (s *Sink) Addr() string { return net.JoinHostPort(s.host, strconv.Itoa(int(s.port))) }

// Close stops the sink and closes every connection, then the store's
// files.
func (s *Sink) Close() {
	s.ln.Close()
	if s.store != nil {
		s.store.close()
	}
}

// StoreFile is the file a storing sink appends a partition's batches to
// (SinkOptions.StoreDir): "s<stream>-t<topic>-p<partition>.batches" in the
// store directory.
func StoreFile(dir string, stream, topic, partition uint32) string {
	return filepath.Join(dir, fmt.Sprintf("s%d-t%d-p%d.batches", stream, topic, partition))
}

// Stats reads the counters.
func (s *Sink) Stats() SinkStats {
	return SinkStats{
		Requests: s.requests.Load(), Logins: s.logins.Load(),
		Sends: s.sends.Load(), SentMessages: s.sentMessages.Load(),
		Polls: s.polls.Load(), PolledMessages: s.polledMessages.Load(),
	}
}

// Open implements clientplane.Handler.
func (s *Sink) Open(c clientplane.Conn) clientplane.Session {
	return &sinkSession{sink: s, conn: c}
}

// advance reserves count offsets on a partition and returns the first.
func (s *Sink) advance(k partitionKey, count uint32) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := s.offsets[k]
	s.offsets[k] = base + uint64(count)
	return base
}

// sinkSession answers one connection's frames, in order, on the edge's
// reader goroutine.
type sinkSession struct {
	sink *Sink
	conn clientplane.Conn
	// poll is the canned poll reply frame (header, 16-byte prefix, one
	// batch of pollCount messages), restamped for every poll. Reusing it is
	// safe because clients are lockstep (transports.md 1.3): the next
	// request arrives only after the previous reply was written.
	poll      []byte
	pollCount uint32
}

// Frame implements clientplane.Session. The sink keeps no batch, so the
// frame's pooled buffer goes back once the frame is answered: the
// ceilings read into recycled buffers as the node does (docs/benchmarks.md,
// "Pooled request buffers").
func (ss *sinkSession) Frame(buf []byte, _ wire.SendVerdict, owner *framebuf.Buf) {
	defer ss.conn.Done()
	if owner != nil {
		defer owner.Release()
	}
	req := wire.HeaderOf(buf).Request()
	if req.Validate() != nil {
		return // client-plane.md 4.3: an invalid header gets no reply
	}
	ss.sink.requests.Add(1)
	body := buf[wire.HeaderSize:]
	var frame []byte
	switch req.Operation {
	case wire.OpRegister:
		frame = ss.login(req)
		ss.conn.SetLoggedIn(true) // lifts the edge's pre-login frame limit
	case wire.OpLogout:
		frame = seal(newReply(0), req, wire.OpLogout, req.Session, 0) // class H
	case wire.OpNonReplicated:
		frame = ss.read(req, body)
	case wire.OpSendMessages:
		frame = ss.send(req, body)
	case wire.OpCreateStream:
		frame = createStream(ss.sink, req, body)
	case wire.OpCreateTopic:
		frame = createTopic(ss.sink, req, body)
	case wire.OpCreateConsumerGroup:
		frame = createConsumerGroup(ss.sink, req, body)
	default:
		frame = acknowledge(req)
	}
	ss.conn.Send(frame)
}

// Closed implements clientplane.Session.
func (ss *sinkSession) Closed() {}

// login answers any Register with a fresh epoch (class G, client-plane.md
// 4.4, 5.2 step 10): result count 0 + LoginRegisterResponse, request 0,
// operation 1. Credentials are not checked.
func (ss *sinkSession) login(req wire.RequestHeader) []byte {
	ss.sink.logins.Add(1)
	epoch := ss.sink.epochs.Add(1)
	resp := wire.LoginRegisterResponse{Session: epoch, ServerProtocolVersion: wire.ProtocolVersion, ServerVersion: "iggynode-sink"}
	frame := resp.AppendTo(wire.AppendResultOK(newReply(64)))
	return seal(frame, req, wire.OpRegister, epoch, 0)
}

// read answers the non-replicated requests (class A): the roster and polls
// get a body, every other read (Ping included) an empty one.
func (ss *sinkSession) read(req wire.RequestHeader, body []byte) []byte {
	switch req.Code {
	case wire.CodeGetClusterMetadata:
		return seal(ss.sink.roster(), req, wire.OpNonReplicated, req.Session, 0)
	case wire.CodePollMessages:
		return ss.pollReply(req, body)
	case wire.CodeGetTopic:
		return seal(ss.sink.topicByID(body), req, wire.OpNonReplicated, req.Session, 0)
	case wire.CodeSyncConsumerGroup:
		return seal(ss.sink.assignment(body), req, wire.OpNonReplicated, req.Session, 0)
	}
	return seal(newReply(0), req, wire.OpNonReplicated, req.Session, 0)
}

// roster is one healthy leader at the sink's own address (7.15), so the
// SDK stays where it dialled.
func (s *Sink) roster() []byte {
	m := wire.ClusterMetadata{Name: "iggynode-sink", Nodes: []wire.ClusterNode{{
		Name: "sink", IP: s.host, TCPPort: s.portFor("tcp", "tls"), QUICPort: s.portFor("quic"),
		WebSocketPort: s.portFor("ws", "wss"), Role: wire.RoleLeader, Status: wire.NodeHealthy,
	}}}
	return m.AppendTo(newReply(64))
}

// send confirms a SendMessages without looking at the batch (class E,
// 8.4.2), after a storing sink has written (and with StoreFsync synced) it:
// count 1 with the numeric stream and topic, the partition and a
// per-partition base offset that grows by messages_count.
func (ss *sinkSession) send(req wire.RequestHeader, body []byte) []byte {
	var m wire.SendMessages
	if m.Decode(body) != nil {
		return seal(newReply(0), req, wire.OpSendMessages, 0, uint32(wire.ErrResourceNotFound))
	}
	ss.sink.sends.Add(1)
	ss.sink.sentMessages.Add(uint64(m.MessagesCount))
	k := partitionKey{stream: m.Stream.Num, topic: m.Topic.Num}
	if m.Partitioning.Kind == wire.PartitionByID {
		k.partition = m.Partitioning.ID
	}
	if st := ss.sink.store; st != nil {
		if err := st.append(k, m.Batch); err != nil {
			ss.sink.logger.Warn("sink: storing a batch failed", "err", err)
			return seal(newReply(0), req, wire.OpSendMessages, 0, uint32(wire.ErrCannotAppendMessage))
		}
	}
	base := ss.sink.advance(k, m.MessagesCount)
	confirm := wire.SendConfirmations{{StreamID: k.stream, TopicID: k.topic, PartitionID: k.partition, BaseOffset: base}}
	return seal(confirm.AppendTo(newReply(4+20)), req, wire.OpSendMessages, base, 0)
}

// pollReply answers a poll with min(count, maxPoll) canned messages
// starting at the requested offset (Offset strategy; 0 for the others), or
// with the 16-byte empty poll when EmptyPolls is set, count is 0, or the
// body does not decode (8.4.1).
func (ss *sinkSession) pollReply(req wire.RequestHeader, body []byte) []byte {
	var p wire.PollMessages
	if p.Decode(body) != nil {
		return seal(wire.AppendPolledHeader(newReply(16), 0, 0, 0), req, wire.OpNonReplicated, req.Session, 0)
	}
	ss.sink.polls.Add(1)
	partition := p.Partition.ID
	n := min(p.Count, ss.sink.maxPoll)
	if n == 0 || ss.sink.emptyPolls {
		return seal(wire.AppendPolledHeader(newReply(16), partition, 0, 0), req, wire.OpNonReplicated, req.Session, 0)
	}
	var offset uint64
	if p.Strategy.Kind == wire.PollOffset {
		offset = p.Strategy.Value
	}
	frame := ss.cannedPoll(n)
	wire.AppendPolledHeader(frame[:wire.HeaderSize], partition, offset+uint64(n)-1, n) // in place
	batch := wire.Batch(frame[wire.HeaderSize+wire.PolledMessagesHeaderSize:])
	binary.LittleEndian.PutUint64(batch[wire.BatchPartitionIDOffset:], uint64(partition))
	batch.StampAppend(offset, uint64(time.Now().UnixMicro()))
	ss.sink.polledMessages.Add(uint64(n))
	return seal(frame, req, wire.OpNonReplicated, req.Session, 0)
}

// cannedPoll returns this session's poll frame for n messages, building it
// when n changes: a 16-byte prefix and one batch of n messages of the
// sink's message size, all sharing one payload.
func (ss *sinkSession) cannedPoll(n uint32) []byte {
	if ss.poll != nil && ss.pollCount == n {
		return ss.poll
	}
	payload := make([]byte, ss.sink.messageSize)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	now := uint64(time.Now().UnixMicro())
	msgs := make([]wire.Message, n)
	for i := range msgs {
		msgs[i] = wire.Message{ID: wire.U128{Lo: uint64(i) + 1}, OriginTimestamp: now, Payload: payload}
	}
	size := wire.PolledMessagesHeaderSize + wire.BatchHeaderSize + int(n)*(wire.FrameHeaderSize+ss.sink.messageSize)
	frame := wire.AppendPolledHeader(newReply(size), 0, 0, n)
	frame, err := wire.AppendBatch(frame, msgs)
	if err != nil {
		panic("bench: canned poll batch: " + err.Error()) // sizes are bounded in StartSinkWith
	}
	ss.poll, ss.pollCount = frame, n
	return frame
}

// createStream answers CreateStream with a result-framed StreamDetails
// (class C, 8.6) under a fresh id; nothing is stored, so the same name can
// be created again.
func createStream(s *Sink, req wire.RequestHeader, body []byte) []byte {
	var c wire.CreateStream
	if c.Decode(body) != nil {
		return seal(newReply(0), req, req.Operation, 0, uint32(wire.ErrInvalidCommand))
	}
	id := s.streams.Add(1) - 1
	d := wire.StreamDetails{StreamResponse: wire.StreamResponse{ID: id, CreatedAt: uint64(time.Now().UnixMicro()), Name: c.Name}}
	return seal(d.AppendTo(wire.AppendResultOK(newReply(64))), req, wire.OpCreateStream, uint64(id)+1, 0)
}

// createTopic answers CreateTopic with a result-framed TopicDetails under
// operation 64, as the reference does (client-plane.md 4.4 class C note,
// 8.7.2): partitions 0..count-1, empty.
func createTopic(s *Sink, req wire.RequestHeader, body []byte) []byte {
	var c wire.CreateTopic
	if c.Decode(body) != nil {
		return seal(newReply(0), req, req.Operation, 0, uint32(wire.ErrInvalidCommand))
	}
	if c.PartitionsCount > sinkMaxPartitions {
		return seal(newReply(0), req, req.Operation, 0, uint32(wire.ErrTooManyPartitions))
	}
	id := s.topics.Add(1) - 1
	s.mu.Lock()
	s.partitions[id] = c.PartitionsCount
	s.mu.Unlock()
	now := uint64(time.Now().UnixMicro())
	d := wire.TopicDetails{
		TopicHeader: wire.TopicHeader{ID: id, CreatedAt: now, CompressionAlgorithm: 1, Name: c.Name},
		Partitions:  make([]wire.PartitionResponse, c.PartitionsCount),
	}
	for i := range d.Partitions {
		d.Partitions[i] = wire.PartitionResponse{ID: uint32(i), CreatedAt: now}
	}
	return seal(d.AppendTo(wire.AppendResultOK(newReply(128))), req, wire.OpCreateTopicWithAssignments, uint64(id)+1, 0)
}

// createConsumerGroup answers CreateConsumerGroup with a result-framed
// ConsumerGroupDetails without members (client-plane.md 8.10, 602) under a
// fresh id and the topic's partition count; nothing is stored, so lookups
// keep answering "not found".
func createConsumerGroup(s *Sink, req wire.RequestHeader, body []byte) []byte {
	var c wire.CreateConsumerGroup
	if c.Decode(body) != nil {
		return seal(newReply(0), req, req.Operation, 0, uint32(wire.ErrInvalidCommand))
	}
	id := s.groups.Add(1) - 1
	d := wire.ConsumerGroupDetails{ConsumerGroupResponse: wire.ConsumerGroupResponse{
		ID: id, PartitionsCount: s.partitionCount(c.Topic), Name: c.Name}}
	return seal(d.AppendTo(wire.AppendResultOK(newReply(64))), req, wire.OpCreateConsumerGroup, uint64(id)+1, 0)
}

// assignment answers SyncConsumerGroup (7.20) as if the caller were the
// group's only member: generation 1 and every partition of the topic. Each
// member polls them all, which a sink (serving canned data) allows.
func (s *Sink) assignment(body []byte) []byte {
	var q wire.SyncConsumerGroup
	if q.Decode(body) != nil {
		return newReply(0) // "caller not a member / undecodable": empty body (7.20)
	}
	a := wire.Assignment{Generation: 1}
	for p := range s.partitionCount(q.Topic) {
		a.Partitions = append(a.Partitions, p)
	}
	return a.AppendTo(newReply(16 + 4*len(a.Partitions)))
}

// topicByID answers GetTopic with TopicDetails for a topic the sink
// created, looked up by numeric id (the SDK reads it to route Balanced
// sends, client-plane.md 14.2); by name, or unknown, it is "not found"
// (empty body), so setup still creates anew.
func (s *Sink) topicByID(body []byte) []byte {
	var q wire.GetTopic
	if q.Decode(body) != nil || q.Topic.Kind != wire.IDNumeric {
		return newReply(0)
	}
	s.mu.Lock()
	n, ok := s.partitions[q.Topic.Num]
	s.mu.Unlock()
	if !ok {
		return newReply(0)
	}
	d := wire.TopicDetails{
		TopicHeader: wire.TopicHeader{ID: q.Topic.Num, CompressionAlgorithm: 1, Name: DefaultTopic, PartitionsCount: n},
		Partitions:  make([]wire.PartitionResponse, n),
	}
	for i := range d.Partitions {
		d.Partitions[i].ID = uint32(i)
	}
	return d.AppendTo(newReply(128))
}

// partitionCount is a created topic's partition count, 1 for topics the
// sink does not know by number.
func (s *Sink) partitionCount(topic wire.Identifier) uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.partitions[topic.Num]; ok && topic.Kind == wire.IDNumeric && n > 0 {
		return n
	}
	return 1
}

// acknowledge answers every other replicated request with success and no
// payload: result count 0 for result-framed operations (under 65 and 68
// for CreatePartitions and DeleteSegments, 4.4 class C note), an empty
// body otherwise.
func acknowledge(req wire.RequestHeader) []byte {
	op := req.Operation
	switch op {
	case wire.OpCreatePartitions:
		op = wire.OpCreatePartitionsWithAssignments
	case wire.OpDeleteSegments:
		op = wire.OpTruncatePartition
	}
	frame := newReply(4)
	if op.ResultFramed() {
		frame = wire.AppendResultOK(frame)
	}
	return seal(frame, req, op, req.Session, 0)
}

// newReply allocates a frame with a blank header and room for n body bytes.
func newReply(n int) []byte { return make([]byte, wire.HeaderSize, wire.HeaderSize+n) }

// seal writes the reply header over frame's first 256 bytes: the minimum
// contract of client-plane.md 4.4 (command, size, status, operation,
// request) plus the request's cluster, view, release, replica, client and
// timestamp echoed, and logOp as `op`.
func seal(frame []byte, req wire.RequestHeader, op wire.Operation, logOp uint64, status uint32) []byte {
	h := wire.ReplyHeader{
		Cluster: req.Cluster, Size: uint32(len(frame)), View: req.View, Release: req.Release, Replica: req.Replica,
		Client: req.Client, Op: logOp, Commit: logOp, Timestamp: req.Timestamp, Request: req.Request,
		Operation: op, Status: status,
	}
	h.Encode(wire.HeaderOf(frame))
	return frame
}

// portFor is the sink's port when it listens on one of the transports.
func (s *Sink) portFor(transports ...string) uint16 {
	t := s.transport
	if t == "" {
		t = "tcp"
	}
	for _, x := range transports {
		if x == t {
			return s.port
		}
	}
	return 0
}

// sinkStore is a storing sink's files, one per partition, opened on the
// first batch and closed with the sink.
type sinkStore struct {
	dir   string
	fsync bool

	mu     sync.Mutex
	files  map[partitionKey]*storeFile
	closed bool
}

// storeFile is one partition's file; mu orders the appends of the
// connections that write the same partition.
type storeFile struct {
	mu sync.Mutex
	f  *os.File
}

// append writes batch at the end of k's file, then syncs it if asked.
func (st *sinkStore) append(k partitionKey, batch []byte) error {
	sf, err := st.file(k)
	if err != nil {
		return err
	}
	sf.mu.Lock()
	defer sf.mu.Unlock()
	if sf.f == nil {
		return os.ErrClosed
	}
	if _, err := sf.f.Write(batch); err != nil {
		return err
	}
	if st.fsync {
		return sf.f.Sync()
	}
	return nil
}

// file finds or opens k's file (appending: a second sink on the same
// directory continues it).
func (st *sinkStore) file(k partitionKey) (*storeFile, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, os.ErrClosed
	}
	if sf := st.files[k]; sf != nil {
		return sf, nil
	}
	f, err := os.OpenFile(StoreFile(st.dir, k.stream, k.topic, k.partition), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	sf := &storeFile{f: f}
	st.files[k] = sf
	return sf, nil
}

// close closes every file, waiting for an append in progress.
func (st *sinkStore) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	for _, sf := range st.files {
		sf.mu.Lock()
		if sf.f != nil {
			_ = sf.f.Close()
			sf.f = nil
		}
		sf.mu.Unlock()
	}
}
