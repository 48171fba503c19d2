package systems

import (
	"fmt"
	"slices"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

// Sessions that change actors: a session that takes an actor already in
// the world (Attach), and an actor that lets its session go (Detach),
// without Hello, Admit, spawn or despawn. They are how a session moves
// between servers with its actor: the server that hands the actor off
// detaches it, the server that took it attaches the session.

// attachment is an Attach waiting for the join.
type attachment struct {
	id     wire.SessionID
	actor  components.ActorID
	player string
}

// Attach makes session id, open and without a Hello yet, the client of
// actor, which is in the world without a client and is not a prop. In the
// next join the session is welcomed to the actor (a Welcome with its id
// and place), told the actors around it (an Appear each) and the props in
// its sight; from the tick after it drives the actor and is relayed to as
// any player. The actor keeps its class, and the others see it as before:
// no Disappear, no Appear. Frames the session sends before its Welcome
// are dropped, a Hello among them. The updates it sends first that the
// actor has had already (its MoveInput.Seq says which: those its old
// server applied, sent again by a gateway) are dropped without a
// Correction. player is the name the session's player had where it came
// from (Admit's Entry.Player there; "" for a guest): the player is known
// by it here as if Admit had named it, kept under it when it leaves, and
// an actor this server kept for that name is forgotten (the player brings
// its newer one). Call it between ticks, or from a serial system before
// Prepare.
func (p *Pipeline) Attach(id wire.SessionID, actor components.ActorID, player string) error {
	s := p.sessions.Get(id)
	switch {
	case s == nil:
		return fmt.Errorf("systems: attach: no session %d", id)
	case s.state != awaitingHello || s.kicked:
		return fmt.Errorf("systems: attach: session %d has said Hello or is closing", id)
	}
	e, ok := p.world.Entity(actor)
	if !ok {
		return fmt.Errorf("systems: attach: no actor %d", actor.ID)
	}
	if c := p.clients.Get(e); c.Session != 0 {
		return fmt.Errorf("systems: attach: actor %d has a client (session %d)", actor.ID, c.Session)
	}
	w := p.world.Ark()
	if w.Unsafe().Has(e, ark.ComponentID[components.Prop](w)) {
		return fmt.Errorf("systems: attach: actor %d is a prop", actor.ID)
	}
	if slices.ContainsFunc(p.attaching, func(a attachment) bool { return a.actor == actor }) {
		return fmt.Errorf("systems: attach: actor %d is being attached already", actor.ID)
	}
	s.state = attaching
	p.attaching = append(p.attaching, attachment{id: id, actor: actor, player: player})
	return nil
}

// Detach lets actor's session go: the actor stays in the world as one
// without a client (keeping its class), the session is forgotten (its
// frames are dropped from then on) and the transport is not told: the
// caller moves the connection on or closes it. It returns the session and
// its player's name ("" for a guest), for the server it moves to (see
// Attach); the player is not kept here. Call it between ticks, or from a
// serial system before Prepare.
func (p *Pipeline) Detach(actor components.ActorID) (wire.SessionID, string, error) {
	e, ok := p.world.Entity(actor)
	if !ok {
		return 0, "", fmt.Errorf("systems: detach: no actor %d", actor.ID)
	}
	c := p.clients.Get(e)
	id := wire.SessionID(c.Session)
	s := p.sessions.Get(id)
	if id == 0 || s == nil || s.state != playing {
		return 0, "", fmt.Errorf("systems: detach: actor %d has no client in play", actor.ID)
	}
	c.Session, c.Slot = 0, 0
	if int(s.slot) < len(p.names) {
		p.names[s.slot] = ""
	}
	if int(s.slot) < len(p.sight.points) {
		p.sight.points[s.slot].actor = 0 // the slot's next player saw nothing
	}
	p.dropSession(id)
	p.closedSlots = append(p.closedSlots, s.slot)
	return id, s.player, nil
}

// attach welcomes the sessions attached since the last join to their
// actors, after the Apply (p.attached lists them, for tellProps): a
// session whose actor went meanwhile, or got a client, is refused.
func (p *Pipeline) attach() {
	p.attached = p.attached[:0]
	if len(p.attaching) == 0 {
		return
	}
	v := &p.vis
	v.views = p.world.Snapshot(v.views)
	for _, a := range p.attaching {
		s := p.sessions.Get(a.id)
		if s == nil || s.state != attaching || s.kicked {
			continue // closed since
		}
		e, ok := p.world.Entity(a.actor)
		if !ok || p.clients.Get(e).Session != 0 {
			p.refuse(a.id, wire.RefuseUnspecified, "the actor this session was to take is gone")
			continue
		}
		c := p.clients.Get(e)
		c.Session, c.Slot = uint64(a.id), s.slot
		s.actor, s.entity, s.state, s.resumed = a.actor, e, playing, true
		if s.player = a.player; s.player != "" {
			c.Phase = phaseOfPlayer(s.player)
			p.nameSlot(s)
			delete(p.kept, s.player)
		}
		p.sendWelcome(a.id, p.appearOf(a.actor))
		p.tellAround(uint64(a.id), a.actor, p.world.KeyOf(*p.transforms.Get(e)))
		p.attached = append(p.attached, s)
	}
	p.attaching = p.attaching[:0]
	p.fan.flush() // tellAround's Appears, after each session's Welcome
}

// tellAround queues for session an Appear for every actor but self in the
// 3x3 stencil around key, from the views of the world after the Apply.
func (p *Pipeline) tellAround(session uint64, self components.ActorID, key grid.AreaKey) {
	p.eachStencilView(key, func(view *ecs.ChunkView) {
		for r := range view.Len() {
			if view.IDs[r] != self {
				p.queueAppear(session, appearAt(view, r))
			}
		}
	})
}
