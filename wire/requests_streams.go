package wire

// Stream requests (client-plane.md 8.6; commands.md "Streams").

// GetStream (200): [stream Identifier].
type GetStream struct{ Stream Identifier }

func (GetStream) Code() CommandCode { return CodeGetStream }

func (x GetStream) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.Stream) }

func (x *GetStream) Decode(body []byte) error {
	r := NewReader(body)
	x.Stream = r.Identifier("stream")
	return r.Err()
}

func (x GetStream) Validate() error { return x.Stream.Validate() }

// GetStreams (201): empty body.
type GetStreams struct{ Empty }

func (GetStreams) Code() CommandCode { return CodeGetStreams }

// CreateStream (202, operation 128): [name Name][OptBlock]. The block runs
// to the end of the body and must tile it exactly (2.9, 10.1); the stream
// catalogue is empty, so any key is S 4041 at the server.
type CreateStream struct {
	Name    string
	Options Options
}

func (CreateStream) Code() CommandCode { return CodeCreateStream }

func (x CreateStream) AppendTo(b []byte) []byte {
	return AppendOptions(AppendName(b, x.Name), x.Options)
}

func (x *CreateStream) Decode(body []byte) error {
	r := NewReader(body)
	v := CreateStream{Name: r.Name("name")}
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x CreateStream) Validate() error {
	return reqFirstErr(reqCheckName("name", x.Name), x.Options.Validate())
}

// DeleteStream (203, operation 130): [stream Identifier].
type DeleteStream struct{ Stream Identifier }

func (DeleteStream) Code() CommandCode { return CodeDeleteStream }

func (x DeleteStream) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.Stream) }

func (x *DeleteStream) Decode(body []byte) error {
	r := NewReader(body)
	x.Stream = r.Identifier("stream")
	return r.Err()
}

func (x DeleteStream) Validate() error { return x.Stream.Validate() }

// UpdateStream (204, operation 129): [stream Identifier][name Name][OptBlock].
// The name is always replaced.
type UpdateStream struct {
	Stream  Identifier
	Name    string
	Options Options
}

func (UpdateStream) Code() CommandCode { return CodeUpdateStream }

func (x UpdateStream) AppendTo(b []byte) []byte {
	b = AppendIdentifier(b, x.Stream)
	return AppendOptions(AppendName(b, x.Name), x.Options)
}

func (x *UpdateStream) Decode(body []byte) error {
	r := NewReader(body)
	v := UpdateStream{Stream: r.Identifier("stream"), Name: r.Name("name")}
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x UpdateStream) Validate() error {
	return reqFirstErr(x.Stream.Validate(), reqCheckName("name", x.Name), x.Options.Validate())
}

// PurgeStream (205, operation 131): [stream Identifier].
type PurgeStream struct{ Stream Identifier }

func (PurgeStream) Code() CommandCode { return CodePurgeStream }

func (x PurgeStream) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.Stream) }

func (x *PurgeStream) Decode(body []byte) error {
	r := NewReader(body)
	x.Stream = r.Identifier("stream")
	return r.Err()
}

func (x PurgeStream) Validate() error { return x.Stream.Validate() }
