package sim

import "math/rand/v2"

// FaultsFor is the fault mix `go test` and cmd/sim use for a seed: every
// fault of 11.2 and 11.3 on, at rates drawn from the seed (loss 0-30%),
// on the metadata group for odd seeds and a partition group for even ones.
func FaultsFor(seed uint64) Config {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return Config{
		Seed:           seed,
		PartitionPlane: seed%2 == 0,
		Net: NetConfig{
			Loss:                   []float64{0, 0.1, 0.2, 0.3}[rng.IntN(4)],
			Replay:                 rng.Float64() * 0.1,
			PartitionProbability:   0.002,
			UnpartitionProbability: 0.02,
			Asymmetric:             rng.IntN(2) == 0,
			ClogProbability:        0.0005,
		},
		CrashProbability:   0.002,
		RestartProbability: 0.01,
		CrashLosesMemory:   seed%3 != 0,
		// Whole-cluster crashes in one seed of three (with memory lost:
		// both planes meet them), decided by the seed alone so the other
		// seeds' runs stay as they were.
		ClusterCrashProbability: []float64{0, 0, 0.001}[seed%3],
		RetainOps:               []int{0, 0, 0, 16, 64}[seed%5], // small rings reach RangeEvicted and the floor rule
		// Disk errors on journal appends in one seed of four.
		JournalFailProbability: []float64{0, 0, 0, 0.01}[seed%4],
	}
}

// ManyGroupsFaultsFor is FaultsFor with 64 partition groups per node,
// quiescence and the node-level heartbeat on (cmd/sim --groups).
func ManyGroupsFaultsFor(seed uint64) Config {
	c := FaultsFor(seed)
	c.Groups = 64
	return c
}

// PlacementFaultsFor is FaultsFor with six partition groups, each on 3
// of 5 nodes and moving replicas between them (cmd/sim --placement;
// Config.Placement).
func PlacementFaultsFor(seed uint64) Config {
	c := FaultsFor(seed)
	c.Replicas, c.Placement, c.Groups = 5, 3, 6
	return c
}
