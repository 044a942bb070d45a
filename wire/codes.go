package wire

import "fmt"

// Command is the header's `command` byte (offset 60). It picks the header
// shape for both planes (framing.md; replica-plane.md 1.3). Values above
// MaxCommand are not commands and close the connection (client-plane.md 3).
type Command uint8

const (
	CmdReserved              Command = 0
	CmdPing                  Command = 1
	CmdPong                  Command = 2
	CmdPingClient            Command = 3
	CmdPongClient            Command = 4
	CmdRequest               Command = 5
	CmdPrepare               Command = 6
	CmdPrepareOk             Command = 7
	CmdReply                 Command = 8
	CmdCommit                Command = 9
	CmdStartViewChange       Command = 10
	CmdDoViewChange          Command = 11
	CmdStartView             Command = 12
	CmdEviction              Command = 13
	CmdReplicaHello          Command = 14
	CmdReplicaChallenge      Command = 15
	CmdReplicaFinish         Command = 16
	CmdRequestStartView      Command = 17
	CmdRequestPrepares       Command = 18
	CmdRepairPrepare         Command = 19
	CmdRepairDone            Command = 20
	CmdRangeEvicted          Command = 21
	CmdRequestStateTransfer  Command = 22
	CmdStateTransferTarget   Command = 23
	CmdRequestStateChunk     Command = 24
	CmdStateChunk            Command = 25
	CmdForwardRegister       Command = 26
	CmdForwardRegisterResult Command = 27
	CmdForwardLogout         Command = 28
	CmdForwardLogoutResult   Command = 29

	// MaxCommand is the highest defined command byte.
	MaxCommand = CmdForwardLogoutResult
)

var commandNames = [...]string{
	"Reserved", "Ping", "Pong", "PingClient", "PongClient", "Request", "Prepare", "PrepareOk",
	"Reply", "Commit", "StartViewChange", "DoViewChange", "StartView", "Eviction",
	"ReplicaHello", "ReplicaChallenge", "ReplicaFinish", "RequestStartView", "RequestPrepares",
	"RepairPrepare", "RepairDone", "RangeEvicted", "RequestStateTransfer", "StateTransferTarget",
	"RequestStateChunk", "StateChunk", "ForwardRegister", "ForwardRegisterResult",
	"ForwardLogout", "ForwardLogoutResult",
}

// Valid reports whether c is a defined command (0..=29).
func (c Command) Valid() bool { return c <= MaxCommand }

func (c Command) String() string {
	if c.Valid() {
		return commandNames[c]
	}
	if c == CmdNodeHeartbeat {
		return "NodeHeartbeat"
	}
	return fmt.Sprintf("Command(%d)", uint8(c))
}

// Operation is the state-machine operation discriminant carried by requests,
// replies and prepares (framing.md "Operation discriminants";
// replica-plane.md 1.7).
type Operation uint8

const (
	OpReserved      Operation = 0
	OpRegister      Operation = 1
	OpNonReplicated Operation = 2
	OpLogout        Operation = 3

	// Server-internal operations (64..=68 assigned; 64..=127 reserved).
	OpCreateTopicWithAssignments      Operation = 64
	OpCreatePartitionsWithAssignments Operation = 65
	OpRemoveConsumerGroupMember       Operation = 66
	OpCompleteConsumerGroupRevocation Operation = 67
	OpTruncatePartition               Operation = 68
	// OpReconfigure is iggynode's own internal operation (issue 22, in
	// the reserved 64..=127 range, never sent by a client): its body is a
	// roster (vsr.Roster), committed by the group it reconfigures.
	OpReconfigure Operation = 120

	OpCreateStream              Operation = 128
	OpUpdateStream              Operation = 129
	OpDeleteStream              Operation = 130
	OpPurgeStream               Operation = 131
	OpCreateTopic               Operation = 132
	OpUpdateTopic               Operation = 133
	OpDeleteTopic               Operation = 134
	OpPurgeTopic                Operation = 135
	OpCreatePartitions          Operation = 136
	OpDeletePartitions          Operation = 137
	OpDeleteSegments            Operation = 138
	OpCreateConsumerGroup       Operation = 139
	OpDeleteConsumerGroup       Operation = 140
	OpCreateUser                Operation = 141
	OpUpdateUser                Operation = 142
	OpDeleteUser                Operation = 143
	OpChangePassword            Operation = 144
	OpUpdatePermissions         Operation = 145
	OpCreatePersonalAccessToken Operation = 146
	OpDeletePersonalAccessToken Operation = 147
	OpJoinConsumerGroup         Operation = 148
	OpLeaveConsumerGroup        Operation = 149

	OpSendMessages         Operation = 160
	OpStoreConsumerOffset  Operation = 161
	OpDeleteConsumerOffset Operation = 162
)

var operationNames = map[Operation]string{
	0: "Reserved", 1: "Register", 2: "NonReplicated", 3: "Logout",
	64: "CreateTopicWithAssignments", 65: "CreatePartitionsWithAssignments",
	66: "RemoveConsumerGroupMember", 67: "CompleteConsumerGroupRevocation", 68: "TruncatePartition",
	128: "CreateStream", 129: "UpdateStream", 130: "DeleteStream", 131: "PurgeStream",
	132: "CreateTopic", 133: "UpdateTopic", 134: "DeleteTopic", 135: "PurgeTopic",
	136: "CreatePartitions", 137: "DeletePartitions", 138: "DeleteSegments",
	139: "CreateConsumerGroup", 140: "DeleteConsumerGroup", 141: "CreateUser", 142: "UpdateUser",
	143: "DeleteUser", 144: "ChangePassword", 145: "UpdatePermissions",
	146: "CreatePersonalAccessToken", 147: "DeletePersonalAccessToken",
	148: "JoinConsumerGroup", 149: "LeaveConsumerGroup",
	160: "SendMessages", 161: "StoreConsumerOffset", 162: "DeleteConsumerOffset",
}

// Defined reports whether o is a defined discriminant: 0..=3, 64..=68,
// 128..=149, 160..=162 (client-plane.md 4.1), and iggynode's own
// OpReconfigure (120). Any other byte is an invalid
// bit pattern.
func (o Operation) Defined() bool {
	return o <= 3 || (o >= 64 && o <= 68) || o == OpReconfigure || (o >= 128 && o <= 149) || (o >= 160 && o <= 162)
}

// Internal reports whether o is in the server-internal range 64..=127.
func (o Operation) Internal() bool { return o >= 64 && o <= 127 }

// Metadata reports whether o replicates through the metadata group:
// Register, Logout, 64..=68 and 128..=149 (DeleteSegments 138 is admitted as
// metadata and committed as 68).
func (o Operation) Metadata() bool {
	return o == OpRegister || o == OpLogout || (o >= 64 && o <= 68) || (o >= 128 && o <= 149)
}

// Partition reports whether o replicates through a partition group.
func (o Operation) Partition() bool { return o >= 160 && o <= 162 }

// ResultFramed reports whether a status-0 reply carrying o starts with a
// result section (client-plane.md 4.3, 6, 18 #11): every metadata operation
// except 138, the internal 64..=68, Register, and the consumer-offset
// writes 161 and 162. Framing is decided by the reply's operation byte.
func (o Operation) ResultFramed() bool {
	switch {
	case o == OpRegister:
		return true
	case o >= 64 && o <= 68:
		return true
	case o >= 128 && o <= 149:
		return o != OpDeleteSegments
	case o == OpStoreConsumerOffset || o == OpDeleteConsumerOffset:
		return true
	}
	return false
}

func (o Operation) String() string {
	if n, ok := operationNames[o]; ok {
		return n
	}
	return fmt.Sprintf("Operation(%d)", uint8(o))
}

// EvictionReason is the byte at offset 255 of an EvictionHeader.
type EvictionReason uint8

const (
	EvictNoSession               EvictionReason = 1
	EvictClientReleaseTooLow     EvictionReason = 2
	EvictClientReleaseTooHigh    EvictionReason = 3
	EvictInvalidRequestOperation EvictionReason = 4
	EvictInvalidRequestBody      EvictionReason = 5
	EvictInvalidRequestBodySize  EvictionReason = 6
	EvictSessionTooLow           EvictionReason = 7
	EvictSessionReleaseMismatch  EvictionReason = 8
	EvictInvalidCredentials      EvictionReason = 9
	EvictInvalidToken            EvictionReason = 10
	EvictUserInactive            EvictionReason = 11
	EvictSessionError            EvictionReason = 12
	EvictStaleClient             EvictionReason = 13
	EvictIncompatibleProtocol    EvictionReason = 14
	EvictMalformedLogin          EvictionReason = 15
)

var evictionNames = [...]string{"Reserved", "NoSession", "ClientReleaseTooLow", "ClientReleaseTooHigh",
	"InvalidRequestOperation", "InvalidRequestBody", "InvalidRequestBodySize", "SessionTooLow",
	"SessionReleaseMismatch", "InvalidCredentials", "InvalidToken", "UserInactive", "SessionError",
	"StaleClient", "IncompatibleProtocol", "MalformedLogin"}

func (r EvictionReason) String() string {
	if int(r) < len(evictionNames) {
		return evictionNames[r]
	}
	return fmt.Sprintf("EvictionReason(%d)", uint8(r))
}

// ErrorCode is the IggyError an SDK reports for this eviction
// (client-plane.md 16). IncompatibleProtocol is mapped to 14003 here; the
// degenerate-window rule needs the header and lives in Eviction.Err.
func (r EvictionReason) ErrorCode() ErrorCode {
	switch r {
	case EvictInvalidCredentials:
		return ErrInvalidCredentials
	case EvictInvalidToken:
		return ErrInvalidPersonalAccessToken
	case EvictNoSession, EvictSessionTooLow, EvictSessionReleaseMismatch, EvictUserInactive, EvictSessionError:
		return ErrUnauthenticated
	case EvictStaleClient:
		return ErrStaleClient
	case EvictIncompatibleProtocol:
		return ErrIncompatibleProtocolVersion
	case EvictMalformedLogin:
		return ErrInvalidFormat
	}
	return ErrInvalidCommand
}
