package wire

// User requests (client-plane.md 8.2; commands.md "Users").

// GetUser (31): [user Identifier].
type GetUser struct{ User Identifier }

func (GetUser) Code() CommandCode { return CodeGetUser }

func (x GetUser) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.User) }

func (x *GetUser) Decode(body []byte) error {
	r := NewReader(body)
	x.User = r.Identifier("user")
	return r.Err()
}

func (x GetUser) Validate() error { return x.User.Validate() }

// GetUsers (32): empty body.
type GetUsers struct{ Empty }

func (GetUsers) Code() CommandCode { return CodeGetUsers }

// CreateUser (33, operation 141):
// [username Name][password Str8][status u8][has_permissions u8]
// ([permissions_len u32][Permissions] when has_permissions is 1)[OptBlock]
// (8.2.3). Status is carried as sent; the server maps values other than 1
// and 2 to active. A nil Permissions encodes has_permissions 0.
type CreateUser struct {
	Username    string
	Password    string
	Status      uint8
	Permissions *Permissions
	Options     Options
}

func (CreateUser) Code() CommandCode { return CodeCreateUser }

func (x CreateUser) AppendTo(b []byte) []byte {
	b = AppendName(b, x.Username)
	b = AppendStr8(b, x.Password)
	b = append(b, x.Status)
	b = reqAppendPermissions(b, x.Permissions)
	return AppendOptions(b, x.Options)
}

func (x *CreateUser) Decode(body []byte) error {
	r := NewReader(body)
	v := CreateUser{
		Username: r.Name("username"),
		Password: r.Str8("password"),
		Status:   r.U8("status"),
	}
	perms, err := reqReadPermissions(r)
	if err != nil {
		return err
	}
	v.Permissions = perms
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x CreateUser) Validate() error {
	return reqFirstErr(
		reqCheckName("username", x.Username),
		reqCheckStr8("password", x.Password),
		x.Options.Validate(),
	)
}

// DeleteUser (34, operation 143): [user Identifier].
type DeleteUser struct{ User Identifier }

func (DeleteUser) Code() CommandCode { return CodeDeleteUser }

func (x DeleteUser) AppendTo(b []byte) []byte { return AppendIdentifier(b, x.User) }

func (x *DeleteUser) Decode(body []byte) error {
	r := NewReader(body)
	x.User = r.Identifier("user")
	return r.Err()
}

func (x DeleteUser) Validate() error { return x.User.Validate() }

// UpdateUser (35, operation 142): [user Identifier][has_username u8]
// ([username Name] when 1)[has_status u8]([status u8] when 1)[OptBlock]
// (8.2.5). A flag other than exactly 1 means the field is absent (18 #27);
// nil fields encode flag 0.
type UpdateUser struct {
	User     Identifier
	Username *string
	Status   *uint8
	Options  Options
}

func (UpdateUser) Code() CommandCode { return CodeUpdateUser }

func (x UpdateUser) AppendTo(b []byte) []byte {
	b = AppendIdentifier(b, x.User)
	if x.Username != nil {
		b = AppendName(append(b, 1), *x.Username)
	} else {
		b = append(b, 0)
	}
	if x.Status != nil {
		b = append(b, 1, *x.Status)
	} else {
		b = append(b, 0)
	}
	return AppendOptions(b, x.Options)
}

func (x *UpdateUser) Decode(body []byte) error {
	r := NewReader(body)
	v := UpdateUser{User: r.Identifier("user")}
	if r.U8("has_username") == 1 {
		name := r.Name("username")
		v.Username = &name
	}
	if r.U8("has_status") == 1 {
		status := r.U8("status")
		v.Status = &status
	}
	if err := reqDecodeOptions(r, &v.Options); err != nil {
		return err
	}
	*x = v
	return nil
}

func (x UpdateUser) Validate() error {
	var nameErr error
	if x.Username != nil {
		nameErr = reqCheckName("username", *x.Username)
	}
	return reqFirstErr(x.User.Validate(), nameErr, x.Options.Validate())
}

// UpdatePermissions (36, operation 145): [user Identifier][has_permissions u8]
// ([permissions_len u32][Permissions] when 1) (8.2.6). A nil Permissions
// clears the user's grants.
type UpdatePermissions struct {
	User        Identifier
	Permissions *Permissions
}

func (UpdatePermissions) Code() CommandCode { return CodeUpdatePermissions }

func (x UpdatePermissions) AppendTo(b []byte) []byte {
	return reqAppendPermissions(AppendIdentifier(b, x.User), x.Permissions)
}

func (x *UpdatePermissions) Decode(body []byte) error {
	r := NewReader(body)
	user := r.Identifier("user")
	perms, err := reqReadPermissions(r)
	if err != nil {
		return err
	}
	*x = UpdatePermissions{User: user, Permissions: perms}
	return nil
}

func (x UpdatePermissions) Validate() error { return x.User.Validate() }

// ChangePassword (37, operation 144): [user Identifier][current Str8][new Str8].
type ChangePassword struct {
	User            Identifier
	CurrentPassword string
	NewPassword     string
}

func (ChangePassword) Code() CommandCode { return CodeChangePassword }

func (x ChangePassword) AppendTo(b []byte) []byte {
	b = AppendIdentifier(b, x.User)
	b = AppendStr8(b, x.CurrentPassword)
	return AppendStr8(b, x.NewPassword)
}

func (x *ChangePassword) Decode(body []byte) error {
	r := NewReader(body)
	*x = ChangePassword{
		User:            r.Identifier("user"),
		CurrentPassword: r.Str8("current_password"),
		NewPassword:     r.Str8("new_password"),
	}
	return r.Err()
}

func (x ChangePassword) Validate() error {
	return reqFirstErr(
		x.User.Validate(),
		reqCheckStr8("current_password", x.CurrentPassword),
		reqCheckStr8("new_password", x.NewPassword),
	)
}

// LogoutUser (39, operation 3 Logout): empty body (5.5).
type LogoutUser struct{ Empty }

func (LogoutUser) Code() CommandCode { return CodeLogoutUser }
