// Package plaza is the crowd example's plaza: the game world of the plaza
// scenario (scenario.Plaza), with 5,000 props a crowd pushes about and
// NPCs that wander among them and follow the players, and the systems of
// the game's own that move them. The crowd example puts it on its server
// with -scenario plaza; the tick benchmarks call [Setup] the same way.
//
// It sits in examples/, above the framework, and shows a game's parts in
// their places: props (ecs.ActorSpec.Prop) changed through World.Update
// and World.Nudge,
// NPCs (actors without a client) moved by writing their Transform before
// Move, components of the game's own ([Body], [Stroll]) that its systems
// write, and systems placed by what they declare they touch.
//
// # The systems
//
//	stage   system          reads                 writes
//	  0     ingest          (the network)         MoveInput
//	  0     plaza-npcs      players' Transforms   NPCs' Transforms, Animations, Strolls
//	  1     prepare
//	  2     move
//	  3     relay           Transform, Animation  (the network)
//	  3     plaza-physics   Transforms            props' Bodies
//	  4     join
//	  5     plaza-props     Bodies                props' Transforms, Animations; World.Update, Nudge
//
// The NPCs (NPCsName) are moved before Prepare, beside Ingest, so that
// Move relays their new places this tick. The physics (PhysicsName) runs
// beside the relay: a player within [PushReach] of a prop, moving toward
// it, kicks it off at [Kick] times its velocity; the prop slides, slowed
// by [Friction], and comes to rest (NPCs walk through props). Each system
// finds what is near through a grid of its own: players are bucketed by
// cell each tick, props only when one changes cells. The physics cannot call
// World.Update, which panics while the world is guarded, so the serial
// step PropsName, pinned after the join, tells its changes, and the next
// join sends them: one tick after the move that pushed. A sliding prop is
// told [Config].SlideUpdatesPerSecond times a second (nudged: far players
// hear it less often), a push and the place it comes to rest at once. [World.PropChanges] counts the changes
// made, beside the server's count of Prop frames sent (Stats' PropsSent).
//
// Everything is a function of the seed and the players' moves: the layout
// is drawn from the seed, an NPC's choices from the seed, its ActorID and
// the tick, and a prop two players push goes with the faster (the lower
// ActorID among equals), so the order things are found in, the worker
// count and the unit split change nothing.
//
// # Task -> API
//
//	put the plaza on a server          [Setup], [Config]
//	the plaza's actors                 [World.Props], [World.NPCs], [World.Actors]
//	what the physics did               [World.PropChanges], [World.Sliding]
//	a prop's physics state             [Body]
//	an NPC's state                     [Stroll]
//	tell NPCs and sliding props apart  [FlagNPC], [FlagSliding]
//	pin systems around the plaza's     [NPCsName], [PhysicsName], [PropsName]
package plaza
