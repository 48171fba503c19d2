package systems

import (
	"math"
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

// A big world's cells are counted and numbered on the tick goroutine, and
// its actors placed by Move's units, each its shard's range, on different
// cores. Wherever the ranges are cut and whatever order they are placed
// in, each cell must hold exactly the actors of its chunk that fall in its
// bucket (its square of the chunk's grid, and its kind where kinds are
// split), contiguous and in view and row order, the cells of a chunk in
// bucket order, and every actor must point at its cell, its view and row,
// and its chunk. The world has chunks of a few actors (one cell),
// crowded ones (a grid of cells) and, in one pass, two kinds of sender in
// two tables, which split cells by kind.
func TestPlacedRangesPutEachActorInItsCell(t *testing.T) {
	const chunk = 100
	w := ecs.NewWorld(chunk)
	rng := rand.New(rand.NewPCG(11, 12))
	for cy := -20; cy < 30; cy++ {
		for cx := -25; cx < 25; cx++ {
			n := 1 + rng.IntN(3)
			if rng.IntN(40) == 0 {
				n = 30 + rng.IntN(300) // a crowd: a grid of cells
			}
			for range n {
				x, y := (float32(cx)+rng.Float32())*chunk, (float32(cy)+rng.Float32())*chunk
				w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: x, Y: y}, Client: components.Client{Class: uint8(rng.IntN(2))}})
			}
		}
	}
	w.Apply(nil)
	plan := ShardPlan{Separation: 4, MinClusterActors: 64, MinShardActors: 32, ShardsPerCluster: 4}
	for _, kinds := range []int{1, 2} {
		var f Frame
		if kinds == 2 { // class 1 is a kind of its own, of a table of its own
			f.sets, f.tables = 2, 2
			f.classSet[1], f.kindTable[1], f.tableKind[1] = 1, 1, 1
		}
		f.views = w.Snapshot(f.views)
		f.begin(w, 1, plan)
		require.GreaterOrEqual(t, len(f.groups), deferPlaceChunks, "the test wants a world whose placing Move's units take")
		// Ranges cut anywhere, through crowded chunks too, placed last
		// first, each with scratch of its own.
		cuts := []int32{int32(f.Len())}
		for cuts[len(cuts)-1] > 0 {
			cuts = append(cuts, max(cuts[len(cuts)-1]-1-int32(rng.IntN(400)), 0))
		}
		for i := 0; i+1 < len(cuts); i++ {
			var scratch []int32
			f.placeRange(cuts[i+1], cuts[i], &scratch)
		}
		crowded := 0
		next := int32(0)
		for gi := range f.groups {
			g := &f.groups[gi]
			require.Equal(t, next, g.cellsLo, "chunk %v: its cells follow the last chunk's", g.key)
			next = g.cellsHi
			k := int(g.side)
			if k > 1 {
				crowded++
			}
			// Each actor of the chunk in view and row order, with its bucket.
			type seat struct{ v, r, bucket int32 }
			var seats []seat
			for _, v := range f.members[g.viewsLo:g.viewsHi] {
				view := &f.views[v]
				for r := range view.Len() {
					tr := view.Transforms[r]
					scale := float32(k) / chunk
					cx := min(max(int((tr.X-float32(g.key.X)*chunk)*scale), 0), k-1)
					cy := min(max(int((tr.Y-float32(g.key.Y)*chunk)*scale), 0), k-1)
					b := int32((cy*k + cx) * kinds)
					if kinds == 2 {
						b += int32(view.Clients[r].Class)
					}
					seats = append(seats, seat{v, int32(r), b})
				}
			}
			a := g.actors.lo
			last := int32(-1)
			for c := g.cellsLo; c < g.cellsHi; c++ {
				cl := &f.cells[c]
				require.Equal(t, a, cl.actors.lo, "chunk %v: its cells are contiguous", g.key)
				bucket := int32(math.MaxInt32) // the next bucket with actors
				for _, s := range seats {
					if s.bucket > last {
						bucket = min(bucket, s.bucket)
					}
				}
				for _, s := range seats {
					if s.bucket == bucket {
						require.Equal(t, [4]int32{s.v, s.r, int32(gi), c}, [4]int32{f.view[a], f.row[a], f.group[a], f.cellIdx[a]}, "chunk %v, actor %d", g.key, a)
						a++
					}
				}
				require.Equal(t, a, cl.actors.hi, "chunk %v: cell %d holds its bucket's actors", g.key, c)
				require.Equal(t, uint8(bucket%int32(kinds)), cl.kind, "chunk %v: cell %d's kind", g.key, c)
				last = bucket
			}
			require.Equal(t, g.actors.hi, a, "chunk %v: every actor is in a cell", g.key)
		}
		require.Equal(t, len(f.cells), int(next))
		require.Greater(t, crowded, 5, "crowded chunks")
	}
}
