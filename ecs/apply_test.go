package ecs_test

import (
	"math"
	"math/rand/v2"
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

func TestPacingAcrossABorderKeepsChunkEntities(t *testing.T) {
	w := ecs.NewWorld(100)
	transforms := ark.NewMap[components.Transform](w.Ark())
	var r ecs.ApplyReport
	id := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	e, _ := w.Entity(id)
	transforms.Get(e).X = 150
	w.Relocate(id)
	w.Apply(&r)
	require.Equal(t, 1, r.ChunksCreated)
	homeChunk, _ := w.ChunkEntity(key(0, 0, 0))
	eastChunk, _ := w.ChunkEntity(key(0, 1, 0))

	// Each chunk empties and refills every Apply, and the actor stays
	// away from each for longer than the grace now and then.
	for i := range 3 * ecs.EmptyChunkGrace {
		if i%(ecs.EmptyChunkGrace+10) == 0 {
			for range ecs.EmptyChunkGrace + 5 {
				w.Apply(&r)
				require.Zero(t, r.ChunksCreated+r.ChunksRemoved, "dwelling, step %d", i)
			}
		}
		transforms.Get(e).X = float32(50 + 100*(i%2))
		w.Relocate(id)
		w.Apply(&r)
		require.Zero(t, r.ChunksCreated+r.ChunksRemoved, "pacing step %d", i)
	}
	c, _ := w.ChunkEntity(key(0, 0, 0))
	assert.Equal(t, homeChunk, c, "the same chunk entity all along")
	c, _ = w.ChunkEntity(key(0, 1, 0))
	assert.Equal(t, eastChunk, c)
	assert.Equal(t, 2, w.Chunks())
}

// TestEmptiedWorldDropsItsChunksAfterGrace: a world with actors keeps a
// few empty chunks past their grace (the reserve); once the last actor
// leaves, each chunk goes when its grace runs out.
func TestEmptiedWorldDropsItsChunksAfterGrace(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	home, east := key(0, 0, 0), key(0, 1, 0)
	a := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	b := w.Spawn(ecs.ActorSpec{Transform: at(150, 50, 0)})
	w.Apply(&r)
	require.Equal(t, 2, r.ChunksCreated)
	homeChunk, _ := w.ChunkEntity(home)
	eastChunk, _ := w.ChunkEntity(east)

	// Home empties; b still lives, so home stays within the reserve, past
	// its grace and for as long as b does.
	w.Despawn(a)
	w.Apply(&r)
	for i := range 3 * ecs.EmptyChunkGrace {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved, "Apply %d after home emptied", i+2)
	}
	require.Equal(t, 2, w.Chunks())

	// The last actor leaves: home, long past its grace, goes at once;
	// east gets its full grace.
	w.Despawn(b)
	w.Apply(&r) // Apply 1 that ends with east empty
	assert.Equal(t, 1, r.ChunksRemoved)
	_, ok := w.ChunkEntity(home)
	assert.False(t, ok)
	chunks := ark.NewMap[components.Chunk](w.Ark())
	assert.False(t, chunks.Has(homeChunk), "the chunk entity let go is no chunk")

	// Someone comes and goes again in the meantime: the count restarts.
	for i := 2; i <= 10; i++ {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved, "Apply %d with east empty", i)
	}
	c := w.Spawn(ecs.ActorSpec{Transform: at(120, 10, 0)})
	w.Apply(&r)
	assert.Zero(t, r.ChunksCreated, "east's entity was still there")
	w.Despawn(c)
	w.Apply(&r) // Apply 1 that ends with east empty, again
	for i := 2; i < ecs.EmptyChunkGrace; i++ {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved, "Apply %d with east empty again", i)
	}
	got, ok := w.ChunkEntity(east)
	require.True(t, ok)
	assert.Equal(t, eastChunk, got)

	w.Apply(&r) // the EmptyChunkGrace-th
	assert.Equal(t, 1, r.ChunksRemoved)
	assert.Zero(t, w.Chunks(), "an empty world keeps no chunks")
	assert.False(t, chunks.Has(eastChunk))
	assert.Empty(t, w.Snapshot(nil))
	q := ark.NewFilter1[components.Chunk](w.Ark()).Query()
	assert.Zero(t, q.Count(), "no entity with a Chunk is left")
	q.Close()

	// Coming back makes a chunk of the entity let go last, with home's key.
	w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	assert.Equal(t, 1, r.ChunksCreated)
	got, ok = w.ChunkEntity(home)
	require.True(t, ok)
	assert.Equal(t, eastChunk, got)
	assert.Equal(t, components.Chunk{X: 0, Y: 0}, *chunks.Get(got))
	views := w.Snapshot(nil)
	require.Len(t, views, 1)
	assert.Equal(t, home, views[0].Key)
	assert.Equal(t, got, views[0].Chunk)
}

// TestChunkLetGoAndMadeAgainBetweenSnapshots: a chunk let go and made
// again with the same entity, with no Snapshot between, is one view, and
// so is the chunk its entity stood for before.
func TestChunkLetGoAndMadeAgainBetweenSnapshots(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	home, east := key(0, 0, 0), key(0, 1, 0)
	a := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	require.Len(t, w.Snapshot(nil), 1)
	homeChunk, _ := w.ChunkEntity(home)

	w.Despawn(a)
	for range ecs.EmptyChunkGrace {
		w.Apply(&r)
	}
	require.Zero(t, w.Chunks())
	w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	got, _ := w.ChunkEntity(home)
	require.Equal(t, homeChunk, got, "home made again with its old entity")
	views := w.Snapshot(nil)
	require.Len(t, views, 1)
	assert.Equal(t, home, views[0].Key)

	// Now the entity goes to east, again between Snapshots.
	for _, v := range views {
		w.Despawn(v.IDs[0])
	}
	for range ecs.EmptyChunkGrace {
		w.Apply(&r)
	}
	w.Spawn(ecs.ActorSpec{Transform: at(150, 50, 0)})
	w.Apply(&r)
	got, _ = w.ChunkEntity(east)
	require.Equal(t, homeChunk, got)
	views = w.Snapshot(nil)
	require.Len(t, views, 1)
	assert.Equal(t, east, views[0].Key)
}

// TestChunkWithAUsersComponentIsRemovedNotReused: a chunk entity is
// reused for a later chunk only if it has nothing but its Chunk; one a
// user gave a component of their own is removed when let go, so no later
// chunk inherits the component.
func TestChunkWithAUsersComponentIsRemovedNotReused(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	a := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	home, _ := w.ChunkEntity(key(0, 0, 0))
	weather := ark.NewMap[Tag](w.Ark())
	weather.Add(home, &Tag{N: 7})
	w.Despawn(a)
	for range ecs.EmptyChunkGrace {
		w.Apply(&r)
	}
	require.Zero(t, w.Chunks())
	assert.False(t, w.Ark().Alive(home), "removed, with the user's component")

	w.Spawn(ecs.ActorSpec{Transform: at(150, 50, 0)})
	w.Apply(&r)
	east, ok := w.ChunkEntity(key(0, 1, 0))
	require.True(t, ok)
	assert.False(t, weather.Has(east), "a new chunk has no component of the old one's")
}

// TestWandererLeavesABoundedTrail: one actor crossing a huge map keeps
// the EmptyChunkReserve chunks it left last, and no more.
func TestWandererLeavesABoundedTrail(t *testing.T) {
	w := ecs.NewWorld(100)
	transforms := ark.NewMap[components.Transform](w.Ark())
	var r ecs.ApplyReport
	id := w.Spawn(ecs.ActorSpec{Transform: at(50, 50, 0)})
	w.Apply(&r)
	e, _ := w.Entity(id)

	const steps = 3 * ecs.EmptyChunkReserve
	for x := int32(1); x <= steps; x++ {
		transforms.Get(e).X = float32(x)*100 + 50 // one chunk east every 4th Apply
		w.Relocate(id)
		w.Apply(&r)
		require.Equal(t, 1, r.ChunksCreated, "step %d", x)
		removed := 0
		if x > ecs.EmptyChunkReserve {
			removed = 1
		}
		require.Equal(t, removed, r.ChunksRemoved, "step %d", x)
		if removed == 1 {
			_, ok := w.ChunkEntity(key(0, x-ecs.EmptyChunkReserve-1, 0))
			require.False(t, ok, "step %d removes the chunk left longest ago", x)
		}
		for range 3 {
			w.Apply(&r)
			require.Zero(t, r.ChunksCreated+r.ChunksRemoved, "between steps")
		}
		require.LessOrEqual(t, w.Chunks(), 1+ecs.EmptyChunkReserve)
	}
	assert.Equal(t, 1+ecs.EmptyChunkReserve, w.Chunks())
	for x := int32(steps - ecs.EmptyChunkReserve); x <= steps; x++ {
		_, ok := w.ChunkEntity(key(0, x, 0))
		assert.True(t, ok, "chunk %d of the trail", x)
	}

	// Past that, every step makes a chunk and lets one go, with the
	// entity and the Ark tables the one let go leaves: nothing is
	// allocated and the entities in the Ark world stay as many.
	entities := w.Ark().Stats().Entities.Used
	x := int32(steps)
	var views []ecs.ChunkView
	walk := func() {
		for range ecs.EmptyChunkReserve {
			x++
			transforms.Get(e).X = float32(x)*100 + 50
			w.Relocate(id)
			w.Apply(&r)
			views = w.Snapshot(views)
		}
	}
	walk()
	assert.Zero(t, testing.AllocsPerRun(5, walk), "allocations in %d steps", ecs.EmptyChunkReserve)
	assert.Equal(t, 1, r.ChunksCreated)
	assert.Equal(t, 1, r.ChunksRemoved)
	assert.Equal(t, entities, w.Ark().Stats().Entities.Used, "the actor, its trail and one chunk entity let go")
	require.Len(t, views, 1)
	assert.Equal(t, key(0, x, 0), views[0].Key)
}

// TestEmptyChunksBeyondTheOccupiedAreRemovedOldestFirst: with more occupied
// chunks than EmptyChunkReserve the budget is the occupied count; past
// their grace, the chunks that emptied first go first, chunks emptied in
// one Apply in the order their actors left them.
func TestEmptyChunksBeyondTheOccupiedAreRemovedOldestFirst(t *testing.T) {
	const n = 100
	require.Greater(t, n*7/10, ecs.EmptyChunkReserve, "the budget must be the occupied count")
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	row := func(x int, y float32) components.Transform { return at(float32(x)*100+50, y*100+50, 0) }
	ids := make([]components.ActorID, n)
	for x := range ids {
		ids[x] = w.Spawn(ecs.ActorSpec{Transform: row(x, 0)})
	}
	w.Apply(&r)
	require.Equal(t, n, r.ChunksCreated)

	// 60 actors step into row 1: 100 occupied chunks, 60 empty.
	for x := range 60 {
		w.Teleport(ids[x], row(x, 1))
	}
	w.Apply(&r)
	require.Equal(t, 60, r.ChunksCreated)
	for range 3 * ecs.EmptyChunkGrace {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved, "60 empty chunks next to 100 occupied ones stay")
	}
	require.Equal(t, n+60, w.Chunks())

	// An actor passes through the oldest empty chunk within one Apply:
	// that chunk emptied last now.
	w.Teleport(ids[59], row(0, 0))
	w.Teleport(ids[59], row(59, 1))
	w.Apply(&r)
	require.Len(t, r.Changes, 2)
	require.Zero(t, r.ChunksCreated+r.ChunksRemoved)

	// 30 actors leave the world: 70 occupied, 90 empty. The 20 over
	// budget go at once, all from row 0 (past grace), the first left first:
	// x = 1..20, as x = 0 emptied last.
	for x := range 30 {
		w.Despawn(ids[x])
	}
	w.Apply(&r)
	require.Equal(t, 20, r.ChunksRemoved)
	exists := func(x, y int32) bool { _, ok := w.ChunkEntity(key(0, x, y)); return ok }
	for x := range int32(60) {
		assert.Equal(t, x == 0 || x > 20, exists(x, 0), "row 0, chunk %d", x)
	}
	for x := range int32(60) {
		assert.True(t, exists(x, 1), "row 1, chunk %d (in grace or occupied)", x)
	}

	// 70 empty, 70 occupied: balanced, nothing more goes.
	for range 3 * ecs.EmptyChunkGrace {
		w.Apply(&r)
		require.Zero(t, r.ChunksRemoved)
	}
	require.Equal(t, 140, w.Chunks())

	// One more leaves: 71 empty over 69 occupied; the next two oldest go.
	w.Despawn(ids[30])
	w.Apply(&r)
	assert.Equal(t, 2, r.ChunksRemoved)
	assert.False(t, exists(21, 0))
	assert.False(t, exists(22, 0))
	assert.True(t, exists(23, 0))
	assert.True(t, exists(0, 0), "passed through later")
	assert.True(t, exists(0, 1), "row 1 emptied later than row 0")
	assert.Equal(t, 138, w.Chunks())
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
	assert.Zero(t, testing.AllocsPerRun(100, tick), "a tick with one chunk move")
}

// TestRoamingPopulationNeitherChurnsNorAllocates: a crowd roaming over a
// bounded area (the "world" benchmark scenario, scaled down) keeps every
// chunk entity once it has spread, so a tick's Snapshot and Apply allocate
// nothing of their own and never re-sort the chunks.
func TestRoamingPopulationNeitherChurnsNorAllocates(t *testing.T) {
	const (
		side      = 16  // the area is side x side chunks
		actors    = 400 // about 1.6 per chunk: a fifth of the chunks are empty at any time
		crossings = 20  // actors stepping into a neighbouring chunk per tick
		size      = 100 // chunk size
	)
	w := ecs.NewWorld(size)
	rng := rand.New(rand.NewPCG(3, 4))
	// inside places a coordinate well inside chunk c, clear of rounding at
	// the borders.
	inside := func(c int) float32 { return float32(c)*size + 1 + rng.Float32()*(size-2) }
	ids := make([]components.ActorID, actors)
	for i := range ids {
		ids[i] = w.Spawn(ecs.ActorSpec{Transform: at(inside(rng.IntN(side)), inside(rng.IntN(side)), 0)})
	}
	var r ecs.ApplyReport
	w.Apply(&r)

	crosses := make([]bool, actors+1) // by ActorID
	var views []ecs.ChunkView
	var moved, created, removed int
	// tick is one server tick: every actor moves within its chunk, except
	// the crossers (a different set every tick), which step into a random
	// neighbouring chunk inside the area. Move writes through the views;
	// the join relocates the crossers.
	tick := func(cross int) {
		views = w.Snapshot(views)
		base := rng.IntN(actors)
		for j := range cross {
			crosses[ids[(base+j*(actors/crossings))%actors].ID] = true
		}
		w.Guard()
		for i := range views {
			v := &views[i]
			for row := range v.Transforms {
				tr := &v.Transforms[row]
				cx, cy := int(tr.X/size), int(tr.Y/size)
				if crosses[v.IDs[row].ID] {
					dx, dy := 0, 0
					if rng.IntN(2) == 0 {
						dx = 2*rng.IntN(2) - 1
					} else {
						dy = 2*rng.IntN(2) - 1
					}
					if cx+dx < 0 || cx+dx >= side || cy+dy < 0 || cy+dy >= side {
						dx, dy = -dx, -dy // bounce off the edge of the area
					}
					cx, cy = cx+dx, cy+dy
				}
				tr.X, tr.Y = inside(cx), inside(cy)
			}
		}
		w.Release()
		for j := range cross {
			id := ids[(base+j*(actors/crossings))%actors]
			crosses[id.ID] = false
			w.Relocate(id)
		}
		w.Apply(&r)
		moved += len(r.Changes)
		created += r.ChunksCreated
		removed += r.ChunksRemoved
	}

	// Warm-up: the crowd spreads over the whole area; buffers grow.
	for range 1000 {
		tick(crossings)
	}
	require.Equal(t, side*side, w.Chunks(), "every chunk of the area has an entity")
	moved, created, removed = 0, 0, 0

	// One run of 200 ticks (after AllocsPerRun's own warm-up run of 200),
	// so the figure is the exact count, not a rounded mean.
	const ticks = 200
	allocs := testing.AllocsPerRun(1, func() {
		for range ticks {
			tick(crossings)
		}
	})
	assert.Equal(t, 2*ticks*crossings, moved, "every crosser changed chunks")
	assert.Zero(t, created, "no chunk entity was created in steady state")
	assert.Zero(t, removed, "no chunk entity was removed in steady state")
	// Chunk changes included (see World.changeChunk: Ark's SetRelation
	// would allocate once per crossing).
	assert.Zero(t, allocs, "allocations in %d ticks with %d crossings each", ticks, crossings)
	assert.Zero(t, testing.AllocsPerRun(100, func() { tick(0) }), "a tick in which nobody changes chunks")
	assert.Equal(t, side*side, w.Chunks())
}

func TestAChunkKnowsWhenItsActorsAreAllOfOneClass(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	classIn := func(k grid.AreaKey, prop bool) (uint8, bool) {
		e, ok := w.ChunkEntity(k)
		require.True(t, ok, "chunk %v exists", k)
		return w.ClassIn(e, prop)
	}
	var all []components.ActorID
	for range 3 {
		all = append(all, w.Spawn(ecs.ActorSpec{Transform: at(10, 10, 0)})) // NPCs
	}
	all = append(all, w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0), Prop: true}))
	lamp := w.Spawn(ecs.ActorSpec{Transform: at(150, 10, 0), Client: components.Client{Class: 5}})
	ghost := w.Spawn(ecs.ActorSpec{Transform: at(250, 10, 0), Init: func(a *ark.World, e ark.Entity) {
		ark.NewMap[components.Client](a).Get(e).Class = components.ClassPlayer
	}})
	w.Apply(&r)
	class, one := classIn(key(0, 0, 0), false)
	assert.True(t, one)
	assert.Equal(t, components.ClassNPC, class, "three NPCs")
	class, one = classIn(key(0, 0, 0), true)
	assert.True(t, one)
	assert.Equal(t, components.ClassProp, class, "props are counted apart")
	class, one = classIn(key(0, 2, 0), false)
	assert.True(t, one)
	assert.Equal(t, components.ClassPlayer, class, "the class an Init gave")

	// The lamp walks into the NPCs' chunk: two classes there now, and
	// still two once it has left again, until the chunk is let go.
	e, _ := w.Entity(lamp)
	ark.NewMap[components.Transform](w.Ark()).Get(e).X = 50
	w.Relocate(lamp)
	w.Apply(&r)
	_, one = classIn(key(0, 0, 0), false)
	assert.False(t, one, "NPCs and a lamp")
	ark.NewMap[components.Transform](w.Ark()).Get(e).X = 150
	w.Relocate(lamp)
	w.Apply(&r)
	_, one = classIn(key(0, 0, 0), false)
	assert.False(t, one, "a class that left may have left rows behind in another table: still not one")
	class, _ = classIn(key(0, 1, 0), false)
	assert.Equal(t, uint8(5), class)

	// Chunks let go and taken by other chunks start afresh.
	for _, id := range append(all, lamp, ghost) {
		w.Despawn(id)
	}
	for range ecs.EmptyChunkGrace + 1 {
		w.Apply(&r)
	}
	require.Zero(t, w.Chunks(), "an empty world lets its chunks go")
	w.Spawn(ecs.ActorSpec{Transform: at(350, 10, 0)})
	w.Apply(&r)
	class, one = classIn(key(0, 3, 0), false)
	assert.True(t, one)
	assert.Equal(t, components.ClassNPC, class, "nothing of the chunk that had the entity before")
}

// TestAPlaceThatIsNoPlaceIsRefused: Spawn and Teleport refuse a Transform
// with a NaN or infinite number, naming it, and queue nothing; a Transform
// a game wrote into a row itself is put back at the Relocate or Update
// that follows (a prop or an NPC where it was last told, a player's actor
// left in its chunk), counted, and nothing moves to the chunk NaN would
// floor to.
func TestAPlaceThatIsNoPlaceIsRefused(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	w := ecs.NewWorld(100)
	for _, bad := range []components.Transform{
		{X: nan, Y: 1}, {X: 1, Y: inf}, {X: 1, Y: 1, Z: -inf}, {X: 1, Y: 1, Yaw: nan},
	} {
		assert.Panics(t, func() { w.Spawn(ecs.ActorSpec{Transform: bad}) }, "Spawn at %+v", bad)
	}
	assert.PanicsWithValue(t, "ecs: Spawn: Transform {X:NaN Y:1 Z:0 Yaw:0} is not finite; an actor must stand at a place",
		func() { w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: nan, Y: 1}}) })
	assert.Zero(t, w.Pending(), "a refused Spawn queues nothing")

	npc := w.Spawn(ecs.ActorSpec{Transform: at(250, 250, 0)})
	prop := w.Spawn(ecs.ActorSpec{Transform: at(260, 250, 0), Prop: true})
	player := w.Spawn(ecs.ActorSpec{Transform: at(270, 250, 0), Client: components.Client{Session: 5}})
	var r ecs.ApplyReport
	w.Apply(&r)
	require.Len(t, r.Changes, 3)
	assert.PanicsWithValue(t, "ecs: Teleport: Transform {X:1 Y:+Inf Z:0 Yaw:0} is not finite; an actor must stand at a place",
		func() { w.Teleport(npc, components.Transform{X: 1, Y: inf}) })
	assert.Zero(t, w.Pending(), "a refused Teleport queues nothing")

	transforms := ark.NewMap[components.Transform](w.Ark())
	for _, id := range []components.ActorID{npc, prop, player} {
		e, ok := w.Entity(id)
		require.True(t, ok)
		transforms.Get(e).X = nan
	}
	w.Relocate(npc)
	w.Update(prop)
	w.Relocate(player)
	w.Apply(&r)
	assert.Equal(t, 3, r.NonFinite, "each actor whose place was no place is counted")
	assert.Empty(t, r.Changes, "nobody moved: the prop and the NPC are back where they were told, the player's actor stays")
	for id, want := range map[components.ActorID]float32{npc: 250, prop: 260} {
		e, _ := w.Entity(id)
		assert.Equal(t, at(want, 250, 0), *transforms.Get(e), "actor %d is back where it was last relayed", id.ID)
		k, _ := w.Key(id)
		assert.Equal(t, key(0, 2, 2), k)
	}
	k, _ := w.Key(player)
	assert.Equal(t, key(0, 2, 2), k, "the player's actor is still in its chunk")
	_, ok := w.ChunkEntity(key(0, 0, 0))
	assert.False(t, ok, "nothing went to chunk 0/0, where NaN floors")

	w.Apply(&r)
	assert.Zero(t, r.NonFinite, "each Apply counts its own")
}
