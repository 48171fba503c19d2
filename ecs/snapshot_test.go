package ecs_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// BenchmarkSnapshotWorld measures Snapshot (the join's, after its Apply) on the
// "world" scenario: 10,000 actors spread over 64 x 64 chunks. changed=true
// gives one actor a component of the user's and takes it away again before
// each Snapshot, with raw Ark calls, so every Snapshot queries Ark's tables;
// changed=false takes Snapshots with no structural change between them,
// which copy the last one.
func BenchmarkSnapshotWorld(b *testing.B) {
	for _, changed := range []bool{true, false} {
		b.Run(fmt.Sprintf("changed=%v", changed), func(b *testing.B) {
			w := ecs.NewWorld(grid.DefaultChunkSize)
			rng := rand.New(rand.NewPCG(1, 2))
			const side = 64 * grid.DefaultChunkSize
			var last components.ActorID
			for range 10_000 {
				last = w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: rng.Float32() * side, Y: rng.Float32() * side}})
			}
			w.Apply(nil)
			e, _ := w.Entity(last)
			tags := ark.NewMap[Tag](w.Ark())
			views := w.Snapshot(nil)
			b.ReportAllocs()
			for b.Loop() {
				if changed {
					if tags.Has(e) {
						tags.Remove(e)
					} else {
						tags.Add(e, &Tag{})
					}
				}
				views = w.Snapshot(views)
			}
			b.ReportMetric(float64(len(views)), "views")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/snapshot")
		})
	}
}

// BenchmarkSnapshotAfterOneNewChunk measures a tick in which one chunk
// entity is created: an actor steps into a chunk never visited before
// (Apply), then the prepare phase takes its Snapshot, which must fit the
// new chunk into the key order. That is the common tick while a crowd is
// still discovering its map. The world has 4,050 occupied chunks, on every
// other square of a 90 x 90 checkerboard; the wanderer visits the free
// squares in random order, so new keys land all over the order. After 512
// visits (13% more chunks) the world is rebuilt, off the clock, to keep the
// chunk count near 4,000. Apply's own cost of a new chunk (an Ark table) is
// included: it is the same whatever Snapshot does.
func BenchmarkSnapshotAfterOneNewChunk(b *testing.B) {
	const (
		side   = 90
		visits = 512
		size   = grid.DefaultChunkSize
	)
	center := func(c int) float32 { return (float32(c) + 0.5) * size }
	rng := rand.New(rand.NewPCG(5, 6))
	var free []components.Transform
	for y := range side {
		for x := range side {
			if (x+y)%2 == 1 {
				free = append(free, components.Transform{X: center(x), Y: center(y)})
			}
		}
	}
	var (
		w        *ecs.World
		wanderer components.ActorID
		views    []ecs.ChunkView
		next     int
	)
	build := func() {
		w = ecs.NewWorld(size)
		for y := range side {
			for x := range side {
				if (x+y)%2 == 0 {
					w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: center(x), Y: center(y)}})
				}
			}
		}
		wanderer = w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: center(0), Y: center(0)}})
		w.Apply(nil)
		views = w.Snapshot(views)
		rng.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		next = 0
	}
	build()
	var r ecs.ApplyReport
	b.ReportAllocs()
	for b.Loop() {
		if next == visits {
			b.StopTimer()
			build()
			b.StartTimer()
		}
		w.Teleport(wanderer, free[next])
		next++
		w.Apply(&r)
		views = w.Snapshot(views)
		if r.ChunksCreated != 1 {
			b.Fatalf("%d chunks created, want 1", r.ChunksCreated)
		}
	}
}

// TestSnapshotOrderSurvivesChunkChurn drives the chunk order through every
// way it changes: actors spawn, jump and despawn over 81 x 81 chunks around
// the origin in four worldOrCells (now and then at the far ends of the
// int32 chunk range), creating one chunk at a time or hundreds in one
// Apply. Stretches in which the population grows (chunks are only created,
// and Snapshot merges them into the order) alternate with stretches in
// which it shrinks and whole worldOrCells empty out (chunks are removed
// once their grace has run, and Snapshot drops them from the order), and
// removed chunks are later created again with new entities. Most Applies are
// followed by a Snapshot; some stretches skip it for longer than the grace,
// so that chunks are created, removed and re-created between two
// Snapshots. Every Snapshot is checked against a ranking from scratch: the
// chunks of the views, in the views' order, must be exactly the chunks the
// model's actors occupy, sorted by grid.Less; each view's Key must be that
// of its chunk entity; and its rows must be the actors the model has there.
func TestSnapshotOrderSurvivesChunkChurn(t *testing.T) {
	const size = 10
	w := ecs.NewWorld(size)
	rng := rand.New(rand.NewPCG(11, 12))
	chunkOf := ark.NewMap[components.Chunk](w.Ark())
	pos := map[components.ActorID]components.Transform{}
	place := func() components.Transform {
		coord := func() float32 {
			if rng.IntN(300) == 0 {
				return float32(2*rng.IntN(2)-1) * 1e30 // chunk coordinate MinInt32 or MaxInt32
			}
			return (rng.Float32()*81 - 40.5) * size
		}
		return components.Transform{X: coord(), Y: coord(), WorldOrCell: uint32(rng.IntN(4))}
	}
	// ids lists the actors spawned, in ID order (map order must not steer
	// the run), despawned ones included until a compaction.
	var ids []components.ActorID
	spawn := func() {
		tr := place()
		id := w.Spawn(ecs.ActorSpec{Transform: tr})
		pos[id] = tr
		ids = append(ids, id)
	}
	// pick returns a random actor of ids and whether the model still has it.
	pick := func() (components.ActorID, bool) {
		if len(ids) == 0 {
			return components.ActorID{}, false
		}
		id := ids[rng.IntN(len(ids))]
		_, ok := pos[id]
		return id, ok
	}

	// byKey is the brute-force order, built on grid.Less alone.
	byKey := func(a, b grid.AreaKey) int {
		switch {
		case grid.Less(a, b):
			return -1
		case grid.Less(b, a):
			return 1
		}
		return 0
	}
	var views []ecs.ChunkView
	snapshots := 0
	check := func() {
		views = w.Snapshot(views)
		snapshots++
		var got []grid.AreaKey
		actors := 0
		for i := range views {
			v := &views[i]
			if c := chunkOf.Get(v.Chunk); (grid.AreaKey{WorldOrCell: c.WorldOrCell, X: c.X, Y: c.Y}) != v.Key {
				t.Fatalf("view %d has Key %v, but its chunk entity %v is chunk %+v", i, v.Key, v.Chunk, *c)
			}
			if e, ok := w.ChunkEntity(v.Key); !ok || e != v.Chunk {
				t.Fatalf("view %d of %v names entity %v; the index has %v (%v)", i, v.Key, v.Chunk, e, ok)
			}
			if len(got) == 0 || got[len(got)-1] != v.Key {
				got = append(got, v.Key)
			}
			for row, id := range v.IDs {
				if want, ok := pos[id]; !ok || w.KeyOf(want) != v.Key || v.Transforms[row] != want {
					t.Fatalf("actor %d at %+v is in the view of %v with %+v", id.ID, want, v.Key, v.Transforms[row])
				}
			}
			actors += v.Len()
		}
		require.Equal(t, len(pos), actors, "every actor is in one view")
		want := make([]grid.AreaKey, 0, len(pos))
		for _, tr := range pos {
			want = append(want, w.KeyOf(tr))
		}
		slices.SortFunc(want, byKey)
		want = slices.Compact(want)
		if !slices.Equal(got, want) {
			i := 0
			for i < min(len(got), len(want)) && got[i] == want[i] {
				i++
			}
			t.Fatalf("the views cover %d chunks, from position %d on in this order: %v; ranked from scratch, %d chunks: %v",
				len(got), i, got[i:min(i+3, len(got))], len(want), want[i:min(i+3, len(want))])
		}
	}

	var (
		r                 ecs.ApplyReport
		created, removed  int // since the last Snapshot
		merges, drops     int // Snapshots after creations only, after removals
		bursts, recreated int
		recreatedUnseen   int // created again before any Snapshot saw the removal
		// removedKeys holds the chunks removed and not created since,
		// with the number of Snapshots taken before the removal.
		removedKeys = map[grid.AreaKey]int{}
		known       = map[grid.AreaKey]bool{} // entered, not removed since
		skip        int                       // Applies left without a Snapshot
	)
	check()
	for apply := range 2500 {
		if len(ids) > 2*len(pos) {
			ids = slices.DeleteFunc(ids, func(id components.ActorID) bool { _, ok := pos[id]; return !ok })
		}
		growing := apply/200%2 == 0
		switch {
		case rng.IntN(100) == 0:
			bursts++
			for range 100 + rng.IntN(200) {
				spawn()
			}
		case !growing && rng.IntN(60) == 0: // a worldOrCell empties out
			world := uint32(rng.IntN(4))
			for _, id := range ids {
				if tr, ok := pos[id]; ok && tr.WorldOrCell == world {
					w.Despawn(id)
					delete(pos, id)
				}
			}
		default:
			spawns, despawns := rng.IntN(4), rng.IntN(2)
			if !growing {
				spawns, despawns = rng.IntN(2), rng.IntN(6)
			}
			for range spawns {
				spawn()
			}
			for range despawns {
				if id, ok := pick(); ok {
					w.Despawn(id)
					delete(pos, id)
				}
			}
			for range rng.IntN(3) {
				if id, ok := pick(); ok {
					tr := place()
					w.Teleport(id, tr)
					pos[id] = tr
				}
			}
		}
		w.Apply(&r)
		created += r.ChunksCreated
		removed += r.ChunksRemoved
		for _, c := range r.Changes {
			if n, ok := removedKeys[c.To]; ok {
				recreated++
				if n == snapshots {
					recreatedUnseen++
				}
				delete(removedKeys, c.To)
			}
			known[c.To] = true
		}
		if r.ChunksRemoved > 0 {
			for k := range known {
				if _, ok := w.ChunkEntity(k); !ok {
					removedKeys[k] = snapshots
					delete(known, k)
				}
			}
		}

		if skip > 0 {
			skip--
			continue
		}
		if rng.IntN(150) == 0 {
			skip = ecs.EmptyChunkGrace + rng.IntN(20)
		}
		switch {
		case removed > 0:
			drops++
		case created > 0:
			merges++
		}
		created, removed = 0, 0
		check()
	}
	t.Logf("%d Snapshots after creations only, %d after removals; %d bursts; %d chunks re-created, %d of them unseen; %d chunks, %d actors at the end",
		merges, drops, bursts, recreated, recreatedUnseen, w.Chunks(), len(pos))
	assert.Greater(t, merges, 800, "Snapshots merged new chunks into the order")
	assert.Greater(t, drops, 200, "Snapshots dropped removed chunks from the order")
	assert.Greater(t, bursts, 15, "Applies created hundreds of chunks at once")
	assert.Greater(t, recreated, 500, "removed chunks were created again")
	assert.Positive(t, recreatedUnseen, "chunks were removed and created again between two Snapshots")
}

// SnapshotGen stays put while nothing changes the views, so that a kept
// Snapshot can stand in for a new one, and moves on with every change (an
// actor moved to another chunk, one spawned, a raw Ark change) before and
// after the next Snapshot. A kept Snapshot of the same generation holds
// what a new one does.
func TestSnapshotGenMarksWhenAKeptSnapshotIsCurrent(t *testing.T) {
	w := ecs.NewWorld(100)
	a := w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 50, Y: 50}})
	w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 250, Y: 50}})
	w.Apply(nil)
	kept := w.Snapshot(nil)
	gen := w.SnapshotGen()
	require.Equal(t, gen, w.SnapshotGen(), "nothing changed")
	again := w.Snapshot(nil)
	require.Equal(t, gen, w.SnapshotGen(), "a Snapshot with nothing changed is the same generation")
	require.Equal(t, viewKeys(kept), viewKeys(again))

	changes := []struct {
		name   string
		change func()
	}{
		{"moved to another chunk", func() {
			e, _ := w.Entity(a)
			ark.NewMap[components.Transform](w.Ark()).Get(e).X = 450
			w.Relocate(a)
			w.Apply(nil)
		}},
		{"spawned", func() {
			w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 50, Y: 350}})
			w.Apply(nil)
		}},
		{"a raw Ark change", func() {
			e, _ := w.Entity(a)
			ark.NewMap[Tag](w.Ark()).Add(e, &Tag{})
		}},
	}
	for _, c := range changes {
		c.change()
		require.NotEqual(t, gen, w.SnapshotGen(), c.name)
		fresh := w.Snapshot(nil)
		require.NotEqual(t, gen, w.SnapshotGen(), "%s: the new Snapshot's generation", c.name)
		require.NotEqual(t, viewKeys(kept), viewKeys(fresh), c.name)
		kept, gen = fresh, w.SnapshotGen()
		require.Equal(t, gen, w.SnapshotGen())
	}
}

// viewKeys lists each view's chunk and actors, in order.
func viewKeys(views []ecs.ChunkView) []string {
	var out []string
	for _, v := range views {
		out = append(out, fmt.Sprint(v.Key, v.IDs))
	}
	return out
}
