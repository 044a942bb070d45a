// Code generated from docs/spec/client-plane.md section 15 (the IggyError table). DO NOT EDIT.

package wire

// IggyError codes (client-plane.md section 15). Gaps are retired codes.
const (
	ErrGeneric                                    ErrorCode = 1     // generic error; also what SDKs map an unknown code to
	ErrInvalidConfiguration                       ErrorCode = 2     // bad configuration
	ErrInvalidCommand                             ErrorCode = 3     // request could not be decoded or is not supported in this form
	ErrInvalidFormat                              ErrorCode = 4     // malformed input
	ErrFeatureUnavailable                         ErrorCode = 5     // operation not available on this server
	ErrInvalidIdentifier                          ErrorCode = 6     // identifier could not be resolved or converted
	ErrInvalidVersion                             ErrorCode = 7     // unparsable version string
	ErrDisconnected                               ErrorCode = 8     // connection lost
	ErrCannotEstablishConnection                  ErrorCode = 9     // could not connect
	ErrCannotCreateBaseDirectory                  ErrorCode = 10    // filesystem
	ErrCannotCreateRuntimeDirectory               ErrorCode = 11    // filesystem
	ErrCannotRemoveRuntimeDirectory               ErrorCode = 12    // filesystem
	ErrCannotCreateStateDirectory                 ErrorCode = 13    // filesystem
	ErrStateFileNotFound                          ErrorCode = 14    // state file missing
	ErrStateFileCorrupted                         ErrorCode = 15    // state file corrupted
	ErrInvalidStateEntryChecksum                  ErrorCode = 16    // state entry checksum mismatch
	ErrCannotOpenDatabase                         ErrorCode = 19    // storage
	ErrResourceNotFound                           ErrorCode = 20    // a referenced resource does not exist
	ErrCannotCloseWebSocketConnection             ErrorCode = 21    // WebSocket close failed
	ErrStaleClient                                ErrorCode = 30    // client evicted for missing heartbeats
	ErrTcpError                                   ErrorCode = 31    // TCP I/O failure
	ErrQuicError                                  ErrorCode = 32    // QUIC I/O failure
	ErrInvalidServerAddress                       ErrorCode = 33    // bad server address
	ErrInvalidClientAddress                       ErrorCode = 34    // bad client address
	ErrInvalidIpAddress                           ErrorCode = 35    // bad IP address
	ErrHttpError                                  ErrorCode = 36    // HTTP failure
	ErrInvalidApiUrl                              ErrorCode = 37    // bad HTTP URL
	ErrUnauthenticated                            ErrorCode = 40    // caller is not logged in
	ErrUnauthorized                               ErrorCode = 41    // caller lacks the permission
	ErrInvalidCredentials                         ErrorCode = 42    // wrong username or password
	ErrInvalidUsername                            ErrorCode = 43    // username outside 3..=50 bytes
	ErrInvalidPassword                            ErrorCode = 44    // password outside 3..=100 bytes
	ErrInvalidUserStatus                          ErrorCode = 45    // unknown user status
	ErrUserAlreadyExists                          ErrorCode = 46    // username taken
	ErrUserInactive                               ErrorCode = 47    // user is inactive
	ErrCannotDeleteUser                           ErrorCode = 48    // user cannot be deleted (root)
	ErrCannotChangePermissions                    ErrorCode = 49    // permissions cannot be changed (root)
	ErrInvalidPersonalAccessTokenName             ErrorCode = 50    // bad token name
	ErrPersonalAccessTokenAlreadyExists           ErrorCode = 51    // token name already used by this user
	ErrPersonalAccessTokensLimitReached           ErrorCode = 52    // user holds the maximum number of tokens
	ErrInvalidPersonalAccessToken                 ErrorCode = 53    // token unknown or expired
	ErrPersonalAccessTokenExpired                 ErrorCode = 54    // token expired
	ErrUsersLimitReached                          ErrorCode = 55    // too many users
	ErrInvalidPersonalAccessTokenExpiry           ErrorCode = 56    // token would already be expired
	ErrTransientNotCommitted                      ErrorCode = 57    // outcome unknown; replay the same request on the same connection
	ErrTransientNotAccepted                       ErrorCode = 58    // not admitted; may be re-issued anywhere
	ErrRequestAlreadyApplied                      ErrorCode = 59    // duplicate request whose reply is no longer cached
	ErrNotConnected                               ErrorCode = 61    // not connected
	ErrClientShutdown                             ErrorCode = 63    // client shut down
	ErrInvalidTlsDomain                           ErrorCode = 64    // TLS
	ErrInvalidTlsCertificatePath                  ErrorCode = 65    // TLS
	ErrInvalidTlsCertificate                      ErrorCode = 66    // TLS
	ErrFailedToAddCertificate                     ErrorCode = 67    // TLS
	ErrInvalidEncryptionKey                       ErrorCode = 70    // encryption
	ErrCannotEncryptData                          ErrorCode = 71    // encryption
	ErrCannotDecryptData                          ErrorCode = 72    // decryption failed
	ErrInvalidJwtAlgorithm                        ErrorCode = 73    // JWT
	ErrInvalidJwtSecret                           ErrorCode = 74    // JWT
	ErrJwtMissing                                 ErrorCode = 75    // JWT
	ErrCannotGenerateJwt                          ErrorCode = 76    // JWT
	ErrAccessTokenMissing                         ErrorCode = 77    // JWT
	ErrInvalidAccessToken                         ErrorCode = 78    // JWT
	ErrCannotFetchJwks                            ErrorCode = 79    // JWKS
	ErrInvalidSizeBytes                           ErrorCode = 80    // bad byte size
	ErrInvalidUtf8                                ErrorCode = 81    // invalid UTF-8
	ErrInvalidNumberEncoding                      ErrorCode = 82    // bad number encoding
	ErrInvalidBooleanValue                        ErrorCode = 83    // bad boolean
	ErrInvalidNumberValue                         ErrorCode = 84    // bad number
	ErrClientNotFound                             ErrorCode = 100   // client not found
	ErrInvalidClientId                            ErrorCode = 101   // bad client id
	ErrConnectionClosed                           ErrorCode = 206   // peer closed the connection
	ErrCannotParseHeaderKind                      ErrorCode = 209   // bad header kind name
	ErrHttpResponseError                          ErrorCode = 300   // HTTP error response
	ErrInvalidHttpRequest                         ErrorCode = 301   // bad HTTP request
	ErrInvalidJsonResponse                        ErrorCode = 302   // bad JSON
	ErrInvalidBytesResponse                       ErrorCode = 303   // bad bytes response
	ErrEmptyResponse                              ErrorCode = 304   // reply shorter than a header
	ErrCannotCreateEndpoint                       ErrorCode = 305   // QUIC endpoint
	ErrCannotParseUrl                             ErrorCode = 306   // bad URL
	ErrWebSocketError                             ErrorCode = 400   // WebSocket failure
	ErrWebSocketConnectionError                   ErrorCode = 401   // WebSocket connect failure
	ErrWebSocketCloseError                        ErrorCode = 402   // WebSocket close failure
	ErrWebSocketReceiveError                      ErrorCode = 403   // WebSocket receive failure
	ErrWebSocketSendError                         ErrorCode = 404   // WebSocket send failure
	ErrCannotCreateStreamsDirectory               ErrorCode = 1000  // storage
	ErrCannotCreateStreamDirectory                ErrorCode = 1001  // storage
	ErrCannotCreateStreamInfo                     ErrorCode = 1002  // storage
	ErrCannotUpdateStreamInfo                     ErrorCode = 1003  // storage
	ErrCannotOpenStreamInfo                       ErrorCode = 1004  // storage
	ErrCannotReadStreamInfo                       ErrorCode = 1005  // storage
	ErrCannotCreateStream                         ErrorCode = 1006  // storage
	ErrCannotDeleteStream                         ErrorCode = 1007  // storage
	ErrCannotDeleteStreamDirectory                ErrorCode = 1008  // storage
	ErrStreamIdNotFound                           ErrorCode = 1009  // stream not found (by id or name)
	ErrStreamNameNotFound                         ErrorCode = 1010  // stream not found by name (legacy)
	ErrStreamDirectoryNotFound                    ErrorCode = 1011  // storage
	ErrStreamNameAlreadyExists                    ErrorCode = 1012  // stream name taken
	ErrInvalidStreamName                          ErrorCode = 1013  // bad stream name
	ErrInvalidStreamId                            ErrorCode = 1014  // bad stream id
	ErrCannotReadStreams                          ErrorCode = 1015  // storage
	ErrInvalidTopicSize                           ErrorCode = 1019  // max topic size smaller than the segment size
	ErrTooManyStreams                             ErrorCode = 1020  // stream id space exhausted
	ErrCannotCreateTopicsDirectory                ErrorCode = 2000  // storage
	ErrCannotCreateTopicDirectory                 ErrorCode = 2001  // storage
	ErrCannotCreateTopicInfo                      ErrorCode = 2002  // storage
	ErrCannotUpdateTopicInfo                      ErrorCode = 2003  // storage
	ErrCannotOpenTopicInfo                        ErrorCode = 2004  // storage
	ErrCannotReadTopicInfo                        ErrorCode = 2005  // storage
	ErrCannotCreateTopic                          ErrorCode = 2006  // storage
	ErrCannotDeleteTopic                          ErrorCode = 2007  // storage
	ErrCannotDeleteTopicDirectory                 ErrorCode = 2008  // storage
	ErrCannotPollTopic                            ErrorCode = 2009  // poll failed
	ErrTopicIdNotFound                            ErrorCode = 2010  // topic not found (by id or name)
	ErrTopicNameNotFound                          ErrorCode = 2011  // topic not found by name (legacy)
	ErrTopicNameAlreadyExists                     ErrorCode = 2013  // topic name taken in the stream
	ErrInvalidTopicName                           ErrorCode = 2014  // bad topic name
	ErrTooManyPartitions                          ErrorCode = 2015  // partition count per request out of range
	ErrInvalidTopicId                             ErrorCode = 2016  // bad topic id
	ErrCannotReadTopics                           ErrorCode = 2017  // storage
	ErrInvalidReplicationFactor                   ErrorCode = 2018  // bad replication factor
	ErrInvalidPartitionsCount                     ErrorCode = 2019  // partition count not applicable
	ErrTopicDirectoryNotFound                     ErrorCode = 2020  // storage
	ErrTooManyTopics                              ErrorCode = 2021  // topic id space of the stream exhausted
	ErrCannotCreatePartition                      ErrorCode = 3000  // storage
	ErrCannotCreatePartitionsDirectory            ErrorCode = 3001  // storage
	ErrCannotCreatePartitionDirectory             ErrorCode = 3002  // storage
	ErrCannotOpenPartitionLogFile                 ErrorCode = 3003  // storage
	ErrCannotReadPartitions                       ErrorCode = 3004  // storage
	ErrCannotDeletePartition                      ErrorCode = 3005  // storage
	ErrCannotDeletePartitionDirectory             ErrorCode = 3006  // storage
	ErrPartitionNotFound                          ErrorCode = 3007  // partition not found in an existing topic
	ErrNoPartitions                               ErrorCode = 3008  // topic has no partitions
	ErrTopicFull                                  ErrorCode = 3009  // topic full
	ErrCannotDeleteConsumerOffsetsDirectory       ErrorCode = 3010  // storage
	ErrCannotDeleteConsumerOffsetFile             ErrorCode = 3011  // storage
	ErrCannotCreateConsumerOffsetsDirectory       ErrorCode = 3012  // storage
	ErrPartitionIdSpaceExhausted                  ErrorCode = 3013  // partition ids would reach 1 000 000
	ErrCannotReadConsumerOffsets                  ErrorCode = 3020  // storage
	ErrConsumerOffsetNotFound                     ErrorCode = 3021  // no stored offset for this consumer
	ErrNotResolvedConsumer                        ErrorCode = 3022  // consumer could not be resolved
	ErrCannotOpenConsumerOffsetsFile              ErrorCode = 3023  // storage
	ErrSegmentNotFound                            ErrorCode = 4000  // segment not found
	ErrSegmentClosed                              ErrorCode = 4001  // segment closed
	ErrInvalidSegmentSize                         ErrorCode = 4002  // bad segment size
	ErrCannotCreateSegmentLogFile                 ErrorCode = 4003  // storage
	ErrCannotCreateSegmentIndexFile               ErrorCode = 4004  // storage
	ErrCannotCreateSegmentTimeIndexFile           ErrorCode = 4005  // storage
	ErrCannotSaveMessagesToSegment                ErrorCode = 4006  // storage
	ErrCannotSaveIndexToSegment                   ErrorCode = 4007  // storage
	ErrCannotSaveTimeIndexToSegment               ErrorCode = 4008  // storage
	ErrInvalidMessagesCount                       ErrorCode = 4009  // bad message count
	ErrCannotAppendMessage                        ErrorCode = 4010  // append failed
	ErrCannotReadMessage                          ErrorCode = 4011  // read failed
	ErrCannotReadMessageId                        ErrorCode = 4012  // decode
	ErrCannotReadMessageState                     ErrorCode = 4013  // decode
	ErrCannotReadMessageTimestamp                 ErrorCode = 4014  // decode
	ErrCannotReadHeadersLength                    ErrorCode = 4015  // decode
	ErrCannotReadHeadersPayload                   ErrorCode = 4016  // decode
	ErrTooBigUserHeaders                          ErrorCode = 4017  // user headers too large
	ErrInvalidHeaderKey                           ErrorCode = 4018  // bad header key
	ErrInvalidHeaderValue                         ErrorCode = 4019  // bad header value
	ErrCannotReadMessageLength                    ErrorCode = 4020  // decode
	ErrCannotReadMessagePayload                   ErrorCode = 4021  // decode
	ErrTooBigMessagePayload                       ErrorCode = 4022  // payload too large
	ErrTooManyMessages                            ErrorCode = 4023  // too many messages
	ErrEmptyMessagePayload                        ErrorCode = 4024  // empty payload
	ErrInvalidMessagePayloadLength                ErrorCode = 4025  // bad payload length
	ErrCannotReadMessageChecksum                  ErrorCode = 4026  // decode
	ErrInvalidMessageChecksum                     ErrorCode = 4027  // frame checksum mismatch
	ErrInvalidKeyValueLength                      ErrorCode = 4028  // bad key/value length
	ErrCommandLengthError                         ErrorCode = 4029  // bad command length
	ErrInvalidSegmentsCount                       ErrorCode = 4030  // bad segments count
	ErrNonZeroOffset                              ErrorCode = 4031  // offset field not zero
	ErrNonZeroTimestamp                           ErrorCode = 4032  // timestamp field not zero
	ErrMissingIndex                               ErrorCode = 4033  // missing index
	ErrInvalidIndexesByteSize                     ErrorCode = 4034  // bad index size
	ErrInvalidIndexesCount                        ErrorCode = 4035  // bad index count
	ErrInvalidMessagesSize                        ErrorCode = 4036  // bad messages size
	ErrTooSmallMessage                            ErrorCode = 4037  // message too small
	ErrInvalidMessageTimestampDelta               ErrorCode = 4038  // origin timestamps of one batch span more than u32 microseconds
	ErrInvalidBatchChecksum                       ErrorCode = 4039  // batch checksum mismatch
	ErrInvalidHeaderKind                          ErrorCode = 4040  // unknown header kind code
	ErrUnsupportedOptionKey                       ErrorCode = 4041  // option key not accepted for this command
	ErrInvalidOptionValue                         ErrorCode = 4042  // option value rejected
	ErrOptionsBlockTooLarge                       ErrorCode = 4043  // options block over 1024 entries or 100 000 bytes
	ErrCannotSendMessagesDueToClientDisconnection ErrorCode = 4050  // producer
	ErrBackgroundSendError                        ErrorCode = 4051  // producer
	ErrBackgroundSendTimeout                      ErrorCode = 4052  // producer
	ErrBackgroundSendBufferFull                   ErrorCode = 4053  // producer
	ErrBackgroundWorkerDisconnected               ErrorCode = 4054  // producer
	ErrBackgroundSendBufferOverflow               ErrorCode = 4055  // producer
	ErrProducerSendFailed                         ErrorCode = 4056  // producer
	ErrProducerClosed                             ErrorCode = 4057  // producer
	ErrInvalidOffset                              ErrorCode = 4100  // consumer offset beyond the partition's newest offset (or partition empty)
	ErrInvalidReservedField                       ErrorCode = 4101  // reserved field not zero
	ErrConsumerGroupIdNotFound                    ErrorCode = 5000  // consumer group not found
	ErrInvalidConsumerGroupId                     ErrorCode = 5002  // bad group id
	ErrConsumerGroupNameNotFound                  ErrorCode = 5003  // group not found by name (legacy)
	ErrConsumerGroupNameAlreadyExists             ErrorCode = 5004  // group name taken in the topic
	ErrInvalidConsumerGroupName                   ErrorCode = 5005  // bad group name
	ErrConsumerGroupMemberNotFound                ErrorCode = 5006  // caller is not a member of the group
	ErrCannotCreateConsumerGroupInfo              ErrorCode = 5007  // storage
	ErrCannotDeleteConsumerGroupInfo              ErrorCode = 5008  // storage
	ErrConsumerGroupPartitionNotOwned             ErrorCode = 5009  // member does not own the partition at this generation
	ErrMissingBaseOffsetRetainedMessageBatch      ErrorCode = 6000  // legacy batch format
	ErrMissingLastOffsetDeltaRetainedMessageBatch ErrorCode = 6001  // legacy batch format
	ErrMissingMaxTimestampRetainedMessageBatch    ErrorCode = 6002  // legacy batch format
	ErrMissingLengthRetainedMessageBatch          ErrorCode = 6003  // legacy batch format
	ErrMissingPayloadRetainedMessageBatch         ErrorCode = 6004  // legacy batch format
	ErrCannotReadBatchBaseOffset                  ErrorCode = 7000  // decode
	ErrCannotReadBatchLength                      ErrorCode = 7001  // decode
	ErrCannotReadLastOffsetDelta                  ErrorCode = 7002  // decode
	ErrCannotReadMaxTimestamp                     ErrorCode = 7003  // decode
	ErrCannotReadBatchPayload                     ErrorCode = 7004  // decode
	ErrInvalidConnectionString                    ErrorCode = 8000  // bad connection string
	ErrSnapshotFileCompletionFailed               ErrorCode = 9000  // snapshot could not be produced or delivered
	ErrCannotSerializeResource                    ErrorCode = 10000 // serialization
	ErrCannotDeserializeResource                  ErrorCode = 10001 // deserialization
	ErrCannotReadFile                             ErrorCode = 10002 // file I/O
	ErrCannotReadFileMetadata                     ErrorCode = 10003 // file I/O
	ErrCannotSeekFile                             ErrorCode = 10004 // file I/O
	ErrCannotAppendToFile                         ErrorCode = 10005 // file I/O
	ErrCannotWriteToFile                          ErrorCode = 10006 // file I/O
	ErrCannotOverwriteFile                        ErrorCode = 10007 // file I/O
	ErrCannotDeleteFile                           ErrorCode = 10008 // file I/O
	ErrCannotSyncFile                             ErrorCode = 10009 // file I/O
	ErrCannotReadIndexOffset                      ErrorCode = 10010 // index
	ErrCannotReadIndexPosition                    ErrorCode = 10011 // index
	ErrCannotReadIndexTimestamp                   ErrorCode = 10012 // index
	ErrTimestampOutOfRange                        ErrorCode = 10013 // timestamp out of range
	ErrShardNotFound                              ErrorCode = 11000 // no shard owns the partition
	ErrShardCommunicationError                    ErrorCode = 11001 // inter-shard failure
	ErrCannotBindToSocket                         ErrorCode = 12000 // bind failed
	ErrTaskTimeout                                ErrorCode = 12001 // task timeout
	ErrIoError                                    ErrorCode = 13000 // I/O error
	ErrAlreadyAuthenticated                       ErrorCode = 14000 // session already bound on this client object
	ErrInvalidSession                             ErrorCode = 14001 // session value 0 received
	ErrIncompatibleProtocolVersion                ErrorCode = 14003 // client protocol version outside the server's window
)

var errorNames = map[ErrorCode]string{
	1:     "Error",
	2:     "InvalidConfiguration",
	3:     "InvalidCommand",
	4:     "InvalidFormat",
	5:     "FeatureUnavailable",
	6:     "InvalidIdentifier",
	7:     "InvalidVersion",
	8:     "Disconnected",
	9:     "CannotEstablishConnection",
	10:    "CannotCreateBaseDirectory",
	11:    "CannotCreateRuntimeDirectory",
	12:    "CannotRemoveRuntimeDirectory",
	13:    "CannotCreateStateDirectory",
	14:    "StateFileNotFound",
	15:    "StateFileCorrupted",
	16:    "InvalidStateEntryChecksum",
	19:    "CannotOpenDatabase",
	20:    "ResourceNotFound",
	21:    "CannotCloseWebSocketConnection",
	30:    "StaleClient",
	31:    "TcpError",
	32:    "QuicError",
	33:    "InvalidServerAddress",
	34:    "InvalidClientAddress",
	35:    "InvalidIpAddress",
	36:    "HttpError",
	37:    "InvalidApiUrl",
	40:    "Unauthenticated",
	41:    "Unauthorized",
	42:    "InvalidCredentials",
	43:    "InvalidUsername",
	44:    "InvalidPassword",
	45:    "InvalidUserStatus",
	46:    "UserAlreadyExists",
	47:    "UserInactive",
	48:    "CannotDeleteUser",
	49:    "CannotChangePermissions",
	50:    "InvalidPersonalAccessTokenName",
	51:    "PersonalAccessTokenAlreadyExists",
	52:    "PersonalAccessTokensLimitReached",
	53:    "InvalidPersonalAccessToken",
	54:    "PersonalAccessTokenExpired",
	55:    "UsersLimitReached",
	56:    "InvalidPersonalAccessTokenExpiry",
	57:    "TransientNotCommitted",
	58:    "TransientNotAccepted",
	59:    "RequestAlreadyApplied",
	61:    "NotConnected",
	63:    "ClientShutdown",
	64:    "InvalidTlsDomain",
	65:    "InvalidTlsCertificatePath",
	66:    "InvalidTlsCertificate",
	67:    "FailedToAddCertificate",
	70:    "InvalidEncryptionKey",
	71:    "CannotEncryptData",
	72:    "CannotDecryptData",
	73:    "InvalidJwtAlgorithm",
	74:    "InvalidJwtSecret",
	75:    "JwtMissing",
	76:    "CannotGenerateJwt",
	77:    "AccessTokenMissing",
	78:    "InvalidAccessToken",
	79:    "CannotFetchJwks",
	80:    "InvalidSizeBytes",
	81:    "InvalidUtf8",
	82:    "InvalidNumberEncoding",
	83:    "InvalidBooleanValue",
	84:    "InvalidNumberValue",
	100:   "ClientNotFound",
	101:   "InvalidClientId",
	206:   "ConnectionClosed",
	209:   "CannotParseHeaderKind",
	300:   "HttpResponseError",
	301:   "InvalidHttpRequest",
	302:   "InvalidJsonResponse",
	303:   "InvalidBytesResponse",
	304:   "EmptyResponse",
	305:   "CannotCreateEndpoint",
	306:   "CannotParseUrl",
	400:   "WebSocketError",
	401:   "WebSocketConnectionError",
	402:   "WebSocketCloseError",
	403:   "WebSocketReceiveError",
	404:   "WebSocketSendError",
	1000:  "CannotCreateStreamsDirectory",
	1001:  "CannotCreateStreamDirectory",
	1002:  "CannotCreateStreamInfo",
	1003:  "CannotUpdateStreamInfo",
	1004:  "CannotOpenStreamInfo",
	1005:  "CannotReadStreamInfo",
	1006:  "CannotCreateStream",
	1007:  "CannotDeleteStream",
	1008:  "CannotDeleteStreamDirectory",
	1009:  "StreamIdNotFound",
	1010:  "StreamNameNotFound",
	1011:  "StreamDirectoryNotFound",
	1012:  "StreamNameAlreadyExists",
	1013:  "InvalidStreamName",
	1014:  "InvalidStreamId",
	1015:  "CannotReadStreams",
	1019:  "InvalidTopicSize",
	1020:  "TooManyStreams",
	2000:  "CannotCreateTopicsDirectory",
	2001:  "CannotCreateTopicDirectory",
	2002:  "CannotCreateTopicInfo",
	2003:  "CannotUpdateTopicInfo",
	2004:  "CannotOpenTopicInfo",
	2005:  "CannotReadTopicInfo",
	2006:  "CannotCreateTopic",
	2007:  "CannotDeleteTopic",
	2008:  "CannotDeleteTopicDirectory",
	2009:  "CannotPollTopic",
	2010:  "TopicIdNotFound",
	2011:  "TopicNameNotFound",
	2013:  "TopicNameAlreadyExists",
	2014:  "InvalidTopicName",
	2015:  "TooManyPartitions",
	2016:  "InvalidTopicId",
	2017:  "CannotReadTopics",
	2018:  "InvalidReplicationFactor",
	2019:  "InvalidPartitionsCount",
	2020:  "TopicDirectoryNotFound",
	2021:  "TooManyTopics",
	3000:  "CannotCreatePartition",
	3001:  "CannotCreatePartitionsDirectory",
	3002:  "CannotCreatePartitionDirectory",
	3003:  "CannotOpenPartitionLogFile",
	3004:  "CannotReadPartitions",
	3005:  "CannotDeletePartition",
	3006:  "CannotDeletePartitionDirectory",
	3007:  "PartitionNotFound",
	3008:  "NoPartitions",
	3009:  "TopicFull",
	3010:  "CannotDeleteConsumerOffsetsDirectory",
	3011:  "CannotDeleteConsumerOffsetFile",
	3012:  "CannotCreateConsumerOffsetsDirectory",
	3013:  "PartitionIdSpaceExhausted",
	3020:  "CannotReadConsumerOffsets",
	3021:  "ConsumerOffsetNotFound",
	3022:  "NotResolvedConsumer",
	3023:  "CannotOpenConsumerOffsetsFile",
	4000:  "SegmentNotFound",
	4001:  "SegmentClosed",
	4002:  "InvalidSegmentSize",
	4003:  "CannotCreateSegmentLogFile",
	4004:  "CannotCreateSegmentIndexFile",
	4005:  "CannotCreateSegmentTimeIndexFile",
	4006:  "CannotSaveMessagesToSegment",
	4007:  "CannotSaveIndexToSegment",
	4008:  "CannotSaveTimeIndexToSegment",
	4009:  "InvalidMessagesCount",
	4010:  "CannotAppendMessage",
	4011:  "CannotReadMessage",
	4012:  "CannotReadMessageId",
	4013:  "CannotReadMessageState",
	4014:  "CannotReadMessageTimestamp",
	4015:  "CannotReadHeadersLength",
	4016:  "CannotReadHeadersPayload",
	4017:  "TooBigUserHeaders",
	4018:  "InvalidHeaderKey",
	4019:  "InvalidHeaderValue",
	4020:  "CannotReadMessageLength",
	4021:  "CannotReadMessagePayload",
	4022:  "TooBigMessagePayload",
	4023:  "TooManyMessages",
	4024:  "EmptyMessagePayload",
	4025:  "InvalidMessagePayloadLength",
	4026:  "CannotReadMessageChecksum",
	4027:  "InvalidMessageChecksum",
	4028:  "InvalidKeyValueLength",
	4029:  "CommandLengthError",
	4030:  "InvalidSegmentsCount",
	4031:  "NonZeroOffset",
	4032:  "NonZeroTimestamp",
	4033:  "MissingIndex",
	4034:  "InvalidIndexesByteSize",
	4035:  "InvalidIndexesCount",
	4036:  "InvalidMessagesSize",
	4037:  "TooSmallMessage",
	4038:  "InvalidMessageTimestampDelta",
	4039:  "InvalidBatchChecksum",
	4040:  "InvalidHeaderKind",
	4041:  "UnsupportedOptionKey",
	4042:  "InvalidOptionValue",
	4043:  "OptionsBlockTooLarge",
	4050:  "CannotSendMessagesDueToClientDisconnection",
	4051:  "BackgroundSendError",
	4052:  "BackgroundSendTimeout",
	4053:  "BackgroundSendBufferFull",
	4054:  "BackgroundWorkerDisconnected",
	4055:  "BackgroundSendBufferOverflow",
	4056:  "ProducerSendFailed",
	4057:  "ProducerClosed",
	4100:  "InvalidOffset",
	4101:  "InvalidReservedField",
	5000:  "ConsumerGroupIdNotFound",
	5002:  "InvalidConsumerGroupId",
	5003:  "ConsumerGroupNameNotFound",
	5004:  "ConsumerGroupNameAlreadyExists",
	5005:  "InvalidConsumerGroupName",
	5006:  "ConsumerGroupMemberNotFound",
	5007:  "CannotCreateConsumerGroupInfo",
	5008:  "CannotDeleteConsumerGroupInfo",
	5009:  "ConsumerGroupPartitionNotOwned",
	6000:  "MissingBaseOffsetRetainedMessageBatch",
	6001:  "MissingLastOffsetDeltaRetainedMessageBatch",
	6002:  "MissingMaxTimestampRetainedMessageBatch",
	6003:  "MissingLengthRetainedMessageBatch",
	6004:  "MissingPayloadRetainedMessageBatch",
	7000:  "CannotReadBatchBaseOffset",
	7001:  "CannotReadBatchLength",
	7002:  "CannotReadLastOffsetDelta",
	7003:  "CannotReadMaxTimestamp",
	7004:  "CannotReadBatchPayload",
	8000:  "InvalidConnectionString",
	9000:  "SnapshotFileCompletionFailed",
	10000: "CannotSerializeResource",
	10001: "CannotDeserializeResource",
	10002: "CannotReadFile",
	10003: "CannotReadFileMetadata",
	10004: "CannotSeekFile",
	10005: "CannotAppendToFile",
	10006: "CannotWriteToFile",
	10007: "CannotOverwriteFile",
	10008: "CannotDeleteFile",
	10009: "CannotSyncFile",
	10010: "CannotReadIndexOffset",
	10011: "CannotReadIndexPosition",
	10012: "CannotReadIndexTimestamp",
	10013: "TimestampOutOfRange",
	11000: "ShardNotFound",
	11001: "ShardCommunicationError",
	12000: "CannotBindToSocket",
	12001: "TaskTimeout",
	13000: "IoError",
	14000: "AlreadyAuthenticated",
	14001: "InvalidSession",
	14003: "IncompatibleProtocolVersion",
}

var errorMeanings = map[ErrorCode]string{
	1:     "generic error; also what SDKs map an unknown code to",
	2:     "bad configuration",
	3:     "request could not be decoded or is not supported in this form",
	4:     "malformed input",
	5:     "operation not available on this server",
	6:     "identifier could not be resolved or converted",
	7:     "unparsable version string",
	8:     "connection lost",
	9:     "could not connect",
	10:    "filesystem",
	11:    "filesystem",
	12:    "filesystem",
	13:    "filesystem",
	14:    "state file missing",
	15:    "state file corrupted",
	16:    "state entry checksum mismatch",
	19:    "storage",
	20:    "a referenced resource does not exist",
	21:    "WebSocket close failed",
	30:    "client evicted for missing heartbeats",
	31:    "TCP I/O failure",
	32:    "QUIC I/O failure",
	33:    "bad server address",
	34:    "bad client address",
	35:    "bad IP address",
	36:    "HTTP failure",
	37:    "bad HTTP URL",
	40:    "caller is not logged in",
	41:    "caller lacks the permission",
	42:    "wrong username or password",
	43:    "username outside 3..=50 bytes",
	44:    "password outside 3..=100 bytes",
	45:    "unknown user status",
	46:    "username taken",
	47:    "user is inactive",
	48:    "user cannot be deleted (root)",
	49:    "permissions cannot be changed (root)",
	50:    "bad token name",
	51:    "token name already used by this user",
	52:    "user holds the maximum number of tokens",
	53:    "token unknown or expired",
	54:    "token expired",
	55:    "too many users",
	56:    "token would already be expired",
	57:    "outcome unknown; replay the same request on the same connection",
	58:    "not admitted; may be re-issued anywhere",
	59:    "duplicate request whose reply is no longer cached",
	61:    "not connected",
	63:    "client shut down",
	64:    "TLS",
	65:    "TLS",
	66:    "TLS",
	67:    "TLS",
	70:    "encryption",
	71:    "encryption",
	72:    "decryption failed",
	73:    "JWT",
	74:    "JWT",
	75:    "JWT",
	76:    "JWT",
	77:    "JWT",
	78:    "JWT",
	79:    "JWKS",
	80:    "bad byte size",
	81:    "invalid UTF-8",
	82:    "bad number encoding",
	83:    "bad boolean",
	84:    "bad number",
	100:   "client not found",
	101:   "bad client id",
	206:   "peer closed the connection",
	209:   "bad header kind name",
	300:   "HTTP error response",
	301:   "bad HTTP request",
	302:   "bad JSON",
	303:   "bad bytes response",
	304:   "reply shorter than a header",
	305:   "QUIC endpoint",
	306:   "bad URL",
	400:   "WebSocket failure",
	401:   "WebSocket connect failure",
	402:   "WebSocket close failure",
	403:   "WebSocket receive failure",
	404:   "WebSocket send failure",
	1000:  "storage",
	1001:  "storage",
	1002:  "storage",
	1003:  "storage",
	1004:  "storage",
	1005:  "storage",
	1006:  "storage",
	1007:  "storage",
	1008:  "storage",
	1009:  "stream not found (by id or name)",
	1010:  "stream not found by name (legacy)",
	1011:  "storage",
	1012:  "stream name taken",
	1013:  "bad stream name",
	1014:  "bad stream id",
	1015:  "storage",
	1019:  "max topic size smaller than the segment size",
	1020:  "stream id space exhausted",
	2000:  "storage",
	2001:  "storage",
	2002:  "storage",
	2003:  "storage",
	2004:  "storage",
	2005:  "storage",
	2006:  "storage",
	2007:  "storage",
	2008:  "storage",
	2009:  "poll failed",
	2010:  "topic not found (by id or name)",
	2011:  "topic not found by name (legacy)",
	2013:  "topic name taken in the stream",
	2014:  "bad topic name",
	2015:  "partition count per request out of range",
	2016:  "bad topic id",
	2017:  "storage",
	2018:  "bad replication factor",
	2019:  "partition count not applicable",
	2020:  "storage",
	2021:  "topic id space of the stream exhausted",
	3000:  "storage",
	3001:  "storage",
	3002:  "storage",
	3003:  "storage",
	3004:  "storage",
	3005:  "storage",
	3006:  "storage",
	3007:  "partition not found in an existing topic",
	3008:  "topic has no partitions",
	3009:  "topic full",
	3010:  "storage",
	3011:  "storage",
	3012:  "storage",
	3013:  "partition ids would reach 1 000 000",
	3020:  "storage",
	3021:  "no stored offset for this consumer",
	3022:  "consumer could not be resolved",
	3023:  "storage",
	4000:  "segment not found",
	4001:  "segment closed",
	4002:  "bad segment size",
	4003:  "storage",
	4004:  "storage",
	4005:  "storage",
	4006:  "storage",
	4007:  "storage",
	4008:  "storage",
	4009:  "bad message count",
	4010:  "append failed",
	4011:  "read failed",
	4012:  "decode",
	4013:  "decode",
	4014:  "decode",
	4015:  "decode",
	4016:  "decode",
	4017:  "user headers too large",
	4018:  "bad header key",
	4019:  "bad header value",
	4020:  "decode",
	4021:  "decode",
	4022:  "payload too large",
	4023:  "too many messages",
	4024:  "empty payload",
	4025:  "bad payload length",
	4026:  "decode",
	4027:  "frame checksum mismatch",
	4028:  "bad key/value length",
	4029:  "bad command length",
	4030:  "bad segments count",
	4031:  "offset field not zero",
	4032:  "timestamp field not zero",
	4033:  "missing index",
	4034:  "bad index size",
	4035:  "bad index count",
	4036:  "bad messages size",
	4037:  "message too small",
	4038:  "origin timestamps of one batch span more than u32 microseconds",
	4039:  "batch checksum mismatch",
	4040:  "unknown header kind code",
	4041:  "option key not accepted for this command",
	4042:  "option value rejected",
	4043:  "options block over 1024 entries or 100 000 bytes",
	4050:  "producer",
	4051:  "producer",
	4052:  "producer",
	4053:  "producer",
	4054:  "producer",
	4055:  "producer",
	4056:  "producer",
	4057:  "producer",
	4100:  "consumer offset beyond the partition's newest offset (or partition empty)",
	4101:  "reserved field not zero",
	5000:  "consumer group not found",
	5002:  "bad group id",
	5003:  "group not found by name (legacy)",
	5004:  "group name taken in the topic",
	5005:  "bad group name",
	5006:  "caller is not a member of the group",
	5007:  "storage",
	5008:  "storage",
	5009:  "member does not own the partition at this generation",
	6000:  "legacy batch format",
	6001:  "legacy batch format",
	6002:  "legacy batch format",
	6003:  "legacy batch format",
	6004:  "legacy batch format",
	7000:  "decode",
	7001:  "decode",
	7002:  "decode",
	7003:  "decode",
	7004:  "decode",
	8000:  "bad connection string",
	9000:  "snapshot could not be produced or delivered",
	10000: "serialization",
	10001: "deserialization",
	10002: "file I/O",
	10003: "file I/O",
	10004: "file I/O",
	10005: "file I/O",
	10006: "file I/O",
	10007: "file I/O",
	10008: "file I/O",
	10009: "file I/O",
	10010: "index",
	10011: "index",
	10012: "index",
	10013: "timestamp out of range",
	11000: "no shard owns the partition",
	11001: "inter-shard failure",
	12000: "bind failed",
	12001: "task timeout",
	13000: "I/O error",
	14000: "session already bound on this client object",
	14001: "session value 0 received",
	14003: "client protocol version outside the server's window",
}
