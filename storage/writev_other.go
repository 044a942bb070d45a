//go:build !linux

package storage

import "os"

// writeAll writes bufs to f in order, one write per buffer (writev is
// used on Linux, writev_linux.go).
func writeAll(f *os.File, bufs [][]byte) error {
	for _, b := range bufs {
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	return nil
}
