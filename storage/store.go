package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Errors. Every error a Store returns for bad stored bytes wraps ErrCorrupt;
// a missing record is ErrNotFound (or a false "found" result).
var (
	ErrNotFound = errors.New("storage: not found")
	ErrCorrupt  = errors.New("storage: corrupt record")
	// ErrStopScan, returned by a scan callback, ends the scan without error.
	ErrStopScan = errors.New("storage: stop scan")
	// ErrSyncFailed is sticky: after one failed fsync nothing is known about
	// what reached the disk (the kernel may have dropped the dirty pages), so
	// every later Sync fails too and the node must restart and recover.
	ErrSyncFailed = errors.New("storage: fsync failed")
)

// File modes of everything the store creates: owner-only, since the files
// hold users' password hashes, tokens and messages. Badger creates its own
// files 0666 and has no option to change that; cmd/node sets the process
// umask to 077, and the store's folder being 0700 keeps them out of reach
// for library users that do not (doc.go, "File permissions").
const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// Options tunes the badger database. Zero values take the defaults below,
// chosen for a 2-core machine that opens many stores in tests (doc.go,
// "Tuning").
type Options struct {
	// Logger receives badger's warnings and errors; nil is slog.Default().
	Logger *slog.Logger
	// MemTableBytes is the size of one memtable and its WAL file
	// (default 32 MiB).
	MemTableBytes int64
	// NumMemtables bounds the memtables held before writes stall (default 3).
	NumMemtables int
	// ValueLogFileBytes is the size at which a value-log file rotates
	// (default 64 MiB).
	ValueLogFileBytes int64
	// ValueThresholdBytes: values of at least this size go to the value log,
	// smaller ones live in the LSM tree (default 4 KiB).
	ValueThresholdBytes int64
	// BlockCacheBytes is badger's block cache (default 16 MiB).
	BlockCacheBytes int64
	// NumCompactors is the number of compaction goroutines (default 2, the
	// least badger runs well with: one keeps L0 drained).
	NumCompactors int
	// GCInterval is the period of value-log garbage collection (default 1
	// minute); negative disables the background loop (ReclaimSpace still
	// works).
	GCInterval time.Duration
	// BatchFileBytes: a partition's batch file is closed to appends once
	// it holds at least this many bytes and the next batch starts a new
	// one (default 256 MiB; doc.go, "Batch files"). It is a storage
	// detail, unrelated to the topic's logical segment_size.
	BatchFileBytes int64
	// MaxOpenBatchFiles bounds the batch-file handles kept open across all
	// groups, and apart from them the files kept mapped for polls
	// (batchmap.go); the least recently used idle one is closed beyond it
	// (default 256).
	MaxOpenBatchFiles int
	// Space is the disk space guard (space.go; doc.go, "Disk space"); zero
	// reserves turn it off. A hard reserve smaller than badger's needs
	// lowers MemTableBytes and ValueLogFileBytes to fit it.
	Space SpaceOptions
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = 32 << 20
	}
	if o.NumMemtables == 0 {
		o.NumMemtables = 3
	}
	if o.ValueLogFileBytes == 0 {
		o.ValueLogFileBytes = 64 << 20
	}
	if o.ValueThresholdBytes == 0 {
		o.ValueThresholdBytes = 4 << 10
	}
	if o.BlockCacheBytes == 0 {
		o.BlockCacheBytes = 16 << 20
	}
	if o.NumCompactors == 0 {
		o.NumCompactors = 2
	}
	if o.GCInterval == 0 {
		o.GCInterval = time.Minute
	}
	if o.BatchFileBytes <= 0 {
		o.BatchFileBytes = 256 << 20
	}
	if o.MaxOpenBatchFiles <= 0 {
		o.MaxOpenBatchFiles = 256
	}
	return o
}

func (o Options) badger(dir string) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(badgerLogger{o.Logger}).
		WithMemTableSize(o.MemTableBytes).
		WithNumMemtables(o.NumMemtables).
		WithNumLevelZeroTables(max(2, o.NumMemtables)).
		WithNumLevelZeroTablesStall(4 * max(2, o.NumMemtables)).
		WithValueLogFileSize(o.ValueLogFileBytes).
		WithValueThreshold(o.ValueThresholdBytes).
		WithBlockCacheSize(o.BlockCacheBytes).
		WithNumCompactors(o.NumCompactors).
		WithNumGoroutines(2).
		// Batches arrive however the producer compressed them and metadata
		// is small: compressing tables costs CPU for little gain.
		WithCompression(options.None).
		// Every write is blind (no read-modify-write transactions), so
		// conflict tracking is pure overhead.
		WithDetectConflicts(false).
		WithMetricsEnabled(false).
		// Durability is decided per write (Store.Sync), never globally.
		WithSyncWrites(false).
		WithNumVersionsToKeep(1)
}

// Store is one node's durable state: one badger database plus the
// partitions' batch files. It is safe for concurrent use.
type Store struct {
	db   *badger.DB
	dir  string
	opts Options

	partsDir string
	partsMu  sync.Mutex
	parts    map[uint64]*groupLog // every group touched since Open
	files    fileCache

	syncer syncer
	memWAL []string // *.mem files seen by the last sync (syncer-owned)

	seqMu sync.Mutex
	seqs  map[uint64]*superblockSeq

	space *Space // nil: no disk space guard

	staging staging // staged transfers (transfer.go)

	beforeSync func(group uint64) // a test's hook, before each batch-file fsync

	stop     chan struct{}
	gcDone   sync.WaitGroup
	closeErr error
	closing  sync.Once
}

// Open opens (creating if needed) the store in dir. One process at a time:
// badger locks the directory. Batch files are indexed lazily, per group, on
// the group's first use (doc.go, "Recovery").
func Open(dir string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	if opts.fitBadgerToReserve() {
		opts.Logger.Info("storage: badger's memtables and value-log files lowered to fit the hard disk reserve",
			"memtable_bytes", opts.MemTableBytes, "value_log_file_bytes", opts.ValueLogFileBytes, "reserve_hard", opts.Space.ReserveHard)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	space, err := newSpace(dir, opts.Space, opts.Logger)
	if err != nil {
		return nil, err
	}
	db, err := badger.Open(opts.badger(dir))
	if err != nil {
		space.close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	partsDir, err := openPartitionsDir(dir)
	if err == nil {
		err = removeStagedTransfers(dir)
	}
	if err != nil {
		db.Close()
		space.close()
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	s := &Store{db: db, dir: dir, opts: opts, partsDir: partsDir, parts: make(map[uint64]*groupLog),
		seqs: make(map[uint64]*superblockSeq), stop: make(chan struct{}), space: space}
	s.files.max, s.files.fileBytes = opts.MaxOpenBatchFiles, opts.BatchFileBytes
	s.syncer.init()
	if opts.GCInterval > 0 {
		s.gcDone.Add(1)
		go s.gcLoop(opts.GCInterval)
	}
	return s, nil
}

// Close stops the background work, fsyncs and closes the batch files and
// closes the database (badger flushes the memtable and syncs its files).
// Close is idempotent.
func (s *Store) Close() error {
	s.closing.Do(func() {
		close(s.stop)
		s.gcDone.Wait()
		s.closeErr = errors.Join(s.closeBatchFiles(), s.db.Close())
		s.space.close()
	})
	return s.closeErr
}

// Dir is the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// Space is the store's disk space guard (nil when off; its methods work
// on nil).
func (s *Store) Space() *Space { return s.space }

// Sync makes every badger write that returned before the call durable
// (fsync). Concurrent callers share one fsync (doc.go, "Durability").
// Batch files are not part of it: AppendBatch with sync fsyncs its group's
// files.
func (s *Store) Sync() error { return s.syncer.sync(s.syncFiles) }

// syncFiles is one fsync round: badger's active memtable WAL and value log,
// then every memtable WAL file (a memtable that rotated out after our write
// is not covered by badger's Sync until its flush to L0, which is synced),
// then the directory when the set of WAL files changed (badger does not
// fsync the directory after creating a memtable WAL).
func (s *Store) syncFiles() error {
	if err := s.db.Sync(); err != nil {
		return err
	}
	names, err := filepath.Glob(filepath.Join(s.dir, "*.mem"))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := fsyncPath(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if !slices.Equal(names, s.memWAL) {
		if err := fsyncPath(s.dir); err != nil {
			return err
		}
		s.memWAL = names
	}
	return nil
}

func fsyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncer coalesces concurrent Sync calls (group commit): a caller needs an
// fsync that started after its write returned; one already running may not
// cover it, the next one does, and everyone waiting shares it.
type syncer struct {
	mu      sync.Mutex
	cond    *sync.Cond
	started uint64 // rounds started
	done    uint64 // rounds finished
	running bool
	waiters int   // callers blocked on a round (observed by tests)
	failed  error // sticky
}

func (y *syncer) init() { y.cond = sync.NewCond(&y.mu) }

// err is the sticky failure, if any.
func (y *syncer) err() error {
	y.mu.Lock()
	defer y.mu.Unlock()
	return y.failed
}

// fail records an fsync failure outside a round (a batch file's) and
// returns the sticky error.
func (y *syncer) fail(err error) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.failed == nil {
		y.failed = fmt.Errorf("%w: %w", ErrSyncFailed, err)
	}
	return y.failed
}

func (y *syncer) sync(fsync func() error) error {
	y.mu.Lock()
	defer y.mu.Unlock()
	target := y.started + 1
	for y.done < target && y.failed == nil {
		if y.running {
			y.waiters++
			y.cond.Wait()
			y.waiters--
			continue
		}
		y.running = true
		y.started++
		round := y.started
		y.mu.Unlock()
		err := fsync()
		y.mu.Lock()
		y.running = false
		y.done = round
		if err != nil {
			y.failed = fmt.Errorf("%w: %w", ErrSyncFailed, err)
		}
		y.cond.Broadcast()
	}
	return y.failed
}

// ReclaimSpace runs value-log garbage collection until no file is worth
// rewriting (at least half of it dead), so deleted batches give back disk.
func (s *Store) ReclaimSpace() error {
	for {
		err := s.db.RunValueLogGC(0.5)
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected):
			return nil
		default:
			return fmt.Errorf("storage: value log gc: %w", err)
		}
	}
}

func (s *Store) gcLoop(every time.Duration) {
	defer s.gcDone.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.ReclaimSpace(); err != nil {
				s.opts.Logger.Warn("storage: value log gc", "err", err)
			}
		}
	}
}

// set writes one key. The key and value are referenced until the commit
// returns and never after (badger copies them into its WAL, value log and
// memtable arena).
func (s *Store) set(key, value []byte, sync bool) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	if err := txn.Set(key, value); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		return err
	}
	s.space.charge(int64(len(key) + len(value)))
	if sync {
		return s.Sync()
	}
	return nil
}

// del deletes one key (not synced; a missing key is not an error).
func (s *Store) del(key []byte) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	if err := txn.Delete(key); err != nil {
		return err
	}
	return txn.Commit()
}

// get copies one value out; a missing key is (nil, false, nil).
func (s *Store) get(key []byte) ([]byte, bool, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(key)
		if err != nil {
			return err
		}
		out, err = item.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return out, true, nil
}

// deleteRange deletes every key k with from <= k < to (to nil: to the end of
// the prefix) inside prefix, then syncs if asked.
func (s *Store) deleteRange(prefix, from, to []byte, sync bool) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(from); it.Valid(); it.Next() {
			if to != nil && bytes.Compare(it.Item().Key(), to) >= 0 {
				break
			}
			if err := wb.Delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	if sync {
		return s.Sync()
	}
	return nil
}

// scan calls fn for every key from..end of prefix in ascending order. The
// value passed to fn is valid only during the call.
func (s *Store) scan(prefix, from []byte, fn func(key, value []byte) error) error {
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Seek(from); it.Valid(); it.Next() {
			item := it.Item()
			key := item.Key()
			if err := item.Value(func(v []byte) error { return fn(key, v) }); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, ErrStopScan) {
		return nil
	}
	return err
}

// badgerLogger sends badger's warnings and errors to slog; its info and
// debug chatter (compaction, flush, replay progress) is dropped.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(format string, args ...any) { b.log(slog.LevelError, format, args) }
func (b badgerLogger) Warningf(format string, args ...any) {
	b.log(slog.LevelWarn, format, args)
}
func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

func (b badgerLogger) log(level slog.Level, format string, args []any) {
	if !b.l.Enabled(context.Background(), level) {
		return
	}
	b.l.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
}
