package ecs_test

import (
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// viewOrder lists the (chunk, first ActorID) of each view.
type viewOrder struct {
	key   grid.AreaKey
	first uint32
	rows  int
}

func orderOf(views []ecs.ChunkView) []viewOrder {
	var out []viewOrder
	for _, v := range views {
		out = append(out, viewOrder{v.Key, v.IDs[0].ID, v.Len()})
	}
	return out
}

// TestPropSnapshotListsEveryPropTableInChunkOrder: every prop, in every
// chunk and table, is listed once, the tables by chunk then by their first
// ActorID, and the actors that are not props are not.
func TestPropSnapshotListsEveryPropTableInChunkOrder(t *testing.T) {
	w := ecs.NewWorld(100)
	assert.Empty(t, w.PropSnapshot(nil), "a world without props")
	var r ecs.ApplyReport
	w.Spawn(ecs.ActorSpec{Transform: at(10, 10, 0), Client: components.Client{Session: 1}})
	w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0)}) // an NPC
	door := w.Spawn(ecs.ActorSpec{Transform: at(250, 10, 0), Prop: true})
	box := w.Spawn(ecs.ActorSpec{Transform: at(20, 20, 0), Prop: true})
	lamp := w.Spawn(ecs.ActorSpec{Transform: at(30, 20, 0), Prop: true})
	far := w.Spawn(ecs.ActorSpec{Transform: at(5, 5, 1), Prop: true})
	below := w.Spawn(ecs.ActorSpec{Transform: at(5, -5, 0), Prop: true})
	w.Apply(&r)
	// The box gets a component of the game's: a table of its own.
	e, _ := w.Entity(box)
	ark.NewMap[crate](w.Ark()).Add(e, &crate{})

	views := w.PropSnapshot(nil)
	assert.Equal(t, []viewOrder{
		{key(0, 0, -1), below.ID, 1},
		{key(0, 0, 0), box.ID, 1},
		{key(0, 0, 0), lamp.ID, 1},
		{key(0, 2, 0), door.ID, 1},
		{key(1, 0, 0), far.ID, 1},
	}, orderOf(views))
	for _, v := range views {
		c, ok := w.ChunkEntity(v.Key)
		require.True(t, ok)
		assert.Equal(t, c, v.Chunk)
	}
	// Reused: the same views again.
	again := w.PropSnapshot(views)
	assert.Equal(t, orderOf(views), orderOf(again))
}

// TestRestoredPropsAreProps: props restored from a save are props, as
// spawned ones: counted, listed by chunk, out of Snapshot, told where they
// stand, and updated like any other.
func TestRestoredPropsAreProps(t *testing.T) {
	w := ecs.NewWorld(100)
	crateID := ark.ComponentID[crate](w.Ark())
	es, err := w.RestoreProps(key(0, 0, 0), []ecs.SavedActor{saved(7, 1, 1), saved(3, 2, 2)}, []ark.ID{crateID})
	require.NoError(t, err)
	(*crate)(w.Ark().Unsafe().Get(es[1], crateID)).Items = 9
	_, err = w.RestoreBlock(key(0, 0, 0), []ecs.SavedActor{saved(5, 3, 3)}, nil)
	require.NoError(t, err)

	assert.Equal(t, 3, w.Len())
	assert.Equal(t, 2, w.Props())
	assert.Equal(t, []uint32{5}, snapshotIDs(w))
	assert.ElementsMatch(t, []uint32{7, 3}, propIDs(w, key(0, 0, 0)))
	e, _ := w.Entity(components.ActorID{ID: 3})
	assert.Equal(t, uint32(9), ark.NewMap[crate](w.Ark()).Get(e).Items)
	assert.True(t, ark.NewMap[components.Prop](w.Ark()).Has(e))
	assert.Equal(t, components.MoveInput{X: 2, Y: 2, Flags: 3}, *ark.NewMap[components.MoveInput](w.Ark()).Get(e),
		"a restored prop starts told where it stands")

	var r ecs.ApplyReport
	ark.NewMap[components.Transform](w.Ark()).Get(e).X = 150
	w.Update(components.ActorID{ID: 3})
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.Equal(t, ecs.Updated, r.Changes[0].Kind)
	assert.Equal(t, at(2, 2, 0), r.Changes[0].Last)
	assert.Equal(t, []uint32{3}, propIDs(w, key(0, 1, 0)))
	w.Despawn(components.ActorID{ID: 7})
	w.Apply(&r)
	assert.Equal(t, 1, w.Props())

	_, err = w.RestoreProps(key(0, 0, 0), []ecs.SavedActor{saved(8, 150, 1)}, nil)
	assert.ErrorContains(t, err, "not in its block's chunk")
}
