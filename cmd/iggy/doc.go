// Command iggy is a command-line client for iggynode (and any server
// speaking the Apache Iggy binary protocol 0.11.0), in the shape of Iggy's
// own CLI: nouns, then verbs. Every command is a thin layer over package
// client; nothing here encodes a byte.
//
// # Connecting
//
//	iggy --transport tcp|quic|ws [--tls] [--address HOST:PORT] ...
//
// Addresses default per transport to 127.0.0.1:8090 (tcp), 127.0.0.1:8080
// (quic) and 127.0.0.1:8092 (ws) (transports.md 8.5). Credentials come from
// --username/--password, else IGGY_USERNAME/IGGY_PASSWORD, else iggy/iggy;
// --token logs in with a personal access token instead. --connection-string
// iggy://user:pass@host:port?options (transports.md 8) replaces all of
// them. --tls-ca-file, --tls-domain and --insecure tune certificate checks;
// QUIC always runs TLS and verifies only when given a CA file. Reconnects
// follow the reference CLI: 10 retries, 1 s apart (--reconnect-retries).
//
// # Sessions
//
//	iggy --username alice --password s3cret login   # creates a PAT, stores it
//	iggy stream list                                # uses the stored token
//	iggy logout                                     # deletes the PAT and the file
//
// login writes the connection settings and a newly created personal access
// token (never the password) to $XDG_CONFIG_HOME/iggy/session.json, or
// --session-file, with mode 0600. Later commands use it for whatever the
// flags do not say; explicit credential flags win over the stored token.
//
// # Contexts
//
//	iggy --address 10.0.0.5:8090 --username alice context create prod
//	iggy context use prod        # later commands go to prod
//	iggy context list            # * marks the active one
//
// As upstream's CLI: named settings in $XDG_CONFIG_HOME/iggy/contexts.toml,
// the active name in active_context beside it. The active context fills
// what the flags do not say; each context has its own session file
// (session-NAME.json), so a token never travels to another context's
// server. A stored token that a server refuses says to log in again.
//
// # Upstream's forms
//
// The commands, aliases, positional forms and flags of the reference `iggy`
// CLI are accepted as its users type them; ours stay beside them where they
// add something (--follow, --strategy/--value, QUIC and WebSocket, the
// two-argument consumer-offset forms with --consumer/--group/--partition).
// Global one-letter options (-q quiet, -d debug, -u username, -p password,
// -t token, -n token-name, -o output) are taken before the command only,
// as clap does upstream; after it, letters belong to the subcommand (message
// send -p PARTITION -m KEY, poll -o OFFSET -m COUNT, user create -u STATUS).
// Long global options work anywhere. A username given without a password
// is asked for on a terminal; otherwise the defaults below apply. --quiet
// prints nothing on stdout (errors still reach stderr); --debug[=FILE] logs
// the connection settings (never secrets) and each command.
//
// # Commands
//
//	stream (s)    create (c) NAME | get (g) | list (l) [-l list] | update (u) ID NAME | delete (d) | purge (p)
//	topic (t)     create (c) STREAM NAME [PARTITIONS COMPRESSION [EXPIRY...]] [-m MAX_SIZE] [-r N] [-p N] [--option k=v]...
//	              update (u) STREAM TOPIC NAME [COMPRESSION [EXPIRY...]] | get | list | delete | purge
//	partition (p) create (c) | delete (d) STREAM TOPIC COUNT
//	segment (seg) delete (d) STREAM TOPIC PARTITION COUNT
//	message (m)   send (s) STREAM TOPIC [MESSAGE...] [-p PARTITION | -m KEY] [-H key:kind:value,...]
//	                   [--input-file F | --file F]
//	              poll (p) STREAM TOPIC [PARTITION] [-o N | -f | -l | -n | --strategy S --value V]
//	                   [-m COUNT] [-c CONSUMER] [-a] [-s] [--output-file F] [--follow]
//	              flush (f) STREAM TOPIC PARTITION [-f]
//	consumer-offset (o, offset)  get (g) | set (s, store) | delete (d)
//	                   CONSUMER STREAM TOPIC PARTITION [OFFSET] [-k consumer|consumer-group]
//	                   or STREAM TOPIC [OFFSET] [--consumer C] [--group] [--partition N]
//	consumer-group (g, group)    create (c) | get (g) | list (l) | delete (d) | join | leave | sync | poll
//	user (u)      create (c) NAME PASS [-u STATUS] [--perm ...] | get | list | delete | name (n) USER NAME
//	              | status (s) USER STATUS | password (pwd) USER [CURRENT NEW] | permissions (p) | update
//	pat           create (c) NAME [EXPIRY...] [-s] | list (l) | delete (d) NAME
//	client (c)    list (l) | get (g) ID
//	context (ctx) list (l) | use (u) NAME | create (c) NAME | delete (d) NAME
//	session       login | logout | show;  login (li) [EXPIRY...], logout (lo)
//	cluster       metadata (m): the client roster, roles, health and when the node last heard each node
//	              status [-l list] | add ID REPLICA_ADDRESS [--name N] [--ip IP] [--tcp-port P] [--quic-port P]
//	                   [--http-port P] [--websocket-port P] | remove ID | replace OLD_ID NEW_ID REPLICA_ADDRESS [same flags]
//	me, stats, snapshot [--file F | -o DIR] [-c COMPRESSION] [-s TYPES], ping [-c N], options [topic|stream|user]
//
// cluster status, add, remove and replace send iggynode's admin commands
// 9001..9004 (docs/reconfiguration.md, "Admin surface"; they need
// manage_servers, status read_servers) and print the roster the node
// answers: epoch, voter, learner and target ids, and each member's role,
// primary, liveness, commit and addresses; with --output json an object
// of the reply's fields in snake_case (epoch, voters, learners, target as
// id lists, epoch_op, view, nodes). Node ids are 0..31; REPLICA_ADDRESS is
// the HOST:PORT of the node's replica plane, checked before sending; a
// port left at 0 is not offered to clients. A cluster change that lost its
// connection after being sent is not resent: cluster status tells whether
// it happened. cluster status was the roster of GetClusterMetadata before
// the admin commands; that is cluster metadata now, upstream's name.
//
// Identifiers are numeric ids when they parse as a u32, names otherwise.
// Options and headers given as key=value travel as String values; every
// topic catalog key accepts a String form (client-plane.md 10.4; `iggy
// options` prints the catalog). Typed headers (-H key:kind:value) travel in
// their kind's encoding. Send payloads come from the arguments, else
// --input-file (binary, as poll --output-file writes it: message batches
// in the producer layout), else the lines of --file, else the lines of
// stdin (one message per non-empty line), sent in batches of 1000,
// balanced across partitions by the server's per-topic cursor (so one-shot
// sends rotate, server-behaviour.md 5.1) unless -p or -m says otherwise.
// Polls read in batches of 1000 (default count 10; 1 in upstream's form
// with a PARTITION argument), continue by offset after the first batch,
// and with --follow keep tailing until interrupted, in columns that stay
// aligned. A progress bar is drawn on stderr for sends and polls of 2000
// messages or more, only when stderr is a terminal. message flush reports
// the server's answer: a VSR server has no unsaved buffer and answers
// FeatureUnavailable.
//
// Permissions are written SCOPE=RIGHTS, repeatable:
//
//	--perm global=read_streams,poll_messages
//	--perm stream:1=all
//	--perm stream:1/topic:2=send_messages
//
// Consumer group membership belongs to a connection (transports.md 7.3), so
// it ends when the command exits: group sync and group poll join first, and
// group leave from a fresh process reports ConsumerGroupMemberNotFound.
//
// # Output and errors
//
// Tables (text/tabwriter) by default; --output json prints each reply as
// the reference server's HTTP API does (docs/spec/http.md 4, the encoder
// of package wire/jsonmodel that plane/http answers with), so a jq script
// written for Iggy's REST API reads it: `stream get` prints what GET
// /streams/{id} returns, byte for byte once compacted. A poll prints one
// PolledMessages object holding every message the command read (an array
// of them only when a group poll moved between partitions); with --follow,
// one object per polled batch per line. Results of commands without a
// reply body are {"result": ...} objects of the CLI's own. A failure prints "error: NAME (CODE)" for a
// server or protocol error, e.g. "error: StreamNameAlreadyExists (1012)",
// and exits 1.
package main
