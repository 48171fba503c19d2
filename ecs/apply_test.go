package ecs_test

import (
	"math"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

func at(x, y float32, worldOrCell uint32) components.Transform {
	return components.Transform{X: x, Y: y, WorldOrCell: worldOrCell}
}

func key(worldOrCell uint32, x, y int32) grid.AreaKey {
	return grid.AreaKey{WorldOrCell: worldOrCell, X: x, Y: y}
}

// change is a Change without the entity, for comparing scripted reports.
type change struct {
	ID       uint32
	Kind     ecs.ChangeKind
	From, To grid.AreaKey
	Session  uint64
}

func changes(t *testing.T, w *ecs.World, r *ecs.ApplyReport) []change {
	out := make([]change, len(r.Changes))
	for i, c := range r.Changes {
		if e, ok := w.Entity(c.ID); ok {
			require.Equal(t, e, c.Entity, "change %d names the actor's entity", i)
		} else {
			require.False(t, w.Ark().Alive(c.Entity), "a despawned actor's entity is dead")
		}
		out[i] = change{c.ID.ID, c.Kind, c.From, c.To, c.Session}
	}
	return out
}

func TestApplyReportsChangesInFixedOrder(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport

	a := w.Spawn(ecs.ActorSpec{Transform: at(10, 10, 0), Client: components.Client{Session: 7}})
	b := w.Spawn(ecs.ActorSpec{Transform: at(150, 10, 0)})
	c := w.Spawn(ecs.ActorSpec{Transform: at(-10, -10, 2), Client: components.Client{Session: 9}})
	assert.Equal(t, []uint32{1, 2, 3}, []uint32{a.ID, b.ID, c.ID}, "IDs are assigned at once, from 1")
	_, ok := w.Entity(a)
	assert.False(t, ok, "a queued spawn is not in the world before Apply")
	assert.Equal(t, 0, w.Len())

	w.Apply(&r)
	assert.Equal(t, []change{
		{1, ecs.Spawned, key(0, 0, 0), key(0, 0, 0), 7},
		{2, ecs.Spawned, key(0, 1, 0), key(0, 1, 0), 0},
		{3, ecs.Spawned, key(2, -1, -1), key(2, -1, -1), 9},
	}, changes(t, w, &r))
	assert.Equal(t, 0, r.Ignored)
	assert.Equal(t, 3, r.ChunksCreated)
	assert.Equal(t, 3, w.Len())

	// Queued out of order on purpose: Apply sorts by phase, not by call.
	w.Despawn(b)
	d := w.Spawn(ecs.ActorSpec{Transform: at(199, 0, 0), Client: components.Client{Session: 4}})
	ea, _ := w.Entity(a)
	ark.NewMap[components.Transform](w.Ark()).Get(ea).X = 120 // as Move writes
	w.Relocate(a)
	w.Teleport(c, at(5, 5, 1))
	w.Relocate(b)                         // b did not move: nothing to report
	w.Teleport(a, at(130, 20, 0))         // same chunk as a's new position
	w.Despawn(components.ActorID{ID: 99}) // never issued
	w.Relocate(components.ActorID{})      // the zero ID is never issued
	e := w.Spawn(ecs.ActorSpec{Transform: at(0, 0, 3)})
	w.Despawn(e) // spawned and despawned in one Apply
	f := w.Spawn(ecs.ActorSpec{Transform: at(0, 0, 3)})
	w.Teleport(f, at(-250, 50, 3)) // moves where f spawns
	assert.Equal(t, 10, w.Pending())

	w.Apply(&r)
	assert.Equal(t, []change{
		{1, ecs.Moved, key(0, 0, 0), key(0, 1, 0), 7},
		{3, ecs.Teleported, key(2, -1, -1), key(1, 0, 0), 9},
		{1, ecs.Teleported, key(0, 1, 0), key(0, 1, 0), 7},
		{d.ID, ecs.Spawned, key(0, 1, 0), key(0, 1, 0), 4},
		{e.ID, ecs.Spawned, key(3, 0, 0), key(3, 0, 0), 0},
		{f.ID, ecs.Spawned, key(3, -3, 0), key(3, -3, 0), 0},
		{2, ecs.Despawned, key(0, 1, 0), key(0, 1, 0), 0},
		{e.ID, ecs.Despawned, key(3, 0, 0), key(3, 0, 0), 0},
	}, changes(t, w, &r))
	assert.Equal(t, 2, r.Ignored, "ops on never-issued IDs are ignored and counted")
	assert.Equal(t, 0, w.Pending())
	ec, _ := w.Entity(c)
	assert.Equal(t, at(5, 5, 1), *ark.NewMap[components.Transform](w.Ark()).Get(ec), "Teleport wrote the Transform")
	k, _ := w.Key(f)
	assert.Equal(t, key(3, -3, 0), k)

	// Everything aimed at despawned actors is ignored and counted.
	w.Despawn(b)
	w.Relocate(b)
	w.Teleport(e, at(1, 1, 0))
	w.Despawn(d)
	w.Despawn(d)
	w.Apply(&r)
	assert.Equal(t, []change{{d.ID, ecs.Despawned, key(0, 1, 0), key(0, 1, 0), 4}}, changes(t, w, &r))
	assert.Equal(t, 4, r.Ignored)
	assert.Equal(t, 3, w.Len())

	g := w.Spawn(ecs.ActorSpec{})
	assert.Equal(t, f.ID+1, g.ID, "IDs of despawned actors are never reused")

	w.Apply(nil) // a nil report is allowed
	_, ok = w.Entity(g)
	assert.True(t, ok)
}

func TestEmptyChunkIsRemovedAfterGracePeriod(t *testing.T) {
	w := ecs.NewWorld(100)
	transforms := ark.NewMap[components.Transform](w.Ark())
	var r ecs.ApplyReport
	id := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	e, _ := w.Entity(id)
	home, east := key(0, 0, 0), key(0, 1, 0)
	homeChunk, ok := w.ChunkEntity(home)
	require.True(t, ok)

	moveTo := func(x float32) {
		transforms.Get(e).X = x
		w.Relocate(id)
		w.Apply(&r)
	}

	// Pacing across a border keeps both chunk entities: no churn.
	moveTo(150)
	eastChunk, ok := w.ChunkEntity(east)
	require.True(t, ok)
	for i := range 3 * ecs.EmptyChunkGrace {
		moveTo(float32(50 + 100*((i+1)%2)))
		require.Zero(t, r.ChunksCreated+r.ChunksRemoved, "pacing step %d", i)
	}
	c, _ := w.ChunkEntity(home)
	assert.Equal(t, homeChunk, c, "the same chunk entity all along")
	c, _ = w.ChunkEntity(east)
	assert.Equal(t, eastChunk, c)

	// Leave home for good: home survives EmptyChunkGrace-1 Applies ...
	moveTo(150) // Apply 1 that ends with home empty
	for i := 2; i < ecs.EmptyChunkGrace; i++ {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved, "Apply %d with home empty", i)
	}
	_, ok = w.ChunkEntity(home)
	require.True(t, ok)
	assert.Equal(t, 2, w.Chunks())

	// ... and the EmptyChunkGrace-th removes it, entity and all.
	w.Apply(&r)
	assert.Equal(t, 1, r.ChunksRemoved)
	_, ok = w.ChunkEntity(home)
	assert.False(t, ok)
	assert.False(t, w.Ark().Alive(homeChunk), "the chunk entity is removed from Ark")
	assert.Equal(t, 1, w.Chunks())
	assert.Len(t, w.Snapshot(nil), 1)

	// Coming back makes a new chunk entity.
	moveTo(50)
	assert.Equal(t, 1, r.ChunksCreated)
	c, ok = w.ChunkEntity(home)
	require.True(t, ok)
	assert.NotEqual(t, homeChunk, c)

	// Re-entering restarts the count. East has been empty for 1 Apply.
	for range ecs.EmptyChunkGrace - 2 {
		w.Apply(&r)
	}
	_, ok = w.ChunkEntity(east)
	require.True(t, ok, "east empty for EmptyChunkGrace-1 Applies")
	moveTo(150) // back into east just in time
	moveTo(50)  // east empty for 1 Apply again
	for range ecs.EmptyChunkGrace - 2 {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved)
	}
	_, ok = w.ChunkEntity(east)
	assert.True(t, ok, "east's grace period restarted when the actor came back")
	w.Apply(&r)
	assert.Equal(t, 1, r.ChunksRemoved)
	_, ok = w.ChunkEntity(east)
	assert.False(t, ok)
}

func TestNewWorldRejectsBadChunkSize(t *testing.T) {
	for _, size := range []float32{0, -1, float32(math.NaN()), float32(math.Inf(1))} {
		assert.Panics(t, func() { ecs.NewWorld(size) }, "size %v", size)
	}
	assert.PanicsWithValue(t, "ecs: chunk size must be positive and finite, got -3", func() { ecs.NewWorld(-3) })
	assert.Equal(t, float32(grid.DefaultChunkSize), ecs.NewWorld(grid.DefaultChunkSize).ChunkSize())
}

// TestSteadyStateTickAllocatesNothing pins the zero-allocation promise of
// the per-tick calls once buffers have grown.
func TestSteadyStateTickAllocatesNothing(t *testing.T) {
	w := ecs.NewWorld(100)
	ids := populate(t, w, 1000)
	var views []ecs.ChunkView
	var r ecs.ApplyReport
	pacer, _ := w.Entity(ids[1])
	transforms := ark.NewMap[components.Transform](w.Ark())
	tick := func() {
		views = w.Snapshot(views)
		w.Guard()
		w.Release()
		transforms.Get(pacer).X += 100 // pace across a border and back
		if transforms.Get(pacer).X > 150 {
			transforms.Get(pacer).X -= 200
		}
		w.Relocate(ids[1])
		w.Apply(&r)
	}
	for range 3 {
		tick()
	}
	require.Len(t, r.Changes, 1, "the pacer moves every tick")

	assert.Zero(t, testing.AllocsPerRun(100, func() { views = w.Snapshot(views) }), "Snapshot")
	assert.Zero(t, testing.AllocsPerRun(100, func() { w.Apply(&r) }), "no-change Apply")
	// Ark v0.8.1's SetRelation allocates the entity's new relation list
	// (storage.getExchangeTargets): one allocation per chunk move, none of ours.
	assert.LessOrEqual(t, testing.AllocsPerRun(100, tick), 1.0, "a tick with one chunk move")
}
