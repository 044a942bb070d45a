// Package metadata is the replicated metadata state machine of a node: a
// pure, deterministic core (no goroutines, clocks, I/O or actor imports)
// that the metadata actor owns. Time enters only as prepare timestamps.
//
// # Job
//
// One State holds the users with their personal access tokens, streams,
// topics with their option blocks, partitions, consumer groups with their
// members and pending hand-offs, and the replicated client table. The
// actor calls:
//
//   - Preflight (client table verdicts, client-plane.md 5.3) and then Admit
//     on the primary, which runs the pre-consensus checks of each command
//     and returns the prepare's operation and body (replica-plane.md 5.4,
//     13.1) or a Denial (status, result-section or eviction answer);
//   - ObservePrepare for every 64/65 prepare a backup journals;
//   - Apply for every committed prepare on every replica, in op order. It
//     returns the reply frame (replica-plane.md 5.11; byte-identical on
//     every replica) and the Effects the shell carries out (partitions to
//     create, delete, purge or truncate; topics whose settings changed;
//     pending group hand-offs started; deleted groups);
//   - Read (ReadAs for SyncConsumerGroup, which needs the session's client
//     id) for the non-replicated reads it owns; the Resolve* helpers,
//     GroupOwnsPartition and PollablePartition on the request path; Login
//     and LoginWithToken for logins, which the node runs in parts
//     (PreparePasswordLogin, PasswordCheck.Verify off the actor,
//     ConfirmPasswordLogin; TokenHash off the actor, LoginWithTokenHash);
//     ExpiredTokens + CleanupToken for the
//     token cleaner; PendingRevocations + PendingRevocation.Completion for
//     hand-offs; Snapshot/Restore for checkpoints and state transfer.
//
// # Invariants
//
//   - Replicas applying the same committed log reach the same state, the
//     same reply bytes and the same Snapshot bytes. Nothing replicated
//     depends on a clock, map order or the non-replicated parts
//     (statistics, Balanced cursors, the creation-id allocator, the token
//     digest index). Randomness (salts, raw tokens) and Argon2 run only at
//     admission; the log carries their results.
//   - Partition ids of a topic are dense: Partitions[i].ID == i.
//   - next_creation_id only moves at Apply; the allocator admission hands
//     out from is always >= it, and ObservePrepare lifts it on backups.
//   - A committed business rejection changes nothing but the client table.
//   - Token digests are unique across users (apply and Restore refuse a
//     duplicate), so a token login names one token.
//   - In a group, a partition is owned by at most one member, every owned
//     partition exists in the topic, and a pending revocation names a
//     partition its member owns (Restore checks this too).
//
// # Spec sections
//
// server-behaviour.md 0, 1, 2.1-2.6, 3, 4, 5.8-5.10, 7, 8, 12;
// client-plane.md 4.3-4.4, 5, 6, 7, 8.1-8.3, 8.6-8.10, 9, 10, 11.4, 14;
// replica-plane.md 4.1, 5.3-5.4, 5.9, 5.11, 5.12, 7.8.2, 7.9.4, 13.1, 13.2,
// 13.4.
//
// # Layouts
//
// Prepare bodies follow replica-plane.md 13.1 unchanged: 64 carries
// [req_len][CreateTopic body with the explicit block re-encoded, sorted by
// key][derived_len][derived block, sorted by key][count][{partition_id,
// creation_id}...]; 65 carries [req_len][CreatePartitions body][count]
// [{index, creation_id}...]; 68 carries [stream][topic][partition_id]
// [up_to_offset]; 141 is the CreateUser body with the Argon2id PHC string
// in place of the password; 144 is [user][current: empty][new: PHC, or
// empty when the admitting node found the current password wrong (or the
// user unknown)]; 146 is [user_id u32][name Name][expiry u64][token_hash:
// 64 lowercase hex bytes]; 147 is [user_id u32][name Name][only_if_expired
// u8: 0 or 1]; 148 is [stream][topic][group][client u128][in_flight_count
// u32][partition_id u32...] (ascending, owned by a member at admission);
// 149 is [stream][topic][group][client u128]; 67 is [stream][topic]
// [group_id u64][source_client u128][partition_id u32]; every other
// operation carries the client body; Register and Logout carry none. The
// bodies of 146-149 and 67 must be consumed exactly. The snapshot payload
// is IMD1 of 13.2 and the client table ICT2 of 7.8.2, unchanged, but for
// one extension: once an OpReconfigure (120, iggynode's own internal op,
// issue 22; roster.go) has committed, the snapshot carries a fourth
// section (tag 4) with the roster, the body of that op; a cluster that
// never reconfigured writes the three sections it always wrote.
//
// Server-originated prepares use the header fields of 13.1: the cleaner's
// 147 (CleanupToken) client 0, request 0; a revocation completion 67
// (PendingRevocation.Completion) client {hi: all ones, lo: group_id<<32 |
// partition_id}, request u64::MAX; both user 0 and request_checksum 0.
//
// # The raw token of CreatePersonalAccessToken
//
// The raw token never enters the log (13.1), yet every replica must cache
// the same reply. So the committed reply of a successful 146 is the empty
// success ([00 00 00 00]) on every replica, and the admitting node
// substitutes the RawToken payload on the wire only: Admit returns the raw
// token in Prepare.RawToken, the shell keeps it with the pending request
// and answers the commit with Result.WireReply(rawToken) (the committed
// frame with [00 00 00 00][len u8][token] as body and size fixed). Any
// other node, or a lost pending request, answers nothing new: the client's
// retry meets the cached success, which Preflight turns into R 51
// (client-plane.md 5.3), so the cached empty payload is never sent.
//
// # Choices where the spec is silent
//
//   - RemoveConsumerGroupMember (66) is never prepared (the cleanup rides
//     Logout, 13.1); should one reach the log it commits R 5.
//   - A committed body that does not decode (only corruption or a foreign
//     writer can produce one) commits R 3 instead of stopping the replica,
//     so Apply always returns a reply. A raw 132/136/138 in the log is such
//     a body. A prepare with an undefined operation byte is answered but
//     its reply is not cached (a cached reply must parse, 7.8.2).
//   - DeleteSegments: the 68 body's up_to_offset is u64::MAX ("nothing to
//     delete") for count 0, for nothing sealed, and when the partition did
//     not resolve at admission; Apply then commits success (or the
//     not-found code) without a Truncated effect. An AdmitEnv without
//     SealedUpTo, or one that returns an error, answers R 58 under reply
//     operation 68 (a lagging owner, 5.9.4).
//   - Order of committed checks: resolve the target (1009, 2010, 3007),
//     authorize (41), then the business rules (1012/2013 names, 1020/2021
//     id space, 2019/3013 partition counts). CreateStream is not
//     object-scoped: 41 comes before 1012.
//   - Defensive apply-time codes for what admission already refused:
//     options on CreateStream/UpdateStream R 4042; an UpdateTopic block
//     that no longer fits its (re-created) topic R 4042; a 64 whose
//     assignments do not match partitions_count R 2019; stored options that
//     do not parse R 4042; CreatePartitions/DeletePartitions counts outside
//     1..=1000 R 2015.
//   - Option strings: keywords (none, gzip, unlimited, never_expire,
//     default, server_default, true, false) are matched case-insensitively
//     after trimming spaces. Durations follow humantime 2 (units are
//     case-sensitive: M months, m minutes; spaces allowed between items);
//     a duration of 0 µs counts as the absent sentinel. Byte sizes are a
//     decimal number (fraction allowed, truncated to whole bytes), optional
//     spaces, and an optional case-insensitive unit: B, K/KB..E/EB (powers
//     of 1000), Ki/KiB..Ei/EiB (powers of 1024).
//   - UpdateTopic stores the sent pairs in the explicit block as sent,
//     sorted by key; the derived block is never changed after create, so a
//     key can appear in both (explicit wins).
//   - A session whose user does not exist is denied every gated command
//     (server-behaviour.md 2.2.6 Recommended). Root (id 0) passes every
//     check, reads included (it holds every flag and cannot lose them).
//     GetUser checks "self or R-users-read" before the lookup, so only
//     those callers learn whether a user exists.
//   - Statistics are not replicated: reads use SetPartitionStats values
//     (0 when unknown, segments_count at least 1); committed replies never
//     include them (the CreateTopic reply has zero counters). Purges zero
//     the known statistics in the same commit.
//   - Logout replies (class H) carry op = the epoch that was bound and
//     commit = the logout's op. Logouts and partition-count changes fully
//     rebalance affected consumer groups (7.3).
//   - Users: CreateUser checks 41 (not object-scoped), then options 4042
//     (defensive), 43, 46; UpdateUser, DeleteUser and UpdatePermissions
//     check 41 before 20 (2.6.1) and then 43/46, 48, 49; ChangePassword
//     checks 20, then 41 unless the target is the caller, then 42. For a
//     wrong current password admission hashes nothing: the body carries an
//     empty new password. A new user takes the lowest free id (R 55 if none is left).
//     UpdateUser ignores a status other than 1 or 2.
//   - Personal access tokens: 146 and 147 act on the body's user_id (the
//     session's at admission); a session whose user is gone gets R 41 (the
//     cleaner's 147 for a gone user R 20). S 52 compares the committed count
//     with personal_access_token.max_tokens_per_user (Config) before the
//     duplicate check. Expiry: 0 and u64::MAX never expire; otherwise the
//     prepare timestamp + expiry, R 56 when that wraps. The cleaner's 147
//     commits R 20 and changes nothing when the token is no longer expired
//     at the prepare timestamp. Lists and ExpiredTokens are sorted by name
//     (users ascending). LoginWithToken checks expiry before the owner's
//     status: an expired token of an inactive owner is InvalidToken.
//   - Consumer groups: committed checks are stream 1009, topic 2010, "read
//     topic" 41, then the group 5000 (the permission is on the topic, so a
//     missing group does not hide 41), then 5004/5006. GetConsumerGroup(s)
//     follow the same order with S codes and Z for a missing group. Group
//     ids come from next_group_id and stop below u32::MAX (R 5002 past it).
//   - Cooperative rebalance on join (7.4), deterministic: generation + 1;
//     partitions no member owns go round robin (ascending id) to the
//     members owning nothing (ascending slot); with fair = P / M and
//     rem = P mod M, members are walked by ascending slot and one holding
//     more than fair pollable partitions gets fair + 1 while rem lasts,
//     else fair; the pollable partitions past that allowance (taken from
//     the end of its list, kept in list order) are dealt round robin to
//     the members owning nothing that no pending revocation targets (none:
//     nothing moves). A dealt partition in the 148 in-flight list becomes a
//     pending revocation {partition, target slot, since = prepare
//     timestamp} on its owner; any other moves at once (appended to the
//     target's list). A rejoin is a no-op with the generation unchanged.
//   - Completion (67) moves the partition to the end of the target's list
//     with generation + 1, or fully rebalances when the target slot is
//     empty. A stale one is a no-op: R 5000 (group), 5006 (source member),
//     20 (not pending); a 67 whose user_id is not 0 is R 41. Only the shell
//     decides when to complete (Effects.Revocations as they start,
//     PendingRevocations at any time).
//   - DeleteConsumerGroup reports Effects.DeletedGroups so the shell purges
//     the group's offsets (6.6); topic and stream deletes cascade through
//     DeletedPartitions instead.
//   - AdmitEnv.Random nil falls back to crypto/rand (admission only).
//   - Balanced cursors are per (stream, topic), start at 0, survive
//     partition-count changes (they wrap modulo the count) and are dropped
//     with the topic. ResolveSend answers every failure with 20.
//   - Restore rejects, beyond 13.2's rules: non-canonical permission
//     blocks, token hashes that are not 64 lowercase hex characters or
//     that repeat, usernames and token names that are not Names,
//     duplicate names, group assignments that break the group invariant
//     above, non-dense partition ids, group ids not below
//     next_group_id, compression codes other than 1/2, user status other
//     than 1/2, next_creation_id 0, and client id 0 in the table. The
//     client_table_frontier is not part of a snapshot.
//   - Passwords: VerifyPassword accepts argon2id and argon2i PHC strings of
//     version 19 in canonical form, with m <= 256 MiB, t <= 64, p <= 255
//     and an output of at most 1024 bytes, so corrupt state cannot stall a
//     login. Login verifies the password of an inactive user before
//     refusing it, and of an unknown user against a fixed dummy hash.
//   - A password check verified off the actor binds only if, at
//     ConfirmPasswordLogin, the name still belongs to the same user with
//     the same hash (else it is stale and verified again) and the user is
//     active now; a token digest is looked up when it comes back.
//   - LoginThrottle (throttle.go) is node-local policy, not replicated
//     state: exponential delays after failed logins per remote address
//     and per (user name, address), a bound on verifications in flight
//     per address, a bounded LRU of keys; time is an argument. It never
//     delays a user alone, so a flood from one address costs the same
//     user's logins from elsewhere nothing. What a refused login is told
//     is the shell's choice (package actors: auth.go).
//   - The client table compacts trailing free slots; a new entry takes the
//     lowest free slot (after a capacity eviction, the freed one).
package metadata
