package faults

// The nodes' own storage, read from outside: a partition group's stamped
// batches are files under <system.path>/partitions/<group, 16 hex
// digits>/<base offset>.log (storage/ package doc), which `docker cp`
// streams out of a running container as a tar archive (the image is
// FROM scratch: nothing to exec in it). The members of a partition's
// replica set must hold the same batches, byte for byte. A node outside
// the set must hold none of it, or (a replica the placement moved away)
// at most a stale prefix of it: actors/placement.go says the old replica
// drops the partition's data once the group no longer needs it, but no
// code does yet (docs/faults.md), so a leftover is counted and reported,
// and only one that is not the start of the members' log, byte for byte,
// fails the check.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"iggynode/wire"
)

// dataPath is system.path in deploy/docker/cluster.toml.
const dataPath = "/data"

// StorageWithin bounds the storage check's retries: it runs after every
// member's copy was read whole, so only a last commit may be in flight.
const StorageWithin = 20 * time.Second

// stored is one group's batch files on one node: how many, their bytes,
// and a digest of each stamped batch in log order (files by name, that
// is by base offset, then batches by batch_length).
type stored struct {
	Files   int
	Bytes   int64
	Batches [][sha256.Size]byte
	Bad     string // a file that does not walk as whole batches
}

// prefixOf: s's batches are the first batches of ref's.
func (s stored) prefixOf(ref stored) bool {
	return len(s.Batches) <= len(ref.Batches) && slices.Equal(s.Batches, ref.Batches[:len(s.Batches)])
}

func (s stored) same(ref stored) bool {
	return s.Files == ref.Files && s.Bytes == ref.Bytes && slices.Equal(s.Batches, ref.Batches)
}

// StoredPartitions reads service svc's partition batch files (docker cp of
// /data/partitions) and digests them by group id; no folder is no
// partition.
func (c *Cluster) StoredPartitions(ctx context.Context, svc string) (map[uint64]stored, error) {
	id, err := c.ContainerOf(ctx, svc)
	if err != nil {
		return nil, err
	}
	args := []string{"cp", id + ":" + dataPath + "/partitions", "-"}
	c.Logf("$ docker %s (%s)", strings.Join(args, " "), svc)
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), c.Env...)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	type file struct {
		name string
		data []byte
	}
	byGroup := map[uint64][]file{}
	tr := tar.NewReader(out)
	var readErr error
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			readErr = fmt.Errorf("%s's partitions archive: %w", svc, err)
			break
		}
		// partitions/<group hex>/<base>.log; a <hex>.deleted folder is on
		// its way out and holds nothing the node serves.
		parts := strings.Split(strings.TrimPrefix(h.Name, "./"), "/")
		if h.Typeflag != tar.TypeReg || len(parts) != 3 || !strings.HasSuffix(parts[2], ".log") || len(parts[1]) != 16 {
			continue
		}
		g, err := strconv.ParseUint(parts[1], 16, 64)
		if err != nil {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			readErr = fmt.Errorf("%s: %s: %w", svc, h.Name, err)
			break
		}
		byGroup[g] = append(byGroup[g], file{parts[2], data})
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		if strings.Contains(errOut.String(), "Could not find the file") || strings.Contains(errOut.String(), "No such") {
			return map[uint64]stored{}, nil
		}
		return nil, fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	if readErr != nil {
		return nil, readErr
	}
	sums := map[uint64]stored{}
	for g, files := range byGroup {
		slices.SortFunc(files, func(a, b file) int { return strings.Compare(a.name, b.name) })
		var s stored
		for _, f := range files {
			s.Files++
			s.Bytes += int64(len(f.data))
			for rest := f.data; len(rest) > 0; {
				n := uint64(0)
				if len(rest) >= wire.BatchHeaderSize {
					n = wire.Batch(rest).Length()
				}
				if n < wire.BatchHeaderSize || n > uint64(len(rest)) {
					s.Bad = fmt.Sprintf("%s: %d bytes at the end that are not a whole batch", f.name, len(rest))
					break
				}
				s.Batches = append(s.Batches, sha256.Sum256(rest[:n]))
				rest = rest[n:]
			}
		}
		sums[g] = s
	}
	return sums, nil
}

// sameStorage checks, from each node's own files, that the members of
// each workload partition's replica set hold the same batches, byte for
// byte, and that every other node holds none of them or a stale prefix
// (see the top of the file); it retries up to StorageWithin (a backup
// that has not written the last commit yet) and returns the bytes each node
// stores of the partitions it is a member of, and of those it is not,
// by service.
func sameStorage(ctx context.Context, c *Cluster, wl workloadTopic, place map[uint32]wire.ClusterStatusPartition) (held, stale map[string]int64, err error) {
	deadline := time.Now().Add(StorageWithin)
	for {
		var problems []string
		var where map[string][]uint32
		held, stale, where, problems, err = storageOnce(ctx, c, wl, place)
		if err == nil && len(problems) > 0 {
			err = fmt.Errorf("storage: %d problems: %s", len(problems), strings.Join(problems, "; "))
		}
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			var leftovers []string
			for _, n := range c.Nodes {
				if b := stale[n.Service]; b > 0 {
					leftovers = append(leftovers, fmt.Sprintf("%s %d bytes (partitions %v)", n.Service, b, where[n.Service]))
				}
			}
			if len(leftovers) > 0 {
				c.Logf("storage: stale copies of partitions outside their replica sets (moved away, not dropped): %s",
					strings.Join(leftovers, ", "))
			}
			return held, stale, err
		}
		if len(problems) > 3 {
			problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
		}
		c.Logf("storage not settled yet: %s", strings.Join(problems, "; "))
		time.Sleep(2 * time.Second)
	}
}

func storageOnce(ctx context.Context, c *Cluster, wl workloadTopic, place map[uint32]wire.ClusterStatusPartition) (held, stale map[string]int64, where map[string][]uint32,
	problems []string, err error) {
	held, stale, where = map[string]int64{}, map[string]int64{}, map[string][]uint32{}
	sums := make([]map[uint64]stored, len(c.Nodes))
	for i, n := range c.Nodes {
		if sums[i], err = c.StoredPartitions(ctx, n.Service); err != nil {
			return held, stale, where, nil, err
		}
	}
	for _, pid := range wl.partitions {
		g := wl.group(pid)
		in, out := members(c, place, pid)
		ref := sums[in[0]][g]
		for _, i := range in {
			s, name := sums[i][g], c.Nodes[i].Service
			held[name] += s.Bytes
			switch {
			case s.Bad != "":
				problems = append(problems, fmt.Sprintf("partition %d: %s: %s", pid, name, s.Bad))
			case !s.same(ref):
				problems = append(problems, fmt.Sprintf("partition %d: %s stores %d batches (%d bytes, %d files), %s %d (%d bytes, %d files)%s",
					pid, name, len(s.Batches), s.Bytes, s.Files, c.Nodes[in[0]].Service, len(ref.Batches), ref.Bytes, ref.Files,
					firstDiff(s, ref)))
			}
		}
		for _, i := range out {
			s, name := sums[i][g], c.Nodes[i].Service
			stale[name] += s.Bytes
			if s.Bytes > 0 {
				where[name] = append(where[name], pid)
			}
			if s.Bytes > 0 && !s.prefixOf(ref) {
				problems = append(problems, fmt.Sprintf("partition %d: %s, outside its replica set, stores %d batches of it that are not "+
					"the start of %s's %d%s", pid, name, len(s.Batches), c.Nodes[in[0]].Service, len(ref.Batches), firstDiff(s, ref)))
			}
		}
	}
	return held, stale, where, problems, nil
}

// firstDiff names the first batch where s and ref differ.
func firstDiff(s, ref stored) string {
	for k := range min(len(s.Batches), len(ref.Batches)) {
		if s.Batches[k] != ref.Batches[k] {
			return fmt.Sprintf("; batch %d differs", k)
		}
	}
	return ""
}
