package ecs

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
)

// inChunkIndex is the position of components.InChunk in actorMap and filter;
// Ark addresses relation targets by that index.
const inChunkIndex = 5

// ActorSpec is what a new actor starts with. Its chunk is computed from
// Transform when the spawn is applied. The actor's MoveInput starts zero.
type ActorSpec struct {
	Transform components.Transform
	Animation components.Animation
	// Client.Session 0 means no client drives the actor (a prop or an NPC).
	// Client.Class is its relevance class: left at ClassPlayer for an actor
	// without a client, Spawn makes it ClassNPC (ClassProp for a prop);
	// Spawn panics at MaxClasses or beyond.
	Client components.Client
	// Prop makes the actor a prop (see [components.Prop]): kept out of
	// [World.Snapshot], listed by [World.PropsIn], changed only through
	// [World.Update]. A prop has no client: Spawn panics if Client.Session
	// is set too.
	Prop bool
	// Init, if set, runs when the spawn is applied, with the new actor's
	// entity: it may add the game's own components to it (Ark's Unsafe
	// API or a Map), which then count as part of the spawn rather than as
	// a change made outside Apply. It must not spawn, despawn or move
	// actors.
	Init func(w *ecs.World, e ecs.Entity)
}

// World is the game-server layer over one Ark world: it owns the Ark world,
// the chunk index (AreaKey -> chunk entity) and the queues of structural
// changes that only [World.Apply] carries out. Chunk entities are created
// as actors enter chunks and let go, once empty, under the rule of
// [EmptyChunkGrace] and [EmptyChunkReserve], to be reused for the next
// chunk (see the package doc, Chunk entities).
//
// A World is not safe for concurrent use. Its methods belong to the serial
// phases of the tick (ingest, prepare, join); during the parallel phases
// workers touch only the [ChunkView] slices, under [World.Guard].
type World struct {
	world     *ecs.World
	chunkSize float32

	actorMap   *ecs.Map6[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk]
	transforms *ecs.Map[components.Transform]
	inputs     *ecs.Map[components.MoveInput]
	clients    *ecs.Map[components.Client]
	inChunk    *ecs.Map[components.InChunk]
	chunkMap   *ecs.Map[components.Chunk]
	propMap    *ecs.Map7[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk, components.Prop]
	filter     *actorFilter
	propFilter *actorFilter // every prop table (PropSnapshot)

	guardFilter *ecs.Filter0
	guard       ecs.Query0
	guarded     bool

	actors actorIndex
	props  int // how many of actors are props
	chunks map[grid.AreaKey]chunkRecord
	// emptyChunks lists the empty chunks in the order they emptied (those
	// of one Apply in a fixed order), which is the order they are let go
	// in. A slice, not a map walk, keeps that order (and so which entity
	// each later chunk takes) deterministic. During an Apply it may also
	// hold chunks entered since they were listed; the sweep at its end
	// drops them. freshEmpty is the sweep's scratch.
	emptyChunks []grid.AreaKey
	freshEmpty  []grid.AreaKey
	// reentered holds the listed chunks entered since the last sweep, and
	// listedBefore how many chunks were listed when the Apply began: the
	// sweep looks up only those chunks and the ones listed since, not
	// every empty chunk (each lookup a miss in a big world's chunk map).
	reentered    []grid.AreaKey
	listedBefore int
	// parked holds the chunk entities let go (see World.park), last
	// parked last: the next chunk created takes the last one.
	parked []ecs.Entity
	// applies counts Applies, including the one running.
	applies uint64

	// nextID is the ActorID the next Spawn returns; IDs in
	// [firstPending, nextID) are queued spawns not yet applied.
	nextID       uint32
	firstPending uint32

	moves          []moveOp
	spawns         []spawnOp
	despawns       []components.ActorID
	pendingIgnored int

	// Snapshot's views (see shape below) and the chunk order. ranked lists
	// the chunks in key order as of the last ranking, and rankOf maps a
	// chunk entity's ID to its position there. Chunks created since wait in unranked, and
	// chunksRemoved says some in ranked were let go since; the next
	// Snapshot brings the order up to date (World.rankChunks).
	views         []ChunkView
	ranked        []rankedChunk
	unranked      []rankedChunk
	rankOf        []int32
	rankStarts    []int32
	chunksRemoved bool

	// shape counts the structural changes to actors: entities with an
	// ActorID created or removed, components or relations added to or
	// removed from them. Ark's observers count them, so a change made
	// with raw Ark calls counts too. views holds the tables of the last
	// query (in no set order; order is their key order) and shotAt the
	// count they were taken at: while it is unchanged, the views are still
	// exact (the same tables, rows and column buffers), and Snapshot
	// copies them instead of querying again. (A new World has no actors
	// and no views: its count and shotAt are both 0, and that is exact
	// too.) Between queries, views keeps alive the column buffers it
	// aliases, as the callers' views do.
	shape uint64
	order []int32
	// Per view, its chunk's entity ID (viewChunk), and requery's scratch:
	// the order it builds (orderNext, swapped with order), the views'
	// moves (viewAt, viewPos) and the views queried again (viewFresh).
	viewChunk       []uint32
	orderNext       []int32
	viewAt, viewPos []int32
	viewFresh       []int32
	shotAt          uint64
	shots           uint64 // the views' generation: refreshes so far (SnapshotGen)

	// What changed since the last query, for the next Snapshot to bring
	// the views up to date table by table instead of querying every table
	// (see World.requery): the IDs of the chunks whose tables Apply added
	// actors to or removed them from (touched, each once: its slot's mark
	// is touchGen), and whether an actor changed shape outside an Apply
	// (foreign: a raw Ark call, say a user's component added), which
	// Throng cannot place in a chunk. chunkSlots is indexed by chunk
	// entity ID.
	touched    []uint32
	touchGen   uint32
	inApply    bool
	foreign    bool
	chunkSlots []chunkSlot

	// restoreEntities is RestoreBlock's list of the entities it created,
	// and restoreIDs the Ark IDs of their components.
	restoreEntities []ecs.Entity
	restoreIDs      []ecs.ID
}

// chunkSlot is what requery keeps per chunk entity ID: the chunk entity
// that last had the ID, a filter for its tables, made with the entity (a
// query given a relation target allocates; a filter holding it does not),
// and the generation in which its tables were last touched.
//
// gen counts the times the entity was given a chunk or parked (see
// World.park): a rankedChunk taken at another gen is stale.
type chunkSlot struct {
	entity  ecs.Entity
	filter  *actorFilter // the chunk's actors' tables, props apart (World.chunkActors)
	props   *actorFilter // the chunk's props' tables (World.chunkProps)
	mark    uint32
	gen     uint32
	clients int32 // actors with a client in the chunk, as chunkRecord.clients
	live    bool  // the entity stands for a chunk in the index, not parked
	// classes has a bit for the class of each actor that entered the
	// chunk (spawned, restored or moved in) since the entity was given
	// to it, and propClasses the same for props: a superset of the
	// classes its tables hold, so that one bit says every actor there is
	// of that class (World.ClassIn).
	classes, propClasses uint16
}

// chunkActors returns the filter of chunk slot c's actors, props apart,
// made on its first use: a world loaded from a save makes thousands of
// chunks, most of which no tick looks at alone before they change.
func (w *World) chunkActors(c *chunkSlot) *actorFilter {
	if c.filter == nil {
		c.filter = newActorFilter(w.world, false).Relations(ecs.RelIdx(inChunkIndex, c.entity))
	}
	return c.filter
}

// chunkProps returns the filter of chunk slot c's props, made on its
// first use.
func (w *World) chunkProps(c *chunkSlot) *actorFilter {
	if c.props == nil {
		c.props = newActorFilter(w.world, true).Relations(ecs.RelIdx(inChunkIndex, c.entity))
	}
	return c.props
}

// actorFilter matches actors by the columns a ChunkView holds.
type actorFilter = ecs.Filter6[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk]

// newActorFilter returns a filter for every actor but the props, or for
// the props alone.
func newActorFilter(w *ecs.World, props bool) *actorFilter {
	f := ecs.NewFilter6[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk](w)
	if props {
		return f.With(ecs.C[components.Prop]())
	}
	return f.Without(ecs.C[components.Prop]())
}

// rankedChunk is a chunk as the ranking keeps it: its key with its entity,
// so that numbering the chunks in key order is a plain walk, without a
// lookup in World.chunks per chunk.
type rankedChunk struct {
	key    grid.AreaKey
	entity ecs.Entity
	gen    uint32 // its slot's gen when it was given key
}

type actorRecord struct {
	entity ecs.Entity
	key    grid.AreaKey
	client bool // spawned with a session
	prop   bool // spawned as a prop
	live   bool // the record is in use (see actorIndex)
}

type chunkRecord struct {
	entity  ecs.Entity
	actors  int32
	clients int32 // actors spawned with a session
	listed  bool  // in World.emptyChunks
	// emptiedIn is the Apply (World.applies) in which the chunk last
	// became empty; meaningful while actors is 0.
	emptiedIn uint64
}

type moveOp struct {
	id        components.ActorID
	teleport  bool
	nudge     bool // World.Nudge
	transform components.Transform
}

type spawnOp struct {
	id   components.ActorID
	spec ActorSpec
}

// NewWorld returns an empty World whose chunks are squares of chunkSize
// world units (grid.DefaultChunkSize is the usual choice).
//
// It panics if chunkSize is not positive and finite: the size is validated
// with the rest of the configuration before a server builds its World, so a
// bad value here is a programming error.
func NewWorld(chunkSize float32) *World {
	if !(chunkSize > 0) || math.IsInf(float64(chunkSize), 1) {
		panic(fmt.Sprintf("ecs: chunk size must be positive and finite, got %v", chunkSize))
	}
	w := ecs.NewWorld()
	world := &World{
		world:        w,
		chunkSize:    chunkSize,
		actorMap:     ecs.NewMap6[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk](w),
		transforms:   ecs.NewMap[components.Transform](w),
		inputs:       ecs.NewMap[components.MoveInput](w),
		clients:      ecs.NewMap[components.Client](w),
		inChunk:      ecs.NewMap[components.InChunk](w),
		chunkMap:     ecs.NewMap[components.Chunk](w),
		propMap:      ecs.NewMap7[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk, components.Prop](w),
		filter:       newActorFilter(w, false).Register(),
		propFilter:   newActorFilter(w, true).Register(),
		guardFilter:  ecs.NewFilter0(w),
		chunks:       make(map[grid.AreaKey]chunkRecord),
		nextID:       1,
		firstPending: 1,
		touchGen:     1,
	}
	actor := ecs.C[components.ActorID]()
	for _, event := range []ecs.EventType{
		ecs.OnCreateEntity, ecs.OnRemoveEntity, ecs.OnAddComponents,
		ecs.OnRemoveComponents, ecs.OnAddRelations, ecs.OnRemoveRelations,
	} {
		ecs.Observe(event).With(actor).Do(world.reshaped).Register(w)
	}
	return world
}

// reshaped is the observer of every structural change to an actor.
func (w *World) reshaped(ecs.Entity) {
	w.shape++
	w.foreign = w.foreign || !w.inApply
}

// touch notes that Apply changed the rows of chunk's tables (chunk was
// made by enterChunk, so it has a slot).
func (w *World) touch(chunk ecs.Entity) {
	id := chunk.ID()
	if c := &w.chunkSlots[id]; c.mark != w.touchGen {
		c.mark = w.touchGen
		w.touched = append(w.touched, id)
	}
}

// Ark returns the Ark world, for users' own components, systems and
// queries. Structural changes to actors and chunk entities must go through
// World (Spawn, Despawn, Relocate, Teleport); adding or removing a user's own
// components on an actor is fine, outside the guard.
func (w *World) Ark() *ecs.World { return w.world }

// ChunkSize returns the edge length of a chunk in world units.
func (w *World) ChunkSize() float32 { return w.chunkSize }

// KeyOf returns the chunk a Transform lies in, with this World's chunk size.
func (w *World) KeyOf(t components.Transform) grid.AreaKey {
	return grid.KeyOf(t.WorldOrCell, t.X, t.Y, w.chunkSize)
}

// Entity returns the Ark entity of a spawned actor. It reports false for an
// ID whose spawn is still queued, that was despawned, or that was never
// issued.
func (w *World) Entity(id components.ActorID) (ecs.Entity, bool) {
	r, ok := w.actors.get(id)
	return r.entity, ok
}

// Key returns the chunk an actor was placed in by the last Apply (not where
// its Transform has moved since). ok is false as for [World.Entity].
func (w *World) Key(id components.ActorID) (grid.AreaKey, bool) {
	r, ok := w.actors.get(id)
	return r.key, ok
}

// Props returns how many of the world's actors ([World.Len]) are props.
func (w *World) Props() int { return w.props }

// Len returns the number of actors in the world: spawned by an Apply and
// not yet despawned by one.
func (w *World) Len() int { return w.actors.n }

// Chunks returns the number of chunk entities, including the empty chunks
// kept under the rule of [EmptyChunkGrace] and [EmptyChunkReserve].
func (w *World) Chunks() int { return len(w.chunks) }

// ChunkEntity returns the entity of chunk key, if it exists. A chunk's
// entity is its own only while the chunk is in the index: once let go, the
// entity may stand for another chunk (its [components.Chunk] says which),
// so look chunks up by key rather than keep their entities across ticks.
func (w *World) ChunkEntity(key grid.AreaKey) (ecs.Entity, bool) {
	c, ok := w.chunks[key]
	return c.entity, ok
}

// ActorsAround returns the number of actors in the 3x3 chunk stencil of
// key: those an actor in chunk key can see, and that can see it. Spawns
// and moves still queued are not counted.
func (w *World) ActorsAround(key grid.AreaKey) int {
	n := 0
	for _, k := range grid.Stencil(key) {
		n += int(w.chunks[k].actors)
	}
	return n
}

// ClientsIn returns how many actors in the chunk whose entity is chunk (a
// [ChunkView]'s Chunk) were spawned with a client (a session): 0 for a
// chunk of props and NPCs only. It reads an array, not the chunk index,
// so that a save can ask it of every table; it may be called from several
// goroutines while the world does not change.
func (w *World) ClientsIn(chunk ecs.Entity) int {
	if id := int(chunk.ID()); id < len(w.chunkSlots) && w.chunkSlots[id].entity == chunk {
		return int(w.chunkSlots[id].clients)
	}
	return 0
}

// ClassIn reports the one relevance class of every actor (prop, if prop)
// in chunk's tables, when the chunk has known no other since it was last
// created: then a save writes the class of a table without reading its
// rows. A chunk that held actors of two classes answers false until it is
// let go, even if one class has left. Like ClientsIn it reads an array and
// may be called from several goroutines while the world does not change.
func (w *World) ClassIn(chunk ecs.Entity, prop bool) (uint8, bool) {
	id := int(chunk.ID())
	if id >= len(w.chunkSlots) || w.chunkSlots[id].entity != chunk {
		return 0, false
	}
	c := &w.chunkSlots[id]
	mask := c.classes
	if prop {
		mask = c.propClasses
	}
	if mask == 0 || mask&(mask-1) != 0 {
		return 0, false
	}
	return uint8(bits.TrailingZeros16(mask)), true
}

// entered notes that an actor (a prop, if prop) of class came into chunk.
func (w *World) entered(chunk ecs.Entity, prop bool, class uint8) {
	c := &w.chunkSlots[chunk.ID()]
	if prop {
		c.propClasses |= 1 << (class & 15)
	} else {
		c.classes |= 1 << (class & 15)
	}
}

// addClients counts n more actors with a client in chunk key, which holds
// at least one actor.
func (w *World) addClients(key grid.AreaKey, n int32) {
	c := w.chunks[key]
	c.clients += n
	w.chunks[key] = c
	w.chunkSlots[c.entity.ID()].clients += n
}

// clientlessClass is the class of an actor without a client given class:
// class, unless it is ClassPlayer, which such an actor cannot be: then
// ClassNPC, or ClassProp for a prop. Spawn and restore both apply it.
func clientlessClass(class uint8, prop bool) uint8 {
	switch {
	case class != components.ClassPlayer:
		return class
	case prop:
		return components.ClassProp
	}
	return components.ClassNPC
}

// Spawn queues a new actor and returns its ActorID at once. IDs count up
// from 1 in call order and are never reused. The actor exists in the Ark
// world (and [World.Entity] finds it) only after the next [World.Apply].
//
// It panics under the guard, after 2^32-1 spawns, and for a Transform
// that is not finite (see [Finite]).
func (w *World) Spawn(spec ActorSpec) components.ActorID {
	w.checkUnguarded("Spawn")
	mustBeFinite("Spawn", spec.Transform)
	if spec.Prop && spec.Client.Session != 0 {
		panic("ecs: a prop cannot have a client (ActorSpec.Prop with Client.Session set)")
	}
	if spec.Client.Class >= components.MaxClasses {
		panic(fmt.Sprintf("ecs: class %d is past components.MaxClasses", spec.Client.Class))
	}
	if spec.Client.Session == 0 {
		spec.Client.Class = clientlessClass(spec.Client.Class, spec.Prop)
	}
	if w.nextID == math.MaxUint32 {
		panic("ecs: ActorID space exhausted (2^32-1 spawns); IDs are never reused")
	}
	id := components.ActorID{ID: w.nextID}
	w.nextID++
	w.spawns = append(w.spawns, spawnOp{id: id, spec: spec})
	return id
}

// Despawn queues the removal of an actor. A despawn of an actor whose spawn
// is queued in the same Apply is applied after the spawn (both are
// reported). Despawning an unknown or already despawned actor is ignored
// and counted in [ApplyReport.Ignored].
//
// It panics under the guard.
func (w *World) Despawn(id components.ActorID) {
	w.checkUnguarded("Despawn")
	if !w.issued(id) {
		w.pendingIgnored++
		return
	}
	w.despawns = append(w.despawns, id)
}

// Relocate queues a chunk check for an actor whose Transform has been
// written (by Move, through a view or an Ark map). Apply recomputes the
// chunk from the Transform the actor has at that moment and, if it changed,
// moves the actor to that chunk's table (reported as [Moved]). Relocating an
// actor whose chunk did not change costs a lookup and reports nothing;
// relocating an actor whose spawn is queued is a no-op (the spawn places it
// by its Transform). Unknown or despawned actors are ignored and counted.
//
// It panics under the guard.
func (w *World) Relocate(id components.ActorID) {
	w.checkUnguarded("Relocate")
	w.queueMove(moveOp{id: id})
}

// Update queues a prop's change: the game has written its Transform or
// Animation (a crate pushed, a door opened), and Apply moves it to its new
// chunk and reports it as [Updated], with the place its viewers were last
// told, so that the join tells everyone within the prop radius of either
// place. An update that changed nothing is not reported. For an actor
// that is not a prop, Update is [World.Relocate]: Move relays what such an
// actor does. Unknown or despawned actors are ignored and counted.
//
// It panics under the guard.
func (w *World) Update(id components.ActorID) {
	w.checkUnguarded("Update")
	w.queueMove(moveOp{id: id})
}

// Nudge is [World.Update] for a prop's movement that need not reach every
// viewer every time: a crate sliding between its push and its rest. The
// change is reported as [Updated] with Nudged set, and the join may tell
// it to far viewers less often, as the relay sends a moving actor's
// updates (by the interest tiers' periods); the prop's next Update (its
// rest, say) is reported even if nothing changed since the nudge, so that
// every viewer then hears its state.
//
// It panics under the guard.
func (w *World) Nudge(id components.ActorID) {
	w.checkUnguarded("Nudge")
	w.queueMove(moveOp{id: id, nudge: true})
}

// Teleport queues a server-ordered jump: Apply writes t as the actor's
// Transform and moves it to t's chunk (which may lie in another
// worldOrCell). Every applied teleport is reported as [Teleported], even
// within one chunk, so the join can send the actor's client a correction.
// Teleporting an actor whose spawn is queued changes where it spawns and
// reports only the spawn. Unknown or despawned actors are ignored and
// counted.
//
// It panics under the guard, and for a Transform that is not finite (see
// [Finite]).
func (w *World) Teleport(id components.ActorID, t components.Transform) {
	w.checkUnguarded("Teleport")
	mustBeFinite("Teleport", t)
	w.queueMove(moveOp{id: id, teleport: true, transform: t})
}

// Finite reports whether t's position and yaw are all finite numbers. An
// actor must stand somewhere: a NaN coordinate lies in no chunk and at no
// distance from anyone, so nobody would see the actor and no error would
// say why. Spawn and Teleport refuse such a Transform; Apply puts back a
// prop or client-less actor whose row a system made so (see
// [ApplyReport.NonFinite]); Move does the same for the actors it relays.
func Finite(t components.Transform) bool {
	return finite(t.X) && finite(t.Y) && finite(t.Z) && finite(t.Yaw)
}

func finite(v float32) bool { return v-v == 0 } // NaN and ±Inf give NaN

func mustBeFinite(op string, t components.Transform) {
	if !Finite(t) {
		panic(fmt.Sprintf("ecs: %s: Transform {X:%v Y:%v Z:%v Yaw:%v} is not finite; an actor must stand at a place", op, t.X, t.Y, t.Z, t.Yaw))
	}
}

func (w *World) queueMove(op moveOp) {
	if !w.issued(op.id) {
		w.pendingIgnored++
		return
	}
	w.moves = append(w.moves, op)
}

// issued reports whether Spawn has returned id. Ops on IDs not yet issued
// are counted at queue time: otherwise a later Spawn could hand out that
// very ID and the op would hit the wrong actor.
func (w *World) issued(id components.ActorID) bool {
	return id.ID != 0 && id.ID < w.nextID
}

// Pending returns the number of queued operations (moves, spawns, despawns)
// the next Apply will process.
func (w *World) Pending() int {
	return len(w.moves) + len(w.spawns) + len(w.despawns)
}
