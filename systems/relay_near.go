package systems

import (
	"math"
	"math/bits"
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
// distance squared in one key, the distance's bits above the frame
// index. Candidates order by distance, then frame index, and so do their
// keys as unsigned integers: a distance squared is never negative, and
// the bits of non-negative floats order as the floats do.
type nearCand uint64

func makeNearCand(d float32, a int32) nearCand {
	return nearCand(uint64(math.Float32bits(d))<<32 | uint64(uint32(a)))
}

// dist is the candidate's distance squared; idx its frame index.
func (c nearCand) dist() float32 { return math.Float32frombits(uint32(c >> 32)) }
func (c nearCand) idx() int32    { return int32(uint32(c)) }

func (c nearCand) before(o nearCand) bool { return c < o }

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
	t.best = append(t.best, 0)
	copy(t.best[i+1:], t.best[i:n])
	t.best[i] = c
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
				top.offer(makeNearCand(d, a))
			}
		}
	}
	n := 0
	for _, c := range top.best {
		near[n] = c.idx()
		n++
	}
	sortSmall(near[:n])
	return n
}

// nearestOf finds r's nearest senders into sc.near, in ascending frame
// index: the same as nearestPlain, but it looks only at the senders within
// a radius of r, in the buckets of a crowded chunk's grid (buildNearGrids)
// or the cells of a sparse one, starting from the radius the unit's last
// recipient needed (recipients of one cell are consecutive) and widening
// it (at least doubling its square) until k senders are found within it
// or nothing of the stencil lies beyond it. It gathers every sender within
// the radius, then keeps those up to the k-th nearest (kthNearest): the
// radius starts at the last recipient's k-th distance and a quarter, so
// the gathering holds few more than k.
func (p *Pipeline) nearestOf(r int32, sc *relayScratch) []int32 {
	f := &p.frame
	k := p.cfg.NearestSenders
	h := sc.nearH
	if !(h > 0) {
		h = 512 * 512
	}
	g := &f.groups[f.group[r]]
	// Room for every sender in view, whatever the search gathers: no
	// growing by a few when a search widens.
	if n := f.stencilSenders(g); cap(sc.nearBest) < n {
		sc.nearBest = make([]nearCand, 0, n+n/4)
		sc.nearTmp = make([]nearCand, 2*(n+n/4+k))
	}
	if words := f.Len()>>6 + 1; cap(sc.nearBits) < words {
		sc.nearBits = make([]uint64, words+words/4) // inFrameOrder's, for any span of the frame
	}
	for {
		sc.nearBest = sc.nearBest[:0]
		beyond := false // a sender of the stencil may lie past h
		for _, gi := range g.stencil[:g.nst] {
			if f.near[gi].side > 0 {
				beyond = p.nearInGrid(sc, gi, r, h) || beyond
				continue
			}
			o := &f.groups[gi]
			for ci := o.cellsLo; ci < o.cellsHi; ci++ {
				beyond = p.nearIn(sc, ci, r, h) || beyond
			}
		}
		found := len(sc.nearBest)
		if found >= k || !beyond {
			break
		}
		// Widen to where k would lie at the density found, and a third:
		// the area, and so the count, grows with h.
		h *= max(float32(k)/float32(max(found, 1))*4/3, 2)
	}
	best := sc.nearBest
	last := ^nearCand(0) // the k-th best: every candidate when there are k or fewer
	if len(best) > k {
		last, best = kthNearest(best, k, h, sc.nearTmp)
	}
	if len(best) >= k {
		far := last
		if len(best) == k {
			far = slices.Max(best)
		}
		sc.nearH = far.dist() * 1.25
	}
	return sc.inFrameOrder(best, last)
}

// nearBins is how many bins kthNearest sorts candidates into.
const nearBins = 16

// kthNearest returns the k-th best of c (nearCand.before; 1 <= k <=
// len(c)), whose distances are all at most h, and the candidates that
// hold the k best: c, or, when it falls back to selecting, the k best in
// buf (room for twice len(c)+k), c's memory then overwritten.
//
// A recipient's search gathers a few more than k candidates within h,
// about evenly over the area of the circle, and so over the distance
// squared: it counts them into nearBins bins of it, finds the bin the
// k-th falls in, and picks among that bin's few. A bin holds greater
// distances than the bins before it, so the k-th best is certain.
func kthNearest(c []nearCand, k int, h float32, buf []nearCand) (nearCand, []nearCand) {
	scale := float32(nearBins) / h
	if !(scale > 0) || math.IsInf(float64(scale), 0) { // no usable h: select
		sel := selectNearest(c, k, buf)
		return slices.Max(sel), sel
	}
	var count [nearBins + 1]int32
	for _, v := range c {
		count[min(int(v.dist()*scale), nearBins)]++
	}
	bin, before := 0, 0 // the bin of the k-th, and how many lie in the bins below
	for before+int(count[bin]) < k {
		before += int(count[bin])
		bin++
	}
	in := buf[:0]
	for _, v := range c {
		if min(int(v.dist()*scale), nearBins) == bin {
			in = append(in, v)
		}
	}
	need := k - before
	if len(in) > need {
		sel := selectNearest(in, need, buf[len(in):])
		return slices.Max(sel), c
	}
	return slices.Max(in), c
}

// inFrameOrder writes the candidates of c up to last (nearCand.before or
// equal) into sc.near in ascending frame index, and returns it: each is a
// bit, set without a branch, in a bit set over the candidates' span of
// frame indices, read back in order. Candidates are distinct.
func (sc *relayScratch) inFrameOrder(c []nearCand, last nearCand) []int32 {
	sc.near = sc.near[:0]
	if len(c) == 0 {
		return sc.near
	}
	lo, hi := c[0].idx(), c[0].idx()
	for _, v := range c[1:] {
		lo, hi = min(lo, v.idx()), max(hi, v.idx())
	}
	words := int(hi-lo)>>6 + 1
	set := sc.nearBits[:words] // room for every frame index: nearestOf
	clear(set)
	for _, v := range c {
		i := uint32(v.idx() - lo)
		set[i>>6] |= uint64(b2i(v <= last)) << (i & 63)
	}
	for w, x := range set {
		for x != 0 {
			sc.near = append(sc.near, lo+int32(w<<6+bits.TrailingZeros64(x)))
			x &= x - 1
		}
	}
	return sc.near
}

// selectNearest returns the k best of c (nearCand.before, k at most
// len(c)), in no particular order, using buf (room for len(c)+k) and c's
// own memory: a quickselect, whose pivot is the middle candidate's, each
// round partitioning without a branch (which side a candidate falls is a
// coin toss a branch would mispredict half the time). Candidates are
// distinct (their frame indices are), so which k it returns is certain,
// whatever the pivots.
func selectNearest(c []nearCand, k int, buf []nearCand) []nearCand {
	a, b := c, buf[:len(c):len(c)] // b never reaches out's memory
	out := buf[len(c) : len(c)+k][:0]
	need := k
	for need < len(a) {
		p := a[len(a)/2]
		nl, hi := 0, len(a)-1
		for _, v := range a {
			b[nl], b[hi] = v, v
			nl += b2i(v < p)
			hi -= b2i(p < v)
		}
		// b[:nl] before p, b[nl] == p, b[nl+1:len(a)] after it.
		less, more := b[:nl], b[nl+1:len(a)]
		if need <= nl {
			a, b = less, a[:cap(a)]
			continue
		}
		out = append(append(out, less...), p)
		need -= nl + 1
		a, b = more, a[:cap(a)]
	}
	return append(out, a[:need]...)
}

// nearIn gathers the senders of cell ci within h of recipient r into
// sc.nearBest, and reports whether some of the cell's box lies past h.
func (p *Pipeline) nearIn(sc *relayScratch, ci, r int32, h float32) (beyond bool) {
	f := &p.frame
	c := &f.cells[ci]
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	near, far := boxDist2(&c.min, &c.max, rx, ry, rz)
	if near <= h {
		for a := c.actors.lo; a < c.actors.hi; a++ {
			dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
			if d := dx*dx + dy*dy + dz*dz; d <= h && p.inRange(r, a, d) {
				sc.nearBest = append(sc.nearBest, makeNearCand(d, a))
			}
		}
	}
	return far > h
}

// nearInGrid gathers the senders of group gi, which has a grid, within h
// of recipient r into sc.nearBest: those of the buckets under the square
// around r that holds the circle of radius h. It reports whether some of
// the group's box lies past h.
func (p *Pipeline) nearInGrid(sc *relayScratch, gi, r int32, h float32) (beyond bool) {
	f := &p.frame
	ng := &f.near[gi]
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	near, far := boxDist2(&ng.min, &ng.max, rx, ry, rz)
	if near > h {
		return far > h
	}
	rad := float32(math.Sqrt(float64(h)))
	x0, x1 := ng.bucket(rx-rad, 0), ng.bucket(rx+rad, 0)
	y0, y1 := ng.bucket(ry-rad, 1), ng.bucket(ry+rad, 1)
	base := f.groups[gi].actors.lo
	nx, ny, nz, reach, idx := f.nearX, f.nearY, f.nearZ, f.nearReach, f.nearIdx
	best := sc.nearBest
	for by := y0; by <= y1; by++ {
		row := ng.off + by*ng.side
		// A row's buckets lie back to back: one range of senders, their
		// positions in a row too.
		// Each sender is written and kept only if within h, without a
		// branch: most of a square around a circle is outside it.
		lo, hi := base+f.nearOff[row+x0], base+f.nearOff[row+x1+1]
		n := len(best)
		best = slices.Grow(best, int(hi-lo))[:n+int(hi-lo)]
		xs := nx[lo:hi]
		ys, zs, rs, is := ny[lo:hi][:len(xs)], nz[lo:hi][:len(xs)], reach[lo:hi][:len(xs)], idx[lo:hi][:len(xs)]
		out := best[n:][:len(xs)] // one candidate a sender at most
		m := 0
		for i, x := range xs {
			dx, dy, dz := x-rx, ys[i]-ry, zs[i]-rz
			d := dx*dx + dy*dy + dz*dz
			out[m] = makeNearCand(d, is[i]) // m <= i
			m += b2i(d <= h) & b2i(d < rs[i]) & b2i(is[i] != r)
		}
		best = best[:n+m]
	}
	sc.nearBest = best
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
// point to the box from lo to hi.
func boxDist2(lo, hi *[3]float32, x, y, z float32) (near, far float32) {
	var n, fa float32
	for i, v := range [3]float32{x, y, z} {
		d := max(lo[i]-v, v-hi[i], 0)
		e := max(v-lo[i], hi[i]-v)
		n += d * d
		fa += e * e
	}
	return n, fa
}

// nearGrid is a crowded group's grid of buckets for finding nearest
// senders: its actors' frame indices sorted by bucket, row by row
// (Frame.nearIdx, from the group's first actor on), and where each bucket
// starts (Frame.nearOff, side*side+1 entries from off, relative to the
// group's first actor). side 0: no grid, the group's cells serve.
type nearGrid struct {
	min, max [3]float32 // the box around the group's actors
	inv      float32    // buckets per unit
	side     int32
	off      int32
}

// bucket returns the bucket column (axis 0) or row (axis 1) of
// coordinate v, clamped to the grid.
func (ng *nearGrid) bucket(v float32, axis int) int32 {
	b := (v - ng.min[axis]) * ng.inv
	switch {
	case !(b > 0): // below the box, or NaN
		return 0
	case b >= float32(ng.side):
		return ng.side - 1
	}
	return int32(b)
}

// nearGridActors is the fewest actors a group needs for a grid; smaller
// groups are searched through their cells.
const nearGridActors = 96

// nearBucketActors is about how many actors a grid's bucket holds.
const nearBucketActors = 6

// buildNearGrids lays out every crowded group's grid for nearestOf, from
// its actors' positions after Move: a pass for the box, one to count the
// buckets, one to place the actors, each bucket's in canonical order, with
// their positions and their reach squared (reach, by kind: pairOf's range)
// beside them, so that a search reads a row of buckets straight through.
func (f *Frame) buildNearGrids(reach []float32) {
	f.near = resizeSlice(f.near, len(f.groups))
	f.nearIdx = resizeSlice(f.nearIdx, f.Len())
	f.nearX, f.nearY, f.nearZ = resizeSlice(f.nearX, f.Len()), resizeSlice(f.nearY, f.Len()), resizeSlice(f.nearZ, f.Len())
	f.nearReach = resizeSlice(f.nearReach, f.Len())
	f.nearOff = f.nearOff[:0]
	for gi := range f.groups {
		g := &f.groups[gi]
		ng := &f.near[gi]
		*ng = nearGrid{}
		lo, hi := g.actors.lo, g.actors.hi
		n := int(hi - lo)
		if n < nearGridActors { // searched through its cells
			continue
		}
		ng.min = [3]float32{f.x[lo], f.y[lo], f.z[lo]}
		ng.max = ng.min
		for a := lo + 1; a < hi; a++ {
			ng.min = [3]float32{min(ng.min[0], f.x[a]), min(ng.min[1], f.y[a]), min(ng.min[2], f.z[a])}
			ng.max = [3]float32{max(ng.max[0], f.x[a]), max(ng.max[1], f.y[a]), max(ng.max[2], f.z[a])}
		}
		ext := max(ng.max[0]-ng.min[0], ng.max[1]-ng.min[1])
		if !(ext > 0) || math.IsInf(float64(ext), 0) {
			continue
		}
		side := int32(min(max(math.Ceil(math.Sqrt(float64(n)/nearBucketActors)), 2), 128))
		ng.side, ng.inv, ng.off = side, float32(side)/ext, int32(len(f.nearOff))
		buckets := int(side * side)
		f.nearOff = slices.Grow(f.nearOff, buckets+1)[:len(f.nearOff)+buckets+1]
		off := f.nearOff[ng.off:]
		clear(off)
		for a := lo; a < hi; a++ {
			off[ng.bucket(f.y[a], 1)*side+ng.bucket(f.x[a], 0)+1]++
		}
		for b := range buckets {
			off[b+1] += off[b]
		}
		f.nearFill = resizeSlice(f.nearFill, buckets)
		copy(f.nearFill, off[:buckets])
		for a := lo; a < hi; a++ {
			b := ng.bucket(f.y[a], 1)*side + ng.bucket(f.x[a], 0)
			i := lo + f.nearFill[b]
			f.nearFill[b]++
			f.nearIdx[i] = a
			f.nearX[i], f.nearY[i], f.nearZ[i] = f.x[a], f.y[a], f.z[a]
			// A sender that never changed is in nobody's range (pairOf):
			// a reach of 0 keeps it out.
			f.nearReach[i] = 0
			if f.changed[a] != 0 {
				f.nearReach[i] = reach[f.classSet[f.class[a]]]
			}
		}
	}
}

// nearDue reports, for sender a among recipient r's nearest, whether it is
// due at its tier period (tier) and whether it is due at the period r's
// spread stretches that to (stretched: the fast path has then written
// it). want and rhalf are r's (interest.Clock.Want, interest.RecipientHalf).
func (p *Pipeline) nearDue(r, a int32, spread uint8, want *interest.Residues, rhalf uint32) (tier, stretched bool) {
	f := &p.frame
	kind := f.classSet[f.class[a]]
	dx, dy, dz := f.x[a]-f.x[r], f.y[a]-f.y[r], f.z[a]-f.z[r]
	return p.nearPairDue(a, kind, p.tierSets[kind].PeriodSq(dx*dx+dy*dy+dz*dz), spread, want, rhalf)
}

// nearPairDue is nearDue for sender a of kind at tier period tp: the
// rule pairOf applies to a nearest sender.
func (p *Pipeline) nearPairDue(a int32, kind, tp, spread uint8, want *interest.Residues, rhalf uint32) (tier, stretched bool) {
	f := &p.frame
	sp := stretch(tp, p.rankedSpread(kind, spread))
	changed, tick := f.changed[a], f.Tick
	// Both tests are made whatever the first part says, without a
	// branch; due holds for periods 0 and 1.
	res, half := &f.res[a], f.half[a]
	tier = b2i(changed+uint64(tp) > tick)&b2i(p.due(res, want, tp, half, rhalf)) != 0
	stretched = b2i(changed+uint64(sp) > tick)&b2i(p.due(res, want, sp, half, rhalf)) != 0
	return tier, stretched
}

// nearOrNone returns sc.near when nearing, else nothing: the senders a
// backlog's round sends ahead of it, never offers.
func (sc *relayScratch) nearOrNone(nearing bool) []int32 {
	if nearing {
		return sc.near
	}
	return nil
}

// nearestDue finds recipient r's nearest (sc.near) and, of them, those due
// this tick (sc.nearSent: sent whatever the budget) and those due only at
// their tier period (sc.nearExtra: what the fast path, at the spread, did
// not write), each in ascending frame index. It is for a recipient at a
// spread above 1, with NearestSenders set.
func (p *Pipeline) nearestDue(r int32, spread uint8, sc *relayScratch) {
	f := &p.frame
	want := p.clock.Want(f.key[r])
	rhalf := interest.RecipientHalf(f.key[r])
	near := p.nearestOf(r, sc)
	// Each is written to both lists and kept where it belongs, without a
	// branch: whether a pair is due is a coin toss to the predictor.
	k := p.cfg.NearestSenders // room for as many as there may be: no growing by a few
	sent := slices.Grow(sc.nearSent[:0], k)[:len(near)]
	extra := slices.Grow(sc.nearExtra[:0], k)[:len(near)]
	ns, ne := 0, 0
	for _, a := range near {
		tier, stretched := p.nearDue(r, a, spread, &want, rhalf)
		sent[ns], extra[ne] = a, a
		ns += b2i(tier) | b2i(stretched)
		ne += b2i(tier) &^ b2i(stretched)
	}
	sc.nearSent, sc.nearExtra = sent[:ns], extra[:ne]
}

// nearing reports whether a recipient at spread has nearest senders that
// the budget does not stretch.
func (p *Pipeline) nearing(spread uint8) bool {
	return spread > 1 && p.cfg.NearestSenders > 0 && p.cfg.MaxRecordsPerTick > 0
}
