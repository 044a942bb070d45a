package storage

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// maxIovecs is the kernel's IOV_MAX: the most buffers one writev takes.
const maxIovecs = 1024

// writeAll writes bufs to f (opened O_APPEND) in order with writev, one
// system call for up to maxIovecs buffers, resuming after a short write:
// the group commit's "one write for many batches".
func writeAll(f *os.File, bufs [][]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	for len(bufs) > 0 {
		chunk := bufs[:min(len(bufs), maxIovecs)]
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			n, werr = unix.Writev(int(fd), chunk)
			return !errors.Is(werr, unix.EAGAIN)
		}); err != nil {
			return &os.PathError{Op: "writev", Path: f.Name(), Err: err}
		}
		if errors.Is(werr, unix.EINTR) {
			continue
		}
		if werr != nil {
			return &os.PathError{Op: "writev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return &os.PathError{Op: "writev", Path: f.Name(), Err: unix.EIO}
		}
		bufs = advance(bufs, n)
	}
	return nil
}

// advance drops the first n bytes of bufs, copying the slice header list
// only when a buffer was cut in the middle (the caller's slice is kept).
func advance(bufs [][]byte, n int) [][]byte {
	for len(bufs) > 0 && n >= len(bufs[0]) {
		n -= len(bufs[0])
		bufs = bufs[1:]
	}
	if n > 0 {
		rest := make([][]byte, len(bufs))
		copy(rest, bufs)
		rest[0] = rest[0][n:]
		bufs = rest
	}
	return bufs
}
