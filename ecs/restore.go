package ecs

import (
	"fmt"
	"unsafe"

	"github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
)

// SavedActor is an actor as a save holds it: its ID and the world state
// among Throng's components. Its MoveInput starts as standing where it
// stands, and it has no client (a returning player's session is given to
// it by the join).
type SavedActor struct {
	ID        components.ActorID
	Transform components.Transform
	Animation components.Animation
	// Class is its relevance class (components.Client.Class). Restored
	// without a client, an actor left at ClassPlayer is given the class a
	// spawn gives: ClassNPC, or ClassProp for a prop.
	Class uint8
}

// RestoreBlock places actors read from a save, all in the chunk of key
// and all with the Ark components extra (a game's own, by Ark ID), under
// the ActorIDs they were saved with and in their classes. The first actor
// is created with all its components at once, so that it lands in its
// final table without moving, and the rest as copies of it, overwritten:
// no archetype is looked up per actor, and no table is passed through on
// the way. It returns the actors' entities, in the order of actors, whose
// extra components are zero: the caller fills them in (through Ark's
// Unsafe API or a Map). They are consecutive rows of one Ark table, so the
// values of a component of theirs lie back to back from the first
// entity's on: one copy fills a column. The slice is reused by the next
// call.
//
// RestoreBlock is for loading a world before its first tick. Before placing
// anything, it refuses an ID that is 0, an actor whose Transform is not in
// chunk key, a class at or past components.MaxClasses, and any call while
// spawns are queued. An ID already in the world is found only as the
// actors are indexed, after they are placed: the error then says so, and
// the world is to be thrown away. Restored IDs need not come in order; the
// next [World.Spawn] returns an ID above every one restored (and above
// [World.ReserveIDs]'s).
func (w *World) RestoreBlock(key grid.AreaKey, actors []SavedActor, extra []ecs.ID) ([]ecs.Entity, error) {
	w.checkUnguarded("RestoreBlock")
	return w.restore(key, actors, extra, false)
}

// RestoreProps is [World.RestoreBlock] for props: the actors land in the
// prop tables of chunk key as props spawned there would ([ActorSpec.Prop]),
// so that [World.Props] counts them, [World.PropsIn] lists them and
// [World.Snapshot] leaves them out. Each starts told where it stands: its
// MoveInput is its place and flags. Its refusals and the reuse of the
// returned slice are RestoreBlock's.
func (w *World) RestoreProps(key grid.AreaKey, actors []SavedActor, extra []ecs.ID) ([]ecs.Entity, error) {
	w.checkUnguarded("RestoreProps")
	return w.restore(key, actors, extra, true)
}

// restore places a block of actors, or of props.
func (w *World) restore(key grid.AreaKey, actors []SavedActor, extra []ecs.ID, prop bool) ([]ecs.Entity, error) {
	if len(w.spawns) > 0 {
		return nil, fmt.Errorf("ecs: restore: spawns are queued; restore before spawning")
	}
	for i := range actors {
		a := &actors[i]
		if a.ID.ID == 0 {
			return nil, fmt.Errorf("ecs: restore: actor ID 0 is never issued")
		}
		if !Finite(a.Transform) {
			return nil, fmt.Errorf("ecs: restore: actor %d stands at a place that is not finite (%v, %v, %v, yaw %v)", a.ID.ID, a.Transform.X, a.Transform.Y, a.Transform.Z, a.Transform.Yaw)
		}
		if k := w.KeyOf(a.Transform); k != key {
			return nil, fmt.Errorf("ecs: restore: actor %d stands in chunk %v, not in its block's chunk %v", a.ID.ID, k, key)
		}
		if a.Class >= components.MaxClasses {
			return nil, fmt.Errorf("ecs: restore: actor %d has class %d, past components.MaxClasses (%d)", a.ID.ID, a.Class, components.MaxClasses)
		}
	}
	if len(actors) == 0 {
		return nil, nil
	}
	var report ApplyReport
	target := w.enterChunk(key, &report)
	c := w.chunks[key]
	c.actors += int32(len(actors) - 1) // enterChunk counted one
	w.chunks[key] = c
	u := w.world.Unsafe()
	ids6 := w.actorIDs()
	ids := append(w.restoreIDs[:0], ids6[:]...)
	if prop {
		ids = append(ids, ecs.ComponentID[components.Prop](w.world))
	}
	ids = append(ids, extra...)
	w.restoreIDs = ids
	// The first actor made with every component lands in the block's
	// table; its copies follow it there, row after row, so that each
	// component's values for the block are one run of its column.
	n := len(actors)
	entities := append(w.restoreEntities[:0], u.NewEntityRel(ids, ecs.Rel[components.InChunk](target)))
	for range n - 1 {
		entities = append(entities, w.world.CopyEntity(entities[0]))
	}
	w.restoreEntities = entities
	first, last := entities[0], entities[n-1]
	idCol := unsafe.Slice((*components.ActorID)(u.Get(first, ids[0])), n)
	if &idCol[n-1] != (*components.ActorID)(u.Get(last, ids[0])) {
		panic("ecs: restore: Ark did not place a block's actors in consecutive rows")
	}
	transforms := unsafe.Slice((*components.Transform)(u.Get(first, ids[1])), n)
	inputs := unsafe.Slice((*components.MoveInput)(u.Get(first, ids[2])), n)
	animations := unsafe.Slice((*components.Animation)(u.Get(first, ids[3])), n)
	clients := unsafe.Slice((*components.Client)(u.Get(first, ids[4])), n)
	next := uint32(0)
	for i := range actors {
		a := &actors[i]
		idCol[i] = a.ID
		transforms[i] = a.Transform
		// As a spawned actor without a client: relayed (a prop: told)
		// where it stands.
		relayedAs(&inputs[i], a.Transform, a.Animation.Flags)
		animations[i] = a.Animation
		class := clientlessClass(a.Class, prop)
		clients[i] = components.Client{Class: class}
		w.entered(target, prop, class)
		if !w.actors.put(a.ID, actorRecord{entity: entities[i], key: key, prop: prop}) {
			return nil, fmt.Errorf("ecs: restore: actor %d is in the world twice; throw this world away", a.ID.ID)
		}
		if prop {
			w.props++
		}
		next = max(next, a.ID.ID+1)
	}
	w.ReserveIDs(next)
	return entities, nil
}

// actorIDs returns the Ark IDs of the components every actor has, in
// actorMap's order: ActorID, Transform, MoveInput, Animation, Client,
// InChunk.
func (w *World) actorIDs() [6]ecs.ID {
	return [6]ecs.ID{
		ecs.ComponentID[components.ActorID](w.world),
		ecs.ComponentID[components.Transform](w.world),
		ecs.ComponentID[components.MoveInput](w.world),
		ecs.ComponentID[components.Animation](w.world),
		ecs.ComponentID[components.Client](w.world),
		ecs.ComponentID[components.InChunk](w.world),
	}
}

// Reserve sizes the world's indexes for actors actors in chunks chunks,
// so that a world about to be filled (by a load, say) grows them once. It
// never shrinks them, and does nothing to a world that has actors.
func (w *World) Reserve(actors, chunks int) {
	if w.actors.n > 0 || actors <= 0 {
		return
	}
	if len(w.chunks) == 0 && chunks > 0 {
		w.chunks = make(map[grid.AreaKey]chunkRecord, chunks)
	}
	// Chunk entities' IDs are Ark's, shared with the actors'.
	if n := actors + chunks + 1; cap(w.chunkSlots) < n {
		w.chunkSlots = append(make([]chunkSlot, 0, n), w.chunkSlots...)
	}
}

// ReserveIDs makes the next [World.Spawn] return at least next, so that a
// loaded world never hands out an ID its saved world had issued (actors
// despawned before the save included). It never lowers the next ID.
func (w *World) ReserveIDs(next uint32) {
	if next > w.nextID && len(w.spawns) == 0 {
		w.actors.reserve(next)
		w.nextID = next
		w.firstPending = next
	}
}

// NextID returns the ActorID the next [World.Spawn] will return: what a
// save keeps so that IDs are never reused across a load.
func (w *World) NextID() uint32 { return w.nextID }
