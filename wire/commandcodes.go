package wire

import "fmt"

// CommandCode is the u32 command code of the protocol registry
// (commands.md). Replicated commands travel as their Operation byte;
// non-replicated ones ride operation 2 with the code at header bytes 196..200.
type CommandCode uint32

const (
	CodePing                         CommandCode = 1
	CodeGetStats                     CommandCode = 10
	CodeGetSnapshot                  CommandCode = 11
	CodeGetClusterMetadata           CommandCode = 12
	CodeDescribeOptions              CommandCode = 13
	CodeGetMe                        CommandCode = 20
	CodeGetClient                    CommandCode = 21
	CodeGetClients                   CommandCode = 22
	CodeGetUser                      CommandCode = 31
	CodeGetUsers                     CommandCode = 32
	CodeCreateUser                   CommandCode = 33
	CodeDeleteUser                   CommandCode = 34
	CodeUpdateUser                   CommandCode = 35
	CodeUpdatePermissions            CommandCode = 36
	CodeChangePassword               CommandCode = 37
	CodeLoginUser                    CommandCode = 38 // legacy, always Eviction(MalformedLogin)
	CodeLogoutUser                   CommandCode = 39
	CodeLoginRegister                CommandCode = 40
	CodeGetPersonalAccessTokens      CommandCode = 41
	CodeCreatePersonalAccessToken    CommandCode = 42
	CodeDeletePersonalAccessToken    CommandCode = 43
	CodeLoginWithPersonalAccessToken CommandCode = 44 // legacy, always Eviction(MalformedLogin)
	CodeLoginRegisterWithPAT         CommandCode = 45
	CodePollMessages                 CommandCode = 100
	CodeSendMessages                 CommandCode = 101
	CodeFlushUnsavedBuffer           CommandCode = 102
	CodeGetConsumerOffset            CommandCode = 120
	CodeStoreConsumerOffset          CommandCode = 121
	CodeDeleteConsumerOffset         CommandCode = 122
	CodeGetStream                    CommandCode = 200
	CodeGetStreams                   CommandCode = 201
	CodeCreateStream                 CommandCode = 202
	CodeDeleteStream                 CommandCode = 203
	CodeUpdateStream                 CommandCode = 204
	CodePurgeStream                  CommandCode = 205
	CodeGetTopic                     CommandCode = 300
	CodeGetTopics                    CommandCode = 301
	CodeCreateTopic                  CommandCode = 302
	CodeDeleteTopic                  CommandCode = 303
	CodeUpdateTopic                  CommandCode = 304
	CodePurgeTopic                   CommandCode = 305
	CodeCreatePartitions             CommandCode = 402
	CodeDeletePartitions             CommandCode = 403
	CodeDeleteSegments               CommandCode = 503
	CodeGetConsumerGroup             CommandCode = 600
	CodeGetConsumerGroups            CommandCode = 601
	CodeCreateConsumerGroup          CommandCode = 602
	CodeDeleteConsumerGroup          CommandCode = 603
	CodeJoinConsumerGroup            CommandCode = 604
	CodeLeaveConsumerGroup           CommandCode = 605
	CodeSyncConsumerGroup            CommandCode = 606

	// iggynode's cluster admin commands, outside the spec's 1..606
	// (docs/reconfiguration.md, "Admin surface"; requests_cluster.go).
	CodeClusterAdd     CommandCode = 9001
	CodeClusterRemove  CommandCode = 9002
	CodeClusterReplace CommandCode = 9003
	CodeClusterStatus  CommandCode = 9004
)

// CommandInfo is one row of the command catalogue (client-plane.md 6).
type CommandInfo struct {
	Code      CommandCode
	Name      string
	Operation Operation // the operation byte the client sends
	PreLogin  bool      // accepted on a connection without a binding
	ReplyOp   Operation // operation byte of a successful reply when it differs (64, 65, 68)
}

var commandTable = []CommandInfo{
	{CodePing, "Ping", OpNonReplicated, true, 0},
	{CodeGetStats, "GetStats", OpNonReplicated, false, 0},
	{CodeGetSnapshot, "GetSnapshot", OpNonReplicated, false, 0},
	{CodeGetClusterMetadata, "GetClusterMetadata", OpNonReplicated, false, 0},
	{CodeDescribeOptions, "DescribeOptions", OpNonReplicated, false, 0},
	{CodeGetMe, "GetMe", OpNonReplicated, false, 0},
	{CodeGetClient, "GetClient", OpNonReplicated, false, 0},
	{CodeGetClients, "GetClients", OpNonReplicated, false, 0},
	{CodeGetUser, "GetUser", OpNonReplicated, false, 0},
	{CodeGetUsers, "GetUsers", OpNonReplicated, false, 0},
	{CodeCreateUser, "CreateUser", OpCreateUser, false, 0},
	{CodeDeleteUser, "DeleteUser", OpDeleteUser, false, 0},
	{CodeUpdateUser, "UpdateUser", OpUpdateUser, false, 0},
	{CodeUpdatePermissions, "UpdatePermissions", OpUpdatePermissions, false, 0},
	{CodeChangePassword, "ChangePassword", OpChangePassword, false, 0},
	{CodeLoginUser, "LoginUser", OpNonReplicated, false, 0},
	{CodeLogoutUser, "LogoutUser", OpLogout, false, 0},
	{CodeLoginRegister, "LoginRegister", OpRegister, true, 0},
	{CodeGetPersonalAccessTokens, "GetPersonalAccessTokens", OpNonReplicated, false, 0},
	{CodeCreatePersonalAccessToken, "CreatePersonalAccessToken", OpCreatePersonalAccessToken, false, 0},
	{CodeDeletePersonalAccessToken, "DeletePersonalAccessToken", OpDeletePersonalAccessToken, false, 0},
	{CodeLoginWithPersonalAccessToken, "LoginWithPersonalAccessToken", OpNonReplicated, false, 0},
	{CodeLoginRegisterWithPAT, "LoginRegisterWithPat", OpRegister, true, 0},
	{CodePollMessages, "PollMessages", OpNonReplicated, false, 0},
	{CodeSendMessages, "SendMessages", OpSendMessages, false, 0},
	{CodeFlushUnsavedBuffer, "FlushUnsavedBuffer", OpNonReplicated, false, 0},
	{CodeGetConsumerOffset, "GetConsumerOffset", OpNonReplicated, false, 0},
	{CodeStoreConsumerOffset, "StoreConsumerOffset", OpStoreConsumerOffset, false, 0},
	{CodeDeleteConsumerOffset, "DeleteConsumerOffset", OpDeleteConsumerOffset, false, 0},
	{CodeGetStream, "GetStream", OpNonReplicated, false, 0},
	{CodeGetStreams, "GetStreams", OpNonReplicated, false, 0},
	{CodeCreateStream, "CreateStream", OpCreateStream, false, 0},
	{CodeDeleteStream, "DeleteStream", OpDeleteStream, false, 0},
	{CodeUpdateStream, "UpdateStream", OpUpdateStream, false, 0},
	{CodePurgeStream, "PurgeStream", OpPurgeStream, false, 0},
	{CodeGetTopic, "GetTopic", OpNonReplicated, false, 0},
	{CodeGetTopics, "GetTopics", OpNonReplicated, false, 0},
	{CodeCreateTopic, "CreateTopic", OpCreateTopic, false, OpCreateTopicWithAssignments},
	{CodeDeleteTopic, "DeleteTopic", OpDeleteTopic, false, 0},
	{CodeUpdateTopic, "UpdateTopic", OpUpdateTopic, false, 0},
	{CodePurgeTopic, "PurgeTopic", OpPurgeTopic, false, 0},
	{CodeCreatePartitions, "CreatePartitions", OpCreatePartitions, false, OpCreatePartitionsWithAssignments},
	{CodeDeletePartitions, "DeletePartitions", OpDeletePartitions, false, 0},
	{CodeDeleteSegments, "DeleteSegments", OpDeleteSegments, false, OpTruncatePartition},
	{CodeGetConsumerGroup, "GetConsumerGroup", OpNonReplicated, false, 0},
	{CodeGetConsumerGroups, "GetConsumerGroups", OpNonReplicated, false, 0},
	{CodeCreateConsumerGroup, "CreateConsumerGroup", OpCreateConsumerGroup, false, 0},
	{CodeDeleteConsumerGroup, "DeleteConsumerGroup", OpDeleteConsumerGroup, false, 0},
	{CodeJoinConsumerGroup, "JoinConsumerGroup", OpJoinConsumerGroup, false, 0},
	{CodeLeaveConsumerGroup, "LeaveConsumerGroup", OpLeaveConsumerGroup, false, 0},
	{CodeSyncConsumerGroup, "SyncConsumerGroup", OpNonReplicated, false, 0},
	{CodeClusterAdd, "ClusterAdd", OpNonReplicated, false, 0},
	{CodeClusterRemove, "ClusterRemove", OpNonReplicated, false, 0},
	{CodeClusterReplace, "ClusterReplace", OpNonReplicated, false, 0},
	{CodeClusterStatus, "ClusterStatus", OpNonReplicated, false, 0},
}

var commandByCode = func() map[CommandCode]*CommandInfo {
	m := make(map[CommandCode]*CommandInfo, len(commandTable))
	for i := range commandTable {
		m[commandTable[i].Code] = &commandTable[i]
	}
	return m
}()

var codeByOperation = func() map[Operation]CommandCode {
	m := make(map[Operation]CommandCode)
	for _, c := range commandTable {
		if c.Operation != OpNonReplicated && c.Operation != OpRegister {
			m[c.Operation] = c.Code
		}
	}
	return m
}()

// Commands returns the catalogue in code order.
func Commands() []CommandInfo { return append([]CommandInfo(nil), commandTable...) }

// Info returns the catalogue row of c.
func (c CommandCode) Info() (CommandInfo, bool) {
	if i, ok := commandByCode[c]; ok {
		return *i, true
	}
	return CommandInfo{}, false
}

// Known reports whether c is in the catalogue.
func (c CommandCode) Known() bool { _, ok := commandByCode[c]; return ok }

// Operation is the operation byte a request with this code travels under.
// Codes outside the catalogue travel as NonReplicated (raw requests, 6).
func (c CommandCode) Operation() Operation {
	if i, ok := commandByCode[c]; ok {
		return i.Operation
	}
	return OpNonReplicated
}

// Replicated reports whether c is a catalogue command that travels under its
// own replicated operation byte (everything but NonReplicated, Register and
// Logout).
func (c CommandCode) Replicated() bool {
	op := c.Operation()
	return op.Metadata() && op != OpRegister && op != OpLogout || op.Partition()
}

func (c CommandCode) String() string {
	if i, ok := commandByCode[c]; ok {
		return i.Name
	}
	return fmt.Sprintf("Command(%d)", uint32(c))
}

// CodeForOperation maps a replicated operation back to its command code.
func CodeForOperation(op Operation) (CommandCode, bool) {
	c, ok := codeByOperation[op]
	return c, ok
}
