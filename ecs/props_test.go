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

// propIDs lists the ids of the props PropsIn finds in chunk k.
func propIDs(w *ecs.World, k grid.AreaKey) []uint32 {
	var ids []uint32
	for _, v := range w.PropsIn(k, nil) {
		for _, id := range v.IDs {
			ids = append(ids, id.ID)
		}
	}
	return ids
}

func snapshotIDs(w *ecs.World) []uint32 {
	var ids []uint32
	for _, v := range w.Snapshot(nil) {
		for _, id := range v.IDs {
			ids = append(ids, id.ID)
		}
	}
	return ids
}

func TestPropsLiveApartFromActors(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	player := w.Spawn(ecs.ActorSpec{Transform: at(10, 10, 0), Client: components.Client{Session: 7}})
	crate := w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0), Animation: components.Animation{Flags: 3}, Prop: true})
	door := w.Spawn(ecs.ActorSpec{Transform: at(250, 10, 0), Prop: true})
	w.Apply(&r)

	assert.Equal(t, 3, w.Len())
	assert.Equal(t, 2, w.Props())
	require.Len(t, r.Changes, 3)
	assert.False(t, r.Changes[0].Prop)
	assert.True(t, r.Changes[1].Prop && r.Changes[2].Prop, "a prop's spawn says it is one")
	assert.Equal(t, []uint32{player.ID}, snapshotIDs(w), "Snapshot holds the actors a tick moves and relays, no props")
	assert.Equal(t, []uint32{crate.ID}, propIDs(w, key(0, 0, 0)))
	assert.Equal(t, []uint32{door.ID}, propIDs(w, key(0, 2, 0)))
	assert.Empty(t, propIDs(w, key(0, 1, 0)), "a chunk without an entity has no props")
	v := w.PropsIn(key(0, 0, 0), nil)[0]
	assert.Equal(t, components.MoveInput{X: 20, Y: 10, Flags: 3}, v.Inputs[0], "a prop starts told where it spawned")

	e, ok := w.Entity(crate)
	require.True(t, ok)
	assert.True(t, ark.NewMap[components.Prop](w.Ark()).Has(e))
	assert.Panics(t, func() { w.Spawn(ecs.ActorSpec{Prop: true, Client: components.Client{Session: 1}}) },
		"a prop has no client")
}

func TestAPropChangesOnlyWhenUpdated(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	crate := w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0), Prop: true})
	w.Apply(&r)
	e, _ := w.Entity(crate)
	transforms := ark.NewMap[components.Transform](w.Ark())
	animations := ark.NewMap[components.Animation](w.Ark())

	// Written and not updated: nothing moves, nothing is reported.
	transforms.Get(e).X = 150
	w.Apply(&r)
	assert.Empty(t, r.Changes)
	k, _ := w.Key(crate)
	assert.Equal(t, key(0, 0, 0), k)

	// Updated: moved to its chunk, reported with what its viewers saw.
	w.Update(crate)
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	c := r.Changes[0]
	assert.Equal(t, ecs.Updated, c.Kind)
	assert.True(t, c.Prop)
	assert.Equal(t, key(0, 0, 0), c.From)
	assert.Equal(t, key(0, 1, 0), c.To)
	assert.Equal(t, at(20, 10, 0), c.Last)
	assert.Equal(t, []uint32{crate.ID}, propIDs(w, key(0, 1, 0)))
	assert.Empty(t, propIDs(w, key(0, 0, 0)))

	// A state change within its chunk is reported too; twice in one
	// Apply, once; an update that changed nothing, never.
	animations.Get(e).Flags = 1
	w.Update(crate)
	w.Update(crate)
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.Equal(t, key(0, 1, 0), r.Changes[0].From)
	assert.Equal(t, key(0, 1, 0), r.Changes[0].To)
	assert.Equal(t, at(150, 10, 0), r.Changes[0].Last)
	assert.Equal(t, uint16(0), r.Changes[0].Flags)
	w.Update(crate)
	w.Apply(&r)
	assert.Empty(t, r.Changes)

	// A teleport of a prop is an update to the given place.
	w.Teleport(crate, at(30, 30, 0))
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.Equal(t, ecs.Updated, r.Changes[0].Kind)
	assert.Equal(t, components.MoveInput{X: 30, Y: 30, Flags: 1}, w.PropsIn(key(0, 0, 0), nil)[0].Inputs[0])

	// A despawn says where its viewers saw it last.
	transforms.Get(e).X = 99 // written, never told
	w.Despawn(crate)
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.Equal(t, ecs.Despawned, r.Changes[0].Kind)
	assert.True(t, r.Changes[0].Prop)
	assert.Equal(t, at(30, 30, 0), r.Changes[0].Last)
	assert.Equal(t, uint16(1), r.Changes[0].Flags)
	assert.Equal(t, 0, w.Props())
	assert.Equal(t, 0, w.Len())
}

func TestAChunkOfPropsIsKept(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	crate := w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0), Prop: true})
	w.Apply(&r)
	// Well past the grace and the reserve of empty chunks: a chunk whose
	// only actors are props is not empty.
	for i := range 3 * ecs.EmptyChunkGrace {
		id := w.Spawn(ecs.ActorSpec{Transform: at(float32(1000+200*i), 0, 0)})
		w.Apply(&r)
		w.Despawn(id)
		w.Apply(&r)
	}
	_, ok := w.ChunkEntity(key(0, 0, 0))
	assert.True(t, ok)
	assert.Equal(t, []uint32{crate.ID}, propIDs(w, key(0, 0, 0)))
}

func TestANudgedPropIsToldInFullByItsNextUpdate(t *testing.T) {
	w := ecs.NewWorld(100)
	var r ecs.ApplyReport
	crate := w.Spawn(ecs.ActorSpec{Transform: at(20, 10, 0), Prop: true})
	w.Apply(&r)
	e, _ := w.Entity(crate)
	transforms := ark.NewMap[components.Transform](w.Ark())

	transforms.Get(e).X = 30
	w.Nudge(crate)
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.Equal(t, ecs.Updated, r.Changes[0].Kind)
	assert.True(t, r.Changes[0].Nudged)

	w.Nudge(crate) // nothing changed: nothing to nudge
	w.Apply(&r)
	assert.Empty(t, r.Changes)

	w.Update(crate) // at rest where the nudge left it: told in full
	w.Apply(&r)
	require.Len(t, r.Changes, 1)
	assert.False(t, r.Changes[0].Nudged)
	assert.Equal(t, at(30, 10, 0), r.Changes[0].Last)

	w.Update(crate) // told in full already
	w.Apply(&r)
	assert.Empty(t, r.Changes)
}
