package systems

import (
	"cmp"
	"slices"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// Appears are paced per client (Config.AppearsPerTick): a client is sent
// at most the cap's worth of Appears a tick, and those past it wait their
// turn, the nearest first, a cap's worth a tick. A player joining a crowd
// larger than the cap has all of its first tick's Appears wait, so that
// it is told of the nearest first; any other client is told as the tick
// derives them until the cap (so a client's stream is what it would be
// without the cap whenever it stays under it). Joining a square of 10,000
// is then 20 ticks of 512 Appears, not one tick of 10,000 frames; the
// actors' movement records reach the client meanwhile, as for any actor
// in view. A Disappear for an actor still waiting takes it out of the line
// and is sent all the same (a client that knew the actor from its records
// forgets it; one that did not ignores it), so nothing seen is left
// behind.

// waitingAppear is an Appear waiting to be sent: as the actor stood in
// tick, and its squared distance to the client's actor once sorted.
type waitingAppear struct {
	ap   wire.Appear
	tick uint64
	d2   float32
}

// paceAppear reports whether session s may be sent ap now, counting it;
// if not, ap waits its turn (sendWaitingAppears).
func (p *Pipeline) paceAppear(s *session, ap wire.Appear) bool {
	if s.appearTick != p.frame.Tick {
		s.appearTick, s.appears = p.frame.Tick, 0
	}
	if !s.paceAll && len(s.waitAppears) == 0 && s.appears < p.cfg.AppearsPerTick {
		s.appears++
		return true
	}
	s.waitAppears = append(s.waitAppears, waitingAppear{ap: ap, tick: p.frame.Tick})
	s.sortAppears = true
	if !s.paced {
		s.paced = true
		p.paced = append(p.paced, s)
	}
	return false
}

// unwait takes actor out of s's line of Appears, if it is there.
func (s *session) unwait(actor uint32) {
	if i := slices.IndexFunc(s.waitAppears, func(w waitingAppear) bool { return w.ap.Actor == actor }); i >= 0 {
		s.waitAppears = slices.Delete(s.waitAppears, i, i+1)
	}
}

// sendWaitingAppears sends every paced session its waiting Appears, as
// many as the cap leaves it this tick, the nearest first; one that waited
// since an earlier tick goes as the actor stands now. Runs in the join,
// after the tick's visibility.
func (p *Pipeline) sendWaitingAppears() {
	keep := p.paced[:0]
	for _, s := range p.paced {
		s.paceAll = false
		if p.sessions[s.id] != s || s.state != playing {
			s.waitAppears, s.paced = s.waitAppears[:0], false
			continue
		}
		if s.appearTick != p.frame.Tick {
			s.appearTick, s.appears = p.frame.Tick, 0
		}
		room := p.cfg.AppearsPerTick - s.appears
		if s.sortAppears {
			s.sortNearest(p.appearOf(s.actor))
		}
		n := max(min(len(s.waitAppears), room), 0)
		for _, w := range s.waitAppears[:n] {
			ap := w.ap
			if w.tick != p.frame.Tick {
				if _, ok := p.world.Entity(components.ActorID{ID: ap.Actor}); !ok {
					continue // gone: its Disappear took it out of the line, so not reached
				}
				ap = p.appearOf(components.ActorID{ID: ap.Actor})
			}
			p.out = wire.AppendAppear(p.out[:0], ap)
			p.transport.SendReliable(s.id, p.out)
			p.stats.Appears++
		}
		s.appears += n
		s.waitAppears = s.waitAppears[:copy(s.waitAppears, s.waitAppears[n:])]
		if len(s.waitAppears) == 0 {
			s.paced = false
			continue
		}
		keep = append(keep, s)
	}
	clear(p.paced[len(keep):])
	p.paced = keep
}

// sortNearest orders s's waiting Appears by distance from me, then by
// actor id.
func (s *session) sortNearest(me wire.Appear) {
	s.sortAppears = false
	for i := range s.waitAppears {
		a := &s.waitAppears[i]
		dx, dy, dz := a.ap.X-me.X, a.ap.Y-me.Y, a.ap.Z-me.Z
		a.d2 = dx*dx + dy*dy + dz*dz
	}
	slices.SortFunc(s.waitAppears, func(a, b waitingAppear) int {
		if c := cmp.Compare(a.d2, b.d2); c != 0 {
			return c
		}
		return cmp.Compare(a.ap.Actor, b.ap.Actor)
	})
}
