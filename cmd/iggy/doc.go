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
// # Commands
//
//	stream    create NAME [--option k=v] | get | list | update ID NAME | delete | purge
//	topic     create STREAM NAME [-p N] [--option k=v]... | get | list | update | delete | purge
//	partition create|delete STREAM TOPIC COUNT
//	segment   delete STREAM TOPIC PARTITION COUNT
//	message   send STREAM TOPIC [PAYLOAD...] [--file F] [--partition N | --key K] [--headers k=v]
//	          poll STREAM TOPIC [--partition N] [--strategy offset|timestamp|first|last|next]
//	               [--value V] [--count N] [--consumer C] [--auto-commit] [--follow]
//	offset    get|store|delete STREAM TOPIC [OFFSET] [--consumer C] [--group] [--partition N]
//	group     create|get|list|delete|join|leave|sync|poll
//	user      create|get|list|update|delete|password|permissions
//	pat       create NAME [--expiry 1h] | list | delete NAME
//	client    list | get ID
//	me, stats, snapshot --file F, cluster status, options [topic|stream|user]
//
// Identifiers are numeric ids when they parse as a u32, names otherwise.
// Options and headers given as key=value travel as String values; every
// topic catalog key accepts a String form (client-plane.md 10.4; `iggy
// options` prints the catalog). Send payloads come from the arguments, else
// the lines of --file, else the lines of stdin (one message per non-empty
// line), sent in batches of 1000, balanced across partitions unless
// --partition or --key says otherwise. Polls read in batches of 1000,
// continue by offset after the first batch, and with --follow keep tailing
// until interrupted. A progress bar is drawn on stderr for sends and polls
// of 2000 messages or more, only when stderr is a terminal.
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
// Tables (text/tabwriter) by default; --output json prints the wire types
// as JSON for scripts (polled messages add Text, the payload when it is
// UTF-8, and decoded Headers). A failure prints "error: NAME (CODE)" for a
// server or protocol error, e.g. "error: StreamNameAlreadyExists (1012)",
// and exits 1.
package main
