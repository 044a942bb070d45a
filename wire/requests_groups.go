package wire

// Consumer group requests (client-plane.md 8.10; commands.md "Consumer
// groups"). Every command but Create addresses [stream][topic][group].

// GetConsumerGroup (600): [stream][topic][group].
type GetConsumerGroup struct{ Stream, Topic, Group Identifier }

func (GetConsumerGroup) Code() CommandCode { return CodeGetConsumerGroup }

func (x GetConsumerGroup) AppendTo(b []byte) []byte {
	return reqAppendIDs(b, x.Stream, x.Topic, x.Group)
}

func (x *GetConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = GetConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group")}
	return r.Err()
}

func (x GetConsumerGroup) Validate() error { return reqCheckIDs(x.Stream, x.Topic, x.Group) }

// GetConsumerGroups (601): [stream][topic].
type GetConsumerGroups struct{ Stream, Topic Identifier }

func (GetConsumerGroups) Code() CommandCode { return CodeGetConsumerGroups }

func (x GetConsumerGroups) AppendTo(b []byte) []byte { return reqAppendIDs(b, x.Stream, x.Topic) }

func (x *GetConsumerGroups) Decode(body []byte) error {
	r := NewReader(body)
	*x = GetConsumerGroups{Stream: r.Identifier("stream"), Topic: r.Identifier("topic")}
	return r.Err()
}

func (x GetConsumerGroups) Validate() error { return reqCheckIDs(x.Stream, x.Topic) }

// CreateConsumerGroup (602, operation 139): [stream][topic][name Name].
type CreateConsumerGroup struct {
	Stream Identifier
	Topic  Identifier
	Name   string
}

func (CreateConsumerGroup) Code() CommandCode { return CodeCreateConsumerGroup }

func (x CreateConsumerGroup) AppendTo(b []byte) []byte {
	return AppendName(reqAppendIDs(b, x.Stream, x.Topic), x.Name)
}

func (x *CreateConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = CreateConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Name: r.Name("name")}
	return r.Err()
}

func (x CreateConsumerGroup) Validate() error {
	return reqFirstErr(reqCheckIDs(x.Stream, x.Topic), reqCheckName("name", x.Name))
}

// DeleteConsumerGroup (603, operation 140): [stream][topic][group].
type DeleteConsumerGroup struct{ Stream, Topic, Group Identifier }

func (DeleteConsumerGroup) Code() CommandCode { return CodeDeleteConsumerGroup }

func (x DeleteConsumerGroup) AppendTo(b []byte) []byte {
	return reqAppendIDs(b, x.Stream, x.Topic, x.Group)
}

func (x *DeleteConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = DeleteConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group")}
	return r.Err()
}

func (x DeleteConsumerGroup) Validate() error { return reqCheckIDs(x.Stream, x.Topic, x.Group) }

// JoinConsumerGroup (604, operation 148): [stream][topic][group].
type JoinConsumerGroup struct{ Stream, Topic, Group Identifier }

func (JoinConsumerGroup) Code() CommandCode { return CodeJoinConsumerGroup }

func (x JoinConsumerGroup) AppendTo(b []byte) []byte {
	return reqAppendIDs(b, x.Stream, x.Topic, x.Group)
}

func (x *JoinConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = JoinConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group")}
	return r.Err()
}

func (x JoinConsumerGroup) Validate() error { return reqCheckIDs(x.Stream, x.Topic, x.Group) }

// LeaveConsumerGroup (605, operation 149): [stream][topic][group].
type LeaveConsumerGroup struct{ Stream, Topic, Group Identifier }

func (LeaveConsumerGroup) Code() CommandCode { return CodeLeaveConsumerGroup }

func (x LeaveConsumerGroup) AppendTo(b []byte) []byte {
	return reqAppendIDs(b, x.Stream, x.Topic, x.Group)
}

func (x *LeaveConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = LeaveConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group")}
	return r.Err()
}

func (x LeaveConsumerGroup) Validate() error { return reqCheckIDs(x.Stream, x.Topic, x.Group) }

// SyncConsumerGroup (606): [stream][topic][group]; read-only.
type SyncConsumerGroup struct{ Stream, Topic, Group Identifier }

func (SyncConsumerGroup) Code() CommandCode { return CodeSyncConsumerGroup }

func (x SyncConsumerGroup) AppendTo(b []byte) []byte {
	return reqAppendIDs(b, x.Stream, x.Topic, x.Group)
}

func (x *SyncConsumerGroup) Decode(body []byte) error {
	r := NewReader(body)
	*x = SyncConsumerGroup{Stream: r.Identifier("stream"), Topic: r.Identifier("topic"), Group: r.Identifier("group")}
	return r.Err()
}

func (x SyncConsumerGroup) Validate() error { return reqCheckIDs(x.Stream, x.Topic, x.Group) }
