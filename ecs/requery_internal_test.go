package ecs

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
)

// userTag is a user's own component, added with raw Ark calls.
type userTag struct{ N int }

// TestRequeryMatchesAFullQuery walks a world of roamers (steps within and
// across chunks, teleports, spawns, despawns, chunks emptied long enough
// to be removed, now and then a user's component added or removed with a
// raw Ark call) and, after every Apply, checks the Snapshot against a
// full query of every table: the same views in the same order, aliasing
// the same column buffers. Most Snapshots are taken by requery (only the
// touched chunks' tables queried again); the test counts them.
func TestRequeryMatchesAFullQuery(t *testing.T) {
	const size = 100
	rng := rand.New(rand.NewPCG(3, 4))
	w := NewWorld(size)
	tags := ark.NewMap[userTag](w.Ark())
	var ids []components.ActorID
	pos := map[components.ActorID]components.Transform{}
	place := func() components.Transform {
		return components.Transform{X: rng.Float32() * 20 * size, Y: rng.Float32() * 20 * size, WorldOrCell: uint32(rng.IntN(2))}
	}
	for range 600 {
		tr := place()
		id := w.Spawn(ActorSpec{Transform: tr})
		ids = append(ids, id)
		pos[id] = tr
	}
	w.Apply(nil)
	views := w.Snapshot(nil)
	requeried, removed := 0, 0
	var report ApplyReport
	for tick := range 400 {
		for k := range 20 {
			id := ids[rng.IntN(len(ids))]
			e, ok := w.Entity(id)
			if !ok {
				continue
			}
			switch {
			case k == 0 && tick%7 == 3: // a user's component, with raw Ark calls
				if tags.Has(e) {
					tags.Remove(e)
				} else {
					tags.Add(e, &userTag{N: tick})
				}
			case k == 1 && tick%5 == 0:
				w.Despawn(id)
			case k == 2 && tick%5 == 1:
				tr := place()
				nid := w.Spawn(ActorSpec{Transform: tr})
				ids = append(ids, nid)
			case k == 3:
				w.Teleport(id, place())
			default:
				tr := w.transforms.Get(e)
				tr.X = max(0, tr.X+(rng.Float32()*2-1)*size*0.6)
				tr.Y = max(0, tr.Y+(rng.Float32()*2-1)*size*0.6)
				w.Relocate(id)
			}
		}
		if tick > 200 && tick < 300 { // crowd into one corner: the rest of the map empties
			for _, id := range ids[:len(ids)/2] {
				if _, ok := w.Entity(id); ok {
					w.Teleport(id, components.Transform{X: rng.Float32() * 3 * size, Y: rng.Float32() * 3 * size})
				}
			}
		}
		w.Apply(&report)
		removed += report.ChunksRemoved
		if !w.foreign && len(w.touched) <= len(w.views)/requeryShare {
			requeried++
		}
		views = w.Snapshot(views)
		got := append([]ChunkView(nil), views...)
		w.foreign, w.shotAt = true, w.shape-1 // the next Snapshot queries every table
		want := w.Snapshot(nil)
		require.Equal(t, len(want), len(got), "tick %d: views", tick)
		for i := range want {
			a, b := &want[i], &got[i]
			require.Equal(t, a.Key, b.Key, "tick %d, view %d", tick, i)
			require.Equal(t, a.Chunk, b.Chunk, "tick %d, view %d", tick, i)
			require.Equal(t, a.Entities, b.Entities, "tick %d, view %d", tick, i)
			require.Equal(t, a.IDs, b.IDs, "tick %d, view %d", tick, i)
			require.True(t, unsafe.SliceData(a.Transforms) == unsafe.SliceData(b.Transforms) &&
				unsafe.SliceData(a.Inputs) == unsafe.SliceData(b.Inputs) &&
				unsafe.SliceData(a.Animations) == unsafe.SliceData(b.Animations) &&
				unsafe.SliceData(a.Clients) == unsafe.SliceData(b.Clients),
				"tick %d, view %d: the same column buffers", tick, i)
			require.Equal(t, len(a.Transforms), len(b.Transforms))
		}
	}
	require.Greater(t, requeried, 300, "Snapshots taken by requery")
	require.Positive(t, removed, "chunks removed along the way")
	t.Logf("%d of 400 Snapshots by requery; %d chunks removed", requeried, removed)
}

// BenchmarkSnapshotAfterCrossings measures a tick of the "world" scenario
// (10,000 actors over 64 x 64 chunks) in which 50 of them cross into a
// neighbouring chunk: their Apply, then the Snapshot the join takes.
// mode=requery is Snapshot as it is; mode=full has it query every table,
// as it does after a raw Ark change.
//
//	go test -run '^$' -bench BenchmarkSnapshotAfterCrossings ./ecs
func BenchmarkSnapshotAfterCrossings(b *testing.B) {
	for _, mode := range []string{"requery", "full"} {
		b.Run("mode="+mode, func(b *testing.B) {
			const size = 4096
			w := NewWorld(size)
			rng := rand.New(rand.NewPCG(1, 2))
			var ids []components.ActorID
			for range 10_000 {
				ids = append(ids, w.Spawn(ActorSpec{Transform: components.Transform{X: rng.Float32() * 64 * size, Y: rng.Float32() * 64 * size}}))
			}
			w.Apply(nil)
			views := w.Snapshot(nil)
			step := float32(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, id := range ids[:50] {
					e, _ := w.Entity(id)
					tr := w.transforms.Get(e)
					if tr.X+step < 64*size {
						tr.X += step
					} else {
						tr.X -= 63 * step
					}
					w.Relocate(id)
				}
				w.Apply(nil)
				w.foreign = mode == "full"
				views = w.Snapshot(views)
			}
			b.ReportMetric(float64(len(views)), "views")
		})
	}
}

// TestRequeryAfterAppliesWithoutSnapshots: Applies with no Snapshot
// between them touch chunks that are then removed, and new chunks take
// their entity IDs (Ark recycles them); requery still gives the full
// query's views.
func TestRequeryAfterAppliesWithoutSnapshots(t *testing.T) {
	const size = 100
	w := NewWorld(size)
	var ids []components.ActorID
	for i := range 100 {
		ids = append(ids, w.Spawn(ActorSpec{Transform: components.Transform{X: float32(i)*size + 1, Y: 1}}))
	}
	w.Apply(nil)
	views := w.Snapshot(nil)
	for _, id := range ids { // all into one chunk: 100 empty ones
		w.Teleport(id, components.Transform{X: 1, Y: 50 * size})
	}
	var report ApplyReport
	removed := 0
	for range EmptyChunkGrace + 2 {
		w.Apply(&report)
		removed += report.ChunksRemoved
	}
	require.Positive(t, removed, "empty chunks removed past their grace")
	for i := range 30 { // new chunks, on recycled entity IDs
		w.Spawn(ActorSpec{Transform: components.Transform{X: float32(i)*size + 1, Y: 20 * size}})
	}
	w.Apply(&report)
	require.Equal(t, 30, report.ChunksCreated)
	require.False(t, w.foreign)
	w.refresh(false) // as Snapshot does when few chunks were touched
	got := w.Snapshot(views)
	w.foreign, w.shotAt = true, w.shape-1
	want := w.Snapshot(nil)
	require.Equal(t, len(want), len(got))
	for i := range want {
		require.Equal(t, want[i].Chunk, got[i].Chunk, "view %d", i)
		require.Equal(t, want[i].IDs, got[i].IDs, "view %d", i)
	}
}
