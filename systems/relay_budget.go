package systems

import (
	"encoding/binary"
	"math"
	"slices"
	"unsafe"

	"github.com/throng-go/throng/interest"
)

// aimFor is the number of records a tick that the spreads of recipients
// in a cluster at pressure level aim at: MaxRecordsPerTick unpressed, then
// less by an equal step a level, to budgetFloorNum/budgetFloorDen of it at
// the highest level. A recipient whose due records pass its aim takes a
// longer spread (adjustSpread), as far as pressedSpread, so a cluster under
// pressure sends each recipient fewer records, farthest first (a spread
// stretches every period alike, and far pairs have the longest), and its
// relay reads shorter base lists: the work shed is the records not sent,
// and the relay stays on its lists. 0 (no budget) stays 0.
func (p *Pipeline) aimFor(level uint8) int {
	budget := p.cfg.MaxRecordsPerTick
	top := int(p.cfg.Throttle.MaxLevel())
	if budget <= 0 || level == 0 || top == 0 {
		return budget
	}
	shed := budget * (budgetFloorDen - budgetFloorNum) * min(int(level), top) / (budgetFloorDen * top)
	return max(budget-shed, 1)
}

// pressedSpread returns the longest spread pressure may give a recipient:
// the largest spread step that stretches every band's period alike, below
// the cap of 255. Past it the far bands' periods stop at 255 while the
// near ones go on stretching, so pressure would shed the nearest pairs'
// updates, which a crowd notices first.
func pressedSpread(longest uint8) int {
	most := 1
	for _, s := range spreadSteps {
		if int(s)*int(max(longest, 1)) <= 255 {
			most = int(s)
		}
	}
	return most
}

// At the highest pressure a client's spread aims at budgetFloorNum/
// budgetFloorDen of MaxRecordsPerTick (a quarter: with the default budget
// 14 records a tick, 420 a second at 30 Hz): the nearest players still
// move smoothly. Past that the server slows its tick rate instead (see the
// server's dilation).
const budgetFloorNum, budgetFloorDen = 1, 4

// stretch multiplies a period by a recipient's spread, capped at 255.
func stretch(period, spread uint8) uint8 {
	return uint8(min(int(period)*int(spread), 255))
}

// adjustSpread keeps a recipient's due records near its per-connection
// budget. The spread multiplies every pair period of the recipient (closer
// senders keep proportionally more updates), so the records due fall in
// proportion to it: on a tick when more records were due than the budget,
// it jumps to the spread at which they would fill seven eighths of it (one
// more at least; at most 255, where every stretched period has reached its
// cap of 255); it falls a step after 30 ticks in a row in which the
// records due, at the step below, would have fitted in three quarters of
// the budget. The backlog absorbs the ticks between, so the cut is owed,
// not lost, and the backlog's slow path stays the exception instead of
// running every tick for every crowded recipient. (Rising by one a tick, a
// crowd of 2,000 arriving at once took seconds of the slow path to settle.)
//
// Spreads take the values of spreadSteps (a spread "one less" is the step
// below), so that a crowd's clients share a few spreads and the due lists
// built for them (plan) cover them all.
//
// Under pressure the spread aims lower (aim, below budget: see aimFor):
// records due past the aim but within the budget lengthen the spread the
// same way, but only up to most (pressedSpread), and are sent, not owed;
// the release then waits for the records to fit the aim.
func (s *session) adjustSpread(due, budget, aim, most int) {
	spread := max(int(s.spread), 1)
	switch {
	case due > budget:
		s.calm = 0
		target := max(spread+1, (spread*due*8+budget*7-1)/(budget*7))
		spread = stepAtLeast(target)
	case due > aim && spread < most:
		s.calm = 0
		target := max(spread+1, (spread*due*8+aim*7-1)/(aim*7))
		spread = min(stepAtLeast(target), most)
	case due > aim:
		s.calm = 0
	case spread > 1 && due*spread < aim*3/4*stepBelow(spread):
		if s.calm++; s.calm >= spreadReleaseTicks {
			s.calm = 0
			spread = stepBelow(spread)
		}
	default:
		s.calm = 0
	}
	s.spread = uint8(spread)
}

// adjustSpread is session.adjustSpread, then adjustThin, for a recipient
// with due records this tick, at the unit's aim. The spread stretches
// every sender but the nearest (sc.nearSent, when nearing), so it is
// adjusted on the others, against what the nearest leave of the budget
// and the aim; and on as many as were due before thinning (at thin),
// taken as the share kept scaled up. Thinning follows only the records due
// at the longest spread (spread, the one they were chosen at), not those
// of a tick whose spread has just jumped to it.
func (p *Pipeline) adjustSpread(s *session, due int, nearing bool, spread, thin uint8, sc *relayScratch) {
	budget, aim := p.cfg.MaxRecordsPerTick, sc.aim
	if nearing {
		n := len(sc.nearSent)
		due, budget, aim = due-n, max(budget-n, 1), max(aim-n, 1)
	}
	due = due * 256 / keepOf(thin)
	s.adjustSpread(due, budget, aim, p.pressedSpread)
	if spread == 255 || s.spread < 255 {
		s.adjustThin(due, budget)
	}
}

// spreadSteps are the spreads a client may have: every value to 6, then
// about a quarter apart, to 255.
var spreadSteps = [...]uint8{1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64, 80, 96, 128, 160, 192, 255}

// stepAtLeast returns the smallest spread step of at least v (255 beyond).
func stepAtLeast(v int) int {
	for _, s := range spreadSteps {
		if int(s) >= v {
			return int(s)
		}
	}
	return 255
}

// stepBelow returns the spread step below v (1 for 1).
func stepBelow(v int) int {
	below := 1
	for _, s := range spreadSteps {
		if int(s) >= v {
			break
		}
		below = int(s)
	}
	return below
}

// spreadReleaseTicks is how many calm ticks lower a recipient's spread.
const spreadReleaseTicks = 30

// gatherBase writes the senders due to recipient r, whose spread has
// base lists (dueLists.based): from each cell of its stencil, the senders
// of its base list (due at some multiple of the spread: a candidate), each
// checked at the pair's own stretched period, tier period times spread:
// changed within it, and on its phase. The tier period is the cell class's
// when the cell is in one band, else the pair's distance decides. Where
// the spread stretches a band's period past 255, the period stops at 255,
// which the spread does not divide: the base lists decide the bands below
// the cap, the capped lists (dueLists.capSlot) the bands at it, and the
// two choices of a run, each in canonical order, are merged
// (mergeSorted16; past 64 senders or without AVX-512 mergeTwoEnds, or
// mergeAscending where the capped choice is a few among many).
func (p *Pipeline) gatherBase(w *batchOut, r int32, spread uint8, cells []int32, sc *relayScratch) {
	f := &p.frame
	due := &f.due
	rhalf := interest.RecipientHalf(f.key[r])
	slot := due.baseListSlot(spread, rhalf)
	tps := due.tierPeriods
	capped := int(tps[len(tps)-1])*int(spread) > 255
	var capSlot int32
	if capped {
		capSlot = due.capListSlot(rhalf)
	}
	atCap := p.aimBase(r, spread, rhalf, false, sc)
	// The base lists of one slot for consecutive cells lie back to back:
	// each run of consecutive cells of one table in the stencil is one
	// range of candidates (sc.baseRuns), and a candidate's cell gives its
	// stencil position.
	var want interest.Residues
	wanted := false
	for b := 0; b+1 < len(sc.baseRuns); b += 2 {
		i, j := sc.baseRuns[b], sc.baseRuns[b+1]
		if j < 0 { // a lower rank: see rankedPairs
			if !wanted {
				want, wanted = p.clock.Want(f.key[r]), true
			}
			p.classifyCell(cells, 0, sc)
			p.rankedPairs(w, r, cells[i], spread, sc.classes[i], &want, rhalf)
			continue
		}
		if atCap {
			atCap = p.aimBase(r, spread, rhalf, false, sc)
		}
		m := p.chooseRun(&sc.sel, slot, cells, i, j, r, spread, sc)
		if capped && farFrom(f.x[r], f.y[r], f.z[r], &sc.runBoxes[b/2]) >= p.capEdge(int(f.cells[cells[i]].kind), spread, sc) {
			atCap = p.aimBase(r, spread, rhalf, true, sc)
			m2 := p.chooseRun(&sc.sel2, capSlot, cells, i, j, r, spread, sc)
			if useAVX512 && m+m2 <= 64 { // mergeSorted16 writes up to four groups
				sc.merged = grownSel(sc.merged, 64)
				mergeSorted16(&sc.merged[0], &sc.sel[0], m, &sc.sel2[0], m2)
				w.write(sc.merged[:m+m2])
				continue
			}
			if m <= twoEndsRatio*m2 {
				sc.merged = grownSel(sc.merged, m+m2)
				w.write(sc.merged[:mergeTwoEnds(sc.merged, sc.sel[:m], sc.sel2[:m2])])
				continue
			}
			sc.sel = grownSel(sc.sel, m+m2)
			m = mergeAscending(sc.sel, m, sc.sel2[:m2])
		}
		w.write(sc.sel[:m])
	}
}

// capEdge returns the squared distance from which senders of kind are in
// a band whose tier period spread stretches past 255 (0 for every
// distance, +Inf for none): where a run's senders are all closer, its
// capped lists hold none due, and gatherBase leaves them unread. The
// unit keeps the last answer (sc.capAt).
func (p *Pipeline) capEdge(kind int, spread uint8, sc *relayScratch) float32 {
	if c := &sc.capAt; c.ok && c.kind == kind && c.spread == spread {
		return c.edge
	}
	lim, periods := p.tierSets[kind].Bands()
	edge := float32(math.Inf(1))
	for band, tp := range periods {
		if int(tp)*int(spread) > 255 {
			edge = 0 // band 0: every distance
			if band > 0 {
				edge = lim[band]
			}
			break
		}
	}
	sc.capAt = capEdgeAt{ok: true, kind: kind, spread: spread, edge: edge}
	return edge
}

// capEdgeAt is capEdge's last answer: edge for kind and spread.
type capEdgeAt struct {
	ok     bool
	spread uint8
	kind   int
	edge   float32
}

// runBoxes returns the box around the senders of each run of runs (two
// entries a run, baseRuns'), in out: the union of its cells' boxes. A
// ranked cell's run (end -1) gets an empty entry.
func (p *Pipeline) runBoxes(cells []int32, runs []int32, out []cell) []cell {
	f := &p.frame
	out = out[:0]
	for b := 0; b+1 < len(runs); b += 2 {
		var box cell
		if i, j := runs[b], runs[b+1]; j >= 0 {
			box = f.cells[cells[i]]
			for _, c := range cells[i+1 : j] {
				for a := range 3 {
					box.min[a] = min(box.min[a], f.cells[c].min[a])
					box.max[a] = max(box.max[a], f.cells[c].max[a])
				}
			}
		}
		out = append(out, box)
	}
	return out
}

// chooseRun writes to *sel, grown to hold them, the candidates of stencil
// positions i to j-1 (consecutive cells of one table) in the lists of slot
// that are due to recipient r as aimBase last aimed the pass, in order,
// and returns how many.
func (p *Pipeline) chooseRun(buf *[]int32, slot int32, cells []int32, i, j, r int32, spread uint8, sc *relayScratch) int {
	f := &p.frame
	due := &f.due
	first := cells[i]
	lo, hi := due.lists(first, cells[j-1], slot)
	cands := due.picks[lo:hi]
	info := due.cands.slice(lo-due.candsAt, hi-due.candsAt)
	*buf = grownSel(*buf, len(cands))
	sel := *buf
	var classes []cellClass // until a kernel needs them
	if sc.classified {
		classes = sc.classes[i:j]
	}
	kind := f.cells[first].kind
	m := p.chooseBased(sel, cands, info, classes, first, r, spread, kind, sc)
	if m < 0 {
		p.classifyCell(cells, 0, sc)
		m = p.chooseBased(sel, cands, info, sc.classes[i:j], first, r, spread, kind, sc)
	}
	return m
}

// aimBase sets, for recipient r (its phase half rhalf) at spread, what
// chooseBased reads of each tier period for one pass of gatherBase: the
// pair's stretched period (sc.bperiod, 0 for a band the pass leaves to
// the other: no sender is due in it), the residue wanted at it (sc.bwant)
// and, where the tier periods' cycle is short, the quotients due
// (sc.bdue). The base lists' pass (capPass false) takes the bands whose
// stretched period t*spread is below the cap: every candidate has the
// residue it wants modulo the spread, and is due when its quotient by the
// spread is the wanted residue's, modulo t (dueLists.quot). The capped
// lists' pass takes the bands at the cap, 255: every candidate has the
// residue wanted there, any quotient is due, and only its age decides.
// It reports whether it aimed the capped pass.
func (p *Pipeline) aimBase(r int32, spread uint8, rhalf uint32, capPass bool, sc *relayScratch) bool {
	f := &p.frame
	due := &f.due
	k := &sc.baseK
	k.ready = useAVX2 && due.cycle > 0
	ticks := sc.baseTicks.at(due, spread, f.Tick)
	all := uint64(1)<<due.cycle - 1
	for i, tp := range due.tierPeriods {
		atCap := int(tp)*int(spread) > 255
		var period uint8
		var want uint32
		var quots uint64
		switch {
		case atCap && capPass:
			period, want, quots = 255, due.wantResidue(255, due.tickDue[255], rhalf), all
		case !atCap && !capPass:
			period = tp * spread
			want = due.wantResidue(period, ticks[i], rhalf)
			if due.cycle > 0 {
				quots = due.every[tp] << due.divide(want, spread) // a based spread is at least 2
			}
		}
		sc.bperiod[tp], sc.bwant[tp], sc.bdue[tp] = period, uint8(want), quots
		if due.cycle > 0 {
			k.ready = k.ready && k.setDue(tp, quots, period)
		}
	}
	if k.ready {
		k.aim(f, r)
	}
	k.wide, k.table = k.ready && useAVX512, -1
	return capPass
}

// mergeAscending merges b, ascending, into the m ascending senders at
// the front of a (which has room for both), and returns how many there
// are. A sender is never in both: its band is below the cap or at it.
// Each of b, from the last, finds its place by a binary search and the
// senders of a after it move up as one block: each moves once. Its
// searches branch on comparisons no predictor learns, so it is the merge
// only where b is a few senders among many of a (twoEndsRatio); else
// mergeTwoEnds, or with AVX-512 mergeSorted16 (up to 64 senders in all),
// which places each of b by counting the senders of a below it.
func mergeAscending(a []int32, m int, b []int32) int {
	hi := m // a[:hi] are not yet moved
	for j := len(b) - 1; j >= 0; j-- {
		y := b[j]
		lo, _ := slices.BinarySearch(a[:hi], y) // y is not in a
		copy(a[lo+j+1:hi+j+1], a[lo:hi])
		a[lo+j] = y
		hi = lo
	}
	return m + len(b)
}

// twoEndsRatio: gatherBase merges by mergeTwoEnds where the base choice
// has at most this many senders for each of the capped choice's, and by
// mergeAscending's searches where it has more (a merge that steps over
// every sender costs more than a few searches of a long list).
const twoEndsRatio = 6

// mergeTwoEnds writes a and b (each ascending, no sender in both, each
// with room for one more past its end, which it overwrites) to out, as
// one ascending list, and returns how many there are. It merges from
// both ends at once, the least senders from the front and the greatest
// from the back, half each: every step takes the lesser (or greater) of
// two heads without a branch, and the two ends' steps, independent, run
// side by side, where one merge's steps would each wait on the last.
func mergeTwoEnds(out, a, b []int32) int {
	m, m2 := len(a), len(b)
	n := m + m2
	a, b, out = a[:m+1], b[:m2+1], out[:n]
	a[m], b[m2] = math.MaxInt32, math.MaxInt32 // the front's stops
	i, j := 0, 0                               // the front's heads
	i2, j2 := m-1, m2-1                        // the back's heads (-1: that list is spent)
	for k := range n / 2 {
		x, y := a[i], b[j]
		v, t := y, 0
		if x < y {
			v, t = x, 1
		}
		out[k] = v
		i += t
		j += 1 - t
		x2, y2 := a[max(i2, 0)], b[max(j2, 0)]
		if i2 < 0 {
			x2 = math.MinInt32
		}
		if j2 < 0 {
			y2 = math.MinInt32
		}
		v2, t2 := y2, 0
		if x2 > y2 {
			v2, t2 = x2, 1
		}
		out[n-1-k] = v2
		i2 -= t2
		j2 -= 1 - t2
	}
	if n%2 == 1 {
		// The one left is the lesser front head: the other is a stop or
		// was taken by the back, and is greater.
		out[n/2] = min(a[i], b[j])
	}
	return n
}

// baseTicks holds, for one spread and tick, tickDue at each tier period
// (dueLists.tierPeriods) stretched by the spread: the same for every
// recipient at the spread that tick, and two divisions each to compute.
type baseTicks struct {
	tick   uint64
	spread uint8
	due    []uint32
}

// at returns tickDue for each tier period of d stretched by spread at
// tick, computing them unless b holds them.
func (b *baseTicks) at(d *dueLists, spread uint8, tick uint64) []uint32 {
	if b.spread != spread || b.tick != tick || len(b.due) != len(d.tierPeriods) {
		b.due = b.due[:0]
		for _, tp := range d.tierPeriods {
			b.due = append(b.due, tickDue(stretch(tp, spread), tick))
		}
		b.spread, b.tick = spread, tick
	}
	return b.due
}

// baseRuns returns the stencil's runs of base lists as gatherBase reads
// them, two entries a run: its first stencil position and one past its
// last, for consecutive cells of one table none of which is ranked
// (Pipeline.ranked); a ranked cell is a run of its own, its end -1.
func (p *Pipeline) baseRuns(cells []int32, ranked []bool, out []int32) []int32 {
	f := &p.frame
	out = out[:0]
	for i := 0; i < len(cells); {
		if ranked[i] {
			out = append(out, int32(i), -1)
			i++
			continue
		}
		j := i + 1
		kind := f.cells[cells[i]].kind
		for j < len(cells) && cells[j] == cells[j-1]+1 && !ranked[j] && f.cells[cells[j]].kind == kind {
			j++
		}
		out = append(out, int32(i), int32(j))
		i = j
	}
	return out
}

// chooseBased writes to sel the candidates of a run of base lists (cands,
// from cells first, first+1, ... of table kind, whose classes are
// classes; what it reads of them, info, in the same order) due to
// recipient r at its spread, in order, and returns how many (see
// gatherBase). With phases of at most 32 quotients (baseKernel.ready):
// with AVX-512, chooseBased16 decides sixteen candidates at a time by
// their distances (the classes are bounds of them: a pair's tier period is
// the one its distance falls in either way); with AVX2, chooseBased8 eight
// at a time, unless a candidate's class has no periods. Else
// chooseBasedOneByOne, which gives the same senders. Classes may be nil
// (not computed): where a kernel needs them, it returns -1, having
// chosen nothing.
func (p *Pipeline) chooseBased(sel, cands []int32, info baseCands, classes []cellClass, first, r int32, spread, kind uint8, sc *relayScratch) int {
	if len(cands) == 0 {
		return 0
	}
	if k := &sc.baseK; k.ready && k.wide && len(sel) >= len(cands)+16 && k.aimTable(int32(kind), &p.kindBands[kind], p.kindLimits[kind], p.kindReach[kind]) {
		k.picks, k.x, k.y, k.z = &cands[0], &info.x[0], &info.y[0], &info.z[0]
		k.age, k.quot = &info.age[0], &info.quot[0]
		return chooseBased16(&sel[0], k, len(cands))
	}
	if classes == nil {
		return -1
	}
	if k := &sc.baseK; k.ready {
		k.picks, k.x, k.y, k.z, k.cell = &cands[0], &info.x[0], &info.y[0], &info.z[0], &info.cell[0]
		k.age, k.quot, k.classes, k.first = &info.age[0], &info.quot[0], &classes[0], first
		if m := chooseBased8(&sel[0], k, len(cands)); m >= 0 {
			return m
		}
	}
	return p.chooseBasedOneByOne(sel, cands, info, classes, first, r, spread, sc)
}

// chooseBasedOneByOne is chooseBased a candidate at a time. Each
// candidate is decided without a branch the CPU could mispredict: its tier
// period is its cell class's near one, or the far one at or past the
// class's edge (a one-band class's edge is +Inf, a missing class's 0,
// whose periods are 0: then the tier table decides, behind the one
// branch, which such cells, rare in a crowd, leave predicted). Whether a
// candidate is due is a coin toss, and without a branch the loads of one
// candidate's data do not wait for the last one's decision. Where the
// tier periods' cycle is short (dueLists.cycle) its phase is a bit of
// sc.bdue by its quotient, else its residue at the stretched period
// against sc.bwant.
func (p *Pipeline) chooseBasedOneByOne(sel, cands []int32, info baseCands, classes []cellClass, first, r int32, spread uint8, sc *relayScratch) int {
	f := &p.frame
	due := &f.due
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	n := len(cands)
	sel = sel[:n]
	xs, ys, zs, cells, ages, quots := info.x[:n], info.y[:n], info.z[:n], info.cell[:n], info.age[:n], info.quot[:n]
	quoted := due.cycle > 0
	m := 0
	for i, a := range cands {
		cell := cells[i]
		class := classes[cell-first]
		dx, dy, dz := xs[i]-rx, ys[i]-ry, zs[i]-rz
		d := dx*dx + dy*dy + dz*dz
		beyond := uint8(b2i(d >= class.edge)) // a flag, not a branch
		tp := class.near ^ (class.near^class.far)&-beyond
		in := 1
		if tp == 0 { // a cell without a class (a few senders, or one the radius cuts): rare, so the branch is predicted
			tp = p.tiersOf(cell).PeriodSq(d)
			in = b2i(d < p.kindReach[f.cells[cell].kind])
		}
		period := sc.bperiod[tp] // 0 where the pass leaves the band to the other
		var onPhase int
		if quoted { // the same every time: predicted
			onPhase = int(sc.bdue[tp] >> quots[i] & 1)
		} else {
			onPhase = b2i(uint8(due.residueAbove1(f.half[a], period)) == sc.bwant[tp]) // a based spread is at least 5
		}
		sel[m] = a
		m += b2i(ages[i] < period) & onPhase & b2i(a != r) & in
	}
	return m
}

// baseKernel is what chooseBased8 and chooseBased16 read: the run's
// candidates (their columns from the run's first), the run's cell classes
// (chooseBased8) or its table's steps (chooseBased16), the recipient, per
// tier period its quotients due (sc.bdue), and constant vectors.
// gatherBase aims it at a recipient (ready: a kernel may decide its
// candidates), chooseBased at each run.
type baseKernel struct {
	picks       *int32
	x, y, z     *float32
	cell        *int32
	age, quot   *uint8
	classes     *cellClass
	lut         *[256]uint64 // compressLUT
	bdue        [8]uint32    // per tier period t, at t-1: sc.bdue[t]
	bperiod     [8]uint32    // per tier period t, at t-1: sc.bperiod[t]
	lane        [8]int32     // 0 to 7
	eight       [8]int32
	one         [8]int32
	low         [8]int32 // 0xFF
	rx, ry, rz  float32
	first, self int32
	class       int32 // the size of a cellClass
	ready       bool
	// wide: chooseBased16 may decide the recipient's runs (AVX-512), by
	// steps, laid out for the senders' table of kind table (-1: none yet).
	wide  bool
	table int32
	steps [5]baseStep
}

// baseStep is one of baseKernel.steps: from the squared distance limit on,
// the quotients due at the band's tier period (bit q) and its stretched
// period. The first step's limit is not read; the last is the table's
// radius, with no quotient due.
type baseStep struct {
	limit  float32
	due    uint32
	period uint32
}

// aimTable lays out k.steps for the senders of table kind (its bands b,
// with limits finite limits, and its radius squared cut) at the
// recipient's spread, unless they are laid out for it; it reports false
// where chooseBased16 cannot take the table: more than three finite
// limits, or a band's tier period without quotients (setDue).
func (k *baseKernel) aimTable(kind int32, b *tierBands, limits int, cut float32) bool {
	if k.table == kind {
		return true
	}
	if limits > 3 {
		return false
	}
	for band := 0; band <= limits; band++ {
		if tp := b.period[band]; tp < 1 || tp > 8 {
			return false
		}
	}
	step := func(band int, limit float32) baseStep {
		tp := b.period[band]
		return baseStep{limit: limit, due: k.bdue[tp-1], period: k.bperiod[tp-1]}
	}
	k.steps[0] = step(0, 0)
	for i := 1; i <= 3; i++ {
		if i > limits {
			k.steps[i] = step(limits, float32(math.Inf(1)))
			continue
		}
		k.steps[i] = step(i, b.limSq[i-1][0])
	}
	k.steps[4] = baseStep{limit: cut}
	k.table = kind
	return true
}

// chooseBased8 reads a cellClass's near and far periods as the low two
// bytes of the four from near: this fails to compile unless far follows
// near (a length below 0 overflows).
var _ [unsafe.Offsetof(cellClass{}.far) - unsafe.Offsetof(cellClass{}.near) - 1]struct{}
var _ [1 + unsafe.Offsetof(cellClass{}.near) - unsafe.Offsetof(cellClass{}.far)]struct{}

// setDue records the quotients due at tier period tp and its stretched
// period (0: none due in its band), and reports whether the kernel can
// read them: tp at most 8 (a permute of eight entries finds them) and no
// quotient due past 31 (32-bit lanes).
func (k *baseKernel) setDue(tp uint8, due uint64, period uint8) bool {
	if tp == 0 || tp > 8 || due>>32 != 0 {
		return false
	}
	k.bdue[tp-1], k.bperiod[tp-1] = uint32(due), uint32(period)
	return true
}

// aim loads recipient r of frame f into the kernel; its bdue and bperiod
// must be set.
func (k *baseKernel) aim(f *Frame, r int32) {
	if k.lut == nil {
		k.lut = &compressLUT
		for i := range 8 {
			k.lane[i], k.eight[i], k.one[i], k.low[i] = int32(i), 8, 1, 0xFF
		}
		k.class = int32(unsafe.Sizeof(cellClass{}))
	}
	k.rx, k.ry, k.rz = f.x[r], f.y[r], f.z[r]
	k.self = r
}

// gatherOwed builds recipient r's batch under the per-connection budget:
// every sender in view is offered to the recipient's backlog (due or still
// owed), the backlog picks at most MaxRecordsPerTick by accumulated
// priority (closer and longer-waiting senders first), and the picks are
// written in canonical order. What is cut stays owed, not lost. It walks
// every pair of r's stencil (visit), so it serves a tick without the
// frame's index; pickOwed makes the same offers from the due senders and
// those owed.
func (p *Pipeline) gatherOwed(r int32, s *session, level, spread, thin uint8, throttled *int64, sc *relayScratch) int32 {
	f := &p.frame
	longest := uint8(min(p.longest*uint64(spread), 255))
	owed := s.backlog.Owed() > 0
	g := &f.groups[f.group[r]]
	sc.reserveOwed(f.stencilSenders(g))
	nearing := p.nearing(spread)
	if nearing {
		p.nearestDue(r, spread, sc)
	}
	near := sc.nearOrNone(nearing)
	s.backlog.Use(&sc.backlog) // one scratch per unit, not per recipient
	sc.offered = sc.offered[:0]
	due := 0
	if nearing {
		due = len(sc.nearSent) // sent outside the backlog: counted, not offered
	}
	p.visitNear(r, level, spread, thin, near, func(a int32, _, period uint8, isDue, thr bool) {
		if len(near) > 0 && near[0] == a { // visit walks in ascending frame index
			near = near[1:]
			return
		}
		if thr {
			*throttled++
		}
		if isDue {
			due++
		}
		if !isDue && !owed {
			return
		}
		s.backlog.Offer(f.id[a], rankedWeight(interest.Weight(period, longest), p.kindRank[f.classSet[f.class[a]]]), isDue)
		sc.offered = append(sc.offered, a)
	})
	if owed { // the fast path did not run: adjust the spread here
		p.adjustSpread(s, due, nearing, spread, thin, sc)
	}
	return p.takeOwed(r, s, nearing, sc)
}

// pickOwed is gatherOwed for a recipient whose due senders the fast path
// has just written (count records in sc.batch, in canonical order), on a
// tick with the frame's index: it offers the backlog those and the senders
// owed that are still in view, in canonical order (ascending frame index,
// the order visit walks). Those are the offers of gatherOwed's walk that
// the backlog keeps (a sender neither due nor owed is not kept), so it
// picks the same senders; but it looks at the due and the owed, not at
// every sender in view, which in a crowd of thousands was most of the
// relay.
func (p *Pipeline) pickOwed(r int32, s *session, level, spread, thin uint8, count int32, nearing bool, throttled *int64, sc *relayScratch) int32 {
	f := &p.frame
	longest := uint8(min(p.longest*uint64(spread), 255))
	owed := s.backlog.Owed() > 0
	g := &f.groups[f.group[r]]
	sc.reserveOwed(f.stencilSenders(g))
	sc.dueIdx = sc.dueIdx[:0]
	for i := range count {
		// Every record is a frame actor's, so every id is in the index.
		if a, ok := f.index.get(binary.LittleEndian.Uint32(batchRecord(sc.batch, i))); ok {
			sc.dueIdx = append(sc.dueIdx, a)
		}
	}
	sc.owedIdx = sc.owedIdx[:0]
	if owed {
		sc.owedIDs = s.backlog.AppendOwed(sc.owedIDs[:0])
		for _, id := range sc.owedIDs {
			if a, ok := f.index.get(id); ok && g.sees(f.group[a]) {
				sc.owedIdx = append(sc.owedIdx, a)
			}
		}
		slices.Sort(sc.owedIdx)
	}
	want := p.clock.Want(f.key[r])
	rhalf := interest.RecipientHalf(f.key[r])
	s.backlog.Use(&sc.backlog)
	sc.offered = sc.offered[:0]
	dues, owes := sc.dueIdx, sc.owedIdx
	near := sc.nearOrNone(nearing) // sent outside the backlog (takeOwed), never offered
	for len(dues) > 0 || len(owes) > 0 {
		var a int32
		switch {
		case len(owes) == 0 || len(dues) > 0 && dues[0] < owes[0]:
			a, dues = dues[0], dues[1:]
		case len(dues) > 0 && dues[0] == owes[0]:
			a, dues, owes = dues[0], dues[1:], owes[1:]
		default:
			a, owes = owes[0], owes[1:]
		}
		for len(near) > 0 && near[0] < a {
			near = near[1:]
		}
		if len(near) > 0 && near[0] == a {
			continue
		}
		// Under a budget there is no throttling (relayLevel): nothing is
		// kept back by it alone, so throttled is the fast path's.
		_, period, isDue, _, in := p.pairOf(r, a, level, spread, thin, false, &want, rhalf)
		if !in || !isDue && !owed {
			continue
		}
		s.backlog.Offer(f.id[a], rankedWeight(interest.Weight(period, longest), p.kindRank[f.classSet[f.class[a]]]), isDue)
		sc.offered = append(sc.offered, a)
	}
	return p.takeOwed(r, s, nearing, sc)
}

// takeOwed ends a recipient's round of offers (gatherOwed, pickOwed): the
// backlog takes at most MaxRecordsPerTick, less the nearest due when
// nearing (sc.nearSent, written first), and their records are written in
// the order offered.
func (p *Pipeline) takeOwed(r int32, s *session, nearing bool, sc *relayScratch) int32 {
	f := &p.frame
	budget := p.cfg.MaxRecordsPerTick
	if nearing {
		budget -= len(sc.nearSent)
	}
	sc.taken = s.backlog.Take(budget, sc.taken[:0])
	// Take returns its picks in offer order: keep those offers, in place.
	chosen := sc.offered[:0]
	for _, a := range sc.offered {
		if len(chosen) < len(sc.taken) && f.id[a] == sc.taken[len(chosen)] {
			chosen = append(chosen, a)
		}
	}
	w := newBatchOut(reserve(sc.batch, f.stencilSenders(&f.groups[f.group[r]])), f.records, f.Tick)
	if nearing {
		w.write(sc.nearSent)
	}
	w.write(chosen)
	sc.batch = w.finish()
	f.relays[r] = w.count
	return w.count
}
