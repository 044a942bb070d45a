package metadata

import (
	"errors"
	"sort"
	"sync/atomic"

	"iggynode/wire"
)

// Limits of the id spaces (server-behaviour.md 1.2; client-plane.md 1).
const (
	MaxStreams              = 1 << 20   // stream ids 0..=1_048_575
	MaxTopicsPerStream      = 4096      // topic ids 0..=4095
	MaxPartitionID          = 999_999   // partition ids < 1_000_000
	MaxPartitionsPerChange  = 1000      // CreateTopic, CreatePartitions, DeletePartitions
	DefaultClientsTableMax  = 8192      // metadata.clients_table_max
	MinClientsTableMax      = 2         // replica-plane.md 5.12.1
	MaxClientsTableMax      = 65536     // replica-plane.md 5.12.1
	DefaultMaxTokensPerUser = 100       // personal_access_token.max_tokens_per_user
	RootUserID              = uint32(0) // server-behaviour.md 2.1.1
	rootCreatedAt           = 1         // server-behaviour.md 2.1.4: a deterministic sentinel
	noTruncation            = ^uint64(0)
)

// Config is the node configuration the state machine depends on.
type Config struct {
	// ClientsTableMax is metadata.clients_table_max (default 8192, 2..=65536).
	ClientsTableMax int
	// MaxTokensPerUser is personal_access_token.max_tokens_per_user
	// (default 100; server-behaviour.md 3.5). It only gates admission.
	MaxTokensPerUser int
	// Voters are the configured roster's voters, a bitmask over node ids
	// (0 or one bit: a single node, which places nothing): what partitions
	// are placed on until a roster change commits (placement.go).
	Voters uint32
}

func (c Config) withDefaults() Config {
	if c.ClientsTableMax == 0 {
		c.ClientsTableMax = DefaultClientsTableMax
	}
	if c.MaxTokensPerUser <= 0 {
		c.MaxTokensPerUser = DefaultMaxTokensPerUser
	}
	c.ClientsTableMax = min(max(c.ClientsTableMax, MinClientsTableMax), MaxClientsTableMax)
	return c
}

// User is one user (server-behaviour.md 2; snapshot record of
// replica-plane.md 13.2).
type User struct {
	ID           uint32
	CreatedAt    uint64 // µs, the creating prepare's timestamp (root: 1)
	Status       wire.UserStatus
	Username     string
	PasswordHash string            // Argon2id PHC string
	Permissions  *wire.Permissions // nil: no permission set (not the same as an all-false set)
	Options      wire.Options      // empty today (no user catalog)
	Tokens       map[string]*Token // personal access tokens by name
}

// Token is a personal access token (server-behaviour.md 3): only the digest
// of the raw token is kept, exactly the PAT record of replica-plane.md 13.2
// plus its owner.
type Token struct {
	Name     string
	Hash     string // 64 lowercase hex chars of BLAKE3(raw token)
	ExpiryAt uint64 // µs; 0 = never
	OwnerID  uint32
}

// expired: a token is expired when now >= expiry_at (server-behaviour.md
// 3.4.2); 0 never expires.
func (t *Token) expired(nowUs uint64) bool { return t.ExpiryAt != 0 && nowUs >= t.ExpiryAt }

// Stream is one stream.
type Stream struct {
	ID        uint32
	CreatedAt uint64
	Name      string
	Options   wire.Options // always empty today (no stream catalog)

	topics      map[uint32]*Topic
	topicByName map[string]uint32
}

// Topic is one topic of a stream.
type Topic struct {
	ID        uint32
	CreatedAt uint64
	Name      string
	// The fixed TopicHeader fields (client-plane.md 7.3). They mirror the
	// effective values of the three updatable options, except that an
	// update's 0 sentinel leaves them unchanged (8.7.3).
	MessageExpiry uint64
	Compression   uint8
	MaxTopicSize  uint64
	// Explicit holds the keys the client set (canonical kinds at create,
	// bytes as sent on update); Derived the keys resolved from defaults at
	// create. Both sorted by key.
	Explicit    wire.Options
	Derived     wire.Options
	NextGroupID uint32
	Partitions  []*Partition // dense: Partitions[i].ID == i

	settings    TopicSettings // create-only settings, parsed from Explicit/Derived
	groups      map[uint32]*ConsumerGroup
	groupByName map[string]uint32
}

// Partition is one partition's replicated metadata. Statistics are not
// replicated (SetPartitionStats).
type Partition struct {
	ID              uint32
	CreatedAt       uint64
	CreationID      uint64 // replica-plane.md 13.1, cluster-wide, from 1
	DeleteBelow     uint64 // one more than the highest committed up_to_offset; 0 = nothing
	PurgeGeneration uint64
}

// ConsumerGroup is a consumer group (server-behaviour.md 7).
type ConsumerGroup struct {
	ID         uint32
	Generation uint64
	Name       string
	Members    []*GroupMember // ascending slot
}

// GroupMember is one member slot of a group.
type GroupMember struct {
	Slot        uint32
	Client      wire.U128
	Partitions  []uint32 // the member's own order (SyncConsumerGroup's order)
	Revocations []Revocation
}

// Revocation is a pending hand-off of a partition the member still owns to
// the member in TargetSlot (server-behaviour.md 7.4.5).
type Revocation struct {
	PartitionID uint32
	TargetSlot  uint32
	Since       uint64 // µs
}

// PartitionStats are a partition's statistics as the partition actor
// reports them (not replicated: server-behaviour.md 9.1, replica-plane.md 13.2).
type PartitionStats struct {
	SizeBytes     uint64
	MessagesCount uint64
	CurrentOffset uint64
	SegmentsCount uint32
}

// State is the metadata state machine of one replica. It is not safe for
// concurrent use: the metadata actor owns it.
type State struct {
	cfg Config

	users        map[uint32]*User
	userByName   map[string]uint32
	streams      map[uint32]*Stream
	streamByName map[string]uint32
	// nextCreationID is one past the largest creation id any applied 64/65
	// carried (replicated, in the snapshot).
	nextCreationID uint64
	clients        *ClientTable
	// clientTableFrontier: client-table mutations of ops at or below it are
	// skipped (replica-plane.md 5.9, 7.9.4).
	clientTableFrontier uint64
	appliedOp           uint64
	appliedTimestamp    uint64
	// roster is the last committed OpReconfigure's roster (roster.go);
	// nil until the first.
	roster *Roster
	// partVoters are the voters each partition group started with, for
	// partitions that exist once a roster committed (roster.go): the
	// group's first roster, which every replica (and a joiner installing
	// this state) must start it on.
	partVoters map[uint64]uint32
	// placement is each partition group's replica set and preferred
	// primary in a cluster (placement.go).
	placement map[uint64]Placement

	// Not replicated.
	allocator uint64 // next creation id admission hands out (>= nextCreationID)
	// tokenByHash indexes every token by its digest for token logins; a
	// cache of users[*].Tokens (hashes are unique: apply and Restore refuse
	// a duplicate).
	tokenByHash map[string]*Token
	stats       map[uint64]PartitionStats
	cursors     map[uint64]*atomic.Uint32 // Balanced round-robin cursor per (stream, topic), shared with routes

	// routes is the routing copy (routes.go); nil: to be rebuilt.
	routes *Routes
}

// New returns an empty state (no users: call Bootstrap on a fresh node).
func New(cfg Config) *State {
	cfg = cfg.withDefaults()
	return &State{
		cfg:            cfg,
		users:          make(map[uint32]*User),
		userByName:     make(map[string]uint32),
		streams:        make(map[uint32]*Stream),
		streamByName:   make(map[string]uint32),
		nextCreationID: 1,
		allocator:      1,
		clients:        NewClientTable(cfg.ClientsTableMax),
		tokenByHash:    make(map[string]*Token),
		stats:          make(map[uint64]PartitionStats),
		cursors:        make(map[uint64]*atomic.Uint32),
		placement:      make(map[uint64]Placement),
	}
}

// ErrNotFresh is returned by Bootstrap when users already exist.
var ErrNotFresh = errors.New("metadata: bootstrap on a state that already has users")

// Bootstrap creates the root user on a fresh state, identically on every
// replica and outside the log (server-behaviour.md 2.1.1, 2.1.4): id 0,
// created_at 1, active, all ten global flags, no stream entries.
// passwordHash is the PHC string (HashPassword).
func (s *State) Bootstrap(username, passwordHash string) error {
	if len(s.users) != 0 {
		return ErrNotFresh
	}
	s.addUser(&User{
		ID: RootUserID, CreatedAt: rootCreatedAt, Status: wire.UserActive,
		Username: username, PasswordHash: passwordHash, Permissions: rootPermissions(),
	})
	s.routes = nil
	return nil
}

func rootPermissions() *wire.Permissions {
	return &wire.Permissions{Global: wire.GlobalPermissions{
		ManageServers: true, ReadServers: true, ManageUsers: true, ReadUsers: true,
		ManageStreams: true, ReadStreams: true, ManageTopics: true, ReadTopics: true,
		PollMessages: true, SendMessages: true,
	}}
}

func (s *State) addUser(u *User) {
	if u.Tokens == nil {
		u.Tokens = make(map[string]*Token)
	}
	s.users[u.ID] = u
	s.userByName[u.Username] = u.ID
	for _, t := range u.Tokens {
		s.tokenByHash[t.Hash] = t
	}
}

// removeUser drops a user and its tokens (server-behaviour.md 3.10).
func (s *State) removeUser(u *User) {
	for _, t := range u.Tokens {
		delete(s.tokenByHash, t.Hash)
	}
	delete(s.users, u.ID)
	delete(s.userByName, u.Username)
}

func (s *State) addToken(u *User, t *Token) {
	u.Tokens[t.Name] = t
	s.tokenByHash[t.Hash] = t
}

func (s *State) removeToken(u *User, t *Token) {
	delete(u.Tokens, t.Name)
	delete(s.tokenByHash, t.Hash)
}

// Clients is the replicated client table.
func (s *State) Clients() *ClientTable { return s.clients }

// AppliedOp is the op of the last applied prepare (the snapshot's
// sequence_number).
func (s *State) AppliedOp() uint64 { return s.appliedOp }

// SetClientTableFrontier records the CLIENT_TABLE frontier of an installed
// state transfer (replica-plane.md 7.9.4 step 3).
func (s *State) SetClientTableFrontier(op uint64) { s.clientTableFrontier = op }

// SetPartitionStats records a partition's statistics (group = its partition
// group id). Reads use them; unknown partitions read as zero.
func (s *State) SetPartitionStats(group uint64, st PartitionStats) {
	if _, ok := s.partitionByGroup(group); ok {
		s.stats[group] = st
	}
}

// lowestFree returns the smallest id in [0, limit) not used by taken.
func lowestFree(limit uint32, taken func(uint32) bool) (uint32, bool) {
	for id := uint32(0); id < limit; id++ {
		if !taken(id) {
			return id, true
		}
	}
	return 0, false
}

// lookup resolves an Identifier against a by-id map and its by-name index
// (streams, topics, consumer groups and users are all named this way).
func lookup[T any](id wire.Identifier, byID map[uint32]*T, byName map[string]uint32) (*T, bool) {
	switch id.Kind {
	case wire.IDNumeric:
		v, ok := byID[id.Num]
		return v, ok
	case wire.IDString:
		if n, ok := byName[id.Str]; ok {
			return byID[n], true
		}
	}
	return nil, false
}

func (s *State) stream(id wire.Identifier) (*Stream, bool) {
	return lookup(id, s.streams, s.streamByName)
}

func (st *Stream) topic(id wire.Identifier) (*Topic, bool) {
	return lookup(id, st.topics, st.topicByName)
}

func (s *State) user(id wire.Identifier) (*User, bool) {
	return lookup(id, s.users, s.userByName)
}

// resolveTopic resolves both identifiers, reporting 1009 or 2010.
func (s *State) resolveTopic(stream, topic wire.Identifier) (*Stream, *Topic, wire.ErrorCode) {
	st, ok := s.stream(stream)
	if !ok {
		return nil, nil, wire.ErrStreamIdNotFound
	}
	t, ok := st.topic(topic)
	if !ok {
		return st, nil, wire.ErrTopicIdNotFound
	}
	return st, t, 0
}

func (st *Stream) sortedTopics() []*Topic {
	out := make([]*Topic, 0, len(st.topics))
	for _, t := range st.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *State) sortedStreams() []*Stream {
	out := make([]*Stream, 0, len(s.streams))
	for _, st := range s.streams {
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *State) sortedUsers() []*User {
	out := make([]*User, 0, len(s.users))
	for _, u := range s.users {
		out = append(out, u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (t *Topic) sortedGroups() []*ConsumerGroup {
	out := make([]*ConsumerGroup, 0, len(t.groups))
	for _, g := range t.groups {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func newStream(id uint32, createdAt uint64, name string, opts wire.Options) *Stream {
	return &Stream{ID: id, CreatedAt: createdAt, Name: name, Options: opts,
		topics: make(map[uint32]*Topic), topicByName: make(map[string]uint32)}
}

func (st *Stream) addTopic(t *Topic) {
	if t.groups == nil {
		t.groups = make(map[uint32]*ConsumerGroup)
		t.groupByName = make(map[string]uint32)
	}
	st.topics[t.ID] = t
	st.topicByName[t.Name] = t.ID
}

func (t *Topic) addGroup(g *ConsumerGroup) {
	t.groups[g.ID] = g
	t.groupByName[g.Name] = g.ID
}

// group id of a partition: always in range, ids are bounded by the state.
func partitionGroup(stream, topic, partition uint32) uint64 {
	g, err := wire.PartitionGroup(stream, topic, partition)
	if err != nil {
		panic("metadata: invariant: partition triple out of range: " + err.Error())
	}
	return g
}

func topicKey(stream, topic uint32) uint64 { return uint64(stream)<<32 | uint64(topic) }

func (s *State) partitionByGroup(group uint64) (*Partition, bool) {
	if group&(0xFFF<<52) != 0 || group == wire.MetadataGroup {
		return nil, false
	}
	sid, tid, pid := wire.SplitPartitionGroup(group)
	st, ok := s.streams[sid]
	if !ok {
		return nil, false
	}
	t, ok := st.topics[tid]
	if !ok || int(pid) >= len(t.Partitions) {
		return nil, false
	}
	return t.Partitions[pid], true
}

func (s *State) partitionStats(group uint64) PartitionStats { return s.stats[group] }

// refOf describes a partition for the shell.
func refOf(st *Stream, t *Topic, p *Partition) PartitionRef {
	return PartitionRef{
		Stream: st.ID, Topic: t.ID, Partition: p.ID,
		Group:      partitionGroup(st.ID, t.ID, p.ID),
		CreationID: p.CreationID, PurgeGeneration: p.PurgeGeneration,
	}
}

// forgetPartition drops the non-replicated caches of a removed partition.
func (s *State) forgetPartition(ref PartitionRef) { delete(s.stats, ref.Group) }
