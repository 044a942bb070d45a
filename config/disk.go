package config

import "time"

// Disk is system.disk (ours; upstream has no such section): the disk
// space guard of package storage ("Disk space"). Below reserve_soft free
// bytes on the filesystem holding system.path the node refuses new
// client writes with CannotWriteToFile (10006); below reserve_hard it
// stops appending batches too, and the reserve is left to the consensus
// records that must never fail and to badger's own growth. Package
// actors (diskspace.go) says which requests are refused.
//
//	[system.disk]
//	reserve_soft = "1 GiB"    # IGGY_SYSTEM_DISK_RESERVE_SOFT
//	reserve_hard = "256 MiB"  # IGGY_SYSTEM_DISK_RESERVE_HARD; at least 6 MiB
//	check_interval = "1 s"    # IGGY_SYSTEM_DISK_CHECK_INTERVAL: statfs period
//
// The reserves are sizes, not percentages: what they must hold (writes in
// flight when the soft line is crossed, badger's preallocated files) does
// not grow with the disk. A hard reserve below 256 MiB lowers badger's
// memtable and value-log file sizes to fit it (and with them the largest
// record the store takes), so small reserves are for tests and small
// devices.
type Disk struct {
	ReserveSoft   Size     `toml:"reserve_soft"`
	ReserveHard   Size     `toml:"reserve_hard"`
	CheckInterval Duration `toml:"check_interval"`
}

// MinDiskReserveHard is storage.MinReserveHard (badger's files at their
// smallest); the actors tests check the two agree.
const MinDiskReserveHard = 6 << 20

func defaultDisk() Disk {
	return Disk{ReserveSoft: 1 << 30, ReserveHard: 256 << 20, CheckInterval: Duration(time.Second)}
}

func validateDisk(c Config, check checkFunc) {
	d := c.System.Disk
	check(d.ReserveHard >= MinDiskReserveHard, "system.disk.reserve_hard = %d, must be at least %d (6 MiB)", d.ReserveHard, MinDiskReserveHard)
	check(d.ReserveSoft >= d.ReserveHard, "system.disk.reserve_soft (%d) must be >= system.disk.reserve_hard (%d)", d.ReserveSoft, d.ReserveHard)
	check(d.CheckInterval.D() >= 10*time.Millisecond && d.CheckInterval.D() <= time.Minute,
		"system.disk.check_interval = %v, must be 10ms..1m", d.CheckInterval)
}
