package systems

import (
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// The telling of props (props.go), session by session: the tick's news
// as the session saw before its look, then its look, if it has one: the
// props that came into its sight and left it, found by walking the chunks
// around the old and the new sight point.

// runTells tells every session its props of this tick: in units of
// consecutive slots on the pool, each unit with its own buffer and counts,
// or all on the tick goroutine when there is little to tell or t is nil.
// A session's frames come from one unit, in one order (the news, then its
// look), so the split never changes a byte a client gets.
func (p *Pipeline) runTells(t *scheduler.Tick) {
	ps := &p.sight
	n := 1
	news := len(ps.news)
	if len(ps.newsKeys) > 0 {
		news = spatialNews // each session checks those near it
	}
	if work := news*len(p.slots) + 100*len(ps.looks); t != nil && !p.inline && work >= minTellsToOffload {
		n = max(min(len(p.units), work/(minTellsToOffload/2)), 1)
	}
	if len(ps.tellers) < n {
		ps.tellers = append(ps.tellers, make([]teller, n-len(ps.tellers))...)
	}
	ps.job = tellJob{p: p, n: n}
	if n == 1 {
		ps.job.RunUnit(0)
	} else {
		ps.tellUnits = ps.tellUnits[:0]
		for u := range n {
			ps.tellUnits = append(ps.tellUnits, scheduler.Unit{Key: tellKeySalt ^ uint64(u), Cost: float64(len(p.slots) / n)})
		}
		t.Parallel(&ps.job, ps.tellUnits)
	}
	for u := range n {
		tl := &ps.tellers[u]
		p.stats.PropsSent += tl.props
		p.stats.Disappears += tl.disappears
		tl.props, tl.disappears = 0, 0
	}
}

// tellKeySalt keeps the telling's units apart from the join's other keys
// in the pool's cost table.
const tellKeySalt = 0x510e527fade682d1

// tellJob tells the sessions: unit u those of the u-th of n slices of the
// slots.
type tellJob struct {
	p *Pipeline
	n int
}

func (j *tellJob) RunUnit(u int) {
	p := j.p
	tl := &p.sight.tellers[u]
	for slot := len(p.slots) * u / j.n; slot < len(p.slots)*(u+1)/j.n; slot++ {
		tl.tell(p, slot)
	}
}

// teller is one unit's state: the frames of the session it is telling,
// each behind its stream length prefix, and what it sent.
type teller struct {
	out []byte
	// kernel is the session being told as the news are decided for it,
	// masks the decisions of a run, told and lost the bit sets over the
	// news it is told and loses (props_news.go).
	kernel            newsKernel
	masks             []byte
	told, lost        []uint64
	props, disappears int
}

// tell tells the session of slot what the news change in its sight, as
// it saw before its look, then what its look brings into sight and takes
// out, and hands the frames to the transport in one batch.
func (tl *teller) tell(p *Pipeline, slot int) {
	ps := &p.sight
	s := p.slots[slot]
	if s == nil || s.state != playing {
		return
	}
	var l *look
	before := ps.points[slot]
	if i := ps.lookAt[slot]; i >= 0 {
		l = &ps.looks[i]
		before = l.old
	}
	tl.out = tl.out[:0]
	if before.actor == s.actor.ID && len(ps.news) > 0 {
		tl.tellNews(p, &before, interest.RecipientHalf(components.PhaseKey(s.actor, *p.clients.Get(s.entity))))
	}
	if l != nil {
		tl.look(p, l)
	}
	if len(tl.out) > 0 {
		sendFrames(p.transport, s.id, tl.out)
	}
}

// appendProp adds q's Prop frame behind its length prefix.
func (tl *teller) appendProp(q *wire.Prop) {
	tl.out = append(tl.out, wire.PropSize, 0)
	tl.out = wire.AppendProp(tl.out, *q)
	tl.props++
}

// appendDisappear adds actor's Disappear frame behind its length prefix.
func (tl *teller) appendDisappear(actor uint32) {
	tl.out = append(tl.out, wire.DisappearSize, 0)
	tl.out = wire.AppendDisappear(tl.out, wire.Disappear{Actor: actor})
	tl.disappears++
}

// sendFrames hands a session's frames, laid back to back behind their
// length prefixes, to the transport: in one call when it takes batches
// (wire.ReliableBatchSender), else one SendReliable each.
func sendFrames(t wire.Transport, s wire.SessionID, frames []byte) {
	if b, ok := t.(wire.ReliableBatchSender); ok {
		b.SendReliableBatch(s, frames)
		return
	}
	for len(frames) >= wire.StreamPrefixSize {
		n := int(frames[0]) | int(frames[1])<<8
		t.SendReliable(s, frames[wire.StreamPrefixSize:wire.StreamPrefixSize+n])
		frames = frames[wire.StreamPrefixSize+n:]
	}
}

// look tells one session what came into its sight and what left it as
// its point moved from l.old to l.next: it walks the props of the chunks
// around either point once, the square around both when they are near
// (the usual step), each square apart when they are not.
func (tl *teller) look(p *Pipeline, l *look) {
	lo, hi := p.sightChunks(l.next)
	if l.old.actor == 0 {
		tl.lookIn(p, l, lo, hi, nil)
		return
	}
	olo, ohi := p.sightChunks(l.old)
	if l.old.world == l.next.world && olo.X <= hi.X+1 && lo.X <= ohi.X+1 && olo.Y <= hi.Y+1 && lo.Y <= ohi.Y+1 {
		lo.X, lo.Y = min(lo.X, olo.X), min(lo.Y, olo.Y)
		hi.X, hi.Y = max(hi.X, ohi.X), max(hi.Y, ohi.Y)
		tl.lookIn(p, l, lo, hi, nil)
		return
	}
	tl.lookIn(p, l, lo, hi, nil)
	if l.old.world != l.next.world {
		tl.lookIn(p, l, olo, ohi, nil)
	} else {
		tl.lookIn(p, l, olo, ohi, &[2]grid.AreaKey{lo, hi})
	}
}

// lookIn compares, for every prop in the chunks from lo to hi (skipping
// those from skip[0] to skip[1]), whether l.old and l.next see it, and
// adds the difference to the session's frames. A chunk that lies wholly within both
// sights, or wholly outside both, holds no difference and is passed over.
func (tl *teller) lookIn(p *Pipeline, l *look, lo, hi grid.AreaKey, skip *[2]grid.AreaKey) {
	lo2, hi2, size := p.sight.reachLo*p.sight.reachLo, p.sight.reachHi*p.sight.reachHi, p.cfg.ChunkSize
	world := lo.WorldOrCell
	nx, ny := l.next.x, l.next.y
	if l.next.actor == 0 || l.next.world != world {
		nx, ny = inf, inf
	}
	ox, oy := l.old.x, l.old.y
	if l.old.actor == 0 || l.old.world != world {
		ox, oy = inf, inf
	}
	g := p.sight.places.worlds[world]
	if g == nil {
		return
	}
	for y := lo.Y; y <= hi.Y; y++ {
		for x := lo.X; x <= hi.X; x++ {
			if skip != nil && x >= skip[0].X && x <= skip[1].X && y >= skip[0].Y && y <= skip[1].Y {
				continue
			}
			bx, by := float32(x)*size, float32(y)*size
			inNew, outNew := boxInDisc(bx, by, size, nx, ny, lo2, hi2)
			inOld, outOld := boxInDisc(bx, by, size, ox, oy, lo2, hi2)
			if (inNew && inOld) || (outNew && outOld) {
				continue
			}
			c := g.at(x, y)
			if c == nil {
				continue
			}
			xs, ys, reach2 := c.xs, c.ys[:len(c.xs)], c.reach2[:len(c.xs)]
			for i, px := range xs {
				py, r2 := ys[i], reach2[i]
				dnx, dny, dox, doy := px-nx, py-ny, px-ox, py-oy
				sees, seen := dnx*dnx+dny*dny <= r2, dox*dox+doy*doy <= r2
				if sees == seen {
					continue
				}
				if sees {
					tl.appendProp(&c.props[i])
				} else {
					tl.appendDisappear(c.props[i].Actor)
				}
			}
		}
	}
}

// inf stands for a sight point that sees nothing: every distance to it is
// infinite.
var inf = float32(math.Inf(1))

// boxInDisc reports whether the square of side size at (bx, by) lies
// wholly within the disc of squared radius lo2 around (x, y), and whether
// wholly outside the disc of squared radius hi2: within every class's
// reach, or beyond every one. The square is taken a unit larger on every
// side, so that a prop that rounding put on a chunk's edge is never
// passed over.
func boxInDisc(bx, by, size, x, y, lo2, hi2 float32) (in, out bool) {
	fx := max(x-bx, bx+size-x) + 1 // the farthest edge in x, and in y
	fy := max(y-by, by+size-y) + 1
	nx := max(bx-x-1, 0, x-(bx+size)-1) // the nearest, 0 within the box
	ny := max(by-y-1, 0, y-(by+size)-1)
	return fx*fx+fy*fy <= lo2, nx*nx+ny*ny > hi2
}

// sightChunks returns the corner chunks of the square of chunks that a
// sight point's reach touches.
func (p *Pipeline) sightChunks(pt sightPoint) (lo, hi grid.AreaKey) {
	r, size := p.sight.reachHi, p.cfg.ChunkSize
	lo = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x-r, size), Y: chunkOf(pt.y-r, size)}
	hi = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x+r, size), Y: chunkOf(pt.y+r, size)}
	return lo, hi
}

func chunkOf(v, size float32) int32 {
	return int32(math.Floor(float64(v / size)))
}
