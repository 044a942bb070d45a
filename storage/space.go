package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Disk space guard (doc.go, "Disk space"): the store watches the free
// space of the filesystem it lives on and refuses writes before the
// filesystem runs out, in two steps.

// SpaceState is how close the store's filesystem is to full.
type SpaceState int32

const (
	// SpaceOK: free space is at or above the soft reserve.
	SpaceOK SpaceState = iota
	// SpaceLow: below the soft reserve. The store still writes everything;
	// its callers refuse new client writes (AcceptsClientWrites).
	SpaceLow
	// SpaceHard: below the hard reserve. Batch appends are refused too
	// (ErrNoSpace); badger records (superblocks, journals, offsets) are
	// still written: the hard reserve is theirs and badger's files'.
	SpaceHard
)

func (s SpaceState) String() string {
	switch s {
	case SpaceOK:
		return "ok"
	case SpaceLow:
		return "writes refused"
	case SpaceHard:
		return "hard reserve"
	}
	return fmt.Sprintf("SpaceState(%d)", int32(s))
}

// ErrNoSpace is returned, wrapped, by a write the guard refused because
// it would cut into the hard reserve; nothing of it reached the disk.
// IsNoSpace also recognises the kernel's ENOSPC and EDQUOT.
var ErrNoSpace = errors.New("storage: not enough free disk space")

// IsNoSpace reports whether err is a write refused or failed for lack of
// disk space.
func IsNoSpace(err error) bool {
	return errors.Is(err, ErrNoSpace) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// MinReserveHard is the smallest hard reserve the store accepts: badger's
// files at their smallest (1 MiB memtables and value-log files, see
// badgerReserve). config validates system.disk.reserve_hard against it.
const MinReserveHard = 6 << 20

// SpaceOptions configure the guard. Zero reserves turn it off: nothing is
// refused and no statfs is made (library users and tests that do not
// care); the node always sets both (system.disk.*).
type SpaceOptions struct {
	// ReserveSoft: below this many free bytes the state is SpaceLow.
	ReserveSoft int64
	// ReserveHard: below this many free bytes the state is SpaceHard and
	// batch appends are refused. At least MinReserveHard when set; badger's
	// memtables and value-log files are lowered to fit it (badgerReserve).
	ReserveHard int64
	// CheckInterval is the period of the background statfs (default 1 s).
	CheckInterval time.Duration
	// Statfs returns the free and total bytes of the filesystem holding
	// dir; nil is statfs(2). Tests inject a fake filesystem.
	Statfs func(dir string) (free, total uint64, err error)
}

func (o SpaceOptions) enabled() bool { return o.ReserveSoft > 0 || o.ReserveHard > 0 }

// Space is the guard of one store. Its methods are safe for concurrent
// use and on a nil or disabled guard (which reports SpaceOK).
type Space struct {
	dir  string
	opts SpaceOptions
	log  *slog.Logger
	// hysteresis: a state is left for a better one only once free space
	// is this far above the reserve that entered it, so a node near a
	// threshold does not flap (and log) with every write.
	hysteresis int64
	// refreshBytes: after this many bytes written since the last statfs,
	// the next write makes a new one, so a burst between two ticks cannot
	// run past a reserve on a stale figure.
	refreshBytes int64

	free  atomic.Int64 // the last statfs less what was written since
	total atomic.Int64
	since atomic.Int64 // bytes written since the last statfs
	state atomic.Int32

	mu         sync.Mutex // one statfs and one state change at a time
	statFailed bool       // the last statfs failed (logged once)

	stop chan struct{}
	done chan struct{}
}

// newSpace starts the guard of the store in dir (its first statfs, then
// one every CheckInterval). A disabled guard is nil.
func newSpace(dir string, o SpaceOptions, log *slog.Logger) (*Space, error) {
	if !o.enabled() {
		return nil, nil
	}
	if o.ReserveHard < MinReserveHard || o.ReserveSoft < o.ReserveHard {
		return nil, fmt.Errorf("storage: disk reserves: hard %d must be at least %d and soft %d at least hard",
			o.ReserveHard, MinReserveHard, o.ReserveSoft)
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = time.Second
	}
	if o.Statfs == nil {
		o.Statfs = statfs
	}
	band := o.ReserveSoft - o.ReserveHard
	g := &Space{dir: dir, opts: o, log: log,
		hysteresis:   max(1<<20, band/4),
		refreshBytes: min(max(256<<10, band/8), 64<<20),
		stop:         make(chan struct{}), done: make(chan struct{})}
	g.free.Store(-1) // unknown until the first statfs
	g.refresh()
	go g.loop()
	return g, nil
}

// statfs is statfs(2) on dir: the bytes an unprivileged user may still
// write (f_bavail), none when the filesystem has no inode left.
func statfs(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	free, total = st.Bavail*uint64(st.Bsize), st.Blocks*uint64(st.Bsize)
	if st.Files > 0 && st.Ffree == 0 {
		free = 0
	}
	return free, total, nil
}

func (g *Space) loop() {
	defer close(g.done)
	t := time.NewTicker(g.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.refresh()
		}
	}
}

func (g *Space) close() {
	if g == nil {
		return
	}
	close(g.stop)
	<-g.done
}

// State is the guard's current state (SpaceOK when it is off).
func (g *Space) State() SpaceState {
	if g == nil {
		return SpaceOK
	}
	return SpaceState(g.state.Load())
}

// AcceptsClientWrites reports whether new client writes may be admitted:
// free space is above the soft reserve.
func (g *Space) AcceptsClientWrites() bool { return g.State() == SpaceOK }

// Free is the estimated free bytes (the last statfs less what the store
// wrote since), -1 when unknown or the guard is off; Total the
// filesystem's size at the last statfs.
func (g *Space) Free() int64 {
	if g == nil {
		return -1
	}
	return g.free.Load()
}

// Total is the filesystem's size in bytes at the last statfs (0: unknown).
func (g *Space) Total() int64 {
	if g == nil {
		return 0
	}
	return g.total.Load()
}

// Fits reports whether n more bytes fit above the hard reserve, on a
// fresh statfs (a caller waiting for space asks this now and then).
func (g *Space) Fits(n int64) bool {
	_, hard := g.Reserves()
	return g.fitsAbove(n, hard)
}

// fitsAboveSoft reports whether n more bytes fit above the soft reserve,
// on a fresh statfs: room for a large write that is not the live chain's
// (a staged transfer), which must leave the chain what the soft reserve
// keeps for it.
func (g *Space) fitsAboveSoft(n int64) bool {
	soft, _ := g.Reserves()
	return g.fitsAbove(n, soft)
}

// fitsAbove reports whether n more bytes leave reserve free, on a fresh
// statfs (true when the guard is off or free space unknown).
func (g *Space) fitsAbove(n, reserve int64) bool {
	if g == nil {
		return true
	}
	g.refresh()
	free := g.free.Load()
	return free < 0 || free-n >= reserve
}

// Reserves are the configured soft and hard reserves (0, 0 when off).
func (g *Space) Reserves() (soft, hard int64) {
	if g == nil {
		return 0, 0
	}
	return g.opts.ReserveSoft, g.opts.ReserveHard
}

// admitBatch refuses a batch append of n bytes that would leave less than
// the hard reserve free. Below the soft reserve every append measures
// afresh (statfs costs about what the write does), so the estimate is
// trusted only while the disk is far from full, and a refusal is never
// made on a stale figure (space may have been freed since).
func (g *Space) admitBatch(n int64) error {
	if g == nil {
		return nil
	}
	free := g.free.Load()
	if free < 0 || free-n >= g.opts.ReserveSoft {
		return nil
	}
	g.refresh()
	if free = g.free.Load(); free < 0 || free-n >= g.opts.ReserveHard {
		return nil
	}
	return fmt.Errorf("%w: %d bytes free, %d more would cut into the %d-byte hard reserve",
		ErrNoSpace, free, n, g.opts.ReserveHard)
}

// charge accounts for n bytes just written, with a statfs once enough
// bytes were written since the last one.
func (g *Space) charge(n int64) {
	if g == nil || n <= 0 {
		return
	}
	free := g.free.Add(-n)
	if g.since.Add(n) >= g.refreshBytes {
		g.refresh()
		return
	}
	if free >= 0 && g.next(free) != g.State() {
		g.mu.Lock()
		g.transition(g.free.Load())
		g.mu.Unlock()
	}
}

// sawNoSpace is told of a write the kernel refused for lack of space: the
// estimate was wrong (another process wrote, or the filesystem counts
// differently), so measure again.
func (g *Space) sawNoSpace() {
	if g == nil {
		return
	}
	g.refresh()
	if g.State() != SpaceHard {
		// statfs says there is room, the kernel says there is not (a
		// quota, reserved blocks): believe the kernel until the next tick.
		g.mu.Lock()
		g.free.Store(0)
		g.transition(0)
		g.mu.Unlock()
	}
}

// refresh measures the filesystem and updates the state.
func (g *Space) refresh() {
	g.mu.Lock()
	defer g.mu.Unlock()
	free, total, err := g.opts.Statfs(g.dir)
	if err != nil {
		if !g.statFailed {
			g.statFailed = true
			g.log.Error("storage: statfs of the data directory failed; the disk space guard keeps its last figures",
				"dir", g.dir, "err", err)
		}
		return
	}
	if g.statFailed {
		g.statFailed = false
		g.log.Info("storage: statfs of the data directory works again", "dir", g.dir)
	}
	g.since.Store(0)
	g.free.Store(int64(min(free, 1<<62)))
	g.total.Store(int64(min(total, 1<<62)))
	g.transition(int64(min(free, 1<<62)))
}

// next is the state free bytes put the guard in, from the current one:
// worse at once, better only past the reserve plus the hysteresis.
func (g *Space) next(free int64) SpaceState {
	cur := g.State()
	okAt, lowAt := g.opts.ReserveSoft, g.opts.ReserveHard
	if cur >= SpaceLow {
		okAt += g.hysteresis
	}
	if cur == SpaceHard {
		lowAt += g.hysteresis
	}
	switch {
	case free >= okAt:
		return SpaceOK
	case free >= lowAt:
		return SpaceLow
	}
	return SpaceHard
}

// transition moves to the state free bytes call for and logs the change,
// once per change (never per write). Caller holds mu.
func (g *Space) transition(free int64) {
	cur, to := g.State(), g.next(free)
	if to == cur {
		return
	}
	g.state.Store(int32(to))
	args := []any{"free_bytes", free, "reserve_soft", g.opts.ReserveSoft, "reserve_hard", g.opts.ReserveHard, "dir", g.dir}
	switch {
	case to == SpaceHard:
		g.log.Error("storage: free disk space below the hard reserve: client writes and batch appends refused, "+
			"only consensus records are written", args...)
	case to == SpaceLow && cur == SpaceOK:
		g.log.Warn("storage: free disk space below the soft reserve: client writes refused until space returns", args...)
	case to == SpaceLow:
		g.log.Warn("storage: free disk space back above the hard reserve: batch appends accepted, client writes still refused", args...)
	default:
		g.log.Info("storage: free disk space back above the soft reserve: writes accepted again", args...)
	}
}

// badgerReserve is the disk badger may claim beyond what it holds: it
// writes its memtable WAL and value log through memory-mapped files that
// it extends sparsely (2 x memtable, 2 x value-log file), and a store into
// a mapped page the filesystem cannot back is SIGBUS, not an error. At
// worst it fills the active WAL and starts the next one while the L0
// table of the full one is written (about 3 memtables), has a compaction
// output in flight (one more), and fills the active value-log file and
// starts the next (2 files).
func badgerReserve(memTable, valueLogFile int64) int64 { return 4*memTable + 2*valueLogFile }

// fitBadgerToReserve lowers the memtable and value-log file sizes until
// badgerReserve fits the hard reserve, keeping the value-log file (the
// largest record badger accepts) as large as it can. It reports whether
// it changed anything.
func (o *Options) fitBadgerToReserve() bool {
	hard := o.Space.ReserveHard
	if hard <= 0 || badgerReserve(o.MemTableBytes, o.ValueLogFileBytes) <= hard {
		return false
	}
	const floor = 1 << 20 // badger's smallest value-log file
	o.MemTableBytes = min(o.MemTableBytes, max(floor, hard/12))
	o.ValueLogFileBytes = min(o.ValueLogFileBytes, max(floor, (hard-4*o.MemTableBytes)/2))
	return true
}
