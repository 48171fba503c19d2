package components

import ark "github.com/mlange-42/ark/ecs"

// ActorID is an actor's stable identity: assigned once at spawn, in spawn
// order, never reused while the server runs. Ark entities are recycled and
// table rows move, so everything that must be reproducible (the wire, the
// pair phase, ordering) uses ActorID instead.
type ActorID struct {
	ID uint32
}

// Transform is where the server has an actor: the authoritative position,
// its facing (yaw, radians) and the worldOrCell it is in.
type Transform struct {
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
}

// MoveInput is the newest movement update a client sent for its actor.
// Ingest keeps only the update with the highest Seq; Move consumes it and
// clears Pending.
//
// An actor without a client (an NPC, a prop) has no updates to send: a
// server system moves it by writing its Transform (and Animation), and
// Move notices. For such an actor MoveInput holds the position, facing,
// worldOrCell and flags it had when it was last relayed (set at spawn),
// and Move counts any difference as an accepted update. A system that
// writes a client-less actor's MoveInput with Pending set drives it as a
// client would, through Move's validation.
type MoveInput struct {
	Seq         uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
	Flags       uint16
	Pending     bool
	// Allowance is the distance the actor may still cover as of
	// ChangedTick, under a speed limit (clientLimits.maxSpeedUnitsPerSecond):
	// Move's bookkeeping, like ChangedTick.
	Allowance float32

	// ChangedTick is the tick at which Move last accepted an update for
	// this actor (0: never), or for a teleport the tick after the join
	// that applied it. The relay sends an actor's record to a
	// recipient with period p only if it changed within the last p ticks,
	// so a change always reaches everyone in range within one window and
	// actors standing still cost nothing.
	ChangedTick uint64
}

// Animation holds an actor's animation flags (running, sneaking, weapon out,
// ...). The bits are the game's; Throng relays them untouched.
type Animation struct {
	Flags uint16
}

// InChunk is the Ark relation whose target is the entity of the chunk the
// actor stands in. It makes every chunk's actors one contiguous table.
type InChunk struct {
	ark.RelationMarker
}

// Chunk marks a chunk entity (the target of InChunk relations).
type Chunk struct {
	WorldOrCell uint32
	X, Y        int32
}

// Prop marks an actor as a prop: a crate, a door, a lamp. A prop matters
// only to players near it (within the server's prop radius), so it is kept
// in tables of its own, apart from the players and NPCs every tick moves
// and relays: a prop that does not change costs a tick nothing. It changes
// only when the game says so (World.Update): its Transform and Animation
// are then told, reliably and in that tick, to every player within its
// radius. Its MoveInput holds the place and flags those players were last
// told, and Pending marks a nudge (World.Nudge) that some of them may not
// have heard. A prop never has a client.
type Prop struct{}

// Client ties an actor to the network session that drives it. Every actor
// carries one; Session 0 marks an actor without a client (props, NPCs),
// which is relayed to players but receives nothing, and which server
// systems move by writing its Transform (see MoveInput).
type Client struct {
	Session uint64
	// Slot is the server's index of the session's state, so the tick
	// reaches it without a map lookup. Meaningful only with a Session.
	Slot uint32
	// Class is the actor's relevance class: which interest tiers its
	// updates follow, how it ranks under a client's budget and, for a
	// prop, how near it matters (see [ClassPlayer]). It lives here, beside
	// the session, because every actor carries a Client and the tick reads
	// both together: the field fills what was padding.
	Class uint8
	// Phase is the number the relay hashes for the send phases of the
	// actor's pairs (interest.Phase), in place of its ActorID; 0 means the
	// ActorID. Two servers that give an actor the same Phase, and run the
	// same tick numbers, send its far pairs on the same ticks: a named
	// player's actor gets its name's (interest.NameKey) wherever it
	// spawns, and the zones of a world carry an actor's Phase with its
	// ghosts and its hand-off, so that a player crossing a border keeps
	// the rotation of its far updates. It is not saved: an actor restored
	// from a save hashes its ActorID until it is given one again.
	Phase uint32
}

// PhaseKey returns the number the relay hashes for the phases of actor
// id, whose Client is c: c.Phase, or the id where c has none.
func PhaseKey(id ActorID, c Client) uint32 {
	if c.Phase != 0 {
		return c.Phase
	}
	return id.ID
}

// The relevance classes Throng defines. A game's own classes follow them,
// numbered by the server's settings, up to MaxClasses in all. An actor
// spawned without a client and with class ClassPlayer (the zero value) is
// given ClassNPC, or ClassProp for a prop.
const (
	ClassPlayer uint8 = iota // an actor a client drives
	ClassNPC                 // an actor the server's systems move
	ClassProp                // a prop (see Prop)
	// MaxClasses bounds the number of classes, Throng's and a game's.
	MaxClasses = 16
)
