package zone

import (
	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

// takeRequests answers the hand-off requests received since the last
// tick, after the ghost batches are applied (so a Prepare finds the ghost
// the same tick's batch spawned). tick is this tick's number: the first
// whose ghost batches list a taken actor as ours.
func (z *Server) takeRequests(v *view, me Zone, tick uint64) {
	h := &z.hand
	for i := range h.reqs {
		r := &h.reqs[i]
		since, ok := v.since[r.Zone]
		if !ok || r.Revision < since || !neighbour(v, me, r.Zone) ||
			me.Reach(z.ghosts.world.KeyOf(r.Transform)) != 0 {
			z.decline(*r)
			continue
		}
		key := remote{r.Zone, r.Actor}
		rec := h.in[key]
		switch {
		case rec != nil && r.Seq < rec.seq:
			z.decline(*r) // stale: a newer hand-off of this actor came since
		case rec != nil && r.Seq == rec.seq:
			z.repeat(*r, rec, tick)
		case r.Kind == Commit:
			z.decline(*r) // never prepared
		default:
			z.prepare(*r, key)
		}
	}
}

// repeat answers a request of the hand-off rec already is, acting only
// if it is the Commit of a prepared one.
func (z *Server) repeat(r request, rec *incoming, tick uint64) {
	rec.seenAt = z.ghosts.tick
	a := HandoffAnswer{Kind: Ready, Zone: z.opts.Zone, Seq: r.Seq, Actor: r.Actor, Local: rec.local.ID}
	switch {
	case r.Kind == Commit && rec.phase == preparing:
		z.take(r, rec, tick)
		a.Kind, a.Tick = Committed, rec.tick
	case r.Kind == Commit && (rec.phase == taken || rec.phase == passed):
		// Taken already (and perhaps handed on since): the sender did
		// not hear, and must not take the actor back.
		a.Kind, a.Tick = Committed, rec.tick
	case r.Kind == Commit:
		a = HandoffAnswer{Kind: Refused, Zone: z.opts.Zone, Seq: r.Seq, Actor: r.Actor}
	case rec.phase != preparing:
		// A Prepare repeated after its Commit: the sender acts on the
		// Commit's answer only, so Ready changes nothing.
	}
	z.answer(r.reply, a)
}

// prepare readies a new hand-off: the actor is (or becomes) a ghost here,
// whose id the Ready answer carries.
func (z *Server) prepare(r request, key remote) {
	g := &z.ghosts
	src := g.sources[r.Zone]
	if src == nil {
		src = &source{since: z.watch.load().since[r.Zone], heardAt: g.tick}
		g.sources[r.Zone] = src
	}
	gh := src.actors.get(r.Actor)
	if r.ready != 0 && (gh == nil || gh.local.ID != r.ready) {
		// Answered Ready from the delivery goroutine, but the ghost it
		// named went since: refused, so the owner rolls back (nothing was
		// done here) and offers it again.
		z.decline(r)
		return
	}
	if gh == nil {
		// Its owner's batch has not reached us yet: spawn the ghost now,
		// at the place the Prepare says.
		c := components.Client{Class: r.Class, Phase: r.Phase}
		id := g.world.Spawn(ecs.ActorSpec{Transform: r.Transform, Animation: r.Animation, Client: c})
		gh = &ghost{local: id, last: heardAs(r.Actor, r.Transform, r.Animation.Flags, c, id), gen: src.gen}
		src.actors.put(r.Actor, gh)
		g.local.Put(id.ID, key)
		g.lend(key, id)
	}
	z.hand.in[key] = &incoming{seq: r.Seq, phase: preparing, local: gh.local, seenAt: g.tick}
	if r.ready != 0 {
		return // answered already
	}
	z.mail.offered(key, r.Seq)
	z.answer(r.reply, HandoffAnswer{Kind: Ready, Zone: z.opts.Zone, Seq: r.Seq, Actor: r.Actor, Local: gh.local.ID})
}

// take makes the ghost of a prepared hand-off our own actor, in place:
// it leaves the ghost table (so the publisher lends it to the
// neighbours, its old owner included) and takes the state the Commit
// carries. Written before Move, as a game's system moves an NPC.
func (z *Server) take(r request, rec *incoming, tick uint64) {
	g := &z.ghosts
	if src := g.sources[r.Zone]; src != nil {
		if gh := src.actors.get(r.Actor); gh != nil && gh.local == rec.local {
			src.actors.drop(r.Actor)
			g.lend(remote{r.Zone, r.Actor}, components.ActorID{})
		}
	}
	g.local.Drop(rec.local.ID)
	e, ok := g.world.Entity(rec.local)
	if !ok {
		// The ghost went (its owner stopped lending it, or its spawn is
		// still queued): the actor is spawned here as ours instead.
		in, class, carried := r.Input, r.Class, r.Carried
		rec.local = g.world.Spawn(ecs.ActorSpec{Transform: r.Transform, Animation: r.Animation, Client: components.Client{Class: r.Class, Phase: r.Phase},
			Init: func(w *ark.World, e ark.Entity) {
				*ark.NewMap[components.MoveInput](w).Get(e) = in
				ark.NewMap[components.Client](w).Get(e).Class = class // a player's too: Spawn would make it an NPC
				z.give(w, e, r, carried)
			}})
	} else {
		*g.transforms.Get(e) = r.Transform
		*g.animations.Get(e) = r.Animation
		*g.inputs.Get(e) = r.Input
		c := g.clients.Get(e)
		c.Class, c.Phase = r.Class, r.Phase
		z.give(g.world.Ark(), e, r, r.Carried)
	}
	rec.phase, rec.tick = taken, tick
	z.hand.takenAs[rec.local] = remote{r.Zone, r.Actor}
	z.stats.h.Taken.Add(1)
	if r.Client {
		// A player's: its session was moved here with the Commit, and is
		// attached once it came (resume; awaitSessions says how long it
		// may take).
		rec.client, rec.due, rec.inputSeq, rec.player = true, g.tick+sessionWait*uint64(z.opts.HandoffTimeout), r.Input.Seq, r.Player
		rec.applied, rec.letGoAt = r.Applied, r.LetGoAt
		z.hand.awaiting[rec.local] = rec
	}
}

// give gives entity e, the actor taken on Commit r, the game's components
// r carried (in a list of its own, which the request's message may not
// outlive). What this server cannot take is counted and logged; the
// actor is taken without it.
func (z *Server) give(w *ark.World, e ark.Entity, r request, carried []byte) {
	if len(carried) <= 1 {
		return // none
	}
	if left, err := save.GiveCarried(w, e, carried, z.types); err != nil {
		z.stats.h.ComponentsLeft.Add(uint64(left))
		z.opts.Logger.Warn("zone: hand-off took an actor without some of its components",
			"zone", z.opts.Zone, "from", r.Zone, "actor", r.Actor, "err", err)
	}
}
