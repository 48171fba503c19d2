package zone

import "github.com/throng-go/throng/components"

// This file answers Ready from NATS' delivery goroutine, so that a
// hand-off need not wait a tick boundary for it: the owner commits in the
// tick after its offer and the receiver takes the actor a tick later.
// The delivery goroutine answers only a Prepare that needs nothing of the
// world: an actor it holds as a ghost already, a sequence newer than any
// offered for it, sent as of a revision the last tick checked. The tick
// still acts on that Prepare (records it, checks it again); anything else
// waits for the tick as before.

// lending is one change to the ghost table, for the delivery goroutine's
// index: the ghost of key is local now, or none when local is zero.
type lending struct {
	key   remote
	local components.ActorID
}

// lend notes that the ghost of key is local now (zero: none), for the
// index the tick hands the delivery goroutine at its end.
func (g *ghosts) lend(key remote, local components.ActorID) {
	g.changes = append(g.changes, lending{key, local})
}

// share hands the delivery goroutine, at the end of a tick, the changes
// to the ghost table and the view the tick held its zone as of (nil when
// fenced: it answers nothing then).
func (z *Server) share(v *view, me Zone) {
	g, mb := &z.ghosts, &z.mail
	mb.mu.Lock()
	for _, c := range g.changes {
		if c.local == (components.ActorID{}) {
			delete(mb.lent, c.key)
		} else {
			mb.lent[c.key] = c.local
		}
	}
	mb.view, mb.me = v, me
	mb.mu.Unlock()
	g.changes = g.changes[:0]
}

// offered notes, for the delivery goroutine, that a Prepare of seq for
// key was acted on: a request for key with seq or older is the tick's to
// answer (a repeat, or refused).
func (mb *mailbox) offered(key remote, seq uint64) {
	mb.mu.Lock()
	mb.seqs[key] = max(mb.seqs[key], seq)
	mb.mu.Unlock()
}

// readyNow answers Prepare r Ready from the delivery goroutine, with
// z.mail.mu held, and returns the ghost's id; 0 leaves r to the tick. It
// relies on the view the last tick checked only while that is still the
// newest the server has read, so that fencing holds: a revision read
// since then, a ghost not held, a sequence not newer than any offered,
// any doubt, and the tick decides.
func (z *Server) readyNow(r HandoffRequest, reply string) uint32 {
	mb := &z.mail
	v := mb.view
	if r.Kind != Prepare || reply == "" || v == nil || v != z.watch.load() {
		return 0
	}
	key := remote{r.Zone, r.Actor}
	local, ok := mb.lent[key]
	if !ok {
		return 0
	}
	if seq, ok := mb.seqs[key]; ok && r.Seq <= seq {
		return 0
	}
	since, ok := v.since[r.Zone]
	if !ok || r.Revision < since || !neighbour(v, mb.me, r.Zone) || mb.me.Reach(z.ghosts.world.KeyOf(r.Transform)) != 0 {
		return 0
	}
	a := HandoffAnswer{Kind: Ready, Zone: z.opts.Zone, Seq: r.Seq, Actor: r.Actor, Local: local.ID}
	// Published with the lock held, so that it goes out before anything
	// the tick answers about r.
	if z.nc.Publish(reply, AppendHandoffAnswer(mb.buf[:0], a)) != nil {
		return 0
	}
	mb.seqs[key] = r.Seq
	z.stats.h.AnswersSent.Add(1)
	return local.ID
}

// forget drops key's sequence once the tick forgets its record of seq,
// unless a newer Prepare was answered meanwhile.
func (mb *mailbox) forget(key remote, seq uint64) {
	mb.mu.Lock()
	if mb.seqs[key] <= seq {
		delete(mb.seqs, key)
	}
	mb.mu.Unlock()
}
