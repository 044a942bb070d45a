package wire

// Login-register bodies (client-plane.md 5.2; connection-lifecycle.md
// "Login-register"). Both ride operation 1 (Register); the command code is
// not on the wire, so the server decodes with DecodeRegister and tells the
// two shapes apart by trying both.

// ClientVersionInfo is the prefix of both Register bodies:
// [protocol_version u32][sdk_name Name][sdk_version Name].
type ClientVersionInfo struct {
	Version    Version
	SDKName    string
	SDKVersion string
}

// AppendTo appends the prefix.
func (c ClientVersionInfo) AppendTo(b []byte) []byte {
	b = AppendU32(b, uint32(c.Version))
	b = AppendName(b, c.SDKName)
	return AppendName(b, c.SDKVersion)
}

// Validate checks the SDK name and version are Names (11.1).
func (c ClientVersionInfo) Validate() error {
	return reqFirstErr(reqCheckName("sdk_name", c.SDKName), reqCheckName("sdk_version", c.SDKVersion))
}

func reqReadClientVersionInfo(r *Reader) ClientVersionInfo {
	return ClientVersionInfo{
		Version:    Version(r.U32("protocol_version")),
		SDKName:    r.Name("sdk_name"),
		SDKVersion: r.Name("sdk_version"),
	}
}

// LoginRegister (40): ClientVersionInfo, then the password shape
// [username Name][password Str8][context Str32]. Trailing bytes after the
// context are ignored (5.2). Context is optional client metadata (the SDKs
// send it empty) and must be UTF-8.
type LoginRegister struct {
	ClientInfo ClientVersionInfo
	Username   string
	Password   string
	Context    string
}

func (LoginRegister) Code() CommandCode { return CodeLoginRegister }

func (x LoginRegister) AppendTo(b []byte) []byte {
	b = x.ClientInfo.AppendTo(b)
	b = AppendName(b, x.Username)
	b = AppendStr8(b, x.Password)
	return AppendStr32(b, x.Context)
}

func (x *LoginRegister) Decode(body []byte) error {
	r := NewReader(body)
	info := reqReadClientVersionInfo(r)
	if err := r.Err(); err != nil {
		return err
	}
	return x.decodeShape(info, r)
}

// decodeShape reads the password shape after the prefix.
func (x *LoginRegister) decodeShape(info ClientVersionInfo, r *Reader) error {
	*x = LoginRegister{
		ClientInfo: info,
		Username:   r.Name("username"),
		Password:   r.Str8("password"),
		Context:    r.Str32("context"),
	}
	return r.Err()
}

func (x LoginRegister) Validate() error {
	return reqFirstErr(
		x.ClientInfo.Validate(),
		reqCheckName("username", x.Username),
		reqCheckStr8("password", x.Password),
		reqCheckStr32("context", x.Context),
	)
}

// LoginRegisterWithPAT (45): ClientVersionInfo, then the token shape
// [token Str8][context Str32]; trailing bytes ignored.
type LoginRegisterWithPAT struct {
	ClientInfo ClientVersionInfo
	Token      string
	Context    string
}

func (LoginRegisterWithPAT) Code() CommandCode { return CodeLoginRegisterWithPAT }

func (x LoginRegisterWithPAT) AppendTo(b []byte) []byte {
	b = x.ClientInfo.AppendTo(b)
	b = AppendStr8(b, x.Token)
	return AppendStr32(b, x.Context)
}

func (x *LoginRegisterWithPAT) Decode(body []byte) error {
	r := NewReader(body)
	info := reqReadClientVersionInfo(r)
	if err := r.Err(); err != nil {
		return err
	}
	return x.decodeShape(info, r)
}

// decodeShape reads the token shape after the prefix.
func (x *LoginRegisterWithPAT) decodeShape(info ClientVersionInfo, r *Reader) error {
	*x = LoginRegisterWithPAT{
		ClientInfo: info,
		Token:      r.Str8("token"),
		Context:    r.Str32("context"),
	}
	return r.Err()
}

func (x LoginRegisterWithPAT) Validate() error {
	return reqFirstErr(
		x.ClientInfo.Validate(),
		reqCheckStr8("token", x.Token),
		reqCheckStr32("context", x.Context),
	)
}

// RegisterBody is a Register body as the server sees it: the prefix, and
// the body read in each credential shape it decodes in. Both can be set (an
// ambiguous body), or neither.
type RegisterBody struct {
	ClientInfo ClientVersionInfo
	Password   *LoginRegister        // nil unless the body decodes in the password shape
	Token      *LoginRegisterWithPAT // nil unless the body decodes in the token shape
}

// DecodeRegister decodes a Register body for the algorithm of
// client-plane.md 5.2. An error means the ClientVersionInfo prefix did not
// decode (step 1: the caller answers Eviction(MalformedLogin)); otherwise
// the caller gates the version (step 2), tries Password (step 3), then
// Token (step 4), and answers MalformedLogin when both are nil (step 5).
func DecodeRegister(body []byte) (RegisterBody, error) {
	r := NewReader(body)
	info := reqReadClientVersionInfo(r)
	if err := r.Err(); err != nil {
		return RegisterBody{}, err
	}
	out := RegisterBody{ClientInfo: info}
	rest := r.Rest()
	var pw LoginRegister
	if pw.decodeShape(info, NewReader(rest)) == nil {
		out.Password = &pw
	}
	var tok LoginRegisterWithPAT
	if tok.decodeShape(info, NewReader(rest)) == nil {
		out.Token = &tok
	}
	return out, nil
}
