package diag

import (
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
	"github.com/ulikunitz/xz/lzma"

	"iggynode/wire"
)

// openArchive reads an archive with a decompressor registered for every
// method GET_SNAPSHOT uses. The LZMA one parses APPNOTE 5.8.8's prefix
// itself rather than reusing the writer's code.
func openArchive(t *testing.T, archive []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("archive does not open: %v", err)
	}
	zr.RegisterDecompressor(12, func(r io.Reader) io.ReadCloser { return io.NopCloser(bzip2.NewReader(r)) })
	zr.RegisterDecompressor(93, func(r io.Reader) io.ReadCloser {
		d, err := zstd.NewReader(r)
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return d.IOReadCloser()
	})
	zr.RegisterDecompressor(95, func(r io.Reader) io.ReadCloser {
		d, err := xz.NewReader(r)
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return io.NopCloser(d)
	})
	zr.RegisterDecompressor(14, func(r io.Reader) io.ReadCloser {
		d, err := newTestZipLZMAReader(r)
		if err != nil {
			return io.NopCloser(errReader{err})
		}
		return io.NopCloser(d)
	})
	return zr
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// newTestZipLZMAReader reads [version u8 u8][props_size u16 LE][props] and
// rebuilds the classic .lzma header (props, unknown size) around the raw
// stream for ulikunitz's reader.
func newTestZipLZMAReader(r io.Reader) (io.Reader, error) {
	var prefix [4]byte
	if _, err := io.ReadFull(r, prefix[:]); err != nil {
		return nil, err
	}
	propsSize := binary.LittleEndian.Uint16(prefix[2:])
	if propsSize != 5 {
		return nil, fmt.Errorf("props size %d, want 5", propsSize)
	}
	header := make([]byte, 13)
	if _, err := io.ReadFull(r, header[:5]); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint64(header[5:], ^uint64(0))
	return lzma.NewReader(io.MultiReader(bytes.NewReader(header), r))
}

// readEntries returns the entries' names in archive order and contents.
func readEntries(t *testing.T, archive []byte) ([]string, map[string]string) {
	t.Helper()
	zr := openArchive(t, archive)
	var names []string
	contents := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("%s: open: %v", f.Name, err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s (method %d): read: %v", f.Name, f.Method, err) // includes the CRC check
		}
		names = append(names, f.Name)
		contents[f.Name] = string(data)
	}
	return names, contents
}

func quietEnv(t *testing.T) SnapshotEnv {
	return SnapshotEnv{
		LogDir:     filepath.Join(t.TempDir(), "no-logs"),
		ConfigPath: filepath.Join(t.TempDir(), "no-config.toml"),
		TempDir:    t.TempDir(),
		Logger:     slog.New(slog.DiscardHandler),
	}
}

func mustSnapshot(t *testing.T, req wire.GetSnapshot, env SnapshotEnv) []byte {
	t.Helper()
	archive, code := Snapshot(req, env)
	if code != 0 {
		t.Fatalf("Snapshot(%+v) = code %v", req, code)
	}
	return archive
}

var methodOf = map[Compression]uint16{
	CompressionStored: 0, CompressionDeflate: 8, CompressionBzip2: 12,
	CompressionZstd: 93, CompressionLZMA: 14, CompressionXZ: 95,
}

// server-behaviour.md 10.2: every entry uses the requested ZIP method and
// reads back intact; test.txt is exactly "test".
func TestSnapshotEveryCompression(t *testing.T) {
	env := quietEnv(t)
	var config strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&config, "key_%d = \"value %d\"\n", i, i*i)
	}
	env.ConfigPath = filepath.Join(t.TempDir(), "current_config.toml")
	if err := os.WriteFile(env.ConfigPath, []byte(config.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for compression, method := range methodOf {
		t.Run(compression.String(), func(t *testing.T) {
			archive := mustSnapshot(t, wire.GetSnapshot{Compression: uint8(compression), Types: []uint8{4, 6}}, env)
			zr := openArchive(t, archive)
			for _, f := range zr.File {
				if f.Method != method {
					t.Errorf("%s: method %d, want %d", f.Name, f.Method, method)
				}
			}
			names, contents := readEntries(t, archive)
			if !slices.Equal(names, []string{"test.txt", "server_config.txt"}) {
				t.Fatalf("entries %q", names)
			}
			if contents["test.txt"] != "test" {
				t.Errorf("test.txt = %q, want \"test\"", contents["test.txt"])
			}
			if contents["server_config.txt"] != config.String() {
				t.Errorf("server_config.txt differs: %d bytes, want %d", len(contents["server_config.txt"]), config.Len())
			}
		})
	}
}

// APPNOTE 5.8.8 and 4.4.4: an LZMA entry starts with the SDK version, the
// properties size 5 (u16 LE) and the 5 property bytes (lc=3 lp=0 pb=2 is
// 0x5D, dictionary 8 MiB = 00 00 80 00 LE), and sets general purpose bit 1
// because the stream ends with an EOS marker.
func TestSnapshotLZMAEntryLayout(t *testing.T) {
	archive := mustSnapshot(t, wire.GetSnapshot{Compression: 5, Types: []uint8{4}}, quietEnv(t))
	zr := openArchive(t, archive)
	f := zr.File[0]
	if f.Flags&0x0002 == 0 {
		t.Errorf("flags %#04x: EOS bit 1 not set", f.Flags)
	}
	rc, err := f.OpenRaw()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	want := []byte{0x09, 0x14, 0x05, 0x00, 0x5D, 0x00, 0x00, 0x80, 0x00}
	if len(raw) < len(want) || !bytes.Equal(raw[:len(want)], want) {
		t.Errorf("lzma entry starts % x, want % x", raw[:min(len(raw), len(want))], want)
	}
	if len(raw) > 0 && int(f.CompressedSize64) != len(raw) {
		t.Errorf("compressed size %d, raw %d", f.CompressedSize64, len(raw))
	}
}

// client-plane.md 8.1.3: the S 3 cases.
func TestSnapshotInvalidRequests(t *testing.T) {
	env := quietEnv(t)
	for _, tc := range []struct {
		name string
		req  wire.GetSnapshot
	}{
		{"compression 0", wire.GetSnapshot{Compression: 0, Types: []uint8{4}}},
		{"compression 7", wire.GetSnapshot{Compression: 7, Types: []uint8{4}}},
		{"compression 255", wire.GetSnapshot{Compression: 255, Types: []uint8{4}}},
		{"unknown compression, no types", wire.GetSnapshot{Compression: 9}},
		{"type 0", wire.GetSnapshot{Compression: 2, Types: []uint8{0}}},
		{"type 7", wire.GetSnapshot{Compression: 2, Types: []uint8{7}}},
		{"type 99", wire.GetSnapshot{Compression: 2, Types: []uint8{99}}},
		{"type 101", wire.GetSnapshot{Compression: 2, Types: []uint8{101}}},
		{"unknown after known", wire.GetSnapshot{Compression: 2, Types: []uint8{4, 42}}},
		{"all then another", wire.GetSnapshot{Compression: 2, Types: []uint8{100, 1}}},
		{"another then all", wire.GetSnapshot{Compression: 2, Types: []uint8{4, 100}}},
		{"all twice", wire.GetSnapshot{Compression: 2, Types: []uint8{100, 100}}},
	} {
		if archive, code := Snapshot(tc.req, env); code != wire.ErrInvalidCommand || archive != nil {
			t.Errorf("%s: code %v (%d bytes), want InvalidCommand", tc.name, code, len(archive))
		}
	}
	for _, body := range [][]byte{nil, {0x02}, {0x02, 0x02, 0x04}, {0x02, 0x01}} {
		if _, code := SnapshotFromBody(body, env); code != wire.ErrInvalidCommand {
			t.Errorf("body % x: code %v, want InvalidCommand", body, code)
		}
	}
	if archive, code := SnapshotFromBody([]byte{0x02, 0x01, 0x04}, env); code != 0 {
		t.Errorf("valid body: code %v", code)
	} else if names, _ := readEntries(t, archive); !slices.Equal(names, []string{"test.txt"}) {
		t.Errorf("valid body entries %q", names)
	}
}

// server-behaviour.md 10.4: an archive over the reply limit is 9000.
func TestSnapshotOverLimit(t *testing.T) {
	env := quietEnv(t)
	env.ConfigPath = filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(env.ConfigPath, bytes.Repeat([]byte("x"), 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	env.MaxArchiveSize = 32 << 10
	if archive, code := Snapshot(wire.GetSnapshot{Compression: 1, Types: []uint8{6}}, env); code != wire.ErrSnapshotFileCompletionFailed || archive != nil {
		t.Errorf("stored 64 KiB under a 32 KiB limit: code %v, %d bytes", code, len(archive))
	}
	// The same content deflates far below the limit.
	if _, code := Snapshot(wire.GetSnapshot{Compression: 2, Types: []uint8{6}}, env); code != 0 {
		t.Errorf("deflated: code %v", code)
	}
}

// server-behaviour.md 10.3: All is types 1, 2, 3, 5 and 6, never test.
func TestSnapshotAll(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the process sections read /proc")
	}
	env := quietEnv(t)
	marker := "marker-file-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(env.TempDir, marker), []byte("hi"), 0o600); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	old, recent := filepath.Join(logDir, "b-old.log"), filepath.Join(logDir, "a-new.log")
	mustWrite(t, old, "first line\n")
	mustWrite(t, recent, "second line\n")
	now := time.Now()
	for path, mod := range map[string]time.Time{old: now.Add(-time.Hour), recent: now} {
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(logDir, "subdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	env.LogDir = logDir
	env.ConfigPath = filepath.Join(t.TempDir(), "current_config.toml")
	mustWrite(t, env.ConfigPath, "[system]\npath = \"local_data\"\n")

	names, contents := readEntries(t, mustSnapshot(t, wire.GetSnapshot{Compression: 2, Types: []uint8{100}}, env))
	want := []string{"filesystem_overview.txt", "process_list.txt", "resource_usage.txt", "server_logs.txt", "server_config.txt"}
	if !slices.Equal(names, want) {
		t.Fatalf("entries %q, want %q", names, want)
	}
	pid := strconv.Itoa(os.Getpid())
	checks := []struct {
		entry, substr string
	}{
		{"filesystem_overview.txt", env.TempDir + ":\n"},
		{"filesystem_overview.txt", marker},
		{"filesystem_overview.txt", "/proc:\n"},
		{"filesystem_overview.txt", " self -> "},
		{"process_list.txt", "USER"},
		{"process_list.txt", " " + pid + " "},
		{"process_list.txt", "==> /proc/meminfo <=="},
		{"process_list.txt", "==> /proc/" + pid + "/cgroup <=="},
		{"process_list.txt", "==> /proc/" + pid + "/task/" + pid + "/stat <=="},
		{"resource_usage.txt", "top - "},
		{"resource_usage.txt", "%CPU"},
		{"resource_usage.txt", " " + pid + " "},
	}
	for _, c := range checks {
		if !strings.Contains(contents[c.entry], c.substr) {
			t.Errorf("%s lacks %q", c.entry, c.substr)
		}
	}
	// The top header's figures come from /proc/stat, meminfo and loadavg:
	// a real host has memory, a load average and CPU time, and this
	// process's row names the test binary with a resident size.
	for _, re := range []string{
		`load average: \d+\.\d\d, \d+\.\d\d, \d+\.\d\d\n`,
		`MiB Mem : +[1-9][0-9.]* total`,
		`%Cpu\(s\): +[0-9.]+ us, .* [0-9.]+ id,`,
		`(?m)^ +` + pid + ` .* [1-9][0-9]* +[0-9]+ [RSDI] `,
	} {
		if !regexp.MustCompile(re).MatchString(contents["resource_usage.txt"]) {
			t.Errorf("resource_usage.txt does not match %s:\n%.1500s", re, contents["resource_usage.txt"])
		}
	}
	if !regexp.MustCompile(`(?m)^\S+ +` + pid + ` +[0-9.]+ +[0-9.]+ +[1-9][0-9]* +[1-9][0-9]* .*diag\.test`).MatchString(contents["process_list.txt"]) {
		t.Errorf("process_list.txt has no row for this process with its sizes and command")
	}
	if got := contents["server_logs.txt"]; got != "first line\nsecond line\n" {
		t.Errorf("server_logs.txt = %q, want oldest file first", got)
	}
	if got := contents["server_config.txt"]; got != "[system]\npath = \"local_data\"\n" {
		t.Errorf("server_config.txt = %q", got)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// server-behaviour.md 10.4: a section that cannot be captured is left out
// and the rest is returned.
func TestSnapshotLeavesOutFailedSections(t *testing.T) {
	var logged bytes.Buffer
	env := quietEnv(t)
	env.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	names, contents := readEntries(t, mustSnapshot(t, wire.GetSnapshot{Compression: 2, Types: []uint8{5, 4, 6}}, env))
	if !slices.Equal(names, []string{"test.txt"}) || contents["test.txt"] != "test" {
		t.Errorf("entries %q %q, want only test.txt", names, contents)
	}
	for _, section := range []string{"server_logs", "server_config"} {
		if !strings.Contains(logged.String(), "type="+section) {
			t.Errorf("omission of %s not logged: %s", section, logged.String())
		}
	}
}

// client-plane.md 8.1.3: types_count 0 yields a valid empty archive.
func TestSnapshotEmpty(t *testing.T) {
	for compression := range methodOf {
		archive := mustSnapshot(t, wire.GetSnapshot{Compression: uint8(compression)}, quietEnv(t))
		if names, _ := readEntries(t, archive); len(names) != 0 {
			t.Errorf("%s: entries %q", compression, names)
		}
		// An empty ZIP is exactly its end-of-central-directory record.
		want := []byte{0x50, 0x4b, 0x05, 0x06, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		if !bytes.Equal(archive, want) {
			t.Errorf("%s: empty archive % x", compression, archive)
		}
	}
}

func TestSnapshotDuplicateTypesOnce(t *testing.T) {
	names, _ := readEntries(t, mustSnapshot(t, wire.GetSnapshot{Compression: 1, Types: []uint8{4, 4, 4}}, quietEnv(t)))
	if !slices.Equal(names, []string{"test.txt"}) {
		t.Errorf("entries %q", names)
	}
}

// server-behaviour.md 10.4: one snapshot at a time; a concurrent request
// gets 9000, and the lock is released afterwards.
func TestSnapshotConcurrent(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	snapshotCollecting = func() {
		close(entered)
		<-release
	}
	t.Cleanup(func() { snapshotCollecting = nil })
	env := quietEnv(t)
	type result struct {
		archive []byte
		code    wire.ErrorCode
	}
	done := make(chan result)
	go func() {
		a, c := Snapshot(wire.GetSnapshot{Compression: 2, Types: []uint8{4}}, env)
		done <- result{a, c}
	}()
	<-entered
	snapshotCollecting = nil // read by the first call already; the second never gets there
	if archive, code := Snapshot(wire.GetSnapshot{Compression: 2, Types: []uint8{4}}, env); code != wire.ErrSnapshotFileCompletionFailed || archive != nil {
		t.Errorf("concurrent snapshot: code %v, want 9000", code)
	}
	// A malformed request is still InvalidCommand while one runs.
	if _, code := Snapshot(wire.GetSnapshot{Compression: 0}, env); code != wire.ErrInvalidCommand {
		t.Errorf("invalid request while busy: code %v, want 3", code)
	}
	close(release)
	first := <-done
	if first.code != 0 {
		t.Fatalf("first snapshot: code %v", first.code)
	}
	if _, contents := readEntries(t, first.archive); contents["test.txt"] != "test" {
		t.Errorf("first snapshot contents %q", contents)
	}
	if _, code := Snapshot(wire.GetSnapshot{Compression: 2, Types: []uint8{4}}, env); code != 0 {
		t.Errorf("after the first finished: code %v", code)
	}
}

// server-behaviour.md 10.3: oversized logs keep their newest bytes within
// the section limit.
func TestServerLogsKeepNewestWithinLimit(t *testing.T) {
	dir := t.TempDir()
	older := bytes.Repeat([]byte("o"), MaxSectionSize/2)
	newer := append(bytes.Repeat([]byte("n"), MaxSectionSize), []byte("THE END\n")...)
	mustWrite(t, filepath.Join(dir, "1.log"), string(older))
	mustWrite(t, filepath.Join(dir, "2.log"), string(newer))
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, "1.log"), past, past); err != nil {
		t.Fatal(err)
	}
	got, err := serverLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > MaxSectionSize {
		t.Errorf("section %d bytes, limit %d", len(got), MaxSectionSize)
	}
	if !bytes.HasPrefix(got, []byte("[")) || !bytes.Contains(got[:100], []byte("older log bytes omitted")) {
		t.Errorf("no omission note: %q", got[:min(len(got), 100)])
	}
	if !bytes.HasSuffix(got, []byte("nnnnTHE END\n")) || bytes.Contains(got, []byte("o"+"o")) {
		t.Errorf("kept the wrong bytes: ends %q", got[max(len(got)-20, 0):])
	}
	if _, err := serverLogs(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing log dir captured")
	}
}

func TestTextSectionLimit(t *testing.T) {
	s := &textSection{limit: 64}
	for range 10 {
		s.printf("%s\n", strings.Repeat("a", 15))
	}
	if len(s.bytes()) > 64 || !s.full || !strings.HasSuffix(string(s.bytes()), truncatedMarker) {
		t.Errorf("section %q (%d bytes), full=%v", s.bytes(), len(s.bytes()), s.full)
	}
}

func TestCappedBuffer(t *testing.T) {
	c := &cappedBuffer{max: 4}
	if _, err := c.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("de")); !errors.Is(err, errArchiveTooLarge) {
		t.Errorf("write past limit: %v", err)
	}
}

// The archives also open in an independent ZIP implementation (Python's
// zipfile knows stored, deflate, bzip2 and LZMA) when one is installed.
func TestSnapshotReadableByPythonZipfile(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	for _, compression := range []Compression{CompressionStored, CompressionDeflate, CompressionBzip2, CompressionLZMA} {
		archive := mustSnapshot(t, wire.GetSnapshot{Compression: uint8(compression), Types: []uint8{4}}, quietEnv(t))
		path := filepath.Join(t.TempDir(), "snapshot.zip")
		if err := os.WriteFile(path, archive, 0o644); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd := exec.Command(python, "-c",
			"import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.testzip(); sys.stdout.write(repr((z.namelist(), z.read('test.txt'))))", path)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("%s: python zipfile: %v: %s", compression, err, stderr.String())
			continue
		}
		if want := `(['test.txt'], b'test')`; string(out) != want {
			t.Errorf("%s: python read %s, want %s", compression, out, want)
		}
	}
}
