package systems

import (
	"math/bits"
	"slices"

	"github.com/throng-go/throng/interest"
)

// gatherCells writes the senders due to recipient r cell by cell, and
// returns how many pairs throttling alone held back. Each stencil cell is
// taken one of these ways, by its class as seen from r:
//
//   - throttling may act on a pair of it from where r stands (reach): as a
//     cell without a class, below.
//   - one band, with lists: the senders due are one due list of the cell,
//     and the lists of a run of such cells lie back to back. The loop keeps
//     a pending block of due lists (runLo..runHi), extends it while the next
//     list continues it, and writes it when one does not or before anything
//     else: a stencil row in one band is one copy.
//   - two bands under a spread above 1: as one band when the spread
//     stretches both to the same list (the cap of 255), else
//     spreadTwoBands.
//   - at a spread that stretches every period to the cap, any class out
//     of the throttle's reach and not ranked: one list, and a run of such
//     cells one range of lists (flatRuns).
//   - two bands at spread 1: in one band seen from r itself (pointBands),
//     as one band; else, in a cell small enough, as bit sets: which senders
//     lie past the edge is the only thing computed a pair (beyondEdge), the
//     due lists of both periods, as masks, do the rest.
//   - the rest (no class, more bands, a big two-band cell, no lists):
//     tiersRun, throttledRun or pairByPair, as the periods allow.
//
// One band and two band bit sets are most of a crowd's cells, and a call
// a cell would cost about as much as their work: they stay in the loop.
// The other ways are methods of cellWalk, which holds the recipient.
func (p *Pipeline) gatherCells(w *batchOut, r int32, level, spread uint8, listed bool, cells []int32, sc *relayScratch) int64 {
	f := &p.frame
	due := &f.due
	pick := p.startWalk(r, spread, listed, sc)
	rx, ry, rz, rc := pick.rx, pick.ry, pick.rz, f.cellIdx[r]
	c := cellWalk{p: p, f: f, sc: sc, pick: pick, cells: cells, level: level}
	runLo, runHi := int32(-1), int32(-1) // the pending block of due lists: none yet
	// At a spread that stretches every tier period to the cap, every
	// classified cell out of the throttle's reach has the same one list
	// for r: runs of them are one range (flatRuns), where the walk would
	// visit each cell to find its list continues the last.
	flat := spread > 1 && listed && level == 0 && stretch(due.tierPeriods[0], spread) == 255
	if flat && !sc.flatDone {
		sc.flatRuns = p.flatRuns(cells, sc.classes, sc.rankedAt, sc.flatRuns)
		sc.flatDone = true
	}
	// Which of the first stencil positions (cellBoxes.n) are in one band
	// seen from r (pointBands): computed on the first two-band cell.
	pointed := false
	var near, far uint64
	for i := 0; i < len(cells); i++ {
		ci, class := cells[i], sc.classes[i]
		if class.beyond {
			continue // every pair past the class's radius
		}
		period, run := uint8(0), int32(1)
		if flat && sc.flatRuns[i] > 1 {
			// A run of cells whose pairs all have the one period of the
			// cap: one range of lists (flatRuns).
			period, run = due.tierPeriods[0], sc.flatRuns[i]
		} else {
			if spread > 1 && sc.rankedAt[i] { // a lower rank, under the budget (see ranked)
				w.block(due.packed, runLo, runHi) // keep the canonical order
				runLo, runHi = -1, -1
				c.wants()
				p.rankedPairs(w, r, ci, spread, class, &pick.want, pick.rhalf)
				continue
			}
			if class.reach && p.cfg.Throttle.Reaches(farFrom(rx, ry, rz, &f.cells[ci])) {
				class = cellClass{} // throttling may act on a pair from where r stands
			}
			if period = class.period(); period > 0 {
				run = sc.runs[i] // a run of one band: one range of lists for it all
			}
			if period == 0 && class.two() && listed {
				switch {
				case spread == 1:
					if !pointed {
						near, far = c.bandsHere()
						pointed = true
					}
					if i < sc.boxes.n {
						period = pointBand(class, near>>i, far>>i)
					} else {
						period = pointPeriod(rx, ry, rz, &f.cells[ci], class)
					}
				case sc.rslot[class.near] == sc.rslot[class.far]:
					period = class.near // both bands stretched to one period (the cap): one list
				default:
					runLo, runHi = c.spreadTwoBands(w, ci, class, runLo, runHi)
					continue
				}
			}
		}
		if period > 0 && listed { // one band, out of the throttle's reach (see classify)
			last := ci
			if run > 1 {
				i += int(run) - 1
				last = cells[i]
			}
			lo, hi := due.lists(ci, last, sc.rslot[period])
			if lo != runHi { // not adjacent to the pending block: write that first
				w.block(due.packed, runLo, runHi)
				runLo = lo
			}
			runHi = hi
			if ci <= rc && rc <= last { // the recipient's own cell: leave r out
				if j, found := slices.BinarySearch(due.picks[lo:hi], r); found {
					w.block(due.packed, runLo, lo+int32(j))
					runLo = lo + int32(j) + 1
				}
			}
			continue
		}
		w.block(due.packed, runLo, runHi) // keep the canonical order
		runLo, runHi = -1, -1
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		if class.two() && listed && hi-lo <= maskActors {
			// Two bands as bit sets.
			beyond := beyondEdge(f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], rx, ry, rz, class.edge)
			picks := due.mask(ci, sc.rslot[class.near], lo)&^beyond | due.mask(ci, sc.rslot[class.far], lo)&beyond
			if ci == rc {
				picks &^= 1 << (r - lo)
			}
			w.writeSet(picks, lo)
			continue
		}
		tiers := p.tiersOf(ci)
		switch { // the tables while the periods stay short, else a pair at a time
		case level == 0 && int(tiers.Longest())*int(spread) < interest.FastPeriods:
			i = c.tiersRun(w, i, lo, hi)
		case level > 0 && tiers.Longest() < interest.FastPeriods && p.cfg.Throttle.MaxLevel() < interest.FastPeriods-1:
			i = c.throttledRun(w, i, lo, hi)
		default:
			c.pairByPair(w, ci, lo, hi)
		}
	}
	w.block(due.packed, runLo, runHi)
	return c.held
}

// flatRuns returns, for each stencil position i, how many positions from
// i on form a run of consecutive cells (cells[i], cells[i]+1, ...) that a
// recipient whose spread stretches every tier period to the cap (255)
// takes as one range of due lists: classified (one band or two), within
// the radius, out of the throttle's reach and not ranked (see ranked).
// At that spread every such cell's pairs have the one period 255, so
// their lists for the recipient are those of one slot, back to back.
// Positions inside a run, and the others, get 1.
func (p *Pipeline) flatRuns(cells []int32, classes []cellClass, ranked []bool, out []int32) []int32 {
	flat := func(i int) bool {
		c := classes[i]
		return c.near != 0 && !c.beyond && !c.reach && !ranked[i]
	}
	return runLengths(cells, out, flat, func(_, j int) bool { return flat(j) })
}

// startWalk readies the unit's scratch for recipient r's walk at spread:
// its picker (the recipient, for the ways that take a pair at a time),
// which it returns, and, when r has lists (listed), the due list slot
// each tier period's cells give it (rslot).
func (p *Pipeline) startWalk(r int32, spread uint8, listed bool, sc *relayScratch) *picker {
	f := &p.frame
	tick := f.Tick
	rhalf := interest.RecipientHalf(f.key[r])
	var oldest uint64 // changes at or before it are stale for every pair
	if longest := p.longest * uint64(spread); tick > longest {
		oldest = tick - longest
	}
	if listed {
		for _, tp := range f.due.tierPeriods {
			sc.rslot[tp] = f.due.recipientSlot(stretch(tp, spread), rhalf)
		}
	}
	pick := &sc.pick
	pick.r, pick.rx, pick.ry, pick.rz, pick.oldest, pick.tick, pick.spread = r, f.x[r], f.y[r], f.z[r], oldest, tick, spread
	pick.rhalf, pick.clock = rhalf, p.clock
	return pick
}

// cellWalk is one recipient's walk over its stencil (gatherCells), as the
// ways of taking a cell that are not in the loop share it: the recipient
// (pick, set by startWalk), and what they find out on the way. It lives
// on gatherCells' stack.
type cellWalk struct {
	p      *Pipeline
	f      *Frame
	sc     *relayScratch
	pick   *picker // the recipient: sc.pick
	cells  []int32 // the recipient's stencil cells, in canonical order
	level  uint8   // the pressure level the relay works at (relayLevel)
	wanted bool    // pick has the recipient's residues (wants)
	held   int64   // pairs throttling alone kept back
}

// wants gives the picker the recipient's residues (and the vector
// kernels the recipient, picker.aim). Only pairs decided one by one need
// them, which the lists leave to few cells if any: computed on the first.
func (c *cellWalk) wants() {
	if !c.wanted {
		c.aim()
	}
}

// aim is wants' work, outlined so that wants inlines.
func (c *cellWalk) aim() {
	c.pick.aim(c.p.clock.Want(c.f.key[c.pick.r]), &c.p.kindBands[0], c.p.cfg.Throttle, c.level)
	c.wanted = true
}

// spreadTwoBands writes the senders due from cell ci, whose pairs with
// the recipient's cell fall in the two bands of class, under a spread
// above 1, and returns the pending block of due lists runLo..runHi (see
// gatherCells), written first if anything follows it. Stretched by a
// spread, the periods are long and a cell's lists hold a sender or two,
// often none: only those are placed on either side of the edge, one by
// one; in a cell small enough as bit sets (no merge of the two lists, a
// branch a sender the CPU could not predict), else by merging the lists
// (writeTwoBands).
func (c *cellWalk) spreadTwoBands(w *batchOut, ci int32, class cellClass, runLo, runHi int32) (int32, int32) {
	f, due, t := c.f, &c.f.due, c.pick
	r := t.r
	near, far := c.sc.rslot[class.near], c.sc.rslot[class.far]
	lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
	if hi-lo > maskActors {
		nlo, nhi := due.list(ci, near)
		flo, fhi := due.list(ci, far)
		if nlo == nhi && flo == fhi {
			return runLo, runHi // nothing due to this recipient: the pending block stays open
		}
		w.block(due.packed, runLo, runHi) // keep the canonical order
		c.p.writeTwoBands(w, due.picks[nlo:nhi], due.picks[flo:fhi], r, class.edge)
		return -1, -1
	}
	nearSet, farSet := due.mask(ci, near, lo), due.mask(ci, far, lo)
	either := nearSet | farSet
	if ci == f.cellIdx[r] {
		either &^= 1 << (r - lo)
	}
	if either == 0 {
		return runLo, runHi // nothing due to this recipient: the pending block stays open
	}
	w.block(due.packed, runLo, runHi) // keep the canonical order
	var beyond uint64
	for set := either; set != 0; set &= set - 1 {
		a := lo + int32(bits.TrailingZeros64(set))
		dx, dy, dz := f.x[a]-t.rx, f.y[a]-t.ry, f.z[a]-t.rz
		beyond |= uint64(b2i(dx*dx+dy*dy+dz*dz >= class.edge)) << (a - lo)
	}
	w.writeSet((nearSet&^beyond|farSet&beyond)&either, lo)
	return -1, -1
}

// bandsHere fills the boxes of the recipient cell's stencil positions,
// if this unit has not yet for the cell, and returns which are in one band
// seen from the recipient itself (pointBands).
func (c *cellWalk) bandsHere() (near, far uint64) {
	b := &c.sc.boxes
	if b.n < 0 {
		b.fill(c.f, c.cells, c.sc.classes)
	}
	return pointBands(b, c.pick.rx, c.pick.ry, c.pick.rz)
}

// tiersRun writes the senders due from stencil position i, whose actors
// are lo to hi-1, by the tier table, a pair at a time without a branch
// (chooseByTiers): for two bands in a cell too big for bit sets, more than
// two bands, a cell too small to classify, or a budgeted client's cell
// without lists, while every stretched period is short. The following
// positions of that kind whose actors continue this cell's join it (in a
// sparse world, a stencil row of chunks is one run of actors): one call
// for them all. It returns the last position taken.
func (c *cellWalk) tiersRun(w *batchOut, i int, lo, hi int32) int {
	set := c.f.cells[c.cells[i]].kind
	i, hi = c.f.joinRun(c.cells, c.sc.classes, i, hi, c.pick.spread)
	c.byTiers(w, lo, hi, set)
	return i
}

// byTiers writes the senders due from actors lo to hi-1, of kind set's
// table, by the tier table, a pair at a time without a branch
// (chooseByTiers): tiersRun's work once its run is known.
func (c *cellWalk) byTiers(w *batchOut, lo, hi int32, set uint8) {
	c.wants()
	f, sc := c.f, c.sc
	changed, res := f.changed[lo:hi], f.res[lo:hi]
	sc.growSel(len(changed))
	c.pick.lo = lo
	c.pick.cut = c.p.kindReach[set]
	if f.kindTable[set] != 0 { // a class's own table: the vector kernel holds the players'
		w.write(sc.sel[:c.pick.chooseByTiersOneByOne(sc.sel, changed, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], res, &c.p.tierSets[set])])
		return
	}
	w.write(sc.sel[:c.pick.chooseByTiers(sc.sel, changed, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], res, &c.p.tiers)])
}

// maxSmallStencil is the most senders a stencil may hold for its
// recipients at spread 1 to be decided by the tier table alone
// (gatherSmall): about a hundred pairs by the vector kernel cost less
// than classifying the stencil's cells and walking their lists.
const maxSmallStencil = 96

// stencilRuns reports whether a recipient cell whose stencil is cells,
// holding senders actors, is small (at most maxSmallStencil senders, and
// every table's periods short), and returns in out its runs: its cells'
// actors, consecutive cells of one table that continue each other
// joined, each as its first actor, its end and its first cell's kind
// (for gatherSmall, and gatherDense whatever the size).
func (p *Pipeline) stencilRuns(cells []int32, senders int, out []int32) (bool, []int32) {
	f := &p.frame
	out = out[:0]
	small := senders <= maxSmallStencil
	for i := 0; i < len(cells); i++ {
		c := &f.cells[cells[i]]
		if p.tierSets[c.kind].Longest() >= interest.FastPeriods {
			small = false
		}
		if n := len(out); n > 0 && out[n-2] == c.actors.lo && f.kindTable[out[n-1]] == f.kindTable[c.kind] {
			out[n-2] = c.actors.hi
			continue
		}
		out = append(out, c.actors.lo, c.actors.hi, int32(c.kind))
	}
	return small, out
}

// gatherSmall is gatherCells for a recipient at spread 1 and pressure
// level 0 whose cell's stencil is small (stencilRuns): every sender decided
// by the tier table, a run of cells at a time, without the cells'
// classes and lists.
func (p *Pipeline) gatherSmall(w *batchOut, r int32, cells []int32, sc *relayScratch) {
	c := cellWalk{p: p, f: &p.frame, sc: sc, pick: p.startWalk(r, 1, false, sc), cells: cells}
	for k := 0; k+2 < len(sc.stencilRuns); k += 3 {
		c.byTiers(w, sc.stencilRuns[k], sc.stencilRuns[k+1], uint8(sc.stencilRuns[k+2]))
	}
}

// throttledRun is tiersRun where throttling may act on the pairs, while
// the periods are short: each pair's interest and combined periods from
// the tables, the pairs held back by throttling alone counted
// (chooseThrottled).
func (c *cellWalk) throttledRun(w *batchOut, i int, lo, hi int32) int {
	c.wants()
	f, sc, p := c.f, c.sc, c.p
	set := f.cells[c.cells[i]].kind
	i, hi = f.joinRun(c.cells, sc.classes, i, hi, c.pick.spread)
	changed, res := f.changed[lo:hi], f.res[lo:hi]
	sc.growSel(len(changed))
	c.pick.lo = lo
	c.pick.cut = p.kindReach[set]
	choose := c.pick.chooseThrottled
	if f.kindTable[set] != 0 { // a class's own table: the vector kernel holds the players'
		choose = c.pick.chooseThrottledOneByOne
	}
	m, h := choose(sc.sel, changed, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], res, f.half[lo:hi], &p.tierSets[set], p.cfg.Throttle, c.level)
	c.held += int64(h)
	w.write(sc.sel[:m])
	return i
}

// pairByPair writes the senders due from actors lo to hi-1 (a cell) one
// by one, with a branch a pair: what neither the lists nor the tables
// cover (a spread without lists whose stretched periods are long,
// throttling with very long periods). The pairs held back by throttling
// alone are counted.
func (c *cellWalk) pairByPair(w *batchOut, ci, lo, hi int32) {
	c.wants()
	p, f := c.p, c.f
	tiers, cut := p.tiersOf(ci), p.kindReach[f.cells[ci].kind]
	xs, ys, zs := f.x[lo:hi], f.y[lo:hi], f.z[lo:hi]
	t := c.pick
	changed, res, want := f.changed[lo:hi], f.res[lo:hi], &t.want
	r, rx, ry, rz, rhalf := t.r, t.rx, t.ry, t.rz, t.rhalf
	level, spread, tick, oldest := c.level, t.spread, t.tick, t.oldest
	held := int64(0)
	for k, ch := range changed {
		a := lo + int32(k)
		if ch <= oldest || a == r {
			continue
		}
		dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
		if dx*dx+dy*dy+dz*dz >= cut {
			continue // beyond the class's radius
		}
		period := tiers.PeriodSq(dx*dx + dy*dy + dz*dz)
		ip := period
		if level > 0 {
			ip, period = p.periods(tiers, dx*dx+dy*dy+dz*dz, level)
		}
		if spread > 1 {
			ip, period = stretch(ip, spread), stretch(period, spread)
		}
		if ch+uint64(period) <= tick {
			continue
		}
		if period > 1 && !p.due(&res[k], want, period, f.half[a], rhalf) {
			if period > ip && ch+uint64(ip) > tick && (ip == 1 || p.due(&res[k], want, ip, f.half[a], rhalf)) {
				held++
			}
			continue
		}
		w.one(a)
	}
	c.held += held
}
