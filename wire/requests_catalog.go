package wire

import (
	"math"
	"unicode/utf8"
)

// Request bodies of the command catalogue (client-plane.md 6 and 8;
// commands.md "Payloads"). One type per command code, split by family over
// requests_*.go. Every type follows the Body conventions: AppendTo writes
// without checking, Validate (where an encoder could write something the
// peer cannot decode) checks the codec rules of client-plane.md 11.1, and
// Decode applies them. Semantic bounds (11.4: username 3..=50, partition
// counts, option keys per command, ...) are the server's, not the codec's.

// NewRequest returns a pointer to the zero value of the request type of a
// catalogue code, for server dispatch. The legacy logins 38 and 44 have no
// type (they are never parsed, 8.2.8) and, like codes outside the
// catalogue, report false.
func NewRequest(code CommandCode) (Request, bool) {
	switch code {
	case CodePing:
		return &Ping{}, true
	case CodeGetStats:
		return &GetStats{}, true
	case CodeGetSnapshot:
		return &GetSnapshot{}, true
	case CodeGetClusterMetadata:
		return &GetClusterMetadata{}, true
	case CodeDescribeOptions:
		return &DescribeOptions{}, true
	case CodeGetMe:
		return &GetMe{}, true
	case CodeGetClient:
		return &GetClient{}, true
	case CodeGetClients:
		return &GetClients{}, true
	case CodeGetUser:
		return &GetUser{}, true
	case CodeGetUsers:
		return &GetUsers{}, true
	case CodeCreateUser:
		return &CreateUser{}, true
	case CodeDeleteUser:
		return &DeleteUser{}, true
	case CodeUpdateUser:
		return &UpdateUser{}, true
	case CodeUpdatePermissions:
		return &UpdatePermissions{}, true
	case CodeChangePassword:
		return &ChangePassword{}, true
	case CodeLogoutUser:
		return &LogoutUser{}, true
	case CodeLoginRegister:
		return &LoginRegister{}, true
	case CodeGetPersonalAccessTokens:
		return &GetPersonalAccessTokens{}, true
	case CodeCreatePersonalAccessToken:
		return &CreatePersonalAccessToken{}, true
	case CodeDeletePersonalAccessToken:
		return &DeletePersonalAccessToken{}, true
	case CodeLoginRegisterWithPAT:
		return &LoginRegisterWithPAT{}, true
	case CodePollMessages:
		return &PollMessages{}, true
	case CodeSendMessages:
		return &SendMessages{}, true
	case CodeFlushUnsavedBuffer:
		return &FlushUnsavedBuffer{}, true
	case CodeGetConsumerOffset:
		return &GetConsumerOffset{}, true
	case CodeStoreConsumerOffset:
		return &StoreConsumerOffset{}, true
	case CodeDeleteConsumerOffset:
		return &DeleteConsumerOffset{}, true
	case CodeGetStream:
		return &GetStream{}, true
	case CodeGetStreams:
		return &GetStreams{}, true
	case CodeCreateStream:
		return &CreateStream{}, true
	case CodeDeleteStream:
		return &DeleteStream{}, true
	case CodeUpdateStream:
		return &UpdateStream{}, true
	case CodePurgeStream:
		return &PurgeStream{}, true
	case CodeGetTopic:
		return &GetTopic{}, true
	case CodeGetTopics:
		return &GetTopics{}, true
	case CodeCreateTopic:
		return &CreateTopic{}, true
	case CodeDeleteTopic:
		return &DeleteTopic{}, true
	case CodeUpdateTopic:
		return &UpdateTopic{}, true
	case CodePurgeTopic:
		return &PurgeTopic{}, true
	case CodeCreatePartitions:
		return &CreatePartitions{}, true
	case CodeDeletePartitions:
		return &DeletePartitions{}, true
	case CodeDeleteSegments:
		return &DeleteSegments{}, true
	case CodeGetConsumerGroup:
		return &GetConsumerGroup{}, true
	case CodeGetConsumerGroups:
		return &GetConsumerGroups{}, true
	case CodeCreateConsumerGroup:
		return &CreateConsumerGroup{}, true
	case CodeDeleteConsumerGroup:
		return &DeleteConsumerGroup{}, true
	case CodeJoinConsumerGroup:
		return &JoinConsumerGroup{}, true
	case CodeLeaveConsumerGroup:
		return &LeaveConsumerGroup{}, true
	case CodeSyncConsumerGroup:
		return &SyncConsumerGroup{}, true
	case CodeClusterAdd:
		return &ClusterAdd{}, true
	case CodeClusterRemove:
		return &ClusterRemove{}, true
	case CodeClusterReplace:
		return &ClusterReplace{}, true
	case CodeClusterStatus:
		return &ClusterStatus{}, true
	}
	return nil, false
}

// Validation helpers shared by the request types. They return *DecodeError
// values, so errors.Is(err, ErrMalformed) holds for anything the peer's
// decoder would refuse.

// reqFirstErr returns the first non-nil error.
func reqFirstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// reqCheckName checks a Name: 1..=255 bytes of UTF-8 (client-plane.md 2.1).
func reqCheckName(field, s string) error {
	if !ValidName(s) {
		return decodeErr(field, "must be 1..=255 bytes of UTF-8")
	}
	return nil
}

// reqCheckStr8 checks a Str8: 0..=255 bytes of UTF-8.
func reqCheckStr8(field, s string) error {
	if len(s) > math.MaxUint8 || !utf8.ValidString(s) {
		return decodeErr(field, "must be 0..=255 bytes of UTF-8")
	}
	return nil
}

// reqCheckStr32 checks a Str32: UTF-8 whose length fits a u32.
func reqCheckStr32(field, s string) error {
	if uint64(len(s)) > math.MaxUint32 || !utf8.ValidString(s) {
		return decodeErr(field, "must be UTF-8 of at most 2^32-1 bytes")
	}
	return nil
}

// reqCheckConsumer checks a Consumer: kind 1 or 2 and a valid identifier.
func reqCheckConsumer(c Consumer) error {
	if c.Kind != ConsumerSingle && c.Kind != ConsumerGroup {
		return decodeErr("consumer", "kind must be 1 or 2")
	}
	return c.ID.Validate()
}

// reqCheckStrategy checks a polling strategy kind is 1..=5 (2.6).
func reqCheckStrategy(s PollingStrategy) error {
	if s.Kind < PollOffset || s.Kind > PollNext {
		return decodeErr("strategy", "kind must be 1..=5")
	}
	return nil
}

// reqCheckAck checks an ack level is 0 or 1 (2.7).
func reqCheckAck(a AckLevel) error {
	if a > AckQuorum {
		return decodeErr("ack", "must be 0 or 1")
	}
	return nil
}

// reqDecodeOptions decodes the options block that ends a body: it must
// consume the rest exactly (client-plane.md 2.9, 10.1).
func reqDecodeOptions(r *Reader, x *Options) error {
	if err := r.Err(); err != nil {
		return err
	}
	opts, err := DecodeOptions(r.Rest())
	if err != nil {
		return err
	}
	*x = opts
	return nil
}

// reqAppendPermissions appends [has_permissions][permissions_len][block]:
// flag 0 alone when p is nil. The length is patched after the block is
// written, so it always equals the bytes written. A decoded set is echoed in
// its decoded order (9.3).
func reqAppendPermissions(b []byte, p *Permissions) []byte {
	if p == nil {
		return append(b, 0)
	}
	b = append(b, 1, 0, 0, 0, 0)
	at := len(b)
	b = p.AppendEcho(b)
	n := uint32(len(b) - at)
	b[at-4], b[at-3], b[at-2], b[at-1] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return b
}

// reqReadPermissions reads the optional permission block: present only when
// has_permissions is exactly 1 (18 #27), and then permissions_len must equal
// the block's decoded size (11.1).
func reqReadPermissions(r *Reader) (*Permissions, error) {
	if r.U8("has_permissions") != 1 {
		return nil, r.Err()
	}
	n := r.U32("permissions_len")
	if r.Err() == nil && uint64(n) > uint64(r.Len()) {
		r.Fail("permissions_len", "exceeds the body")
	}
	block := r.Bytes("permissions", int(n))
	if err := r.Err(); err != nil {
		return nil, err
	}
	return DecodePermissions(block)
}
