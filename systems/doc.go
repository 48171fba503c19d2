// Package systems is the tick pipeline: the built-in systems every Throng
// server runs, in this order:
//
//	Ingest  (serial;   drain the transport: sessions, Hello -> queued spawn,
//	        parallel   newest MoveInput per actor by sequence number; in a
//	        for big    crowd of thousands the Move frames go to buckets by
//	        crowds)    session, applied on the pool
//	Prepare (serial)   snapshot chunk views, partition clusters, lay actors
//	                   out in canonical order (in a big world on the pool,
//	                   the cells counted here, the actors placed in them
//	                   by Move's units), cut shards; guard the world
//	Move    (parallel) per shard of senders: validate, write own rows,
//	                   encode the movement record once; in a big world,
//	                   parts of the chunks' stencil links beside them
//	Relay   (parallel) first: corrections, cell boxes (on the pool in a
//	                   big world) and the due lists (the senders of each
//	                   cell due this tick, per period and phase residue,
//	                   a period a unit on the pool); then
//	                   per shard of recipients: most by the dense walk
//	                   (every pair of the 3x3 stencil by the sender's due
//	                   key, the records packed as decided), the others
//	                   cell by cell, a cell in one interest band as one
//	                   block copy from its due list, cells across two
//	                   bands as bit sets, the rest pair by pair; the
//	                   per-connection budget;
//	                   each unit writes its recipients' batches in one
//	                   buffer and hands their datagrams to the transport
//	Join    (serial)   release the guard, chunk moves, ecs.World.Apply,
//	                   Welcome / Appear / Disappear, the props in each
//	                   player's sight (Prop frames; the looks of players
//	                   who walked past their slack on the pool), cluster
//	                   pressure
//
// The canonical actor order (clusters by lowest chunk, chunks in key order,
// cells of a chunk's grid in order, rows in view and table order) decides
// everything that reaches the wire, so worker count, shard count and the
// inline switch never change a byte.
//
// Under load: clients are rate limited and flooders disconnected in Ingest
// ([Limits]); admission control refuses new sessions while the server says
// it is busy ([Pipeline.SetBusy], [BusyReason]); joins are paced by the
// appears they cost ([Config.JoinAppears]); each cluster's smoothed cost,
// while ticks threaten the rate, drives its pressure, which tightens its
// clients' budgets ([Config.Throttle], [Pipeline.ObserveWork]); the
// per-connection budget ([Config.MaxRecordsPerTick]) cuts a recipient's
// batch, keeping what does not fit owed in the session's
// interest.Backlog; and a server that falls behind its rate tells its
// clients ([Pipeline.TellRate], [Pipeline.Skip]).
//
// Visibility (Appear / Disappear) is derived from the changes one Apply made
// (spawns, despawns, chunk moves, teleports), not from per-pair state: its
// cost follows chunk crossings, not the square of a crowd. A client is
// told about an actor before its first movement record and when it leaves
// its stencil. Props (ecs.ActorSpec.Prop) are not in the frame at all: a
// player is told, reliably, the props within the prop radius of it
// ([Config.PropRadius], props.go), when they come into its sight and in
// the tick they change.
//
// It imports grid, interest, components, ecs, scheduler and net/wire; only the
// root package imports it.
//
// # Task -> API
//
//   - Build the pipeline: [New] with a [Config], a world and a transport.
//   - Register it with a scheduler: [Pipeline.Systems]; pin your own
//     systems with the names [IngestName] ... [JoinName].
//   - See what a tick did: [Pipeline.Stats] ([TickStats]).
//
// The pipeline's steps (ingest, prepare, the relay's setup, join) are
// unexported: they run only as the systems [Pipeline.Systems] returns,
// in the schedule's order, under the world's guard.
package systems
