// Package storage is the node's durable state: everything that must survive
// a restart lives in ONE embedded badger database per node (DESIGN.md,
// "Storage"), except the partitions' stamped batches, which live in
// append-only files beside it. A Store is plain Go, safe for concurrent use
// by several actors; it knows nothing of actors or consensus, only of the
// records below. It replaces the files of replica-plane.md 9.1 and 9.4
// (journal.wal, snapshot.bin, superblock.a/b) with keys of one database and
// keeps the segment files of 13.3 as plain files; the byte formats inside
// the values and files are the spec's.
//
// # Keys
//
// Integers inside keys are big-endian, so badger's byte order is numeric
// order and a prefix iterator walks a group's journal by op. Everything a
// consensus group owns (the metadata group and each partition group,
// replica-plane.md 4.1) is under 'G' + group, so DeletePartition is one
// prefix (plus the group's batch directory).
//
//	key (bytes)                                  value
//	'G' group:u64 'F'                            first retained batch offset (DeleteBatchesBelow), u64 LE
//	'G' group:u64 'J' op:u64                     prepare frame, verbatim (256-byte header + body)
//	'G' group:u64 'O' kind:u8 consumer_key:u32   consumer offset, u64 LE
//	'G' group:u64 'P'                            snapshot payload + 20-byte trailer (2.6)
//	'G' group:u64 'S'                            superblock record (9.2), 102 bytes
//	'K' name                                     generic value (Put/Get), as given
//
// ('G' 0x47, 'K' 0x4B, 'F' 0x46, 'J' 0x4A, 'O' 0x4F, 'P' 0x50, 'S' 0x53.)
// Values use the spec's little-endian encodings. Groups 0, 1, 1<<32 and
// 1<<63 are distinct 8-byte prefixes, so no scan of one group sees another.
// ('G' group 'B' base_offset held batches before they moved to files; no
// key of that form is written or read any more.)
//
// # Batch files
//
// A partition group's batches are files in its own directory
//
//	<store dir>/partitions/<group, 16 lowercase hex digits>/<base offset, 20 decimal digits>.log
//
// laid out as replica-plane.md 13.3 item 1 proposes: a file is the
// concatenation of stamped batches (the 256-byte batch header, stamped at
// journal append with base_offset, base_timestamp and checksum, then the
// frames; wire/batch.go) in ascending offset order exactly as appended, with
// no file header, footer, padding or per-record framing; a reader walks it
// by batch_length. A file is named after its first batch's base_offset
// (13.3 item 2; no .index file: the index is in memory). So a SEGMENT_LOG
// artifact of 13.3 item 3 is the concatenation of the batches ScanBatches
// yields. A new file starts when the current one holds BatchFileBytes
// (default 256 MiB) or more, so a batch never spans files and a file may
// exceed the size by its last batch. Storage files are an implementation
// detail: they need not match the topic's logical segments (partition/).
//
// AppendBatch checks that the base offset and the header agree, then writes
// the whole batch with one write() at the end of the group's current file
// (the file is opened O_APPEND; no intermediate copy, never mmap).
// AppendBatches does the same for many batches of one group (a partition's
// group commit): one writev per file they land in, one fsync for all with
// sync, the same roll and truncation rules as batch-by-batch. Appends
// ascend: one at or below the last stored base offset first drops the
// stored suffix from that offset (truncating the file it lands in, deleting
// later files), as a log replaces a rolled-back journal suffix.
//
// Each group has an in-memory index (base offset -> file, position,
// length), built on the group's first use by reading each record's 256-byte
// header (base_offset at 8, batch_length at 32), so a boot costs one pread
// per batch, not a read of every byte. ReadBatch is one pread into a new
// slice the caller owns; ScanBatches preads consecutive records in chunks of
// up to 1 MiB into one reused buffer (bytes valid only during the callback).
// Handles stay open per file, at most MaxOpenBatchFiles (default 256) across
// groups: beyond it the least recently used idle one is closed and reopened
// on its next use. BatchSource gives a poll the batch as a file range; over
// plain TCP the connection's writer writes it from a read-only mapping of
// the file (batchmap.go), kept per file and reused, at most
// MaxOpenBatchFiles mapped files besides the handles.
//
// DeleteBatchesBelow(group, offset) deletes the files all of whose batches
// are below offset. A file holding batches on both sides stays whole, and
// its lower batches are hidden: the group's floor (first retained offset)
// rises to offset, in memory and under 'G' group 'F', so a restart honours
// it. An append below the floor lowers it to the new batch (every batch left
// is below it by then). DeletePartition renames the group's directory to
// <hex>.deleted, fsyncs partitions/, removes it, then deletes the group's
// keys; Open removes any *.deleted directory a crash left behind.
//
// # Staged transfers
//
// A partition state transfer (replica-plane.md 7.7) receives its
// SEGMENT_LOG artifacts, each a batch file verbatim, into files of a stage
// (transfer.go, 13.3 rule 5):
//
//	<store dir>/transfer/<group, 16 hex digits>.<stage number>/<frontier, 20 digits>.log.part
//
// written as chunks arrive and fsynced when complete. Reserve refuses an
// offer whose segments, with what the other live stages reserved and have
// not written yet, would cut into the soft disk reserve (on a fresh
// statfs, not counting the files the install will delete: the live chain
// keeps the room below), and each write is admitted like a batch append. InstallStaged, after DeletePartition,
// renames the files into the group's directory as <frontier>.log and
// fsyncs it and partitions/; the group is indexed again, from the files,
// on its next use. Each stage has its own directory (the number counts
// the store's stages), so a transfer that is stopping deletes only its
// own while its group's next one starts; the store keeps a registry of
// the live stages, so a group actor that stops deletes those whose owner
// was lost (DiscardStaged); Open deletes transfer/ whole (a
// transfer does not survive a restart: the partition asks again). A
// stage outlives a failed attempt when it holds sealed segments: Keep
// leaves only those the group's next offer names again (7.7 rule 6), and
// that attempt writes the rest beside them, in any frontier order.
//
// # Recovery
//
// A group's files are walked in name order on first use. The log is the
// longest prefix of plausible records: a record is plausible when its
// 256-byte header lies inside the file, its batch_length is at least 256
// and its batch_length bytes lie inside the file, and its base_offset is
// above the previous record's (the first record of a file: equal to the
// file's name). At the first implausible record the file is truncated there
// (removed if that leaves it empty) and every later file of the group is
// removed; the truncation is logged. Empty files (created, then the process
// died before the write) are removed. Files all of whose batches are below
// the floor (a deletion cut short) are removed. What is cut was never
// acknowledged: kill -9 can only tear the one write() in progress, whose
// AppendBatch had not returned (every earlier write completed into the page
// cache); a power loss can lose or zero any unsynced suffix, and a synced
// append fsyncs every earlier unsynced file of its group first, so nothing
// that was synced follows a torn record. Checksums are not verified at boot
// (that would read every byte): the partition verifies what it serves.
//
// # Why batches left badger
//
// On this project's 2-core Firecracker VM, appending 1000 stamped 1 MiB
// batches through badger (value log, no sync) ran at ~400-500 MB/s with p99
// 20-50 ms and max 80-140 ms per append (memtable and value-log rotation,
// fresh mmap pages), capping the node's send path at ~25% of the transport
// ceiling; plain write() appends to a file ran at 1.3-4 GB/s with max ~8 ms.
// After the move, on the same VM (under load from other work), the same
// 1000 x 1 MiB run (BenchmarkAppendBatch1MiBLatency) took p50 0.18 ms,
// p99 0.3-1 ms, max 1.2-5.6 ms per append, 4.9-5.5 GB/s, against p50 0.5
// ms, p99 30-35 ms, max 56-106 ms, 0.55-0.9 GB/s through badger in the
// same session.
// Batches are also the one record written once, read in offset order and
// deleted by prefix, which is what a file is good at; badger keeps what
// needs keys, atomic replacement and small random reads.
//
// # Values
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
// # Encryption
//
// With system.encryption the batches the store is handed are sealed
// (wire/batch_crypt.go): it stores, scans and serves them as any batch,
// and never holds the key's plaintext. The generic key
// "storage/encryption" records how the batches were written (crypt.go):
// version 1, mode (0 plaintext, 1 AES-256-GCM), and for mode 1 a key
// check, a short constant sealed under the key. CheckEncryption, at the
// node's start, refuses another key (ErrWrongEncryptionKey) or a switch
// of mode (ErrEncryptionChanged) while any batch file exists, and
// otherwise (re)writes the record, synced, before any batch is written.
//
// # Durability
//
// A badger write returns after badger has copied it into its memtable WAL
// and, for values of ValueThresholdBytes or more, its value log. Both are
// memory-mapped shared files, and a batch append returns after its write()
// to the batch file: either way the bytes are in the kernel's page cache
// when the call returns, so a write that returned survives kill -9 of the
// process (crash_test.go kills a child that appends, with SIGKILL, and
// checks every acknowledged batch byte for byte). It does not survive a
// power loss or kernel crash until an fsync. What is synced:
//
//	record                  when synced
//	prepare (AppendPrepare) sync=true for metadata (9.1, 9.5 rule 1); partition journals may pass false
//	batch (AppendBatch)     sync = the topic's enforce_fsync (9.4 rule 2): the group's unsynced files,
//	                        oldest first, then its directory when a file was created or removed
//	offset (StoreOffset)    sync = the topic's enforce_fsync
//	superblock              sync=true before a view-scoped send (6.13)
//	snapshot                always (before the superblock that names it, 9.1)
//	TruncatePrepares        always (a truncated suffix must not return beside its replacement)
//	DeletePartition         always (a deleted partition must not return): the directory rename, then the keys
//	CompactPrepares, DeleteBatchesBelow, DeleteOffset, Delete: never (idempotent; redone from the metadata log)
//	batch files at Close    always (what was written since the last fsync)
//
// Store.Sync covers badger only. badger's writes go through one goroutine
// in order, so an fsync covers every write that returned before it. Sync is
// a group commit: concurrent callers share one round, so an actor never
// holds the disk for a sync another could share. A round is badger's
// DB.Sync (active memtable WAL and value log; a rotated value-log file is
// synced by badger at rotation), plus an fsync of every memtable WAL file
// (a memtable that rotated out between the write and the sync is otherwise
// durable only after its flush to L0) and of the directory when the set of
// WAL files changed (badger does not fsync the directory after creating
// one). Batch files are synced per group by AppendBatch(sync=true): each
// partition has its own files, so groups never wait on each other's fsync.
// Nor do a group's readers wait for its appends: the group's index is
// locked only between the syscalls that move data, and an append lets go
// of it around its write and its fsync (appends and deletions of one group
// take a second lock among themselves), so a cold poll is served while the
// group's last write is synced; it sees the batches whose write returned.
// A failed fsync, of badger's files or a batch file, is sticky
// (ErrSyncFailed): after it nothing is known about what reached the disk, so
// every later Sync and synced append fails and the node must restart and
// recover.
//
// # Tuning
//
// The defaults (Options) suit a 2-core machine whose tests open many
// stores: 32 MiB memtables, at most 3 (badger's 5 x 64 MiB is 320 MiB of
// arenas per store), 64 MiB value-log files (rotation and GC work in small
// steps; the default 1 GiB would pin a gigabyte per file before GC could
// free it), 2 compactors (the minimum badger runs well with: compactor 0
// keeps L0 drained), no table compression (metadata is small), no conflict
// detection (every write is blind), no metrics. ValueThresholdBytes is 4
// KiB: large prepares and snapshots go to the value log, written once and
// never rewritten by LSM compaction, while superblocks, offsets and small
// prepares stay in the LSM tree where reads need no second lookup. badger's
// own log goes to log/slog at warn level and above; its info chatter is
// dropped. Value-log GC runs every GCInterval (and on ReclaimSpace) so
// compacted journals give back disk; deleted batch files give it back at
// once.
//
// # Disk space
//
// A full filesystem must be an error, never a crash: badger writes its
// memtable WAL and value log through memory-mapped files it extends
// sparsely, and a store into a mapped page the filesystem cannot back
// kills the process with SIGBUS. So the store keeps a guard (space.go)
// over the filesystem holding its directory: statfs (f_bavail; no inode
// left counts as no space) every CheckInterval (1 s by default) and
// after every refreshBytes written (an eighth of the band between the
// reserves, 256 KiB..64 MiB), with the bytes written since the last
// statfs subtracted in between; below the soft reserve every batch append
// measures afresh before it is admitted. Two reserves make three states:
//
//	state        free space            what is refused
//	SpaceOK      >= soft               nothing
//	SpaceLow     < soft, >= hard       new client writes, by the callers (AcceptsClientWrites);
//	                                   the store still writes everything
//	SpaceHard    < hard                also batch appends (ErrNoSpace, before a byte is written);
//	                                   badger records are still written
//
// The band between the reserves takes what was admitted before the soft
// reserve was crossed and what must never be refused by a client-facing
// rule: committed batches a backup stores, consensus records. Below the
// hard reserve only badger's records are written (superblocks, journal
// entries such as logins and logouts, consumer offsets, snapshots): they
// are small and must not fail, and the hard reserve is sized for them and
// for badger's own growth (badgerReserve: 4 memtables and 2 value-log
// files; a hard reserve smaller than that lowers MemTableBytes and
// ValueLogFileBytes to fit, down to 1 MiB each, MinReserveHard in all; the
// value-log file size also bounds the largest record badger takes, so
// production reserves stay at the 256 MiB default or above). A state is
// left for a better one only once free space is a hysteresis (a quarter
// of the band, at least 1 MiB) above the reserve that entered it; the
// guard logs once per state change, never per write. An ENOSPC or EDQUOT
// from a batch write makes it measure again at once, and believe the
// kernel over statfs until the next tick.
//
// Nothing outside the store is accounted: another process filling the
// filesystem is seen at the next statfs, and one that takes the hard
// reserve too can still make badger fault. Zero reserves turn the guard
// off (the library default; the node always sets them, system.disk).
//
// # File permissions
//
// The store creates its folder, partitions/, transfer/ and every group and
// stage folder 0700,
// and batch files 0600: they hold password hashes, tokens and messages.
// badger (and ristretto under it) creates its files 0666 with no option to
// change it, so their mode is the process umask's: cmd/node sets the umask
// to 077 at start, and for any other user of the package the store's 0700
// folder keeps them unreachable. A folder that exists already keeps the
// mode its creator gave it.
//
// Bytes passed to a scan callback are valid only during the call (they can
// point into badger's mapped files or the scan's reused buffer);
// ReadBatch, Get, LoadSnapshot and LoadVsrState return slices the caller
// owns.
package storage
