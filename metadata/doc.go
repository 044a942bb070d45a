// Package metadata is the replicated metadata state machine of a node: a
// pure, deterministic core (no goroutines, clocks, I/O or actor imports)
// that the metadata actor owns. Time enters only as prepare timestamps.
//
// # Job
//
// One State holds the users (root today), streams, topics with their
// option blocks, partitions, consumer-group placeholders, and the
// replicated client table. The actor calls:
//
//   - Preflight (client table verdicts, client-plane.md 5.3) and then Admit
//     on the primary, which runs the pre-consensus checks of each command
//     and returns the prepare's operation and body (replica-plane.md 5.4,
//     13.1) or a Denial (status, result-section or eviction answer);
//   - ObservePrepare for every 64/65 prepare a backup journals;
//   - Apply for every committed prepare on every replica, in op order. It
//     returns the reply frame (replica-plane.md 5.11; byte-identical on
//     every replica) and the Effects the shell carries out (partitions to
//     create, delete, purge or truncate; topics whose settings changed);
//   - Read for the non-replicated reads it owns, the Resolve* helpers on
//     the request path, Login for password logins, Snapshot/Restore for
//     checkpoints and state transfer.
//
// # Invariants
//
//   - Replicas applying the same committed log reach the same state, the
//     same reply bytes and the same Snapshot bytes. Nothing replicated
//     depends on a clock, map order or the non-replicated parts
//     (statistics, Balanced cursors, the creation-id allocator).
//   - Partition ids of a topic are dense: Partitions[i].ID == i.
//   - next_creation_id only moves at Apply; the allocator admission hands
//     out from is always >= it, and ObservePrepare lifts it on backups.
//   - A committed business rejection changes nothing but the client table.
//
// # Spec sections
//
// server-behaviour.md 0, 1, 2.1-2.6, 4, 5.8-5.10, 7.3, 7.8, 8, 12;
// client-plane.md 4.3-4.4, 5, 6, 7, 8.1-8.2, 8.6-8.9, 9, 10, 11.4, 14;
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
// [up_to_offset]; every other operation in scope carries the client body;
// Register and Logout carry none. The snapshot payload is IMD1 of 13.2 and
// the client table ICT2 of 7.8.2, unchanged.
//
// # Choices where the spec is silent
//
//   - Users, personal access tokens and consumer-group commands (139-149,
//     66, 67) are not implemented yet: Admit answers S 5
//     (FeatureUnavailable); should one reach the log it commits R 5. They
//     slot in as more cases of Admit and of the handlers table.
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
//   - Balanced cursors are per (stream, topic), start at 0, survive
//     partition-count changes (they wrap modulo the count) and are dropped
//     with the topic. ResolveSend answers every failure with 20.
//   - Restore rejects, beyond 13.2's rules: non-canonical permission
//     blocks, token hashes that are not 64 lowercase hex characters,
//     duplicate names, non-dense partition ids, group ids not below
//     next_group_id, compression codes other than 1/2, user status other
//     than 1/2, next_creation_id 0, and client id 0 in the table. The
//     client_table_frontier is not part of a snapshot.
//   - Passwords: VerifyPassword accepts argon2id and argon2i PHC strings of
//     version 19 in canonical form, with m <= 256 MiB, t <= 64, p <= 255
//     and an output of at most 1024 bytes, so corrupt state cannot stall a
//     login. Login verifies the password of an inactive user before
//     refusing it, and of an unknown user against a fixed dummy hash.
//   - The client table compacts trailing free slots; a new entry takes the
//     lowest free slot (after a capacity eviction, the freed one).
package metadata
