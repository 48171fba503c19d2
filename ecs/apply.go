package ecs

import (
	"slices"

	"github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
)

// EmptyChunkGrace is how many consecutive Applies a chunk entity is kept
// without actors, however many empty chunks there are: a chunk that
// empties in Apply k (its last actor moves or despawns) can be removed at
// the end of Apply k+EmptyChunkGrace-1 at the earliest, the Apply that ends
// with it empty for the EmptyChunkGrace-th time in a row. Any actor
// entering ends the count; the next time the chunk empties it starts
// again. At 60 Hz that is about a second.
//
// Past its grace a chunk is removed only while the world holds more empty
// chunks than its budget (see [EmptyChunkReserve]). The grace alone cannot
// stop churn: in a crowd roaming over a map some chunks are always empty
// for a while, and a chunk let go and made again costs the Ark world a
// table move each way, and its views a requery (no allocation: see the
// package doc on parked chunk entities).
const EmptyChunkGrace = 64

// EmptyChunkReserve is the smallest budget of empty chunks in a World with
// actors. The budget is max(occupied chunks, EmptyChunkReserve) while any
// actor is in the world, and 0 once none is. At the end of every Apply,
// empty chunks past their [EmptyChunkGrace] are removed, oldest-emptied
// first (those emptied in one Apply in a fixed order), while the empty
// chunks outnumber the budget. So after an Apply there are at most as many
// empty chunks as the budget or as chunks still in their grace, whichever
// is more.
//
// What that gives:
//   - A crowd spread over an area, pacing across borders or roaming within
//     it, keeps its chunk entities: the chunks it leaves empty at any time
//     are fewer than those it occupies.
//   - A lone player wandering over a huge map empties at most one chunk
//     per Apply, so fewer than EmptyChunkGrace (<= EmptyChunkReserve) are
//     ever in their grace: it keeps at most EmptyChunkReserve empty chunks,
//     the ones it left last.
//   - The reserve, an 8 x 8 neighbourhood's worth, lets a small party or a
//     few NPCs move about without churn, for at most that many empty
//     chunks.
//   - A world whose last actor has left removes every chunk once its grace
//     runs out.
//
// Every Ark query walks the tables of empty chunks too (skipping their
// rows), so tying their number to the occupied ones keeps that overhead
// within a constant factor. Removing a chunk entity drops it from the
// index and its tables from every query; Ark keeps the tables' memory to
// reuse for later tables.
const EmptyChunkReserve = 64

// ChangeKind says what an Apply did to an actor.
type ChangeKind uint8

const (
	// Moved: the actor's Transform lay in another chunk and it moved
	// there (From -> To, From != To).
	Moved ChangeKind = iota + 1
	// Teleported: a Teleport was applied; From may equal To. The join
	// should also correct the teleported actor's own client.
	Teleported
	// Spawned: the actor entered the world in chunk To (From == To).
	Spawned
	// Despawned: the actor left the world from chunk From (To == From).
	// Change.Entity is dead by then and Ark may recycle it.
	Despawned
	// Updated: a prop changed its Transform or Animation ([World.Update],
	// [World.Nudge], or a Relocate or Teleport of a prop), From -> To
	// (which may be equal); Last is where its viewers saw it before.
	Updated
)

// String returns the kind's name.
func (k ChangeKind) String() string {
	switch k {
	case Moved:
		return "Moved"
	case Teleported:
		return "Teleported"
	case Spawned:
		return "Spawned"
	case Despawned:
		return "Despawned"
	case Updated:
		return "Updated"
	}
	return "ChangeKind(?)"
}

// Change is one structural change an Apply carried out.
type Change struct {
	ID       components.ActorID
	Entity   ecs.Entity
	Kind     ChangeKind
	From, To grid.AreaKey
	// Session is the actor's Client.Session (0: no client), and Class
	// its Client.Class.
	Session uint64
	Class   uint8
	// Prop says the actor is a prop. Its changes are Spawned, Updated and
	// Despawned, and for the last two Last is the place (X, Y, Z, Yaw,
	// WorldOrCell) and Flags are the animation flags its viewers were last
	// told, the prop's MoveInput before the change.
	Prop  bool
	Last  components.Transform
	Flags uint16
	// Nudged says an Updated prop was changed by World.Nudge: movement
	// that far viewers may hear less often.
	Nudged bool
}

// ApplyReport lists what an Apply did. Reuse one report across ticks: Apply
// truncates and refills it, so it allocates only when a tick has more
// changes than any before.
type ApplyReport struct {
	// Changes in apply order: chunk moves and teleports in queue order,
	// then spawns in ActorID order, then despawns in queue order.
	Changes []Change
	// Ignored counts queued operations on actors that were never spawned
	// or were despawned before the operation's turn.
	Ignored int
	// NonFinite counts actors whose Transform a system left not finite
	// ([Finite]) when a Relocate, Update or Nudge came to them: a prop or
	// a client-less actor was put back where it was last relayed or told,
	// a player's actor left in its chunk.
	NonFinite int
	// ChunksCreated counts chunks made for actors entering chunks that had
	// none (with a new entity or a parked one); ChunksRemoved counts empty
	// chunks let go under the rule of [EmptyChunkReserve] (their entities
	// parked, or removed if they held components of a user's).
	ChunksCreated, ChunksRemoved int
}

// Apply carries out every queued structural change, in a fixed order:
// chunk moves and teleports (queue order), spawns (ActorID order), despawns
// (queue order). It then lets go the empty chunks that [EmptyChunkGrace]
// and [EmptyChunkReserve] allow. report may be nil; otherwise it is
// truncated and filled in.
//
// Apply invalidates every [ChunkView] taken before it. It panics under the
// guard, and while any Ark query is open, before changing anything.
func (w *World) Apply(report *ApplyReport) {
	w.checkUnguarded("Apply")
	if w.world.IsLocked() {
		// Refuse up front: Ark would panic halfway through, leaving the
		// queues and the chunk index out of step with the Ark world.
		panic("ecs: Apply called while an Ark query is open (the Ark world is locked); " +
			"finish or Close the query before the join applies changes")
	}
	var r ApplyReport
	if report == nil {
		report = &r
	}
	report.Changes = report.Changes[:0]
	report.Ignored, report.NonFinite = w.pendingIgnored, 0
	report.ChunksCreated, report.ChunksRemoved = 0, 0
	w.pendingIgnored = 0
	w.applies++
	w.listedBefore = len(w.emptyChunks)
	w.inApply = true
	defer func() { w.inApply = false }()

	for i := range w.moves {
		w.applyMove(&w.moves[i], report)
	}
	for i := range w.spawns {
		w.applySpawn(&w.spawns[i], report)
	}
	w.firstPending = w.nextID
	for _, id := range w.despawns {
		w.applyDespawn(id, report)
	}
	w.moves, w.spawns, w.despawns = w.moves[:0], w.spawns[:0], w.despawns[:0]
	w.sweepEmptyChunks(report)
}

func (w *World) applyMove(op *moveOp, report *ApplyReport) {
	if op.id.ID >= w.firstPending {
		// Queued spawn: a teleport changes where it spawns; a relocate
		// has nothing to do.
		if op.teleport {
			w.spawns[op.id.ID-w.firstPending].spec.Transform = op.transform
		}
		return
	}
	rec, ok := w.actors.get(op.id)
	if !ok {
		report.Ignored++
		return
	}
	t := w.transforms.Get(rec.entity)
	if op.teleport {
		*t = op.transform
	}
	client := *w.clients.Get(rec.entity) // a copy: the row moves below
	if !Finite(*t) {
		// A system wrote a place that is no place. A prop or a client-less
		// actor goes back where it was last relayed (its MoveInput); a
		// player's actor stays in its chunk until its next accepted move.
		report.NonFinite++
		if client.Session != 0 {
			return
		}
		in := w.inputs.Get(rec.entity)
		t.X, t.Y, t.Z, t.Yaw, t.WorldOrCell = in.X, in.Y, in.Z, in.Yaw, in.WorldOrCell
	}
	if rec.prop {
		w.applyUpdate(op.id, rec, op.nudge, report)
		return
	}
	to := w.KeyOf(*t)
	from := rec.key
	if to != from {
		target := w.enterChunk(to, report)
		w.entered(target, false, client.Class)
		w.touch(w.chunks[from].entity)
		w.changeChunk(rec.entity, target)
		w.leaveChunk(from)
		if rec.client {
			w.addClients(to, 1)
			w.addClients(from, -1)
		}
		rec.key = to
		w.actors.put(op.id, rec)
	} else if !op.teleport {
		return
	}
	kind := Moved
	if op.teleport {
		kind = Teleported
	}
	report.Changes = append(report.Changes, Change{
		ID: op.id, Entity: rec.entity, Kind: kind, From: from, To: to,
		Session: client.Session, Class: client.Class,
	})
}

// applyUpdate carries out a prop's queued change: the prop moves to the
// chunk its Transform lies in, and if that or its place or flags changed
// since its viewers were last told (its MoveInput), the change is reported
// with what they were told, which MoveInput then takes. A prop's
// MoveInput.Pending marks a nudge some viewers may not have heard: an
// update (not a nudge) is then reported even if nothing changed since.
func (w *World) applyUpdate(id components.ActorID, rec actorRecord, nudge bool, report *ApplyReport) {
	_, t, in, anim, client, _ := w.actorMap.Get(rec.entity)
	to, from := w.KeyOf(*t), rec.key
	was := components.Transform{X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw, WorldOrCell: in.WorldOrCell}
	if to == from && *t == was && anim.Flags == in.Flags && (nudge || !in.Pending) {
		return
	}
	report.Changes = append(report.Changes, Change{
		ID: id, Entity: rec.entity, Kind: Updated, From: from, To: to, Prop: true, Last: was, Flags: in.Flags, Nudged: nudge, Class: client.Class,
	})
	relayedAs(in, *t, anim.Flags)
	in.Pending = nudge
	if to != from {
		class := client.Class // client points into the row the move below leaves
		target := w.enterChunk(to, report)
		w.entered(target, true, class)
		w.touch(w.chunks[from].entity)
		w.changeChunk(rec.entity, target)
		w.leaveChunk(from)
		rec.key = to
		w.actors.put(id, rec)
	}
}

// relayedAs sets a client-less actor's MoveInput to the place and flags
// it is shown at (see components.MoveInput).
func relayedAs(in *components.MoveInput, t components.Transform, flags uint16) {
	in.X, in.Y, in.Z, in.Yaw, in.WorldOrCell, in.Flags = t.X, t.Y, t.Z, t.Yaw, t.WorldOrCell, flags
}

// changeChunk moves entity to the table of chunk target. It removes the
// InChunk relation and adds it back with the new target instead of calling
// SetRelation: Ark v0.8.1's SetRelation allocates the entity's new relation
// list on every call (storage.getExchangeTargets), one allocation per chunk
// crossing, while removing and adding reuse Ark's buffers, and a crowd
// roaming across borders then allocates nothing. The cost is the same
// (about 135 ns either way, measured) and the rows end up the same; the
// entity passes through its archetype without InChunk, whose one table
// stays empty. Ark observers, which Throng does not use, would see an
// InChunk removal and addition instead of a relation change.
func (w *World) changeChunk(entity ecs.Entity, target ecs.Entity) {
	w.inChunk.Remove(entity)
	w.inChunk.Add(entity, &components.InChunk{}, target)
}

func (w *World) applySpawn(op *spawnOp, report *ApplyReport) {
	key := w.KeyOf(op.spec.Transform)
	target := w.enterChunk(key, report)
	var input components.MoveInput
	if op.spec.Client.Session == 0 {
		// An actor without a client starts as relayed where it spawns
		// (its Appear says so): Move relays it once a system moves it.
		relayedAs(&input, op.spec.Transform, op.spec.Animation.Flags)
	}
	var marker components.InChunk
	var e ecs.Entity
	if op.spec.Prop {
		e = w.propMap.NewEntity(&op.id, &op.spec.Transform, &input, &op.spec.Animation, &op.spec.Client, &marker, &components.Prop{},
			ecs.RelIdx(inChunkIndex, target))
		w.props++
	} else {
		e = w.actorMap.NewEntity(&op.id, &op.spec.Transform, &input, &op.spec.Animation, &op.spec.Client, &marker,
			ecs.RelIdx(inChunkIndex, target))
	}
	class := op.spec.Client.Class
	if op.spec.Init != nil {
		op.spec.Init(w.world, e)
		class = w.clients.Get(e).Class // Init may give it another
	}
	w.entered(target, op.spec.Prop, class)
	client := op.spec.Client.Session != 0
	w.actors.put(op.id, actorRecord{entity: e, key: key, client: client, prop: op.spec.Prop})
	if client {
		w.addClients(key, 1)
	}
	report.Changes = append(report.Changes, Change{
		ID: op.id, Entity: e, Kind: Spawned, From: key, To: key, Session: op.spec.Client.Session, Class: op.spec.Client.Class, Prop: op.spec.Prop,
	})
}

func (w *World) applyDespawn(id components.ActorID, report *ApplyReport) {
	rec, ok := w.actors.get(id)
	if !ok {
		report.Ignored++
		return
	}
	change := Change{ID: id, Entity: rec.entity, Kind: Despawned, From: rec.key, To: rec.key, Prop: rec.prop}
	_, _, in, _, client, _ := w.actorMap.Get(rec.entity)
	change.Session, change.Class = client.Session, client.Class
	if rec.prop {
		change.Last = components.Transform{X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw, WorldOrCell: in.WorldOrCell}
		change.Flags = in.Flags
		w.props--
	}
	w.touch(w.chunks[rec.key].entity)
	w.world.RemoveEntity(rec.entity)
	w.actors.drop(id)
	w.leaveChunk(rec.key)
	if rec.client {
		w.addClients(rec.key, -1)
	}
	report.Changes = append(report.Changes, change)
}

// enterChunk counts one more actor in chunk key, creating its entity if
// needed, and returns the entity.
func (w *World) enterChunk(key grid.AreaKey, report *ApplyReport) ecs.Entity {
	c, ok := w.chunks[key]
	if !ok {
		c.entity = w.newChunk(key)
		report.ChunksCreated++
		w.unranked = append(w.unranked, rankedChunk{key: key, entity: c.entity, gen: w.chunkSlots[c.entity.ID()].gen})
	}
	if c.listed && c.actors == 0 {
		w.reentered = append(w.reentered, key)
	}
	c.actors++
	w.chunks[key] = c
	w.touch(c.entity)
	return c.entity
}

// newChunk returns an entity for chunk key: the last one parked, given
// key, or else a new one with its slot.
func (w *World) newChunk(key grid.AreaKey) ecs.Entity {
	chunk := components.Chunk{WorldOrCell: key.WorldOrCell, X: key.X, Y: key.Y}
	if n := len(w.parked); n > 0 {
		e := w.parked[n-1]
		w.parked = w.parked[:n-1]
		w.chunkMap.Add(e, &chunk)
		c := &w.chunkSlots[e.ID()]
		c.gen++
		c.live = true
		c.classes, c.propClasses = 0, 0
		return e
	}
	e := w.chunkMap.NewEntity(&chunk)
	id := int(e.ID())
	if id >= len(w.chunkSlots) {
		w.chunkSlots = append(w.chunkSlots, make([]chunkSlot, id+1-len(w.chunkSlots))...)
	}
	// The mark stays: the ID may be listed as touched already, for the
	// chunk that had it before.
	c := &w.chunkSlots[id]
	c.entity = e
	c.filter, c.props = nil, nil // made on first use, for this entity (chunkActors, chunkProps)
	c.gen++
	c.live = true
	c.classes, c.propClasses = 0, 0
	return e
}

// park lets an empty chunk's entity go: it loses its Chunk component and
// waits, with its Ark tables (empty) and its slot's filter, for the next
// chunk created. Removing it would make that chunk a new entity, whose
// first actor makes Ark build a table for the new relation target and
// World a filter for it: a dozen allocations a chunk, which a crowd that
// keeps more chunks than the budget of empty ones would pay all along. A
// chunk entity with components of a user's besides Chunk is removed: a
// later chunk must not inherit them.
func (w *World) park(chunk ecs.Entity) {
	c := &w.chunkSlots[chunk.ID()]
	c.gen++
	c.live = false
	if ids := w.world.Unsafe().IDs(chunk); ids.Len() != 1 {
		w.world.RemoveEntity(chunk)
		return
	}
	w.chunkMap.Remove(chunk)
	w.parked = append(w.parked, chunk)
}

// leaveChunk counts one actor less in chunk key and, when it empties,
// notes the Apply and lists it as empty.
func (w *World) leaveChunk(key grid.AreaKey) {
	c := w.chunks[key]
	c.actors--
	if c.actors == 0 {
		c.emptiedIn = w.applies
		if !c.listed {
			c.listed = true
			w.emptyChunks = append(w.emptyChunks, key)
		}
	}
	w.chunks[key] = c
}

// maxReentered is the most re-entered chunks the sweep compares each
// listed chunk with; past it, it looks every listed chunk up.
const maxReentered = 32

// sweepEmptyChunks brings emptyChunks up to date and parks the chunks
// that the rule of [EmptyChunkReserve] lets go.
func (w *World) sweepEmptyChunks(report *ApplyReport) {
	// Unlist re-entered chunks. A chunk that emptied in this Apply may sit
	// at an old place (entered and left again since it was listed): move
	// all of this Apply's into fresh and append them, so the list stays in
	// the order the chunks emptied.
	keep, fresh := w.emptyChunks[:0], w.freshEmpty[:0]
	few := len(w.reentered) <= maxReentered
	for i, key := range w.emptyChunks {
		if few && i < w.listedBefore && !slices.Contains(w.reentered, key) {
			// Listed before this Apply and not entered since: still
			// empty, and not emptied in it.
			keep = append(keep, key)
			continue
		}
		c := w.chunks[key]
		switch {
		case c.actors > 0:
			c.listed = false
			w.chunks[key] = c
		case c.emptiedIn == w.applies:
			fresh = append(fresh, key)
		default:
			keep = append(keep, key)
		}
	}
	w.emptyChunks = append(keep, fresh...) // in place: no longer than before
	w.freshEmpty = fresh
	w.reentered = w.reentered[:0]

	// Every empty chunk is listed, so the rest are occupied.
	budget := 0
	if occupied := len(w.chunks) - len(w.emptyChunks); occupied > 0 {
		budget = max(occupied, EmptyChunkReserve)
	}
	removed := 0
	for ; len(w.emptyChunks)-removed > budget; removed++ {
		key := w.emptyChunks[removed]
		c := w.chunks[key]
		if w.applies-c.emptiedIn+1 < EmptyChunkGrace {
			break // in grace, and so is every chunk after it
		}
		w.park(c.entity)
		delete(w.chunks, key)
	}
	if removed > 0 {
		w.emptyChunks = w.emptyChunks[:copy(w.emptyChunks, w.emptyChunks[removed:])]
		report.ChunksRemoved = removed
		w.chunksRemoved = true
		// Chunks created and removed again between two Snapshots: drop
		// them now, so unranked never outgrows the index, however many
		// Applies go without a Snapshot.
		w.unranked, _ = w.dropRemoved(w.unranked)
	}
}
