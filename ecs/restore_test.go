package ecs_test

import (
	"math"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

type crate struct{ Items uint32 }

func saved(id uint32, x, y float32) ecs.SavedActor {
	return ecs.SavedActor{ID: components.ActorID{ID: id}, Transform: at(x, y, 0), Animation: components.Animation{Flags: uint16(id)}}
}

func TestRestoreBlockPlacesActorsWithTheirIDsAndExtras(t *testing.T) {
	w := ecs.NewWorld(100)
	crateID := ark.ComponentID[crate](w.Ark())
	es, err := w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(7, 1, 1), saved(3, 2, 2), saved(2000, 3, 3)}, []ark.ID{crateID})
	require.NoError(t, err)
	require.Len(t, es, 3)
	es = append([]ark.Entity(nil), es...) // the next call reuses the slice
	for i, e := range es {
		(*crate)(w.Ark().Unsafe().Get(e, crateID)).Items = uint32(i + 10)
	}
	_, err = w.RestoreBlock(key(0, 1, 0), []ecs.SavedActor{saved(5, 150, 1)}, nil)
	require.NoError(t, err)
	assert.Equal(t, 4, w.Len())
	for i, id := range []uint32{7, 3, 2000} {
		e, ok := w.Entity(components.ActorID{ID: id})
		require.True(t, ok, "actor %d", id)
		assert.Equal(t, es[i], e)
		assert.Equal(t, uint32(i+10), ark.NewMap[crate](w.Ark()).Get(e).Items, "actor %d keeps its extra", id)
		assert.Equal(t, uint16(id), ark.NewMap[components.Animation](w.Ark()).Get(e).Flags)
		k, _ := w.Key(components.ActorID{ID: id})
		assert.Equal(t, key(0, 0, 0), k)
	}
	// The next spawn takes an ID above every one restored, and the world
	// relays the restored actors like spawned ones.
	assert.Equal(t, uint32(2001), w.Spawn(ecs.ActorSpec{Transform: at(4, 4, 0)}).ID)
	var r ecs.ApplyReport
	w.Apply(&r)
	views := w.Snapshot(nil)
	ids := 0
	for _, v := range views {
		ids += v.Len()
	}
	assert.Equal(t, 5, ids)
	// A restored actor despawns like any other.
	w.Despawn(components.ActorID{ID: 2000})
	w.Apply(&r)
	_, ok := w.Entity(components.ActorID{ID: 2000})
	assert.False(t, ok)
	assert.Equal(t, 4, w.Len())
}

func TestRestoreBlockRefusesBadActors(t *testing.T) {
	w := ecs.NewWorld(100)
	_, err := w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(0, 1, 1)}, nil)
	assert.ErrorContains(t, err, "ID 0")
	_, err = w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(1, 1, 1), saved(2, 150, 1)}, nil)
	assert.ErrorContains(t, err, "not in its block's chunk")
	assert.Equal(t, 0, w.Len(), "nothing placed before the checks pass")
	_, err = w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(1, 1, 1), saved(1, 2, 1)}, nil)
	assert.ErrorContains(t, err, "twice")

	q := ecs.NewWorld(100)
	q.Spawn(ecs.ActorSpec{Transform: at(1, 1, 0)})
	_, err = q.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(9, 1, 1)}, nil)
	assert.ErrorContains(t, err, "spawns are queued")
}

// TestActorIndexAcrossPages spawns and despawns actors across many pages
// of the index: every live actor is found, every gone one is not, and the
// count follows.
func TestActorIndexAcrossPages(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	var ids []components.ActorID
	for i := range 5000 {
		ids = append(ids, w.Spawn(ecs.ActorSpec{Transform: at(float32(i%50), float32(i/50), 0)}))
	}
	w.Apply(&r)
	for i, id := range ids {
		if i%3 != 0 || i < 2048 {
			w.Despawn(id)
		}
	}
	w.Apply(&r)
	live := 0
	for i, id := range ids {
		_, ok := w.Entity(id)
		want := i%3 == 0 && i >= 2048
		assert.Equal(t, want, ok, "actor %d", id.ID)
		if want {
			live++
		}
	}
	assert.Equal(t, live, w.Len())
	_, ok := w.Entity(components.ActorID{ID: 1 << 30})
	assert.False(t, ok, "an ID never issued")
}

// TestRestoreRefusesAPlaceThatIsNoPlace: a saved actor at NaN is refused,
// naming it, and nothing of its block is placed.
func TestRestoreRefusesAPlaceThatIsNoPlace(t *testing.T) {
	w := ecs.NewWorld(100)
	bad := saved(2, 1, 1)
	bad.Transform.Z = float32(math.NaN())
	_, err := w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(1, 1, 1), bad}, nil)
	assert.EqualError(t, err, "ecs: restore: actor 2 stands at a place that is not finite (1, 1, NaN, yaw 0)")
	assert.Zero(t, w.Len())
}
