// Package storage is the node's durable state: everything that must survive
// a restart lives in ONE embedded badger database per node (DESIGN.md,
// "Storage"). A Store is plain Go, safe for concurrent use by several
// actors; it knows nothing of actors or consensus, only of the records
// below. It replaces the files of replica-plane.md 9.1 and 9.4 (journal.wal,
// snapshot.bin, superblock.a/b, segment files) with keys of one database;
// the byte formats inside the values are the spec's.
//
// # Keys
//
// Integers inside keys are big-endian, so badger's byte order is numeric
// order and a prefix iterator walks a group's journal by op and a
// partition's batches by offset. Everything a consensus group owns (the
// metadata group and each partition group, replica-plane.md 4.1) is under
// 'G' + group, so DeletePartition is one prefix.
//
//	key (bytes)                                  value
//	'G' group:u64 'B' base_offset:u64            stamped batch, verbatim (wire/batch.go)
//	'G' group:u64 'J' op:u64                     prepare frame, verbatim (256-byte header + body)
//	'G' group:u64 'O' kind:u8 consumer_key:u32   consumer offset, u64 LE
//	'G' group:u64 'P'                            snapshot payload + 20-byte trailer (2.6)
//	'G' group:u64 'S'                            superblock record (9.2), 102 bytes
//	'K' name                                     generic value (Put/Get), as given
//
// ('G' 0x47, 'K' 0x4B, 'B' 0x42, 'J' 0x4A, 'O' 0x4F, 'P' 0x50, 'S' 0x53.)
// Values use the spec's little-endian encodings. Groups 0, 1, 1<<32 and
// 1<<63 are distinct 8-byte prefixes, so no scan of one group sees another.
//
// # Values
//
// Batches are stored as they travel: the 256-byte batch header, stamped at
// journal append (base_offset, base_timestamp, checksum), then the frames.
// AppendBatch checks that the key's base offset and the header agree. A
// poll serves them from ScanBatches without decoding (wire.AppendRecord).
// Segment files of 13.3 are not kept: a SEGMENT_LOG artifact is the
// concatenation of the batches ScanBatches yields, in the same order.
//
// Prepare frames are the bytes the VSR core handed to the shell
// (vsr.Ready.Journal); an entry above 64 MiB is refused (9.1).
//
// The superblock value is the 9.2 record: magic 0x53424C4B, version 1,
// reserved 0, sequence (per group, +1 each write), parent_checksum 0,
// payload_len 66, the 66-byte VsrState payload, and the trailer
// H64(framing + payload). The 58-byte legacy payload is accepted on read.
// One key replaces the ping-pong pair superblock.a/b: a badger commit is
// atomic, so a torn write leaves the previous record, which is what the
// pair was for. A record that fails verification is an error (ErrCorrupt),
// and SaveVsrState refuses to write over one (9.3 step 2).
//
// The snapshot value is the payload followed by the 2.6 trailer: magic
// 0x49534E50, then W(H64(payload)) (16 bytes); SnapshotChecksum is that
// W(H64(payload)), the superblock's checkpoint_checksum. A value without the
// trailer or with a wrong one is ErrCorrupt (this store never wrote legacy
// unsealed snapshots).
//
// # Durability
//
// A write returns after badger has copied it into its memtable WAL and, for
// values of ValueThresholdBytes or more, its value log. Both are
// memory-mapped shared files: the bytes are in the kernel's page cache when
// the call returns, so a write that returned survives kill -9 of the
// process (crash_test.go kills a child that appends, with SIGKILL, and
// checks every acknowledged batch byte for byte). It does not survive a
// power loss or kernel crash until an fsync. What is synced:
//
//	record                  when synced
//	prepare (AppendPrepare) sync=true for metadata (9.1, 9.5 rule 1); partition journals may pass false
//	batch (AppendBatch)     sync = the topic's enforce_fsync (9.4 rule 2)
//	offset (StoreOffset)    sync = the topic's enforce_fsync
//	superblock              sync=true before a view-scoped send (6.13)
//	snapshot                always (before the superblock that names it, 9.1)
//	TruncatePrepares        always (a truncated suffix must not return beside its replacement)
//	DeletePartition         always (a deleted partition must not return)
//	CompactPrepares, DeleteBatchesBelow, DeleteOffset, Delete: never (idempotent; redone from the metadata log)
//
// badger's writes go through one goroutine in order, so an fsync covers
// every write that returned before it. Sync is a group commit: concurrent
// callers share one round, so an actor never holds the disk for a sync
// another could share. A round is badger's DB.Sync (active memtable WAL and
// value log; a rotated value-log file is synced by badger at rotation),
// plus an fsync of every memtable WAL file (a memtable that rotated out
// between the write and the sync is otherwise durable only after its flush
// to L0) and of the directory when the set of WAL files changed (badger
// does not fsync the directory after creating one). A failed fsync is
// sticky (ErrSyncFailed): after it nothing is known about what reached the
// disk, so every later Sync fails and the node must restart and recover.
//
// # Tuning
//
// The defaults (Options) suit a 2-core machine whose tests open many
// stores: 32 MiB memtables, at most 3 (badger's 5 x 64 MiB is 320 MiB of
// arenas per store), 64 MiB value-log files (rotation and GC work in small
// steps; the default 1 GiB would pin a gigabyte per file before GC could
// free it), 2 compactors (the minimum badger runs well with: compactor 0
// keeps L0 drained), no table compression (batches arrive as the producer
// compressed them and metadata is small), no conflict detection (every
// write is blind), no metrics. ValueThresholdBytes is 4 KiB: a 1 MiB batch
// goes to the value log, written once and never rewritten by LSM compaction
// (only value-log GC moves it, and a log deleted in offset order frees whole
// files), while prepares, superblocks, offsets and tiny batches stay in the
// LSM tree where reads need no second lookup. badger's own log goes to
// log/slog at warn level and above; its info chatter is dropped. Value-log
// GC runs every GCInterval (and on ReclaimSpace) so retention gives back
// disk.
//
// Bytes passed to a scan callback are valid only during the call (they can
// point into badger's mapped files); ReadBatch, Get, LoadSnapshot and
// LoadVsrState return copies.
package storage
