package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallFS is a real filesystem of a fixed size mounted for one test (a
// tmpfs), so a test can fill it: the kernel answers ENOSPC, statfs and
// memory-mapped writes as on a full disk.
type SmallFS struct {
	Dir string
	t   testing.TB
}

// MountSmallFS mounts a tmpfs of sizeBytes on a fresh directory and
// unmounts it when the test ends. It skips the test when mounting is not
// allowed (not root, no CAP_SYS_ADMIN, a sandbox without tmpfs).
func MountSmallFS(t testing.TB, sizeBytes int64) *SmallFS {
	t.Helper()
	dir := t.TempDir()
	opts := fmt.Sprintf("size=%d,mode=0700", sizeBytes)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs on %s (%v): this test needs root to mount a small filesystem", sizeBytes, dir, err)
	}
	t.Cleanup(func() {
		// MNT_DETACH: a node that is still closing must not keep the
		// mount (and its memory) alive after the test.
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return &SmallFS{Dir: dir, t: t}
}

// Free is what statfs says an unprivileged writer may still use.
func (f *SmallFS) Free() int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(f.Dir, &st); err != nil {
		f.t.Fatalf("statfs %s: %v", f.Dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// Fill writes a filler file of the size that leaves about leave bytes
// free, and returns its path (delete it to give the space back).
func (f *SmallFS) Fill(name string, leave int64) string {
	f.t.Helper()
	path := filepath.Join(f.Dir, name)
	n := f.Free() - leave
	if n <= 0 {
		return path
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	chunk := make([]byte, 1<<20)
	for n > 0 {
		w := min(n, int64(len(chunk)))
		if _, err := file.Write(chunk[:w]); err != nil {
			f.t.Fatalf("filling %s: %v", path, err)
		}
		n -= w
	}
	return path
}

// Resize changes the tmpfs's size in place (mount -o remount,size=...).
func (f *SmallFS) Resize(sizeBytes int64) {
	f.t.Helper()
	if err := unix.Mount("tmpfs", f.Dir, "tmpfs", unix.MS_REMOUNT, fmt.Sprintf("size=%d", sizeBytes)); err != nil {
		f.t.Fatalf("remount %s with size %d: %v", f.Dir, sizeBytes, err)
	}
}
