package wire

// Personal access token requests (client-plane.md 8.3).

// GetPersonalAccessTokens (41): empty body.
type GetPersonalAccessTokens struct{ Empty }

func (GetPersonalAccessTokens) Code() CommandCode { return CodeGetPersonalAccessTokens }

// CreatePersonalAccessToken (42, operation 146): [name Name][expiry u64].
// Expiry is a duration in µs, 0 and u64::MAX meaning never; it is a plain
// u64 on the wire (the Go SDK's shifted 32-bit argument is not
// special-cased, 8.3.2).
type CreatePersonalAccessToken struct {
	Name   string
	Expiry uint64
}

func (CreatePersonalAccessToken) Code() CommandCode { return CodeCreatePersonalAccessToken }

func (x CreatePersonalAccessToken) AppendTo(b []byte) []byte {
	return AppendU64(AppendName(b, x.Name), x.Expiry)
}

func (x *CreatePersonalAccessToken) Decode(body []byte) error {
	r := NewReader(body)
	*x = CreatePersonalAccessToken{Name: r.Name("name"), Expiry: r.U64("expiry")}
	return r.Err()
}

func (x CreatePersonalAccessToken) Validate() error { return reqCheckName("name", x.Name) }

// DeletePersonalAccessToken (43, operation 147): [name Name].
type DeletePersonalAccessToken struct{ Name string }

func (DeletePersonalAccessToken) Code() CommandCode { return CodeDeletePersonalAccessToken }

func (x DeletePersonalAccessToken) AppendTo(b []byte) []byte { return AppendName(b, x.Name) }

func (x *DeletePersonalAccessToken) Decode(body []byte) error {
	r := NewReader(body)
	x.Name = r.Name("name")
	return r.Err()
}

func (x DeletePersonalAccessToken) Validate() error { return reqCheckName("name", x.Name) }
