package systems

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// BenchmarkFramePrepare measures Frame.prepare and the stencil links (which
// Move's units take in a big world on the pool), what lays the tick out
// (snapshot, clusters, cells, stencils, shards), for a world
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
			f.views = w.Snapshot(f.views)
			f.prepare(w, 1, plan)
			f.linkRest()
			b.ReportAllocs()
			tick := uint64(1)
			for b.Loop() {
				tick++
				f.views = w.Snapshot(f.views)
				f.prepare(w, tick, plan)
				f.linkRest()
			}
			b.ReportMetric(float64(len(f.groups)), "chunks")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
		})
	}
}

// A big world's stencils are linked in parts, on different cores: each
// chunk must get the occupied chunks of its 3x3 stencil, in stencil order,
// and their cells, as a lookup of each of the nine keys gives them, in
// whatever order the parts run. The world has gaps (a chunk in five left
// empty), columns of other worldOrCells, and chunks on both sides of zero.
func TestStencilPartsLinkEachChunksNeighbours(t *testing.T) {
	const chunk = 100
	w := ecs.NewWorld(chunk)
	rng := rand.New(rand.NewPCG(9, 10))
	for cy := -20; cy < 30; cy++ {
		for cx := -25; cx < 25; cx++ {
			if rng.IntN(5) == 0 {
				continue
			}
			for range 1 + rng.IntN(3) {
				x, y := (float32(cx)+rng.Float32())*chunk, (float32(cy)+rng.Float32())*chunk
				w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: x, Y: y, WorldOrCell: uint32(min(max(cx-18, 0), 2))}})
			}
		}
	}
	w.Apply(nil)
	var f Frame
	f.views = w.Snapshot(f.views)
	f.prepare(w, 1, ShardPlan{Separation: 4, MinClusterActors: 64, MinShardActors: 32, ShardsPerCluster: 4})
	if len(f.links) < 3 {
		t.Fatalf("%d chunks in %d parts: the test wants several", len(f.byKey), len(f.links))
	}
	for k := len(f.links) - 1; k >= 0; k-- { // parts in any order
		f.linkPart(k)
	}
	byKey := map[grid.AreaKey]int32{}
	for g := range f.groups {
		byKey[f.groups[g].key] = int32(g)
	}
	for g := range f.groups {
		gr := &f.groups[g]
		var stencil, cells []int32
		for dy := int32(-1); dy <= 1; dy++ {
			for dx := int32(-1); dx <= 1; dx++ {
				if o, ok := byKey[grid.AreaKey{WorldOrCell: gr.key.WorldOrCell, X: gr.key.X + dx, Y: gr.key.Y + dy}]; ok {
					stencil = append(stencil, o)
					for c := f.groups[o].cellsLo; c < f.groups[o].cellsHi; c++ {
						cells = append(cells, c)
					}
				}
			}
		}
		require.Equal(t, stencil, append([]int32(nil), gr.stencil[:gr.nst]...), "chunk %v", gr.key)
		require.Equal(t, cells, append([]int32(nil), f.stencilCells(gr)...), "chunk %v", gr.key)
	}
}
