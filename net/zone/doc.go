// Package zone splits one world across several Throng servers: the
// chunk map is cut into zones, rectangles of chunks each held by one
// zone server, and the servers talk over NATS.
//
// This package holds the zone map, the ghosts, the hand-off of actors
// (a player's with its session, through package net/gateway; the game's
// own components and the player's name with them), commands to ghosts,
// a coordinator that moves borders toward lighter zones, and a lease
// that fences a server cut off from the map (docs/zones.md says how it
// fits).
//
// # Outline
//
//   - The map: [Map], [Zone], [Rect]; decoded strictly from settings with
//     [DecodeMap] and written to a JetStream key-value bucket with
//     [PublishMap]. Its revision there is the number a server holds its
//     zone as of (the fencing rule is on [Server]).
//   - Ghosts: each tick a zone server sends each neighbour, in one batch,
//     the actors of its own that the neighbour's players can see through
//     the 3x3 stencil ([AppendGhostHeader], [AppendGhost],
//     [DecodeGhosts]). The neighbour keeps them as client-less actors of
//     its own world, so its relay shows them, Appear and Disappear
//     included, like its own NPCs.
//   - Hand-off: an actor of ours that stands in a neighbour's chunks is
//     handed to it in two phases ([HandoffRequest], [HandoffAnswer],
//     [HandoffSubject]); both sides change it in place, the receiver's
//     ghost into its own actor and ours into a ghost of its. A player's
//     actor goes only when its session can follow through a gateway
//     ([Options].Gateway): let go with the Commit, moved to the receiver,
//     attached there to the actor taken.
//   - Commands to ghosts: a command of the game's for a ghost goes to the
//     zone that owns the actor ([Server.Forward]), whose game reads it
//     naming its own actor ([Server.Commands], [RemoteCommand]).
//   - Moving borders: each zone server reports its load ([LoadReport],
//     [Options].LoadEvery: its actors and the pairs they make with those
//     in sight); a [Coordinator] gives a lighter neighbour the column or
//     row along a whole shared side ([PlanMoveBy]) and writes the map
//     with a compare-and-set. Fencing follows a zone's owner, not its
//     chunks, so a moved border blinks nothing.
//   - The glue: [New] wraps a throng.Server in a zone [Server], adding
//     two systems to its tick ([ApplyName] before Prepare, [PublishName]
//     after the join).
//
// # Task -> API
//
//   - Cut a world into zones: [Map], [Map.Validate], [DecodeMap].
//   - Who owns a chunk, who borders a zone: [Map.Owner], [Map.Neighbours].
//   - Publish the map for the servers: [PublishMap]; without undoing a
//     coordinator's moves: [EnsureMap].
//   - Balance the zones' load: [NewCoordinator], then [Coordinator.Run].
//   - Route by the map in force (a gateway's Route): [WatchMap].
//   - Route a returning player to the zone that keeps its actor:
//     [WatchPlayers], then [PlayerWatch.Zone].
//   - Fence a server that cannot read the map: [Options].Lease.
//   - Make a server a zone's holder: [New]; watch it with [Server.Stats].
//   - Keep the game's systems off actors another zone owns: [Server.Ghost].
//   - Hand players over with their actors: give [New] the server's
//     gateway transport in [Options].Gateway; watch [HandoffStats]. The
//     game's components registered for saves (throng.Options.SavedTypes)
//     go with every actor handed off.
//   - Act on a command for a ghost where its actor lives: [Server.Forward],
//     then [Server.Commands] on the owner.
//
// Unlike the rest of net/, which stays below the ECS, this package sits
// above package throng: it imports the server it extends, and only
// programs that split a world import it (and NATS with it).
package zone
