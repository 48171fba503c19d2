package ecs_test

import (
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

// Tag is a user's own component; giving it to some actors splits their
// chunks into two Ark tables.
type Tag struct{ N int }

const churnChunk = 100

// randomTransform picks a position over 12x12 chunks around the origin
// (negative coordinates included), sometimes exactly on a chunk border, in
// one of three worldOrCells.
func randomTransform(rng *rand.Rand) components.Transform {
	coord := func() float32 {
		if rng.IntN(8) == 0 {
			return float32(rng.IntN(13)-6) * churnChunk // on a border
		}
		return rng.Float32()*12*churnChunk - 6*churnChunk
	}
	return components.Transform{
		X: coord(), Y: coord(), Z: rng.Float32(), Yaw: rng.Float32(),
		WorldOrCell: uint32(rng.IntN(3)),
	}
}

// churn drives a World through random spawns, moves, teleports and
// despawns, keeps a model of where every actor must be, and after each
// Apply calls check with the model. It returns the views after every
// Apply, as IDs per key, for determinism checks.
type churn struct {
	t     *testing.T
	rng   *rand.Rand
	w     *ecs.World
	tags  *ark.Map[Tag]
	pos   map[components.ActorID]components.Transform // alive or queued spawn
	dead  map[components.ActorID]bool                 // despawned by an Apply
	views []ecs.ChunkView

	// This cycle's queue, as the model sees it.
	queuedSpawn    map[components.ActorID]bool
	teleports      []teleport
	teleported     map[components.ActorID]bool
	despawns       []components.ActorID
	wantIgnored    int
	lastID         uint32
	sawSplitChunk  bool
	sawManyWorlds  bool
	sawNegativeKey bool
	chunksRemoved  int
}

type teleport struct {
	id components.ActorID
	t  components.Transform
}

func newChurn(t *testing.T, seed uint64) *churn {
	w := ecs.NewWorld(churnChunk)
	return &churn{
		t: t, rng: rand.New(rand.NewPCG(seed, 7)), w: w,
		tags:        ark.NewMap[Tag](w.Ark()),
		pos:         map[components.ActorID]components.Transform{},
		dead:        map[components.ActorID]bool{},
		queuedSpawn: map[components.ActorID]bool{},
		teleported:  map[components.ActorID]bool{},
	}
}

// applied returns a random actor that an Apply has spawned and that is not
// yet despawned, or false.
func (c *churn) applied() (components.ActorID, bool) {
	if c.w.Len() == 0 {
		return components.ActorID{}, false
	}
	for range 20 {
		id := components.ActorID{ID: 1 + uint32(c.rng.IntN(int(c.lastID)))}
		if _, ok := c.w.Entity(id); ok {
			return id, true
		}
	}
	return components.ActorID{}, false
}

func (c *churn) step() {
	switch r := c.rng.IntN(100); {
	case r < 30:
		spec := ecs.ActorSpec{
			Transform: randomTransform(c.rng),
			Animation: components.Animation{Flags: uint16(c.rng.IntN(4))},
		}
		if c.rng.IntN(2) == 0 {
			spec.Client.Session = uint64(1000 + c.lastID)
		}
		id := c.w.Spawn(spec)
		require.Equal(c.t, c.lastID+1, id.ID, "ActorIDs count up from 1 without gaps or reuse")
		c.lastID = id.ID
		c.pos[id] = spec.Transform
		c.queuedSpawn[id] = true
	case r < 60:
		c.moveRandomActor()
	case r < 70:
		c.teleportRandomActor()
	case r < 82:
		c.despawnRandomActor()
	case r < 88:
		c.tagRandomActor()
	default:
		c.opOnUnknownActor()
	}
}

// moveRandomActor writes a new Transform the way Move does (through the
// views, or through an Ark map) and queues a Relocate the way the join does.
func (c *churn) moveRandomActor() {
	id, ok := c.applied()
	if !ok || c.teleported[id] {
		return // a queued teleport would overwrite the write
	}
	e, _ := c.w.Entity(id)
	old := c.pos[id]
	next := old
	if c.rng.IntN(3) == 0 {
		next = randomTransform(c.rng) // far, maybe into another worldOrCell
	} else {
		next.X += (c.rng.Float32()*2 - 1) * churnChunk * 0.9
		next.Y += (c.rng.Float32()*2 - 1) * churnChunk * 0.9
	}
	if c.rng.IntN(2) == 0 {
		c.writeThroughView(id, e, next)
	} else {
		*ark.NewMap[components.Transform](c.w.Ark()).Get(e) = next
	}
	c.pos[id] = next
	if c.w.KeyOf(old) != c.w.KeyOf(next) || c.rng.IntN(4) == 0 {
		c.w.Relocate(id)
	}
}

// writeThroughView writes t into id's row of the current snapshot, as
// Move does. Rows stay put until Apply; tagging re-takes the snapshot.
func (c *churn) writeThroughView(id components.ActorID, e ark.Entity, t components.Transform) {
	for i := range c.views {
		v := &c.views[i]
		for r := range v.IDs {
			if v.IDs[r] == id {
				require.Equal(c.t, e, v.Entities[r])
				v.Transforms[r] = t
				return
			}
		}
	}
	c.t.Fatalf("actor %d is in no view", id.ID)
}

func (c *churn) teleportRandomActor() {
	var id components.ActorID
	if c.rng.IntN(5) == 0 && c.lastID > 0 {
		id = components.ActorID{ID: c.lastID} // maybe a queued spawn
		if _, alive := c.pos[id]; !alive {
			return
		}
	} else {
		var ok bool
		if id, ok = c.applied(); !ok {
			return
		}
	}
	to := randomTransform(c.rng)
	c.w.Teleport(id, to)
	c.teleports = append(c.teleports, teleport{id, to})
	c.teleported[id] = true
}

func (c *churn) despawnRandomActor() {
	if c.lastID == 0 {
		return
	}
	id := components.ActorID{ID: 1 + uint32(c.rng.IntN(int(c.lastID)))}
	c.w.Despawn(id)
	c.despawns = append(c.despawns, id)
}

func (c *churn) tagRandomActor() {
	id, ok := c.applied()
	if !ok {
		return
	}
	e, _ := c.w.Entity(id)
	if c.tags.Has(e) {
		c.tags.Remove(e)
	} else {
		c.tags.Add(e, &Tag{N: int(id.ID)})
	}
	// The actor changed tables: the snapshot's slices are stale.
	c.views = c.w.Snapshot(c.views)
}

func (c *churn) opOnUnknownActor() {
	unknown := components.ActorID{ID: c.lastID + 1 + uint32(c.rng.IntN(5))}
	if c.rng.IntN(4) == 0 {
		unknown = components.ActorID{}
	}
	switch c.rng.IntN(3) {
	case 0:
		c.w.Despawn(unknown)
	case 1:
		c.w.Relocate(unknown)
	default:
		c.w.Teleport(unknown, randomTransform(c.rng))
	}
	c.wantIgnored++
}

// apply runs Apply and replays the cycle on the model in Apply's order:
// teleports, then spawns, then despawns.
func (c *churn) apply(report *ecs.ApplyReport) {
	for _, tp := range c.teleports {
		if c.dead[tp.id] {
			c.wantIgnored++
			continue
		}
		c.pos[tp.id] = tp.t
	}
	for _, id := range c.despawns {
		if _, ok := c.pos[id]; !ok {
			c.wantIgnored++ // despawned earlier, or twice in this cycle
			continue
		}
		delete(c.pos, id)
		c.dead[id] = true
	}
	c.w.Apply(report)
	assert.Equal(c.t, c.wantIgnored, report.Ignored, "ignored operations are counted")
	c.wantIgnored = 0
	c.chunksRemoved += report.ChunksRemoved
	c.teleports = c.teleports[:0]
	c.despawns = c.despawns[:0]
	clear(c.teleported)
	clear(c.queuedSpawn)
	c.views = c.w.Snapshot(c.views)
	c.check()
}

// check compares the views with brute force over the model.
func (c *churn) check() {
	t := c.t
	seen := make(map[ark.Entity]bool, len(c.pos))
	keysPerView := map[grid.AreaKey]int{}
	tagged := ark.NewMap[Tag](c.w.Ark())
	transforms := ark.NewMap[components.Transform](c.w.Ark())
	for i := range c.views {
		v := &c.views[i]
		if i > 0 {
			prev := &c.views[i-1]
			if grid.Less(v.Key, prev.Key) {
				t.Fatalf("view %d (%v) comes after %v: views are not ordered by key", i, v.Key, prev.Key)
			}
			if v.Key == prev.Key && v.IDs[0].ID < prev.IDs[0].ID {
				t.Fatalf("tables of chunk %v are not ordered by their first ActorID", v.Key)
			}
		}
		keysPerView[v.Key]++
		c.sawManyWorlds = c.sawManyWorlds || v.Key.WorldOrCell != 0
		c.sawNegativeKey = c.sawNegativeKey || v.Key.X < 0 || v.Key.Y < 0
		if chunk, ok := c.w.ChunkEntity(v.Key); !ok || chunk != v.Chunk {
			t.Fatalf("view of %v names chunk entity %v, index has %v (%v)", v.Key, v.Chunk, chunk, ok)
		}
		n := v.Len()
		if n == 0 || len(v.IDs) != n || len(v.Transforms) != n || len(v.Inputs) != n ||
			len(v.Animations) != n || len(v.Clients) != n {
			t.Fatalf("view of %v has ragged or empty columns: %d entities, %d IDs, %d Transforms",
				v.Key, n, len(v.IDs), len(v.Transforms))
		}
		var tags int
		for r := range n {
			// Plain comparisons: this loop runs millions of times.
			id, e := v.IDs[r], v.Entities[r]
			want, alive := c.pos[id]
			if !alive {
				t.Fatalf("view %v holds actor %d, which should not exist", v.Key, id.ID)
			}
			if seen[e] {
				t.Fatalf("entity %v appears twice across views", e)
			}
			seen[e] = true
			if v.Transforms[r] != want || *transforms.Get(e) != want {
				t.Fatalf("actor %d: view Transform %+v, Ark %+v, want %+v",
					id.ID, v.Transforms[r], *transforms.Get(e), want)
			}
			if k := c.w.KeyOf(want); k != v.Key {
				t.Fatalf("actor %d at %+v (chunk %v) is in the view of chunk %v", id.ID, want, k, v.Key)
			}
			got, _ := c.w.Entity(id)
			key, _ := c.w.Key(id)
			if got != e || key != v.Key {
				t.Fatalf("actor %d: Entity %v Key %v, view says %v %v", id.ID, got, key, e, v.Key)
			}
			if tagged.Has(e) {
				tags++
			}
		}
		if tags != 0 && tags != n {
			t.Fatalf("view of %v mixes tagged and untagged actors: it is not one table", v.Key)
		}
	}
	require.Equal(t, len(c.pos), len(seen), "every actor is in exactly one view")
	require.Equal(t, len(c.pos), c.w.Len())
	for _, n := range keysPerView {
		c.sawSplitChunk = c.sawSplitChunk || n > 1
	}
	for id := range c.dead {
		if _, ok := c.w.Entity(id); ok {
			t.Fatalf("despawned actor %d is still found", id.ID)
		}
	}
}

// run performs ops random operations with an Apply every 1 to 12 of them.
func (c *churn) run(ops int, afterApply func()) {
	var report ecs.ApplyReport
	c.views = c.w.Snapshot(c.views)
	for done := 0; done < ops; {
		for n := 1 + c.rng.IntN(12); n > 0 && done < ops; n-- {
			c.step()
			done++
		}
		c.apply(&report)
		if afterApply != nil {
			afterApply()
		}
	}
}

func TestViewsMatchBruteForceAfterRandomChurn(t *testing.T) {
	c := newChurn(t, 1)
	c.run(6000, nil)
	assert.Greater(t, c.w.Len(), 100, "the churn leaves a population")
	assert.Greater(t, len(c.dead), 300, "the churn despawned actors")
	assert.True(t, c.sawSplitChunk, "some chunk had two tables (user components)")
	assert.True(t, c.sawManyWorlds, "actors lived in several worldOrCells")
	assert.True(t, c.sawNegativeKey, "actors lived at negative chunk coordinates")
	assert.Positive(t, c.chunksRemoved, "empty chunks were removed along the way")
}

// TestSameCallsGiveSameViews pins order determinism: two worlds fed the
// same calls list the same actors in the same rows of the same views.
func TestSameCallsGiveSameViews(t *testing.T) {
	a, b := newChurn(t, 42), newChurn(t, 42)
	var trace [][]viewTrace
	a.run(2000, func() {
		trace = append(trace, traceOf(a.views))
	})
	i := 0
	b.run(2000, func() {
		require.Equal(t, trace[i], traceOf(b.views), "views after Apply %d", i)
		i++
	})
	require.Equal(t, len(trace), i)
}

type viewTrace struct {
	Key grid.AreaKey
	IDs []components.ActorID
}

func traceOf(views []ecs.ChunkView) []viewTrace {
	out := make([]viewTrace, len(views))
	for i, v := range views {
		out[i] = viewTrace{Key: v.Key, IDs: slices.Clone(v.IDs)}
	}
	return out
}
