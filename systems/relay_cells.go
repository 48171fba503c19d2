package systems

// sameRun reports whether the senders of cells a and b may share a run
// at spread: the same table, and under a spread the same kind, neither
// cell mixed (see ranked).
func (f *Frame) sameRun(a, b *cell, spread uint8) bool {
	if spread > 1 {
		return a.kind == b.kind && !a.mixed && !b.mixed
	}
	return f.kindTable[a.kind] == f.kindTable[b.kind]
}

// joinRun extends the actors [lo, hi) of stencil position i over the
// following positions that are decided pair by pair too (no class) and
// whose actors continue them, and returns the last position taken and
// the run's end.
//
// A run holds senders of one tier table; under a spread (spread), of one
// kind, as a rank then changes their periods (rankedSpread).
func (f *Frame) joinRun(cells []int32, classes []cellClass, i int, hi int32, spread uint8) (int, int32) {
	first := &f.cells[cells[i]]
	for i+1 < len(cells) && classes[i+1] == (cellClass{}) && f.cells[cells[i+1]].actors.lo == hi && f.sameRun(first, &f.cells[cells[i+1]], spread) {
		i++
		hi = f.cells[cells[i]].actors.hi
	}
	return i, hi
}

// cellBoxes is the boxes of a recipient cell's stencil positions, axis by
// axis, with their classes' edges: what pointBands reads (with AVX2, eight
// positions an instruction). n is the positions it covers, a multiple of 8
// and at most maskActors (the rest are padding); later positions use
// pointPeriod.
type cellBoxes struct {
	minx, maxx, miny, maxy, minz, maxz, edge []float32
	n                                        int
}

// fill takes the boxes and edges of the first maskActors positions of
// cells, whose classes are classes.
func (b *cellBoxes) fill(f *Frame, cells []int32, classes []cellClass) {
	n := min(len(cells), maskActors)
	b.n = (n + 7) &^ 7
	for _, s := range []*[]float32{&b.minx, &b.maxx, &b.miny, &b.maxy, &b.minz, &b.maxz, &b.edge} {
		*s = resizeSlice(*s, b.n)
		clear((*s)[n:])
	}
	for i, ci := range cells[:n] {
		c := &f.cells[ci]
		b.minx[i], b.maxx[i] = c.min[0], c.max[0]
		b.miny[i], b.maxy[i] = c.min[1], c.max[1]
		b.minz[i], b.maxz[i] = c.min[2], c.max[2]
		b.edge[i] = classes[i].edge
	}
}

// cellClass is what a recipient cell knows about the pairs it forms with
// one sender cell: every pair has period near (a uniform block: far ==
// near), or pairs closer than edge (squared) have period near and the rest
// far (two neighbouring bands), or nothing (near == 0: pair by pair).
type cellClass struct {
	near, far uint8
	edge      float32
	// reach: under throttling, some pairs of the two cells may be at or
	// beyond the throttle distance; each recipient checks its own
	// position before the class counts for it (gather).
	reach bool
	// beyond: every pair lies at or beyond the sender cell's radius
	// (Class.Radius): none is due.
	beyond bool
}

// period is the block's single period, or 0 when pairs differ.
func (c cellClass) period() uint8 {
	if c.near == c.far {
		return c.near
	}
	return 0
}

// two reports a block of two neighbouring bands.
func (c cellClass) two() bool { return c.near != c.far && c.near != 0 }

// classify returns, for recipient cell rc against each cell of its
// stencil, how the periods of the pairs between them are laid out (see
// cellClass). Under throttling (level > 0) a cell pair that may reach the
// throttle distance, and has a period shorter than the level's throttle
// period, is marked (reach): a recipient from whose position it may is
// decided pair by pair, so that held-back pairs are counted exactly; pairs
// closer than the throttle distance keep their interest periods at any
// pressure, and so do pairs whose interest period is already as long.
//
// The bounds are computed in float32 exactly as a pair's squared distance
// is (dx*dx + dy*dy + dz*dz, the same rounding at each step), and rounding
// is monotonic, so every pair's distance lies between them; the tier
// table's Span then gives each pair the period PeriodSq would.
func (p *Pipeline) classify(rc int32, cells []int32, level uint8, out []cellClass) []cellClass {
	f := &p.frame
	out = resizeSlice(out, len(cells))
	c := &f.cells[rc]
	// Bounding is worth it when its cost is shared: by the recipients of
	// cell rc (one classify serves them all) or by the senders of the cell
	// bounded. Between two cells of a few actors each (a sparse world), the
	// pairs one by one cost less.
	few := c.actors.hi-c.actors.lo < minClassified
	// The throttle lengthens a pair's period to tp at most (Combine takes
	// the larger): a class whose every period is at least tp is out of its
	// reach at this level, and keeps its lists.
	tp := p.cfg.Throttle.FarPeriod(level)
	for i, di := range cells {
		d := &f.cells[di]
		tiers := &p.tierSets[d.kind]
		if few && d.actors.hi-d.actors.lo < minClassified && tiers.Longest() > 1 {
			out[i] = cellClass{}
			continue
		}
		nx, fx := boxSpan(c.min[0], c.max[0], d.min[0], d.max[0])
		ny, fy := boxSpan(c.min[1], c.max[1], d.min[1], d.max[1])
		nz, fz := boxSpan(c.min[2], c.max[2], d.min[2], d.max[2])
		farSq := fx*fx + fy*fy + fz*fz
		out[i] = cellClass{}
		if reach := p.kindReach[d.kind]; !(farSq < reach) { // some pairs at or past the radius
			out[i].beyond = !(nx*nx+ny*ny+nz*nz < reach) // all of them
			continue                                     // else pair by pair
		}
		lo, hi, edge, ok := tiers.Span(nx*nx+ny*ny+nz*nz, farSq)
		if ok {
			out[i] = cellClass{near: lo, far: hi, edge: edge, reach: level > 0 && (lo < tp || p.throttleEveryReach) && p.cfg.Throttle.Reaches(farSq)}
		}
	}
	return out
}

// boxSpan returns the least and the greatest distance along one axis
// between a point of [cmin, cmax] and a point of [dmin, dmax], with the
// float32 steps a pair's own difference takes (see classify). Like
// axisSpan it compares instead of calling the built-in max.
func boxSpan(cmin, cmax, dmin, dmax float32) (near, far float32) {
	if gap := dmin - cmax; gap > 0 {
		near = gap
	} else if gap := cmin - dmax; gap > 0 {
		near = gap
	}
	far = dmax - cmin
	if other := cmax - dmin; other > far {
		far = other
	}
	return near, far
}

// uniformRuns returns, for each stencil position i, how many positions
// from i on form a run of consecutive cells (cells[i], cells[i]+1, ...)
// in one band, all of the same period: their due lists lie back to back
// (see dueLists.build), so the relay takes them as one range. Positions
// inside a run, and those not in one band, get 1. A run holds senders of
// one kind (cell.kind): a ranked kind is taken apart under a spread.
func (f *Frame) uniformRuns(cells []int32, classes []cellClass, out []int32) []int32 {
	return runLengths(cells, out, func(i int) bool {
		return classes[i].period() > 0 && !classes[i].reach
	}, func(i, j int) bool {
		c := &f.cells[cells[j]]
		return classes[j].period() == classes[i].period() && !classes[j].reach && c.kind == f.cells[cells[i]].kind && !c.mixed
	})
}

// runLengths returns, for each stencil position i, how many positions
// from i on form a run of consecutive cells (cells[i], cells[i]+1, ...):
// one that starts (starts(i)), and each next one that joins it
// (joins(i, j) for the run's first position i). Positions inside a run,
// and those that start none, get 1.
func runLengths(cells []int32, out []int32, starts func(i int) bool, joins func(i, j int) bool) []int32 {
	out = resizeSlice(out, len(cells))
	for i := 0; i < len(cells); {
		n := 1
		if starts(i) {
			for i+n < len(cells) && cells[i+n] == cells[i]+int32(n) && joins(i, i+n) {
				n++
			}
		}
		out[i] = int32(n)
		for k := 1; k < n; k++ {
			out[i+k] = 1
		}
		i += n
	}
	return out
}

// minClassified is the fewest senders a cell needs for classify to bound
// its pairs with the recipient's cell when there are bands: below it the
// bounds cost more than deciding the few pairs one by one.
const minClassified = 4

// pointPeriod returns the one period of every pair between a recipient at
// (rx, ry, rz) and the senders of cell c, whose pairs with the recipient's
// cell fall in the two bands of class, or 0 when the recipient's own pairs
// still straddle the edge between them. Like classify, it bounds each
// pair's squared distance with the same float32 steps the pair's own
// computation takes (a sender's coordinate minus the recipient's lies
// between the box's ends minus the recipient's), so the answer holds for
// every pair exactly; the bounds lie inside the class's, so only the edge
// needs comparing.
func pointPeriod(rx, ry, rz float32, c *cell, class cellClass) uint8 {
	nx, fx := axisSpan(c.min[0]-rx, c.max[0]-rx)
	ny, fy := axisSpan(c.min[1]-ry, c.max[1]-ry)
	nz, fz := axisSpan(c.min[2]-rz, c.max[2]-rz)
	switch {
	case fx*fx+fy*fy+fz*fz < class.edge:
		return class.near
	case nx*nx+ny*ny+nz*nz >= class.edge:
		return class.far
	}
	return 0
}

// farFrom bounds from above the squared distance from (rx, ry, rz) to any
// actor of cell c, with the pairs' own float32 steps (see pointPeriod).
func farFrom(rx, ry, rz float32, c *cell) float32 {
	_, fx := axisSpan(c.min[0]-rx, c.max[0]-rx)
	_, fy := axisSpan(c.min[1]-ry, c.max[1]-ry)
	_, fz := axisSpan(c.min[2]-rz, c.max[2]-rz)
	return fx*fx + fy*fy + fz*fz
}

// axisSpan returns the least and the greatest distance along one axis from
// the recipient to a box reaching from lo to hi (relative to the
// recipient, lo <= hi). It compares rather than calling the built-in
// min and max, whose NaN and signed-zero rules cost several instructions
// each (the coordinates are finite: Move validated them).
func axisSpan(lo, hi float32) (near, far float32) {
	if lo > 0 {
		return lo, hi
	}
	if hi < 0 {
		return -hi, -lo
	}
	far = hi
	if -lo > hi {
		far = -lo
	}
	return 0, far
}

// boundCells computes, after Move, the box of cells c0 to c1-1 around
// their actors' positions and whether all of them changed this tick.
func (f *Frame) boundCells(c0, c1 int) {
	for i := c0; i < c1; i++ {
		c := &f.cells[i]
		lo, hi := c.actors.lo, c.actors.hi
		c.min = [3]float32{f.x[lo], f.y[lo], f.z[lo]}
		c.max = c.min
		c.fresh = true
		for a := lo; a < hi; a++ {
			c.min[0], c.max[0] = min(c.min[0], f.x[a]), max(c.max[0], f.x[a])
			c.min[1], c.max[1] = min(c.min[1], f.y[a]), max(c.max[1], f.y[a])
			c.min[2], c.max[2] = min(c.min[2], f.z[a]), max(c.max[2], f.z[a])
			c.fresh = c.fresh && f.changed[a] == f.Tick
		}
	}
}

// pointBands returns which boxes of b (a recipient cell's first stencil
// positions, see cellBoxes) are in one band seen from (rx, ry, rz): bit i
// of near is set when pointPeriod would give position i its class's near
// period, of far when it would give the far one. Seen from the recipient
// itself rather than from its whole cell, about half of the two-band
// blocks are in one band. With AVX2, eight boxes an instruction
// (pointBands8, the same float32 steps); else one by one.
func pointBands(b *cellBoxes, rx, ry, rz float32) (near, far uint64) {
	if useAVX2 {
		return pointBands8(b, b.n, rx, ry, rz)
	}
	for i := range b.n {
		nx, fx := axisSpan(b.minx[i]-rx, b.maxx[i]-rx)
		ny, fy := axisSpan(b.miny[i]-ry, b.maxy[i]-ry)
		nz, fz := axisSpan(b.minz[i]-rz, b.maxz[i]-rz)
		near |= uint64(b2i(fx*fx+fy*fy+fz*fz < b.edge[i])) << i
		far |= uint64(b2i(nx*nx+ny*ny+nz*nz >= b.edge[i])) << i
	}
	return near, far
}

// pointBand is pointPeriod for stencil position i of class, from the sets
// pointBands returned shifted right by i.
func pointBand(class cellClass, near, far uint64) uint8 {
	switch {
	case near&1 != 0:
		return class.near
	case far&1 != 0:
		return class.far
	}
	return 0
}
