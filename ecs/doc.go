// Package ecs is Throng's game-server layer over the Ark ECS: the room where
// actors live, are sorted into chunks, and are handed to the parallel
// phases of the tick as per-chunk column slices.
//
// # Outline
//
//   - [World] owns an Ark world ([World.Ark]) and the chunk index
//     (AreaKey -> chunk entity carrying components.Chunk). Every actor has
//     components.ActorID, Transform, MoveInput, Animation, Client (Session 0:
//     no client) and the components.InChunk relation to its chunk's entity,
//     so each chunk's actors sit contiguously in one Ark table (several, if
//     users add their own components to some of them).
//   - Structural changes are queued ([World.Spawn], [World.Despawn],
//     [World.Relocate], [World.Teleport]) and carried out by one
//     [World.Apply] in a fixed order; an [ApplyReport] lists each [Change].
//   - [World.Snapshot] returns one [ChunkView] per (chunk, table) with typed
//     column slices, ordered by chunk. With no structural change to an
//     actor since the last one (Ark's observers count them, raw Ark calls
//     included), it copies the last one instead of querying every table.
//   - [World.Guard] / [World.Release] lock the world while workers use the
//     views, so a structural change in that window panics.
//
// # Task -> API
//
//   - Create a world: [NewWorld].
//   - Add an actor: [World.Spawn] (its ActorID is returned at once), then
//     [World.Apply].
//   - Remove an actor: [World.Despawn], then [World.Apply].
//   - After Move wrote a Transform into another chunk: [World.Relocate].
//   - Server-ordered jump, also across worldOrCells: [World.Teleport].
//   - Learn what changed (for appear/disappear messages): [ApplyReport.Changes].
//   - Per-chunk columns for the parallel phases: [World.Snapshot].
//   - Keep structure fixed while workers run: [World.Guard], [World.Release].
//   - Look up an actor: [World.Entity], [World.Key], [World.Len].
//   - Look up a chunk: [World.ChunkEntity], [World.Chunks], [World.KeyOf].
//   - Own components, systems and queries: [World.Ark] with Ark's API.
//   - Add a prop (a crate, a door: kept out of Snapshot, costs a tick
//     nothing while it stands): [World.Spawn] with [ActorSpec].Prop; change
//     it by writing its Transform or Animation, then [World.Update]; its
//     change is reported as [Updated]; a chunk's props: [World.PropsIn];
//     how many: [World.Props].
//   - Every prop table at once (a save): [World.PropSnapshot].
//   - Load saved actors before the first tick: [World.RestoreBlock],
//     [World.RestoreProps], [World.ReserveIDs] (package ecs/save does it
//     from a save file).
//
// # Lifecycle of a tick
//
//	ingest (serial)    Spawn / Despawn / Teleport, write MoveInput via Ark maps
//	prepare (serial)   views = w.Snapshot(views[:0]); w.Guard()
//	move (parallel)    each worker writes its own actors' rows through views
//	relay (parallel)   workers read views
//	join (serial)      w.Release(); Relocate actors whose chunk changed;
//	                   w.Apply(&report); derive messages from report.Changes
//
// Views are invalid after Apply: take a new Snapshot every tick.
//
// # Chunk entities
//
// A chunk entity is created when the first actor enters its chunk. When its
// last actor leaves, the entity and its Ark tables are kept, to be reused
// when actors come back. Apply lets an empty chunk go only when both hold:
//
//   - it has ended [EmptyChunkGrace] consecutive Applies empty, and
//   - the world has more empty chunks than its budget: max(occupied chunks,
//     [EmptyChunkReserve]) while it has actors, 0 when it has none.
//
// Among those, the chunk that emptied first goes first, until the empty
// chunks no longer outnumber the budget. So a crowd roaming over an area
// keeps its chunks (no entities and tables made and dropped every tick),
// a player wandering over a huge map leaves a bounded trail, and a world
// that empties completely drops all its chunks a grace period later.
//
// A chunk let go leaves the index ([World.ChunkEntity] no longer finds
// it), but its entity is not removed: it loses its [components.Chunk] and
// is parked, with its (empty) Ark tables, and the next chunk created takes
// it with a new Chunk. So chunks coming and going, as where a crowd keeps
// more chunks than the budget of empty ones, allocate nothing: a new
// entity would have cost Ark a new table on its first actor, a dozen
// allocations. An entity therefore stands for one chunk only while that
// chunk is in the index; find chunks by key, and read a chunk entity's
// Chunk to know which it is. A chunk entity given components of your own
// is removed when let go instead, so that no later chunk inherits them. Do
// not remove chunk entities or actors through Ark directly: World counts
// them.
//
// # Determinism
//
// ActorIDs are assigned in call order from 1 and never reused. Apply works
// in a fixed order and never iterates a map where order matters, so the
// same sequence of calls gives the same tables, rows and views on every
// run.
//
// # Imports
//
// It imports components and grid of Throng's. It is the only Throng package
// that imports Ark's ecs package by name; everywhere else it is aliased
// (ark "github.com/mlange-42/ark/ecs").
package ecs
