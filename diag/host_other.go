//go:build !linux

package diag

import "io/fs"

// allowedCPUs: no affinity mask outside Linux; every core counts.
func allowedCPUs() map[int]bool { return nil }

// memoryLimiter: cgroups exist only on Linux.
type memoryLimiter struct{}

func newMemoryLimiter() memoryLimiter { return memoryLimiter{} }

func (memoryLimiter) read() (limit, available uint64, ok bool) { return 0, 0, false }

// fileOwner is what `ls -l` shows beyond fs.FileInfo.
type fileOwner struct {
	nlink     uint64
	uid, gid  uint32
	blocks512 int64
}

func statOwner(fs.FileInfo) fileOwner { return fileOwner{nlink: 1} }
