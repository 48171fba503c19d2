package save

import (
	"fmt"
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

// Kept is a player's actor kept under the player's name while the player
// is away: what a save keeps of an actor (its Transform, its Animation,
// its relevance class, its components of the registered [Type]s), taken
// from the world when the player left or read from a save. A server hands
// it back when the player returns, as a new actor with this state. A Kept
// is never changed once made, so saves may hold it while the world ticks
// on.
type Kept struct {
	Player    string
	ID        components.ActorID // the ID it had; IDs are never reused, so it returns under a new one
	Transform components.Transform
	Animation components.Animation
	// Class is the actor's relevance class (components.Client.Class):
	// ClassPlayer unless the game gave the player's actor one of its own.
	// Saves keep it; the server hands the actor back as a player's, in
	// ClassPlayer.
	Class  uint8
	values []keptValue
}

// keptValue is one of a Kept's components of the game's own, as a save
// holds it: a plain type's bytes, or a coded type's encoding.
type keptValue struct {
	name string
	data []byte
}

// Players is what a save keeps of the players besides the world's actors:
// the names of the players in play, indexed by the Slot their actor's
// Client carries ("" for a guest, whose actor is not kept), and the actors
// kept for players away. [Saver.Begin] copies both lists.
type Players struct {
	Names []string
	Kept  []*Kept
}

// Keep takes actor id of w, whose player is named player, as a Kept with
// its components of types. It reports false if w has no such actor.
func Keep(w *ecs.World, id components.ActorID, player string, types []Type) (*Kept, bool) {
	e, ok := w.Entity(id)
	if !ok {
		return nil, false
	}
	u := w.Ark().Unsafe()
	k := &Kept{
		Player:    player,
		ID:        id,
		Transform: *(*components.Transform)(u.Get(e, ark.ComponentID[components.Transform](w.Ark()))),
		Animation: *(*components.Animation)(u.Get(e, ark.ComponentID[components.Animation](w.Ark()))),
		Class:     (*components.Client)(u.Get(e, ark.ComponentID[components.Client](w.Ark()))).Class,
	}
	for i := range types {
		t := &types[i]
		if t.err != nil {
			continue
		}
		id := ark.TypeID(w.Ark(), t.typ)
		if !u.Has(e, id) {
			continue
		}
		p := u.Get(e, id)
		var data []byte
		if t.coded() {
			data = t.encode(nil, p)
		} else {
			data = append([]byte(nil), unsafe.Slice((*byte)(p), t.size)...)
		}
		k.values = append(k.values, keptValue{name: t.name, data: data})
	}
	return k, true
}

// Give adds k's components of the game's own to entity e of w, the actor
// handed back to k's player (its Transform and Animation are set by its
// spawn). types must include every type k holds.
func (k *Kept) Give(w *ark.World, e ark.Entity, types []Type) error {
	u := w.Unsafe()
	for _, v := range k.values {
		t := findType(types, v.name)
		if t == nil {
			return fmt.Errorf("save: player %q keeps a %q, which the game has not registered", k.Player, v.name)
		}
		id := ark.TypeID(w, t.typ)
		if !u.Has(e, id) {
			u.Add(e, id)
		}
		p := u.Get(e, id)
		if t.coded() {
			if err := t.decode(v.data, p); err != nil {
				return fmt.Errorf("save: player %q: decoding %q: %w", k.Player, v.name, err)
			}
			continue
		}
		copy(unsafe.Slice((*byte)(p), t.size), v.data)
	}
	return nil
}

func findType(types []Type, name string) *Type {
	for i := range types {
		if types[i].name == name {
			return &types[i]
		}
	}
	return nil
}
