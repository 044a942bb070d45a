package diag

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"iggynode/wire"
)

// Compression is a GET_SNAPSHOT compression code (server-behaviour.md 10.2).
type Compression uint8

const (
	CompressionStored  Compression = 1
	CompressionDeflate Compression = 2 // the SDK default
	CompressionBzip2   Compression = 3
	CompressionZstd    Compression = 4
	CompressionLZMA    Compression = 5
	CompressionXZ      Compression = 6
)

var compressionNames = map[Compression]string{
	CompressionStored: "stored", CompressionDeflate: "deflated", CompressionBzip2: "bzip2",
	CompressionZstd: "zstd", CompressionLZMA: "lzma", CompressionXZ: "xz",
}

func (c Compression) String() string {
	if n, ok := compressionNames[c]; ok {
		return n
	}
	return fmt.Sprintf("compression(%d)", uint8(c))
}

// SnapshotType is a GET_SNAPSHOT type code (server-behaviour.md 10.3).
type SnapshotType uint8

const (
	TypeFilesystemOverview SnapshotType = 1
	TypeProcessList        SnapshotType = 2
	TypeResourceUsage      SnapshotType = 3
	TypeTest               SnapshotType = 4
	TypeServerLogs         SnapshotType = 5
	TypeServerConfig       SnapshotType = 6
	// TypeAll expands to AllTypes and must be the only type requested.
	TypeAll SnapshotType = 100
)

// AllTypes is what TypeAll expands to: every type but TypeTest (10.3).
var AllTypes = []SnapshotType{TypeFilesystemOverview, TypeProcessList, TypeResourceUsage, TypeServerLogs, TypeServerConfig}

var typeNames = map[SnapshotType]string{
	TypeFilesystemOverview: "filesystem_overview",
	TypeProcessList:        "process_list",
	TypeResourceUsage:      "resource_usage",
	TypeTest:               "test",
	TypeServerLogs:         "server_logs",
	TypeServerConfig:       "server_config",
	TypeAll:                "all",
}

func (t SnapshotType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// EntryName is the archive entry a type produces ("process_list.txt");
// "" for TypeAll and unknown codes.
func (t SnapshotType) EntryName() string {
	if t == TypeAll {
		return ""
	}
	if n, ok := typeNames[t]; ok {
		return n + ".txt"
	}
	return ""
}

// DefaultMaxArchiveSize is the largest archive a reply frame can carry: the
// 64 MiB frame limit minus the 256-byte header (server-behaviour.md 10.4).
const DefaultMaxArchiveSize = wire.DefaultMaxFrameSize - wire.HeaderSize

// MaxSectionSize bounds each entry's uncompressed text so that even a
// stored archive of every section stays well under the frame limit.
const MaxSectionSize = 8 << 20

// SnapshotEnv is what a snapshot reads besides /proc.
type SnapshotEnv struct {
	// LogDir is the server log directory (system.logging.path under
	// system.path); every regular file in it goes into server_logs.txt.
	LogDir string
	// ConfigPath is the effective configuration written at boot
	// (runtime/current_config.toml under system.path).
	ConfigPath string
	// TempDir is the system temporary directory listed in
	// filesystem_overview.txt; "" means os.TempDir().
	TempDir string
	// MaxArchiveSize is the largest archive allowed; 0 means
	// DefaultMaxArchiveSize.
	MaxArchiveSize int
	// Logger receives a warning per section left out; nil means slog.Default().
	Logger *slog.Logger
}

// snapshotBusy makes snapshots exclusive process-wide: only one can be
// collected at a time (server-behaviour.md 10.4).
var snapshotBusy atomic.Bool

// snapshotCollecting is a test seam called while the snapshot lock is held.
var snapshotCollecting func()

// SnapshotFromBody decodes a GET_SNAPSHOT body and runs Snapshot; a body
// that does not decode (too short) is InvalidCommand (client-plane.md 8.1.3).
func SnapshotFromBody(body []byte, env SnapshotEnv) ([]byte, wire.ErrorCode) {
	var req wire.GetSnapshot
	if err := req.Decode(body); err != nil {
		return nil, wire.ErrInvalidCommand
	}
	return Snapshot(req, env)
}

// Snapshot builds the GET_SNAPSHOT archive (server-behaviour.md 10,
// client-plane.md 8.1.3): one text entry per requested type, each written
// with the requested ZIP method. The code is 0 on success, ErrInvalidCommand
// for an unknown compression or type or TypeAll with other types, and
// ErrSnapshotFileCompletionFailed while another snapshot is being collected
// or when the archive would exceed env.MaxArchiveSize. A section that cannot
// be captured is logged and left out.
func Snapshot(req wire.GetSnapshot, env SnapshotEnv) ([]byte, wire.ErrorCode) {
	method, types, code := validateSnapshot(req)
	if code != 0 {
		return nil, code
	}
	if !snapshotBusy.CompareAndSwap(false, true) {
		return nil, wire.ErrSnapshotFileCompletionFailed
	}
	defer snapshotBusy.Store(false)
	if snapshotCollecting != nil {
		snapshotCollecting()
	}
	env = env.withDefaults()
	archive, err := buildArchive(method, types, env)
	if err != nil {
		env.Logger.Warn("snapshot failed", "compression", Compression(req.Compression), "err", err)
		return nil, wire.ErrSnapshotFileCompletionFailed
	}
	return archive, 0
}

// validateSnapshot checks the codes and expands TypeAll (10.4). Duplicate
// types are collapsed to the first occurrence: an archive cannot hold the
// same entry name twice.
func validateSnapshot(req wire.GetSnapshot) (zipMethod, []SnapshotType, wire.ErrorCode) {
	method, ok := zipMethods[Compression(req.Compression)]
	if !ok {
		return zipMethod{}, nil, wire.ErrInvalidCommand
	}
	types := make([]SnapshotType, 0, len(req.Types))
	for _, raw := range req.Types {
		t := SnapshotType(raw)
		if t == TypeAll {
			// Like the reference, All must be the only entry in the list.
			if len(req.Types) > 1 {
				return zipMethod{}, nil, wire.ErrInvalidCommand
			}
			return method, AllTypes, 0
		}
		if t.EntryName() == "" {
			return zipMethod{}, nil, wire.ErrInvalidCommand
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return method, types, 0
}

func (env SnapshotEnv) withDefaults() SnapshotEnv {
	if env.TempDir == "" {
		env.TempDir = os.TempDir()
	}
	if env.MaxArchiveSize <= 0 {
		env.MaxArchiveSize = DefaultMaxArchiveSize
	}
	if env.Logger == nil {
		env.Logger = slog.Default()
	}
	return env
}

// errArchiveTooLarge stops writing as soon as the archive passes its limit.
var errArchiveTooLarge = errors.New("diag: snapshot archive exceeds the reply frame limit")

// cappedBuffer is a bytes.Buffer that refuses to grow past max.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		return 0, errArchiveTooLarge
	}
	return c.buf.Write(p)
}

func buildArchive(method zipMethod, types []SnapshotType, env SnapshotEnv) ([]byte, error) {
	out := &cappedBuffer{max: env.MaxArchiveSize}
	zw := zip.NewWriter(out)
	if method.comp != nil {
		zw.RegisterCompressor(method.id, method.comp)
	}
	now := time.Now()
	for _, t := range types {
		text, err := captureSection(t, env)
		if err != nil {
			env.Logger.Warn("snapshot section left out", "type", t, "err", err)
			continue
		}
		fh := &zip.FileHeader{Name: t.EntryName(), Method: method.id, Flags: method.flags, Modified: now}
		fh.SetMode(0o644)
		w, err := zw.CreateHeader(fh)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
		if _, err := w.Write(text); err != nil {
			return nil, fmt.Errorf("%s: %w", t, err)
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.buf.Bytes(), nil
}

// captureSection produces one entry's text, at most MaxSectionSize bytes.
func captureSection(t SnapshotType, env SnapshotEnv) ([]byte, error) {
	var b []byte
	var err error
	switch t {
	case TypeFilesystemOverview:
		b, err = filesystemOverview(env.TempDir)
	case TypeProcessList:
		b, err = processList()
	case TypeResourceUsage:
		b, err = resourceUsage()
	case TypeTest:
		b = []byte("test")
	case TypeServerLogs:
		b, err = serverLogs(env.LogDir)
	case TypeServerConfig:
		b, err = readBounded(env.ConfigPath, MaxSectionSize)
	default:
		err = fmt.Errorf("no collector for %s", t)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSectionSize {
		b = b[:MaxSectionSize]
	}
	return b, nil
}

// readBounded reads at most limit bytes of a file.
func readBounded(path string, limit int) ([]byte, error) {
	if path == "" {
		return nil, errors.New("no path configured")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(limit)))
}
