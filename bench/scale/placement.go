package scale

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"iggynode/bench"
	"iggynode/bench/nodeproc"
	"iggynode/client"
	"iggynode/wire"
)

// Placement is issue 23's benchmark: a cluster of Nodes node processes
// whose partitions live on R = 3 of them (metadata/placement.go) against
// a cluster of RefNodes (3: every partition on every node) on the same
// machine, both with one topic of Partitions partitions and Producers
// producers sending Balanced over all of them, split evenly over the
// cluster's nodes (each producer's node forwards to the partition's
// primary where it is not that). The two clusters send in turn, Rounds
// each, medians compared. It reports the partitions each node leads (from
// ClusterStatus, taking each partition's primary from a node of its
// replica set) and the bytes each node's data directory grew by over the
// rounds, as a share of the payload the rounds sent.
//
//	go run ./cmd/bench placement --nodes 5 --partitions 30
type PlacementConfig struct {
	Source, Dir                            string
	Nodes, RefNodes                        int // defaults 5 and 3
	Partitions, Producers                  int // defaults 30 and 10
	Batches, MessagesPerBatch, MessageSize int // per producer and round; defaults 40, 1000, 1000
	Rounds                                 int // default 3
	Env                                    []string
	Log                                    io.Writer
}

// PlacementResult is a whole placement run.
type PlacementResult struct {
	Nodes    int   `json:"nodes"`
	RefNodes int   `json:"reference_nodes"`
	Leads    []int `json:"partitions_led_per_node"`
	// LeadsBefore are the leads right after creation (before any send);
	// Leads after the rounds, once every partition had a known primary
	// and the spread settled (SettleSeconds after the last round; 0: at
	// once).
	LeadsBefore   []int     `json:"partitions_led_per_node_before"`
	SettleSeconds float64   `json:"settle_seconds"`
	Replicas      []int     `json:"partition_replicas_per_node"`
	Share         []float64 `json:"bytes_share_per_node"` // bytes stored / payload sent, per node
	RefShare      []float64 `json:"reference_bytes_share_per_node"`
	SendMBps      float64   `json:"send_mb_per_s"` // medians over the rounds
	RefMBps       float64   `json:"reference_send_mb_per_s"`
	Rounds        [][2]float64
}

func (c *PlacementConfig) defaults() {
	if c.Source == "" {
		c.Source = "."
	}
	if c.Nodes == 0 {
		c.Nodes = 5
	}
	if c.RefNodes == 0 {
		c.RefNodes = 3
	}
	if c.Partitions == 0 {
		c.Partitions = 30
	}
	if c.Producers == 0 {
		c.Producers = 10
	}
	if c.Batches == 0 {
		c.Batches = 40
	}
	if c.MessagesPerBatch == 0 {
		c.MessagesPerBatch = 1000
	}
	if c.MessageSize == 0 {
		c.MessageSize = 1000
	}
	if c.Rounds == 0 {
		c.Rounds = 3
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// RunPlacement runs cfg.
func RunPlacement(ctx context.Context, cfg PlacementConfig) (PlacementResult, error) {
	cfg.defaults()
	res := PlacementResult{Nodes: cfg.Nodes, RefNodes: cfg.RefNodes}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "placement-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	bin := filepath.Join(dir, "node")
	if err := nodeproc.Build(ctx, cfg.Source, bin, cfg.Log); err != nil {
		return res, err
	}
	placed := &cluster{cfg: Config{Nodes: cfg.Nodes, Env: cfg.Env}, dir: filepath.Join(dir, "placed"), bin: bin}
	ref := &cluster{cfg: Config{Nodes: cfg.RefNodes, Env: cfg.Env}, dir: filepath.Join(dir, "reference"), bin: bin}
	for _, cl := range []*cluster{placed, ref} {
		if err := cl.configure(); err != nil {
			return res, err
		}
		defer cl.stopAll()
		for i := range cl.nodes {
			if err := cl.start(ctx, i); err != nil {
				return res, err
			}
		}
		admin, err := cl.connect(ctx, 0)
		if err != nil {
			return res, err
		}
		err = createTopic(ctx, admin, bench.DefaultStreamPrefix+"1", uint32(cfg.Partitions))
		_ = admin.Close()
		if err != nil {
			return res, err
		}
	}
	time.Sleep(3 * time.Second) // the fresh groups settle and go quiet
	var err error
	if res.LeadsBefore, _, err = placed.leadership(ctx, cfg.Partitions); err != nil {
		return res, err
	}
	var mine, theirs []float64
	var sent, refSent uint64
	before, refBefore := placed.diskBytes(), ref.diskBytes()
	for r := range cfg.Rounds {
		var pair [2]float64
		for k, cl := range []*cluster{ref, placed} {
			mbps, bytes, err := cl.sendSpread(ctx, cfg)
			if err != nil {
				return res, fmt.Errorf("round %d: %w", r, err)
			}
			if cl == placed {
				mine, sent = append(mine, mbps), sent+bytes
			} else {
				theirs, refSent = append(theirs, mbps), refSent+bytes
			}
			pair[1-k] = mbps
			fmt.Fprintf(cfg.Log, "  round %d: %s %.0f MB/s\n", r, map[bool]string{true: "placed", false: "reference"}[cl == placed], mbps)
		}
		res.Rounds = append(res.Rounds, pair)
	}
	res.SendMBps, res.RefMBps = median(mine), median(theirs)
	res.Share = shares(before, placed.diskBytes(), sent)
	res.RefShare = shares(refBefore, ref.diskBytes(), refSent)
	// Leadership after the load: view changes under it may have moved
	// primaries; the balancer brings them back (cluster.leader_balance_interval).
	end := time.Now()
	for {
		res.Leads, res.Replicas, err = placed.leadership(ctx, cfg.Partitions)
		if err != nil {
			return res, err
		}
		known, lo, hi := 0, cfg.Partitions, 0
		for _, l := range res.Leads {
			known += l
			lo, hi = min(lo, l), max(hi, l)
		}
		if (known == cfg.Partitions && hi-lo <= 2) || time.Since(end) > time.Minute {
			break
		}
		time.Sleep(time.Second)
	}
	res.SettleSeconds = time.Since(end).Seconds()
	return res, nil
}

// sendSpread runs the producers, split over the cluster's nodes, all at
// once, and returns their payload MB/s (bytes over the wall time of the
// slowest) and bytes.
func (c *cluster) sendSpread(ctx context.Context, cfg PlacementConfig) (float64, uint64, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bytes uint64
	var firstErr error
	start := time.Now()
	for i := range c.nodes {
		producers := cfg.Producers / len(c.nodes)
		if i < cfg.Producers%len(c.nodes) {
			producers++
		}
		if producers == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := bench.Run(ctx, bench.Config{Address: c.addrs[i], Producers: producers, Streams: 1, Topic: "t", PartitionsPerTopic: cfg.Partitions,
				MessageSize: cfg.MessageSize, MessagesPerBatch: cfg.MessagesPerBatch, BatchCount: cfg.Batches,
				Workload: bench.WorkloadBalancedProducer})
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("producers at node %d: %w", i, err)
			}
			bytes += rep.Producers.PayloadBytes
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, 0, firstErr
	}
	return float64(bytes) / 1e6 / time.Since(start).Seconds(), bytes, nil
}

// diskBytes is each node's data directory on disk (allocated blocks).
func (c *cluster) diskBytes() []int64 {
	out := make([]int64, len(c.nodes))
	for i := range c.nodes {
		_ = filepath.WalkDir(filepath.Join(c.dir, fmt.Sprintf("node%d", i)), func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					out[i] += st.Blocks * 512
				}
			}
			return nil
		})
	}
	return out
}

func shares(before, after []int64, sent uint64) []float64 {
	out := make([]float64, len(after))
	for i := range after {
		out[i] = float64(after[i]-before[i]) / float64(max(sent, 1))
	}
	return out
}

// leadership asks every node for ClusterStatus and counts, per node, the
// partitions it leads (each partition's primary as a member of its
// replica set reports it) and the partition replicas it holds.
func (c *cluster) leadership(ctx context.Context, partitions int) (leads, replicas []int, err error) {
	leads, replicas = make([]int, len(c.nodes)), make([]int, len(c.nodes))
	primaries := map[uint64]uint8{}
	var placedOn []wire.ClusterStatusPartition
	for i := range c.nodes {
		// Pinned: each node's own view of the groups it is in.
		cl, err := client.Connect(ctx, client.Options{Address: c.addrs[i], Username: bench.DefaultUsername,
			Password: bench.DefaultPassword, RequestTimeout: 30 * time.Second, StayOnNode: true})
		if err != nil {
			return nil, nil, err
		}
		st, err := cl.ClusterStatus(ctx)
		_ = cl.Close()
		if err != nil {
			return nil, nil, err
		}
		placedOn = st.Partitions
		for _, p := range st.Partitions {
			if p.Voters&(1<<i) != 0 && p.Primary != wire.NoPrimary {
				primaries[uint64(p.Stream)<<32|uint64(p.Topic)<<20|uint64(p.Partition)] = p.Primary
			}
		}
	}
	if len(placedOn) != partitions {
		return leads, replicas, fmt.Errorf("%d partitions placed, want %d", len(placedOn), partitions)
	}
	for _, p := range placedOn {
		for id := range replicas {
			if p.Replicas&(1<<id) != 0 {
				replicas[id]++
			}
		}
		if pr, ok := primaries[uint64(p.Stream)<<32|uint64(p.Topic)<<20|uint64(p.Partition)]; ok && int(pr) < len(leads) {
			leads[pr]++
		}
	}
	return leads, replicas, nil
}
