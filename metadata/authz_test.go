package metadata

import (
	"testing"

	"golang.org/x/crypto/argon2"

	"iggynode/wire"
)

// cheapHash is a valid argon2id PHC string with the smallest parameters
// VerifyPassword accepts, so authorization tests can verify passwords fast.
func cheapHash(password string) string {
	salt := []byte("cheapsalt")
	key := argon2.IDKey([]byte(password), salt, 1, 8, 1, 32)
	return "$argon2id$v=19$m=8,t=1,p=1$" + phcB64.EncodeToString(salt) + "$" + phcB64.EncodeToString(key)
}

// Users of the authorization harness.
const (
	granted = uint32(1) // holds exactly the grant of the row
	lacking = uint32(2) // holds a nearby grant that does not satisfy the rule
	target  = uint32(3) // the object of the user commands
)

// authKind says where and how a command is authorized.
type authKind uint8

const (
	authWrite    authKind = iota + 1 // metadata write: R 41 at apply
	authRead                         // metadata read: S 41
	authOnly                         // authentication only: both users succeed
	authShell                        // the shell checks Allowed(rule) (S 41)
	authNotGated                     // nothing to authorize (session, legacy, ping, flush)
)

// authHarness: stream 0 "s" with topic 0 "t" (2 partitions) and group 0
// "g"; the three users (passwords = their names) with a token "tok" each.
func authHarness(t *testing.T, grant, lack *wire.Permissions) *harness {
	t.Helper()
	h := newHarness(t)
	h.createStream("s")
	h.createTopic(wire.ID(0), "t", 2, nil)
	h.ok(wire.OpCreateConsumerGroup, wire.CreateConsumerGroup{Stream: wire.ID(0), Topic: wire.ID(0), Name: "g"}.AppendTo(nil))
	h.sealed[partitionGroup(0, 0, 0)] = 10
	for _, u := range []struct {
		id   uint32
		name string
		p    *wire.Permissions
	}{{granted, "granted", grant}, {lacking, "lacking", lack}, {target, "target", &wire.Permissions{}}} {
		h.s.addUser(&User{ID: u.id, Username: u.name, Status: wire.UserActive, PasswordHash: cheapHash(u.name), Permissions: u.p})
		h.s.addToken(h.s.users[u.id], &Token{Name: "tok", Hash: TokenHash(u.name), OwnerID: u.id})
	}
	return h
}

func global(g wire.GlobalPermissions) *wire.Permissions { return &wire.Permissions{Global: g} }

func onStream(s wire.StreamPermissions) *wire.Permissions {
	return &wire.Permissions{Streams: map[uint32]wire.StreamPermissions{0: s}}
}

func onTopic(tp wire.TopicPermissions) *wire.Permissions {
	return onStream(wire.StreamPermissions{Topics: map[uint32]wire.TopicPermissions{0: tp}})
}

// server-behaviour.md 2.4, 2.5, 2.6; client-plane.md 8, 9.5: every command
// of the catalogue with a user holding the grant it needs and one holding
// a nearby grant that is not enough, asserting the exact code and channel.
func TestPermissionTable(t *testing.T) {
	ids := func(ids ...wire.Identifier) []byte { return appendIDs(nil, ids...) }
	s0, t0, g0, u3 := wire.ID(0), wire.ID(0), wire.ID(0), wire.ID(target)
	usersManage, usersManageLack := global(wire.GlobalPermissions{ManageUsers: true}), global(wire.GlobalPermissions{ReadUsers: true})
	topicRead, topicReadLack := onTopic(wire.TopicPermissions{ReadTopic: true}), onTopic(wire.TopicPermissions{PollMessages: true, SendMessages: true})
	topicManage := onTopic(wire.TopicPermissions{ManageTopic: true})
	topicManageLack := &wire.Permissions{Streams: map[uint32]wire.StreamPermissions{0: {ReadTopics: true, ReadStream: true,
		Topics: map[uint32]wire.TopicPermissions{0: {ReadTopic: true, PollMessages: true, SendMessages: true}}}}}
	streamManage, streamManageLack := onStream(wire.StreamPermissions{ManageStream: true}),
		&wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true, ManageTopics: true}, Streams: map[uint32]wire.StreamPermissions{0: {ReadStream: true}}}
	serverRead, serverReadLack := global(wire.GlobalPermissions{ReadServers: true}), global(wire.GlobalPermissions{ManageUsers: true, ManageStreams: true})
	serverManage, serverManageLack := global(wire.GlobalPermissions{ManageServers: true}), global(wire.GlobalPermissions{ReadServers: true, ManageUsers: true, ManageStreams: true})
	poll, pollLack := onTopic(wire.TopicPermissions{PollMessages: true}), onTopic(wire.TopicPermissions{SendMessages: true})
	send, sendLack := onTopic(wire.TopicPermissions{SendMessages: true}), onStream(wire.StreamPermissions{ReadStream: true, PollMessages: true})

	rows := []struct {
		code wire.CommandCode
		kind authKind
		body func(object uint32) []byte // object: the user a user command targets

		grant, lack *wire.Permissions
		rule        Rule // authShell
		selfOK      bool // the lacking user may still act on itself (31, 37)
	}{
		{code: wire.CodePing, kind: authNotGated},
		{code: wire.CodeGetStats, kind: authShell, rule: RuleServerRead, grant: serverRead, lack: serverReadLack},
		{code: wire.CodeGetSnapshot, kind: authShell, rule: RuleServerRead, grant: serverRead, lack: serverReadLack},
		{code: wire.CodeGetClusterMetadata, kind: authNotGated},
		{code: wire.CodeDescribeOptions, kind: authOnly, body: func(uint32) []byte { return []byte{1} }},
		{code: wire.CodeGetMe, kind: authNotGated},
		{code: wire.CodeGetClient, kind: authShell, rule: RuleServerRead, grant: serverRead, lack: serverReadLack},
		{code: wire.CodeGetClients, kind: authShell, rule: RuleServerRead, grant: serverRead, lack: serverReadLack},
		{code: wire.CodeClusterAdd, kind: authShell, rule: RuleServerManage, grant: serverManage, lack: serverManageLack},
		{code: wire.CodeClusterRemove, kind: authShell, rule: RuleServerManage, grant: serverManage, lack: serverManageLack},
		{code: wire.CodeClusterReplace, kind: authShell, rule: RuleServerManage, grant: serverManage, lack: serverManageLack},
		{code: wire.CodeClusterStatus, kind: authShell, rule: RuleServerRead, grant: serverRead, lack: serverReadLack},
		{code: wire.CodeGetUser, kind: authRead, grant: global(wire.GlobalPermissions{ReadUsers: true}), lack: serverRead, selfOK: true,
			body: func(object uint32) []byte { return ids(wire.ID(object)) }},
		{code: wire.CodeGetUsers, kind: authRead, grant: global(wire.GlobalPermissions{ReadUsers: true}), lack: serverRead},
		{code: wire.CodeCreateUser, kind: authWrite, grant: usersManage, lack: usersManageLack,
			body: func(uint32) []byte { return createUserBody("newbie", "pw", 1, nil) }},
		{code: wire.CodeDeleteUser, kind: authWrite, grant: usersManage, lack: usersManageLack,
			body: func(uint32) []byte { return ids(u3) }},
		{code: wire.CodeUpdateUser, kind: authWrite, grant: usersManage, lack: usersManageLack,
			body: func(uint32) []byte { return append(ids(u3), 1, 7, 'r', 'e', 'n', 'a', 'm', 'e', 'd', 0) }},
		{code: wire.CodeUpdatePermissions, kind: authWrite, grant: usersManage, lack: usersManageLack,
			body: func(uint32) []byte { return append(ids(u3), 0) }},
		{code: wire.CodeChangePassword, kind: authWrite, grant: usersManage, lack: usersManageLack, selfOK: true,
			body: func(object uint32) []byte {
				name := map[uint32]string{granted: "granted", lacking: "lacking", target: "target"}[object]
				return wire.ChangePassword{User: wire.Named(name), CurrentPassword: name, NewPassword: "fresh"}.AppendTo(nil)
			}},
		{code: wire.CodeLoginUser, kind: authNotGated},
		{code: wire.CodeLogoutUser, kind: authNotGated},
		{code: wire.CodeLoginRegister, kind: authNotGated},
		{code: wire.CodeGetPersonalAccessTokens, kind: authOnly, body: func(uint32) []byte { return nil }},
		{code: wire.CodeCreatePersonalAccessToken, kind: authOnly,
			body: func(uint32) []byte { return wire.CreatePersonalAccessToken{Name: "new"}.AppendTo(nil) }},
		{code: wire.CodeDeletePersonalAccessToken, kind: authOnly,
			body: func(uint32) []byte { return wire.DeletePersonalAccessToken{Name: "tok"}.AppendTo(nil) }},
		{code: wire.CodeLoginWithPersonalAccessToken, kind: authNotGated},
		{code: wire.CodeLoginRegisterWithPAT, kind: authNotGated},
		{code: wire.CodePollMessages, kind: authShell, rule: RulePoll, grant: poll, lack: pollLack},
		{code: wire.CodeSendMessages, kind: authShell, rule: RuleSend, grant: send, lack: sendLack},
		{code: wire.CodeFlushUnsavedBuffer, kind: authNotGated},
		{code: wire.CodeGetConsumerOffset, kind: authShell, rule: RulePoll, grant: poll, lack: pollLack},
		{code: wire.CodeStoreConsumerOffset, kind: authShell, rule: RulePoll, grant: poll, lack: pollLack},
		{code: wire.CodeDeleteConsumerOffset, kind: authShell, rule: RulePoll, grant: poll, lack: pollLack},
		{code: wire.CodeGetStream, kind: authRead, grant: onStream(wire.StreamPermissions{ReadStream: true}),
			lack: global(wire.GlobalPermissions{ReadTopics: true, ManageTopics: true}), body: func(uint32) []byte { return ids(s0) }},
		{code: wire.CodeGetStreams, kind: authRead, grant: global(wire.GlobalPermissions{ReadStreams: true}),
			lack: &wire.Permissions{Global: wire.GlobalPermissions{ReadTopics: true}, Streams: map[uint32]wire.StreamPermissions{0: {ManageStream: true}}}},
		{code: wire.CodeCreateStream, kind: authWrite, grant: global(wire.GlobalPermissions{ManageStreams: true}), lack: streamManage,
			body: func(uint32) []byte { return wire.CreateStream{Name: "new"}.AppendTo(nil) }},
		{code: wire.CodeDeleteStream, kind: authWrite, grant: streamManage, lack: streamManageLack, body: func(uint32) []byte { return ids(s0) }},
		{code: wire.CodeUpdateStream, kind: authWrite, grant: streamManage, lack: streamManageLack,
			body: func(uint32) []byte { return wire.UpdateStream{Stream: s0, Name: "s2"}.AppendTo(nil) }},
		{code: wire.CodePurgeStream, kind: authWrite, grant: streamManage, lack: streamManageLack, body: func(uint32) []byte { return ids(s0) }},
		{code: wire.CodeGetTopic, kind: authRead, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0) }},
		{code: wire.CodeGetTopics, kind: authRead, grant: onStream(wire.StreamPermissions{ReadTopics: true}), lack: topicRead,
			body: func(uint32) []byte { return ids(s0) }},
		{code: wire.CodeCreateTopic, kind: authWrite, grant: onStream(wire.StreamPermissions{ManageTopics: true}), lack: topicManage,
			body: func(uint32) []byte { return wire.CreateTopic{Stream: s0, Name: "t2", PartitionsCount: 1}.AppendTo(nil) }},
		{code: wire.CodeDeleteTopic, kind: authWrite, grant: topicManage, lack: topicManageLack, body: func(uint32) []byte { return ids(s0, t0) }},
		{code: wire.CodeUpdateTopic, kind: authWrite, grant: topicManage, lack: topicManageLack,
			body: func(uint32) []byte { return wire.UpdateTopic{Stream: s0, Topic: t0, Name: "t"}.AppendTo(nil) }},
		{code: wire.CodePurgeTopic, kind: authWrite, grant: topicManage, lack: topicManageLack, body: func(uint32) []byte { return ids(s0, t0) }},
		{code: wire.CodeCreatePartitions, kind: authWrite, grant: topicManage, lack: topicManageLack,
			body: func(uint32) []byte {
				return wire.CreatePartitions{Stream: s0, Topic: t0, PartitionsCount: 1}.AppendTo(nil)
			}},
		{code: wire.CodeDeletePartitions, kind: authWrite, grant: topicManage, lack: topicManageLack,
			body: func(uint32) []byte {
				return wire.DeletePartitions{Stream: s0, Topic: t0, PartitionsCount: 1}.AppendTo(nil)
			}},
		{code: wire.CodeDeleteSegments, kind: authWrite, grant: topicManage, lack: topicManageLack,
			body: func(uint32) []byte { return wire.DeleteSegments{Stream: s0, Topic: t0, SegmentsCount: 1}.AppendTo(nil) }},
		{code: wire.CodeGetConsumerGroup, kind: authRead, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0, g0) }},
		{code: wire.CodeGetConsumerGroups, kind: authRead, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0) }},
		{code: wire.CodeCreateConsumerGroup, kind: authWrite, grant: topicRead, lack: topicReadLack,
			body: func(uint32) []byte { return wire.CreateConsumerGroup{Stream: s0, Topic: t0, Name: "g2"}.AppendTo(nil) }},
		{code: wire.CodeDeleteConsumerGroup, kind: authWrite, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0, g0) }},
		{code: wire.CodeJoinConsumerGroup, kind: authWrite, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0, g0) }},
		{code: wire.CodeLeaveConsumerGroup, kind: authWrite, grant: topicRead, lack: topicReadLack, body: func(uint32) []byte { return ids(s0, t0, g0) }},
		{code: wire.CodeSyncConsumerGroup, kind: authOnly, body: func(uint32) []byte { return ids(s0, t0, g0) }},
	}

	listed := map[wire.CommandCode]bool{}
	for _, r := range rows {
		listed[r.code] = true
	}
	for _, c := range wire.Commands() {
		if !listed[c.Code] {
			t.Errorf("catalogue command %v (%d) has no row", c.Code, c.Code)
		}
	}
	if len(listed) != len(wire.Commands()) {
		t.Errorf("%d rows for %d catalogue commands", len(listed), len(wire.Commands()))
	}

	for _, r := range rows {
		t.Run(r.code.String(), func(t *testing.T) {
			isWrite := r.code.Operation().Metadata()
			switch {
			case r.kind == authNotGated:
				if _, _, ok := New(Config{}).ReadAs(lacking, clientA, r.code, nil); ok {
					t.Fatal("served by metadata but listed as not gated")
				}
			case r.kind == authShell:
				h := authHarness(t, r.grant, r.lack)
				if !h.s.Allowed(granted, r.rule, 0, 0) || h.s.Allowed(lacking, r.rule, 0, 0) {
					t.Fatalf("rule %d: granted %v lacking %v", r.rule, h.s.Allowed(granted, r.rule, 0, 0), h.s.Allowed(lacking, r.rule, 0, 0))
				}
				if _, _, ok := h.s.ReadAs(granted, h.client, r.code, nil); ok {
					t.Fatal("a shell-served command is claimed by metadata")
				}
			case r.kind == authRead, r.kind == authOnly && !isWrite:
				for _, c := range []struct {
					user uint32
					want wire.ErrorCode
				}{{granted, 0}, {lacking, wire.ErrUnauthorized}} {
					if r.kind == authOnly {
						c.want = 0
					}
					h := authHarness(t, r.grant, r.lack)
					h.join(h.client, "g")
					status, p, ok := h.s.ReadAs(c.user, h.client, r.code, bodyOf(r.body, target))
					if !ok || status != c.want || (status != 0 && p != nil) || (status == 0 && p == nil) {
						t.Errorf("user %d: ok %v status %d payload %d bytes, want S %d", c.user, ok, status, len(p), c.want)
					}
				}
				if r.selfOK {
					h := authHarness(t, r.grant, r.lack)
					if status, _, _ := h.s.Read(lacking, r.code, bodyOf(r.body, lacking)); status != 0 {
						t.Errorf("reading itself: S %d", status)
					}
				}
			}
			if r.kind != authWrite && !(r.kind == authOnly && isWrite) {
				return
			}
			op := r.code.Operation()
			want := wire.ErrUnauthorized
			if r.kind == authOnly {
				want = 0
			}
			for _, c := range []struct {
				user uint32
				want wire.ErrorCode
			}{{granted, 0}, {lacking, want}} {
				h := authHarness(t, r.grant, r.lack)
				if op == wire.OpLeaveConsumerGroup {
					h.join(h.client, "g")
				}
				res, d := h.submit(c.user, op, bodyOf(r.body, target))
				if d != nil {
					t.Fatalf("user %d: denied before consensus %+v", c.user, d)
				}
				if res.Code != c.want {
					t.Errorf("user %d: committed %d, want R %d", c.user, res.Code, c.want)
				}
				if c.want != 0 {
					want := append(hx("01000000 00000000"), u32le(uint32(c.want))...)
					if got := res.Reply[wire.HeaderSize:]; string(got) != string(want) || wire.HeaderOf(res.Reply).Reply().Status != 0 {
						t.Errorf("user %d: reply % x, want R-framed % x with status 0", c.user, got, want)
					}
				}
			}
			if r.selfOK {
				h := authHarness(t, r.grant, r.lack)
				if res, d := h.submit(lacking, op, bodyOf(r.body, lacking)); d != nil || res.Code != 0 {
					t.Errorf("acting on itself: %+v %d", d, res.Code)
				}
			}
		})
	}
}

func bodyOf(f func(uint32) []byte, object uint32) []byte {
	if f == nil {
		return nil
	}
	return f(object)
}
