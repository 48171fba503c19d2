package systems

import (
	"slices"

	"github.com/throng-go/throng/interest"
)

// The nearest senders under the budget.
//
// A recipient over its per-connection budget has every pair period
// stretched by its spread (adjustSpread), which in a crowd of thousands
// leaves each sender it sees a few updates a second or fewer. Its nearest
// senders are exempt: the Config.NearestSenders closest senders in range
// (by distance, ties by canonical order) are due at their tier period,
// unstretched and unranked, as well as whenever their stretched pair is,
// and they are sent ahead of the budget's cut, outside the backlog. So
// the people around a player move every tick however dense the crowd,
// and the budget thins only the rest. A recipient at spread 1 is not
// touched: nothing of its view is stretched.
//
// The rule is pairOf's (near); visit finds the nearest by walking every
// sender in view (nearestPlain), the relay from the cells around the
// recipient (nearestOf). Both keep the same order, so they pick the same.

// MaxNearestSenders bounds Config.NearestSenders.
const MaxNearestSenders = 64

// nearCand is one candidate for a recipient's nearest: a sender and its
// distance squared. Candidates order by distance, then frame index.
type nearCand struct {
	d float32
	a int32
}

func (c nearCand) before(o nearCand) bool { return c.d < o.d || c.d == o.d && c.a < o.a }

// nearTop keeps the k best candidates offered to it, in order.
type nearTop struct {
	k    int
	best []nearCand
}

// offer considers candidate c.
func (t *nearTop) offer(c nearCand) {
	n := len(t.best)
	if n == t.k {
		if !c.before(t.best[n-1]) {
			return
		}
		n--
		t.best = t.best[:n]
	}
	i := n
	for i > 0 && c.before(t.best[i-1]) {
		i--
	}
	t.best = append(t.best, nearCand{})
	copy(t.best[i+1:], t.best[i:n])
	t.best[i] = c
}

// limit is the distance squared past which no candidate can enter.
func (t *nearTop) limit(h float32) float32 {
	if len(t.best) == t.k {
		return min(h, t.best[t.k-1].d)
	}
	return h
}

// inRange reports whether sender a is in range of recipient r, whose
// distance squared is d: pairOf's test.
func (p *Pipeline) inRange(r, a int32, d float32) bool {
	f := &p.frame
	return f.changed[a] != 0 && a != r && d < p.kindReach[f.classSet[f.class[a]]]
}

// nearestPlain writes r's nearest senders to near in ascending frame
// index, by looking at every sender of its stencil, and returns how many.
func (p *Pipeline) nearestPlain(r int32, near *[MaxNearestSenders]int32) int {
	f := &p.frame
	var buf [MaxNearestSenders]nearCand
	top := nearTop{k: p.cfg.NearestSenders, best: buf[:0]}
	g := &f.groups[f.group[r]]
	for _, ci := range f.stencilCells(g) {
		for a := f.cells[ci].actors.lo; a < f.cells[ci].actors.hi; a++ {
			dx, dy, dz := f.x[a]-f.x[r], f.y[a]-f.y[r], f.z[a]-f.z[r]
			if d := dx*dx + dy*dy + dz*dz; p.inRange(r, a, d) {
				top.offer(nearCand{d, a})
			}
		}
	}
	n := 0
	for _, c := range top.best {
		near[n] = c.a
		n++
	}
	slices.Sort(near[:n])
	return n
}

// nearestOf finds r's nearest senders into sc.near, in ascending frame
// index: the same as nearestPlain, but it looks only at the cells whose
// box comes within a radius of r, starting from the radius the unit's last
// recipient needed (recipients of one cell are consecutive) and
// quadrupling its square until k senders are found within it or nothing
// of the stencil lies beyond it.
func (p *Pipeline) nearestOf(r int32, cells []int32, sc *relayScratch) []int32 {
	f := &p.frame
	k := p.cfg.NearestSenders
	h := sc.nearH
	if !(h > 0) {
		h = 512 * 512
	}
	sc.nearBest = slices.Grow(sc.nearBest[:0], k+1)
	top := nearTop{k: k}
	own := f.cellIdx[r]
	for {
		top.best = sc.nearBest[:0]
		// r's own cell first: its nearest are mostly there, and the
		// limit they set passes over most of the other cells.
		beyond := p.nearIn(&top, own, r, h)
		for _, ci := range cells {
			if ci != own {
				beyond = p.nearIn(&top, ci, r, h) || beyond
			}
		}
		if len(top.best) == k || !beyond {
			break
		}
		h *= 4
	}
	if len(top.best) == k {
		sc.nearH = top.best[k-1].d * 1.5
	}
	sc.near = sc.near[:0]
	for _, c := range top.best {
		sc.near = append(sc.near, c.a)
	}
	sortSmall(sc.near)
	return sc.near
}

// nearIn offers top the senders of cell ci within h of recipient r, and
// reports whether some of the cell's box lies past h.
func (p *Pipeline) nearIn(top *nearTop, ci, r int32, h float32) (beyond bool) {
	f := &p.frame
	c := &f.cells[ci]
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	near, far := boxDist2(c, rx, ry, rz)
	lim := top.limit(h)
	if near > lim {
		return far > h
	}
	xs, ys, zs := f.x[c.actors.lo:c.actors.hi], f.y[c.actors.lo:c.actors.hi], f.z[c.actors.lo:c.actors.hi]
	for i := range xs {
		dx, dy, dz := xs[i]-rx, ys[i]-ry, zs[i]-rz
		if d := dx*dx + dy*dy + dz*dz; d <= lim {
			if a := c.actors.lo + int32(i); p.inRange(r, a, d) {
				top.offer(nearCand{d, a})
				lim = top.limit(h)
			}
		}
	}
	return far > h
}

// sortSmall sorts a short list (insertion sort: a recipient's nearest).
func sortSmall(s []int32) {
	for i := 1; i < len(s); i++ {
		v, j := s[i], i
		for j > 0 && s[j-1] > v {
			s[j] = s[j-1]
			j--
		}
		s[j] = v
	}
}

// boxDist2 returns the least and the greatest distance squared from the
// point to cell c's box.
func boxDist2(c *cell, x, y, z float32) (near, far float32) {
	var n, fa float32
	for i, v := range [3]float32{x, y, z} {
		lo, hi := c.min[i]-v, v-c.max[i]
		d := max(lo, hi, 0)
		e := max(v-c.min[i], c.max[i]-v)
		n += d * d
		fa += e * e
	}
	return n, fa
}

// nearDue reports, for sender a among recipient r's nearest, whether it is
// due at its tier period (tier) and whether it is due at the period r's
// spread stretches that to (stretched: the fast path has then written
// it). want and rhalf are r's (interest.Clock.Want, interest.RecipientHalf).
func (p *Pipeline) nearDue(r, a int32, spread uint8, want *interest.Residues, rhalf uint32) (tier, stretched bool) {
	f := &p.frame
	kind := f.classSet[f.class[a]]
	dx, dy, dz := f.x[a]-f.x[r], f.y[a]-f.y[r], f.z[a]-f.z[r]
	tp := p.tierSets[kind].PeriodSq(dx*dx + dy*dy + dz*dz)
	sp := stretch(tp, p.rankedSpread(kind, spread))
	changed, tick := f.changed[a], f.Tick
	tier = changed+uint64(tp) > tick && (tp <= 1 || p.due(&f.res[a], want, tp, f.half[a], rhalf))
	stretched = changed+uint64(sp) > tick && (sp <= 1 || p.due(&f.res[a], want, sp, f.half[a], rhalf))
	return tier, stretched
}

// nearestDue finds recipient r's nearest (sc.near) and, of them, those due
// this tick (sc.nearSent: sent whatever the budget) and those due only at
// their tier period (sc.nearExtra: what the fast path, at the spread, did
// not write), each in ascending frame index. It is for a recipient at a
// spread above 1, with NearestSenders set.
func (p *Pipeline) nearestDue(r int32, spread uint8, cells []int32, sc *relayScratch) {
	f := &p.frame
	want := p.clock.Want(f.id[r])
	rhalf := interest.RecipientHalf(f.id[r])
	sc.nearSent, sc.nearExtra = sc.nearSent[:0], sc.nearExtra[:0]
	for _, a := range p.nearestOf(r, cells, sc) {
		tier, stretched := p.nearDue(r, a, spread, &want, rhalf)
		if tier || stretched {
			sc.nearSent = append(sc.nearSent, a)
		}
		if tier && !stretched {
			sc.nearExtra = append(sc.nearExtra, a)
		}
	}
}

// nearing reports whether recipient r at spread has nearest senders that
// the budget does not stretch.
func (p *Pipeline) nearing(spread uint8) bool {
	return spread > 1 && p.cfg.NearestSenders > 0 && p.cfg.MaxRecordsPerTick > 0
}
