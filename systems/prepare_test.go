package systems

import (
	"math/rand/v2"
	"testing"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

// BenchmarkFramePrepare measures Frame.prepare, the serial step that lays
// the tick out (snapshot, clusters, cells, stencils, shards), for a world
// of 10,000 actors over 64 x 64 chunks (the world scenario's density: most
// chunks hold a few actors) and for 1,000 in one chunk. Nothing changes
// between iterations, so the snapshot is a copy, as in a tick in which no
// actor changed chunks.
//
//	go test -run '^$' -bench BenchmarkFramePrepare ./systems
func BenchmarkFramePrepare(b *testing.B) {
	const chunk = 4096
	for _, c := range []struct {
		name   string
		actors int
		side   int // chunks a side
	}{{"world=10000", 10_000, 64}, {"square=1000", 1000, 1}} {
		b.Run(c.name, func(b *testing.B) {
			w := ecs.NewWorld(chunk)
			rng := rand.New(rand.NewPCG(5, 6))
			for range c.actors {
				x := rng.Float32() * float32(c.side*chunk)
				y := rng.Float32() * float32(c.side*chunk)
				w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: x, Y: y}})
			}
			w.Apply(nil)
			plan := ShardPlan{Separation: 4, MinClusterActors: 64, MinShardActors: 32, ShardsPerCluster: 4}
			var f Frame
			f.prepare(w, 1, plan)
			b.ReportAllocs()
			tick := uint64(1)
			for b.Loop() {
				tick++
				f.prepare(w, tick, plan)
			}
			b.ReportMetric(float64(len(f.groups)), "chunks")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
		})
	}
}
