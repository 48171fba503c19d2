package zone

import (
	"cmp"
	"runtime"
	"slices"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/internal/idtable"
	"github.com/throng-go/throng/scheduler"
)

// ghosts is the zone server's table of the actors its neighbours lend it.
//
// A ghost is an ordinary client-less actor of this server's world,
// spawned with World.Spawn and so given an ActorID of this world's own:
// the table maps (owner zone, the owner's ActorID) to it. Ids therefore
// never clash, however the zones number their actors, and a player sees
// every actor, ghost or not, under an id of the server it is connected
// to. A hand-off can later turn a ghost into the real actor (and the
// real one into a ghost) in place, so that no player sees an actor blink
// at a border.
type ghosts struct {
	world      *ecs.World
	transforms *ark.Map[components.Transform]
	animations *ark.Map[components.Animation]
	clients    *ark.Map[components.Client]
	inputs     *ark.Map[components.MoveInput]
	sources    map[ID]*source
	// local holds every ghost's ActorID here (by its number), with its
	// owner and the owner's id for it: so that the publisher never lends a
	// neighbour what was only lent to us, and Server.Ghost answers at once.
	// The publisher asks it of every client-less actor near a border each
	// tick: a table of pages, as ActorIDs are numbered in sequence.
	local idtable.Table[uint32, remote]
	batch []GhostBatch
	tick  uint64 // this server's tick, counted by the apply system
	// gone collects the ghosts to despawn this tick; they are despawned
	// in id order, not the maps' order, so that the same batches give the
	// same Disappear frames on every run.
	gone []components.ActorID
	// changes collects this tick's changes to sources' actors, for the
	// delivery goroutine's index of them (see share).
	changes []lending
	listed  []listed     // a batch's records, with their ghosts (apply's)
	moved   []movedGhost // the ghosts a batch moves, and what it says of them
}

type movedGhost struct {
	local  components.ActorID
	e      ark.Entity
	ok     bool
	t      components.Transform
	fields GhostFields
	flags  uint16
	class  uint8
	phase  uint32
}

type listed struct {
	r  GhostRecord
	gh *ghost
}

// source is what one neighbour lends.
type source struct {
	since    uint64 // the map revision its ghosts were lent as of (view.since)
	lastTick uint64 // the newest batch applied
	heardAt  uint64 // our tick at which it was applied
	gen      uint64 // bumped per batch applied; a ghost not listed lags it
	actors   ghostSet
}

// ghostSet is one neighbour's ghosts by the owner's id for each: a table
// of pages for the look-up every record of a batch makes, and a list for
// the walk every batch makes over them all (the owner's ids of the ghosts
// it lends are spread over its whole numbering, which leaves the pages
// sparse).
type ghostSet struct {
	byID idtable.Table[uint32, *ghost]
	all  []*ghost
}

// get returns the ghost of the owner's actor id, or nil.
func (s *ghostSet) get(id uint32) *ghost { return s.byID.Get(id) }

// put makes gh the ghost of the owner's actor id.
func (s *ghostSet) put(id uint32, gh *ghost) {
	if old := s.byID.Get(id); old != nil {
		gh.at = old.at
		s.all[gh.at] = gh
	} else {
		gh.at = int32(len(s.all))
		s.all = append(s.all, gh)
	}
	gh.id = id
	s.byID.Put(id, gh)
}

// drop forgets the ghost of the owner's actor id.
func (s *ghostSet) drop(id uint32) {
	gh := s.byID.Get(id)
	if gh == nil {
		return
	}
	last := s.all[len(s.all)-1]
	s.all[gh.at], last.at = last, gh.at
	s.all[len(s.all)-1] = nil
	s.all = s.all[:len(s.all)-1]
	s.byID.Drop(id)
}

// each calls fn with every ghost and the owner's id for it, the last put
// first; fn may drop the ghost it is given.
func (s *ghostSet) each(fn func(id uint32, gh *ghost)) {
	for i := len(s.all) - 1; i >= 0; i-- {
		if i < len(s.all) {
			gh := s.all[i]
			fn(gh.id, gh)
		}
	}
}

type ghost struct {
	local components.ActorID
	id    uint32 // the owner's id for it
	at    int32  // its place in its ghostSet's list
	// last is the actor as last heard from its owner, in the batch of
	// the owner's tick heard: a record's fields left out are last's (see
	// GhostVersion).
	last  Ghost
	heard uint64
	gen   uint64
	// from is the owner's first tick whose batches list it: a batch of an
	// earlier tick that does not (sent before a hand-off made it the
	// owner's) does not despawn it.
	from uint64
}

type applySystem struct{ z *Server }

func (s *applySystem) Name() string { return ApplyName }

// Access: spawns and despawns ghosts (structural) and writes their
// Transform and Animation, before Prepare takes the tick's snapshot.
func (s *applySystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Structural(),
		scheduler.Write[components.Transform](), scheduler.Write[components.Animation]())
}

// RunSerial applies, in this order: the answers to our hand-off
// requests, the neighbours' ghost batches, the hand-off requests made to
// us, and the hand-offs whose answer is overdue. At its end it hands the
// delivery goroutine the ghost table's changes and the view it checked,
// which it answers Ready on until the next tick (see readyNow).
func (s *applySystem) RunSerial(t *scheduler.Tick) {
	z := s.z
	g := &z.ghosts
	g.tick++
	g.gone = g.gone[:0]
	defer g.despawnGone()
	v := z.tickView()
	g.batch = z.inbox.take(g.batch[:0])
	h := &z.hand
	h.reqs, h.ans = z.mail.take(h.reqs[:0], h.ans[:0])
	if !v.holds(z.opts.Zone, z.opts.Name) {
		z.abandon()
		// Fenced: whatever the neighbours lent was lent to the owner we
		// no longer are.
		for id := range g.sources {
			g.drop(id)
		}
		z.stats.refused.Add(uint64(len(g.batch)))
		z.stats.ghosts.Store(int64(g.local.Len()))
		z.share(nil, Zone{})
		z.refuseCommands()
		z.resume(false)
		return
	}
	me, _ := v.m.Zone(z.opts.Zone)
	defer z.share(v, me)
	sent := z.stats.h.RequestsSent.Load()
	z.takeAnswers(v)
	if z.stats.h.RequestsSent.Load() != sent && runtime.GOMAXPROCS(0) == 1 {
		// The Commits just sent, and the sessions of the players they
		// move, wait in NATS' write buffer for its writer goroutine,
		// which a process of one P (a zone process sharing a machine's
		// cores) runs only when the tick yields: at its end. They are
		// the hand-offs' latency, so they go before the rest of the
		// tick. With more Ps the writer has one of its own, and a yield
		// could hand this P to another zone's tick in the same process.
		runtime.Gosched()
	}
	// Lent under an older assignment of the lender's zone, or by a zone
	// that no longer borders ours: gone.
	for id, src := range g.sources {
		if since, ok := v.since[id]; !ok || since != src.since || !neighbour(v, me, id) {
			g.drop(id)
		}
	}
	for i := range g.batch {
		b := &g.batch[i]
		since, ok := v.since[b.Zone]
		if !ok || b.Revision < since || !neighbour(v, me, b.Zone) {
			z.stats.refused.Add(1)
			continue
		}
		z.stats.received.Add(1)
		z.apply(b, since, me)
	}
	z.takeRequests(v, me, t.Number)
	z.resume(true)
	z.expire(v.revision)
	z.awaitSessions()
	z.takeCommands(v, me)
	for id, src := range g.sources {
		if g.tick-src.heardAt > uint64(z.opts.StaleTicks) {
			g.drop(id)
		}
	}
	z.stats.ghosts.Store(int64(g.local.Len()))
}

func neighbour(v *view, me Zone, id ID) bool {
	o, ok := v.m.Zone(id)
	return ok && o.WorldOrCell == me.WorldOrCell && touch(o.Chunks, me.Chunks)
}

// apply makes the world's ghosts of b's zone what b lists: new ones
// spawned, listed ones moved, unlisted ones (and any that stand beyond
// our reach) despawned.
func (z *Server) apply(b *GhostBatch, since uint64, me Zone) {
	g := &z.ghosts
	src := g.sources[b.Zone]
	if src == nil {
		src = &source{since: since}
		g.sources[b.Zone] = src
	}
	if b.Tick <= src.lastTick {
		return // NATS kept order; an old tick is a restarted sender's, or a replay
	}
	src.lastTick, src.heardAt = b.Tick, g.tick
	src.gen++
	// The records and their ghosts first, then what they say: each pass's
	// steps do not wait on one another, so the memory each record's
	// ghost and row cost is fetched for several records at once.
	g.listed, g.moved = g.listed[:0], g.moved[:0]
	for c := b.Records(); ; {
		r, more := c.Next()
		if !more {
			break
		}
		gh := src.actors.get(r.ID)
		if gh != nil {
			cacheline.ClaimOne(gh) // read and written below
		}
		g.listed = append(g.listed, listed{r, gh})
	}
	for _, l := range g.listed {
		r, gh := l.r, l.gh
		var a Ghost
		switch {
		case r.Fields == GhostAll:
			a = r.Ghost
		case gh != nil:
			a = r.Over(gh.last)
			if b.Tick > gh.heard+GhostRepeat {
				// Nothing heard of it for longer than a change is
				// repeated: a field left out may have changed unheard.
				z.stats.unkeyed.Add(1)
				z.askKey(b.Zone)
			}
		case z.taken(b.Zone, r.ID):
			continue // ours since a hand-off; the old owner has not heard yet
		default:
			// An actor never heard whole (batches missed, or its record
			// not shown): the sender's next keyframe lists it whole.
			z.stats.unkeyed.Add(1)
			z.askKey(b.Zone)
			continue
		}
		t := components.Transform{X: a.X, Y: a.Y, Z: a.Z, Yaw: a.Yaw, WorldOrCell: a.WorldOrCell}
		if !me.Within(g.world.KeyOf(t)) {
			continue // not ours to show: despawned below if it was a ghost
		}
		if gh == nil {
			gh = z.handed(b, a.ID)
		}
		if gh == nil {
			if z.taken(b.Zone, a.ID) {
				continue // ours since a hand-off; the old owner has not heard yet
			}
			spec := ecs.ActorSpec{Transform: t, Animation: components.Animation{Flags: a.Flags}, Client: components.Client{Class: a.Class, Phase: a.Phase}}
			if a.Class == components.ClassPlayer { // a remote player's: Spawn would make it an NPC
				clients := g.clients
				spec.Init = func(_ *ark.World, e ark.Entity) { clients.Get(e).Class = components.ClassPlayer }
			}
			id := g.world.Spawn(spec)
			src.actors.put(a.ID, &ghost{local: id, last: a, heard: b.Tick, gen: src.gen})
			g.local.Put(id.ID, remote{b.Zone, a.ID})
			g.lend(remote{b.Zone, a.ID}, id)
			continue
		}
		gh.gen, gh.last, gh.heard = src.gen, a, b.Tick
		g.moved = append(g.moved, movedGhost{local: gh.local, t: t, fields: r.Fields, flags: a.Flags, class: a.Class, phase: a.Phase})
	}
	// The ghosts' entities, then their rows (two more passes, as above).
	for i := range g.moved {
		m := &g.moved[i]
		m.e, m.ok = g.world.Entity(m.local)
	}
	for i := range g.moved {
		m := &g.moved[i]
		if !m.ok {
			continue
		}
		// Written before Move, as a game's system moves an NPC: Move
		// relays what changed and moves the ghost to its new chunk.
		*g.transforms.Get(m.e) = m.t
		// A field the record leaves out is what the ghost already has:
		// its row is left untouched.
		if m.fields&GhostFlags != 0 {
			g.animations.Get(m.e).Flags = m.flags
		}
		if m.fields&(GhostClass|GhostPhase) != 0 {
			c := g.clients.Get(m.e)
			c.Class, c.Phase = m.class, m.phase // the owner's game changed them, or the actor came from a hand-off
		}
	}
	src.actors.each(func(id uint32, gh *ghost) {
		if gh.gen != src.gen && b.Tick >= gh.from {
			g.gone = append(g.gone, gh.local)
			g.local.Drop(gh.local.ID)
			src.actors.drop(id)
			g.lend(remote{b.Zone, id}, components.ActorID{})
		}
	})
}

// heardAs is what a record would say of actor local of ours, standing at
// t with flags and client c, to be known as id: the base of a ghost made
// from something other than its owner's record (a hand-off's Prepare, our
// own actor handed over), until the owner's first whole record. Its heard stays 0, so that a
// record leaving fields out before then is counted and asks for a
// keyframe.
func heardAs(id uint32, t components.Transform, flags uint16, c components.Client, local components.ActorID) Ghost {
	return Ghost{ID: id, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell, Flags: flags, Class: c.Class, Phase: components.PhaseKey(local, c)}
}

// taken reports whether zone's actor id is ours since a hand-off that
// zone has not heard the end of yet.
func (z *Server) taken(zone ID, id uint32) bool {
	rec := z.hand.in[remote{zone, id}]
	return rec != nil && rec.phase == taken
}

// handed returns the ghost our actor becomes when b, from the zone we
// sent its Commit to, lists it: the new owner lists only its own actors,
// so the listing answers the Commit as well as the answer does, and
// whichever comes first hands the actor over.
func (z *Server) handed(b *GhostBatch, id uint32) *ghost {
	local, ok := z.hand.committing[remote{b.Zone, id}]
	if !ok {
		return nil
	}
	z.handOver(local, z.hand.out[local], b.Tick)
	return z.ghosts.sources[b.Zone].actors.get(id)
}

// drop despawns every ghost zone id lent and forgets the zone.
func (g *ghosts) drop(id ID) {
	src := g.sources[id]
	if src == nil {
		return
	}
	src.actors.each(func(rid uint32, gh *ghost) {
		g.gone = append(g.gone, gh.local)
		g.local.Drop(gh.local.ID)
		g.lend(remote{id, rid}, components.ActorID{})
	})
	delete(g.sources, id)
}

func (g *ghosts) despawnGone() {
	slices.SortFunc(g.gone, func(a, b components.ActorID) int { return cmp.Compare(a.ID, b.ID) })
	for _, id := range g.gone {
		g.world.Despawn(id)
	}
}
