package ecs

import (
	"fmt"

	"github.com/mlange-42/ark/ecs"
	"github.com/throng-go/throng/components"
)

// Restore places an actor read from a save at once, under the ActorID it
// was saved with, with its Transform and Animation and with the Ark
// components extra (a game's own, by Ark ID) added in the same step, so
// that the actor lands in its final table without moving. It returns the
// actor's entity, whose extra components are zero: the caller fills them
// in (through Ark's Unsafe API or a Map). spec.Client must be zero: a
// restored actor has no session (a returning player's session is given
// to it by the join).
//
// Restore is for loading a world before its first tick: it refuses an id
// that is 0, already present or queued, or any call while spawns are
// queued. Restored IDs need not come in order; the next [World.Spawn]
// returns an ID above every one restored (and above [World.ReserveIDs]'s).
func (w *World) Restore(id components.ActorID, spec ActorSpec, extra []ecs.ID) (ecs.Entity, error) {
	w.checkUnguarded("Restore")
	switch {
	case id.ID == 0:
		return ecs.Entity{}, fmt.Errorf("ecs: restore: actor ID 0 is never issued")
	case len(w.spawns) > 0:
		return ecs.Entity{}, fmt.Errorf("ecs: restore: spawns are queued; restore before spawning")
	case spec.Client != (components.Client{}):
		return ecs.Entity{}, fmt.Errorf("ecs: restore: actor %d has a client; restored actors have none", id.ID)
	}
	if _, ok := w.actors[id]; ok {
		return ecs.Entity{}, fmt.Errorf("ecs: restore: actor %d is already in the world", id.ID)
	}
	key := w.KeyOf(spec.Transform)
	var report ApplyReport
	target := w.enterChunk(key, &report)
	t := &spec.Transform
	// As a spawned actor without a client: relayed where it stands.
	input := components.MoveInput{X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell, Flags: spec.Animation.Flags}
	var marker components.InChunk
	var e ecs.Entity
	if len(extra) == 0 {
		e = w.actorMap.NewEntity(&id, &spec.Transform, &input, &spec.Animation, &spec.Client, &marker,
			ecs.RelIdx(inChunkIndex, target))
	} else {
		if w.restoreIDs == nil {
			w.restoreIDs = w.actorIDs()
		}
		w.restoreScratch = append(append(w.restoreScratch[:0], w.restoreIDs...), extra...)
		ids := w.restoreScratch
		e = w.world.Unsafe().NewEntityRel(ids, ecs.Rel[components.InChunk](target))
		u := w.world.Unsafe()
		*(*components.ActorID)(u.Get(e, ids[0])) = id
		*(*components.Transform)(u.Get(e, ids[1])) = spec.Transform
		*(*components.MoveInput)(u.Get(e, ids[2])) = input
		*(*components.Animation)(u.Get(e, ids[3])) = spec.Animation
	}
	w.actors[id] = actorRecord{entity: e, key: key}
	w.ReserveIDs(id.ID + 1)
	return e, nil
}

// actorIDs returns the Ark IDs of the components every actor has, in
// actorMap's order: ActorID, Transform, MoveInput, Animation, Client,
// InChunk.
func (w *World) actorIDs() []ecs.ID {
	return []ecs.ID{
		ecs.ComponentID[components.ActorID](w.world),
		ecs.ComponentID[components.Transform](w.world),
		ecs.ComponentID[components.MoveInput](w.world),
		ecs.ComponentID[components.Animation](w.world),
		ecs.ComponentID[components.Client](w.world),
		ecs.ComponentID[components.InChunk](w.world),
	}
}

// ReserveIDs makes the next [World.Spawn] return at least next, so that a
// loaded world never hands out an ID its saved world had issued (actors
// despawned before the save included). It never lowers the next ID.
func (w *World) ReserveIDs(next uint32) {
	if next > w.nextID && len(w.spawns) == 0 {
		w.nextID = next
		w.firstPending = next
	}
}

// NextID returns the ActorID the next [World.Spawn] will return: what a
// save keeps so that IDs are never reused across a load.
func (w *World) NextID() uint32 { return w.nextID }
