// Package diag produces the node's diagnostics: the process and host half
// of GET_STATS (code 10) and the archive of GET_SNAPSHOT (code 11).
//
// # Stats (server-behaviour.md 9, client-plane.md 7.14, 8.1.2)
//
// A Collector measures this process and its host and merges the node's own
// counters (Counters) into a wire.Stats. Choices where the spec leaves room:
//
//   - cpu_usage is the process's CPU time since the previous probe of the
//     same Collector over the wall time between them, in percent of one core
//     (so it can exceed 100); a Collector's first probe reports 0. The
//     reference measures per serving thread; one Collector per node gives
//     the same meaning with a single baseline.
//   - total_cpu_usage is the busy share of the cores in the process's
//     affinity mask (the host's cores when the mask is unknown) since the
//     previous probe; the first probe reports the average since boot.
//   - total_memory / available_memory are the host's figures, replaced by
//     the cgroup (v2 memory.max, v1 memory.limit_in_bytes) limit and what
//     remains under it when that limit is lower; inactive file cache counts
//     as available.
//   - start_time and run_time are whole seconds expressed in µs.
//   - read_bytes / written_bytes are the storage-level counters of
//     /proc/self/io; free_disk_space is what an unprivileged user may still
//     write on the filesystem holding the data path (its nearest existing
//     parent if it does not exist yet).
//   - os_name is os-release NAME, os_version the reference's long form
//     "Linux (NAME VERSION_ID)", kernel_version the kernel release; each
//     falls back to its unknown_* string. Host names and versions are read
//     once per Collector.
//   - cache_metrics is always empty, as in the reference.
//
// # Snapshot (server-behaviour.md 10, client-plane.md 8.1.3)
//
// Snapshot validates the request (unknown compression or type, or All with
// any other entry, is InvalidCommand), takes a process-wide lock (a second
// snapshot meanwhile is SnapshotFileCompletionFailed), captures each
// requested section and writes one ZIP entry per section with the requested
// method: stored (0), deflate (8), bzip2 (12), LZMA (14, APPNOTE 5.8.8
// layout with an end-of-stream marker and general purpose bit 1), zstd (93)
// or xz (95). Sections are read from /proc and the filesystem in Go, in the
// layout of ls -la, ps aux and top -H -b -n 1; no external command runs.
// A section that cannot be captured (no /proc, no log directory, no
// runtime config) is logged and left out; each is cut at MaxSectionSize
// (logs keep their newest bytes), and an archive over
// SnapshotEnv.MaxArchiveSize fails with SnapshotFileCompletionFailed.
// Further choices: a type listed twice yields one entry; test.txt holds
// exactly "test"; server_logs.txt concatenates the regular files of the log
// directory, oldest modification first, without separators.
//
// # Which parser reads what
//
// The stats use gopsutil (process, cpu, mem, disk, host). The snapshot's
// process and thread tables copy ps and top, which need proc(5)'s raw
// fields (pgrp, session, tty_nr and tpgid for ps's STAT flags, tick
// counts, the state letter) that gopsutil reports only as words and float
// seconds: those, /proc/stat, meminfo, loadavg, status and the process's
// cgroup list are parsed by github.com/prometheus/procfs. What is still
// read by hand has no parser in either library: the cgroup memory files
// (memory.max or memory.limit_in_bytes, memory.current, one memory.stat
// key), and ps's tty name, STAT letters and TIME columns, which are
// formatting rather than parsing. Files the snapshot dumps whole are
// copied, not parsed.
package diag
