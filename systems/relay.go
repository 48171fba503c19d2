package systems

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
)

// datagramSize is the size of a full movement datagram.
const datagramSize = net.BatchHeaderSize + net.MaxRecordsPerBatch*net.RecordSize

// relayJob is the Relay phase as a pool job: unit i is shard i's recipients.
type relayJob struct{ p *Pipeline }

// RunUnit builds the outgoing batch of every recipient in shard i and
// hands it to the transport.
func (j *relayJob) RunUnit(i int) {
	start := time.Now()
	p := j.p
	f := &p.frame
	sh := f.shards[i]
	sc := &p.scratch[i]
	sc.cell = -1
	var total, throttled, bytes int64
	var datagrams, owed int32
	level := p.relayLevel(sh.Level)
	sc.aim = p.aimFor(sh.Level)
	for a := sh.Lo; a < sh.Hi; a++ {
		if f.session[a] == 0 {
			f.relays[a] = 0
			continue
		}
		n := p.gather(a, level, &throttled, sc)
		if s := f.sess[a]; s != nil && p.cfg.MaxRecordsPerTick > 0 {
			sc.spreads[max(s.spread, 1)]++  // for the next tick's lists (BeginRelay)
			owed += int32(s.backlog.Owed()) // for the join, which would pull the line back
		}
		if n == 0 {
			continue
		}
		total += int64(f.relays[a])
		s := net.SessionID(f.session[a])
		buf := sc.batch
		datagrams += int32((len(buf) + datagramSize - 1) / datagramSize)
		bytes += int64(len(buf))
		if p.batcher != nil {
			p.batcher.SendUnreliableBatch(s, buf, datagramSize)
			continue
		}
		for off := 0; off < len(buf); off += datagramSize {
			p.transport.SendUnreliable(s, buf[off:min(off+datagramSize, len(buf))])
		}
	}
	p.shardRelays[i] = total
	p.shardDatagrams[i] = datagrams
	p.shardBytes[i] = bytes
	p.shardOwed[i] = owed
	p.shardThrottled[i] = throttled
	p.shardRelayTime[i] = time.Since(start)
}

// reserve returns buf emptied, with room for a record from each of senders
// (a stencil's actors, stencilSenders): a batch never needs more, so once
// a crowd has formed the units' buffers stop growing and the relay
// allocates nothing.
func reserve(buf []byte, senders int) []byte {
	// Whole datagrams: a stencil whose population wanders a little (actors
	// roaming across chunk borders) then stays within the capacity it has.
	datagrams := (senders + net.MaxRecordsPerBatch - 1) / net.MaxRecordsPerBatch
	if need := datagrams * datagramSize; cap(buf) < need {
		return make([]byte, 0, need+need/4)
	}
	return buf[:0]
}

// stencilSenders returns the number of actors in stencil g: the most
// senders a recipient of g can see.
func (f *Frame) stencilSenders(g *group) int {
	senders := 0
	for _, h := range g.stencil[:g.nst] {
		senders += int(f.groups[h].actors.hi - f.groups[h].actors.lo)
	}
	return senders
}

// periods returns a pair's interest period and the period it gets once the
// cluster's throttle level is applied: the larger of the two, never their
// product. Pairs closer than the throttle distance are never throttled.
func (p *Pipeline) periods(distSq float32, level uint8) (interestPeriod, period uint8) {
	interestPeriod = p.tiers.PeriodSq(distSq)
	period = interestPeriod
	if level > 0 {
		period = interest.Combine(interestPeriod, p.cfg.Throttle.PeriodSq(distSq, level))
	}
	return interestPeriod, period
}

// relayLevel is the pressure level the relay works at: level, or 0 where
// the throttle lengthens no pair's period at level. Past the throttle
// distance every pair already has at least the interest period the tier
// table gives that distance (with the default tiers 3 or 4), and the
// throttle period (1 + level) only counts where it is longer; below that,
// pressure changes nothing the relay sends, and the relay keeps its
// lists instead of deciding far cells pair by pair.
//
// Under the per-connection budget the level is always 0: pressure tightens
// the budget instead (recordBudget), which the spreads follow on the due
// lists. Far pairs decided one by one would cost more than the lists the
// throttle made the relay leave, so a throttled tick would cost more than
// the same tick unthrottled, and the pressure that cost fed would never
// come down.
func (p *Pipeline) relayLevel(level uint8) uint8 {
	th := &p.cfg.Throttle
	if p.cfg.MaxRecordsPerTick > 0 {
		return 0
	}
	if level > 0 && !p.throttleEveryReach && th.FarPeriod(level) <= p.tiers.PeriodSq(th.DistanceSq()) {
		return 0
	}
	return level
}

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
// the largest spread step whose base lists exist (its periods stretched by
// it stay below 256, see dueLists.plan). Past it the relay would decide
// pairs one by one, which costs more than it sheds.
func pressedSpread(tiers *interest.Tiers) int {
	most := 1
	for _, s := range spreadSteps {
		if int(s)*int(max(tiers.Longest(), 1)) <= 255 {
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

// gather builds recipient r's batch: the record of every sender in r's 3x3
// stencil that is due this tick (not r itself, changed within the pair's
// period, and on the pair's phase), visited in canonical order so the bytes
// do not depend on how the work was split. When more are due than the
// per-connection budget allows, or records are still owed from earlier
// ticks, the recipient's backlog decides (gatherOwed).
//
// This is the N^2 loop, and it works cell by cell (gatherCells). When the
// box around a sender cell and the box around the recipient's cell (or the
// recipient itself) are in one interest band, every pair between them has
// the same period (see classify), and the senders due are one of the
// cell's due lists (due.go): one block copy, a run of such cells one copy.
// Cell pairs that straddle two bands are decided as bit sets, one distance
// comparison per pair; the rest (more bands, pairs throttling may reach)
// go pair by pair through the tier table without branches, and what the
// lists do not cover (a spread without lists, very long periods) pair by
// pair with branches. A budgeted client whose spread has base lists reads
// those instead (gatherBase).
func (p *Pipeline) gather(r int32, level uint8, throttled *int64, sc *relayScratch) int32 {
	f := &p.frame
	tick := f.Tick
	s := f.sess[r]
	budget := p.cfg.MaxRecordsPerTick
	spread := uint8(1)
	if s != nil && budget > 0 {
		spread = max(s.spread, 1)
		if s.backlog.Owed() > 0 {
			return p.gatherOwed(r, s, level, spread, throttled, sc)
		}
	}
	g := &f.groups[f.group[r]]
	cells := f.stencilCells(g)
	if rc := f.cellIdx[r]; sc.cell != rc {
		sc.classes = p.classify(rc, cells, level, sc.classes)
		sc.runs = uniformRuns(cells, sc.classes, sc.runs)
		sc.boxes.n = -1 // filled when a recipient first needs them
		sc.cell = rc
	}
	due := &f.due
	w := newBatchOut(reserve(sc.batch, f.stencilSenders(g)), f.records, tick)
	var held int64 // pairs throttling alone kept back
	if due.based[spread] && level == 0 {
		p.gatherBase(&w, r, spread, cells, sc)
	} else {
		// Under throttling a spread with base lists is decided pair by pair.
		held = p.gatherCells(&w, r, level, spread, due.listed(spread) && !due.based[spread], cells, sc)
	}
	sc.batch = w.finish()
	if s != nil && budget > 0 {
		s.adjustSpread(int(w.count), budget, sc.aim, p.pressedSpread)
		if int(w.count) > budget {
			if s.spread > spread && !sc.retry {
				// The spread jumped: choose again at the new one, which
				// fits the budget as a rule, rather than cut hundreds of
				// records into the backlog, whose slow path would then run
				// for this recipient until they had all been sent.
				sc.retry = true
				n := p.gather(r, level, throttled, sc)
				sc.retry = false
				return n
			}
			return p.gatherOwed(r, s, level, spread, throttled, sc)
		}
	}
	*throttled += held
	f.relays[r] = w.count
	return w.count
}

// gatherCells writes the senders due to recipient r cell by cell (see
// gather), and returns how many pairs throttling alone held back.
func (p *Pipeline) gatherCells(w *batchOut, r int32, level, spread uint8, listed bool, cells []int32, sc *relayScratch) (held int64) {
	f := &p.frame
	due := &f.due
	tick := f.Tick
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	rhalf := interest.RecipientHalf(rid)
	rc := f.cellIdx[r]
	var oldest uint64 // changes at or before it are stale for every pair
	if longest := p.longest * uint64(spread); tick > longest {
		oldest = tick - longest
	}
	if listed {
		for _, tp := range due.tierPeriods { // the list each tier period's cells give r
			sc.rslot[tp] = due.recipientSlot(stretch(tp, spread), rhalf)
		}
	}
	pick := &sc.pick
	pick.r, pick.rx, pick.ry, pick.rz, pick.oldest, pick.tick, pick.spread = r, rx, ry, rz, oldest, tick, spread
	// The recipient's residues (pick.want) only matter to pairs decided
	// one by one, which the lists leave to few cells if any: computed on
	// the first.
	wanted := false
	// Which two-band cells are in one band seen from the recipient itself
	// (see pointPeriod), by stencil position: computed on the first.
	pointed := false
	var nearBits, farBits uint64
	// Lists of one slot for consecutive cells lie back to back (see
	// dueLists.build): runLo..runHi is the block of due lists not yet
	// written, extended while the next list continues it.
	runLo, runHi := int32(-1), int32(-1)
	for i := 0; i < len(cells); i++ {
		ci := cells[i]
		class := sc.classes[i]
		if class.reach {
			if p.cfg.Throttle.Reaches(farFrom(rx, ry, rz, &f.cells[ci])) {
				class = cellClass{} // throttling may act: pair by pair, held pairs counted
			} else {
				class.reach = false // not from where this recipient stands
			}
		}
		period := class.period()
		if period == 0 && class.two() && listed {
			if spread > 1 {
				// Stretched by a spread, the periods are long and a cell's
				// lists hold a sender or two, often none: only those are
				// placed on either side of the edge, one by one; in a cell
				// small enough, as bit sets (no merge of the two lists, a
				// branch a sender the CPU could not predict).
				if lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi; hi-lo <= maskActors {
					near, far := due.mask(ci, sc.rslot[class.near], lo), due.mask(ci, sc.rslot[class.far], lo)
					either := near | far
					if ci == rc {
						either &^= 1 << (r - lo)
					}
					if either == 0 {
						continue // nothing due to this recipient: the pending block stays open
					}
					w.block(due.packed, runLo, runHi) // keep the canonical order
					runLo, runHi = -1, -1
					var beyond uint64
					for set := either; set != 0; set &= set - 1 {
						a := lo + int32(bits.TrailingZeros64(set))
						dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
						beyond |= uint64(b2i(dx*dx+dy*dy+dz*dz >= class.edge)) << (a - lo)
					}
					w.writeSet((near&^beyond|far&beyond)&either, lo)
					continue
				}
				nlo, nhi := due.list(ci, sc.rslot[class.near])
				flo, fhi := due.list(ci, sc.rslot[class.far])
				if nlo == nhi && flo == fhi {
					continue // nothing due to this recipient: the pending block stays open
				}
				w.block(due.packed, runLo, runHi) // keep the canonical order
				runLo, runHi = -1, -1
				p.writeTwoBands(w, due.picks[nlo:nhi], due.picks[flo:fhi], r, class.edge)
				continue
			}
			// Seen from the recipient itself rather than from its whole
			// cell, about half of the two-band blocks are in one band.
			// With AVX2 the first maskActors stencil positions are
			// checked at once, on the first such block (pointBands8: the
			// same bounds as pointPeriod, eight boxes an instruction).
			if !pointed && useAVX2 {
				if sc.boxes.n < 0 {
					sc.boxes.fill(f, cells, sc.classes)
				}
				nearBits, farBits = pointBands8(&sc.boxes, sc.boxes.n, rx, ry, rz)
				pointed = true
			}
			if useAVX2 && i < sc.boxes.n {
				switch {
				case nearBits>>i&1 != 0:
					period = class.near
				case farBits>>i&1 != 0:
					period = class.far
				}
			} else {
				period = pointPeriod(rx, ry, rz, &f.cells[ci], class)
			}
		}
		if period > 0 && listed { // one band, out of the throttle's reach (see classify)
			// The cells of a run in one band have their lists back to
			// back: one range for them all.
			last := ci
			if n := sc.runs[i]; n > 1 && class.period() > 0 {
				i += int(n) - 1
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
		if !wanted && !(class.two() && listed && hi-lo <= maskActors) {
			pick.want, wanted = p.clock.Want(rid), true
			if useAVX2 {
				pick.k.aim(pick, &p.bands)
				if level > 0 {
					pick.k.aimThrottled(pick, &p.bands, p.cfg.Throttle, level)
				}
			}
		}
		switch {
		case class.two() && listed && hi-lo <= maskActors:
			// Two neighbouring bands, as bit sets: which senders are past
			// the edge is the only thing to compute per pair; the due
			// lists of both periods, as masks, do the rest.
			beyond := beyondEdge(f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], rx, ry, rz, class.edge)
			picks := due.mask(ci, sc.rslot[class.near], lo)&^beyond | due.mask(ci, sc.rslot[class.far], lo)&beyond
			if ci == rc {
				picks &^= 1 << (r - lo)
			}
			w.writeSet(picks, lo)
		case level == 0 && int(p.tiers.Longest())*int(spread) < interest.FastPeriods:
			// Two bands in a cell too big for bit sets, more than two
			// bands, or a cell too small to classify, or a budgeted
			// client's cell without lists whose stretched periods are
			// all short: the tier table per pair, without a branch per
			// pair. The following cells of that kind whose actors
			// continue this cell's join it (in a sparse world, a stencil
			// row of chunks is one run of actors): one call for them all.
			i, hi = f.joinRun(cells, sc.classes, i, hi)
			changed, res := f.changed[lo:hi], f.res[lo:hi]
			sc.growSel(len(changed))
			pick.lo = lo
			w.write(sc.sel[:pick.chooseByTiers(sc.sel, changed, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], res, &p.tiers)])
		case level > 0 && p.tiers.Longest() < interest.FastPeriods && p.cfg.Throttle.MaxLevel() < interest.FastPeriods-1:
			// Throttling may act on these pairs: each pair's interest and
			// combined periods from the tables, the pairs held back by
			// throttling alone counted, without a branch per pair; the
			// following cells of the kind whose actors continue this
			// cell's in the same call.
			i, hi = f.joinRun(cells, sc.classes, i, hi)
			changed, res := f.changed[lo:hi], f.res[lo:hi]
			sc.growSel(len(changed))
			pick.lo, pick.rhalf, pick.clock = lo, rhalf, p.clock
			m, h := pick.chooseThrottled(sc.sel, changed, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], res, f.half[lo:hi], &p.tiers, p.cfg.Throttle, level)
			held += int64(h)
			w.write(sc.sel[:m])
		default:
			// A spread without lists, very long periods: pair by pair.
			xs, ys, zs := f.x[lo:hi], f.y[lo:hi], f.z[lo:hi]
			changed, res, want := f.changed[lo:hi], f.res[lo:hi], &pick.want
			for k, c := range changed {
				a := lo + int32(k)
				if c <= oldest || a == r {
					continue
				}
				dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
				period := p.tiers.PeriodSq(dx*dx + dy*dy + dz*dz)
				ip := period
				if level > 0 {
					ip, period = p.periods(dx*dx+dy*dy+dz*dz, level)
				}
				if spread > 1 {
					ip, period = stretch(ip, spread), stretch(period, spread)
				}
				if c+uint64(period) <= tick {
					continue
				}
				if period > 1 && !p.due(&res[k], want, period, f.half[a], rhalf) {
					if period > ip && c+uint64(ip) > tick && (ip == 1 || p.due(&res[k], want, ip, f.half[a], rhalf)) {
						held++
					}
					continue
				}
				w.one(a)
			}
		}
	}
	w.block(due.packed, runLo, runHi)
	return held
}

// gatherBase writes the senders due to recipient r, whose spread has
// base lists (dueLists.based): from each cell of its stencil, the senders
// of its base list (due at some multiple of the spread: a candidate), each
// checked at the pair's own stretched period, tier period times spread:
// changed within it, and on its phase. The tier period is the cell class's
// when the cell is in one band, else the pair's distance decides.
func (p *Pipeline) gatherBase(w *batchOut, r int32, spread uint8, cells []int32, sc *relayScratch) {
	f := &p.frame
	due := &f.due
	tick := f.Tick
	rhalf := interest.RecipientHalf(f.id[r])
	slot := due.baseListSlot(spread, rhalf)
	// Per tier period: the residue a sender's half must have modulo the
	// stretched period (as dueLists.recipientSlot, without the slot).
	for _, tp := range due.tierPeriods {
		period := tp * spread
		sc.bwant[tp] = uint8(due.wantResidue(period, tickDue(period, tick), rhalf))
	}
	// The base lists of one slot for consecutive cells lie back to back:
	// each run of consecutive cells in the stencil is one range of
	// candidates, and a candidate's cell gives its stencil position.
	for i := 0; i < len(cells); {
		j := i + 1
		for j < len(cells) && cells[j] == cells[j-1]+1 {
			j++
		}
		first := cells[i]
		lo, hi := due.lists(first, cells[j-1], slot)
		classes := sc.classes[i:j]
		i = j
		cands := due.picks[lo:hi]
		sc.growSel(len(cands))
		w.write(sc.sel[:p.chooseBased(sc.sel, cands, classes, first, r, spread, &sc.bwant)])
	}
}

// chooseBased writes to sel the candidates of a run of base lists (cands,
// from cells first, first+1, ... whose classes are classes) due to
// recipient r at its spread, in order, and returns how many (see
// gatherBase). Each candidate is decided without a branch the CPU could
// mispredict: its tier period is its cell class's near one, or the far
// one at or past the class's edge (a one-band class's edge is +Inf, a
// missing class's 0, whose periods are 0: then the tier table decides,
// behind the one branch, which such cells, rare in a crowd, leave
// predicted). Whether a candidate is due is a coin toss, and without a
// branch the loads of one candidate's data do not wait for the last
// one's decision.
func (p *Pipeline) chooseBased(sel, cands []int32, classes []cellClass, first, r int32, spread uint8, want *[256]uint8) int {
	f := &p.frame
	due := &f.due
	tick := f.Tick
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	sel = sel[:len(cands)]
	m := 0
	for _, a := range cands {
		class := classes[f.cellIdx[a]-first]
		dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
		d := dx*dx + dy*dy + dz*dz
		beyond := uint8(b2i(d >= class.edge)) // a flag, not a branch
		tp := class.near ^ (class.near^class.far)&-beyond
		if tp == 0 { // a cell without a class (a few senders): rare, so the branch is predicted
			tp = p.tiers.PeriodSq(d)
		}
		period := tp * spread                       // no cap: based spreads keep their stretched periods under 256
		res := due.residueAbove1(f.half[a], period) // a based spread is at least 5
		sel[m] = a
		m += b2i(f.changed[a]+uint64(period) > tick) & b2i(uint8(res) == want[tp]) & b2i(a != r)
	}
	return m
}

// picker is the current recipient, as chooseByTiers needs it: set once
// per recipient, plus the first actor of the cells it is given.
type picker struct {
	lo, r        int32 // the cell's first actor; the recipient
	rx, ry, rz   float32
	oldest, tick uint64
	want         interest.Residues
	spread       uint8           // the recipient's (1 without a budget)
	rhalf        uint32          // the recipient's phase half, for chooseThrottled
	clock        *interest.Clock // for chooseThrottled
	k            tierKernel      // for chooseByTiers8: the recipient, as vectors
}

// beyondEdge returns the bit set of the senders (at most maskActors, bit i
// for the i-th) at a squared distance of at least edge from (rx, ry, rz).
// Where the CPU has AVX2, eight senders an instruction (beyondEdge8, the
// same float32 steps; BenchmarkBeyondEdge compares it with the loop that
// -tags purego builds).
func beyondEdge(xs, ys, zs []float32, rx, ry, rz, edge float32) uint64 {
	if n := len(xs); useAVX2 && n > 0 {
		// Whole groups of eight, reading past the last sender into the
		// slices' capacity (the frame's other actors, or spare room, which
		// nothing writes during the relay) where there is room, and
		// dropping those bits: no sender one by one.
		if up := (n + 7) &^ 7; cap(xs) >= up && cap(ys) >= up && cap(zs) >= up {
			return beyondEdge8(&xs[0], &ys[0], &zs[0], up, rx, ry, rz, edge) & (^uint64(0) >> (64 - n))
		}
	}
	ys, zs = ys[:len(xs)], zs[:len(xs)]
	var bits uint64
	i := 0
	if n := len(xs) &^ 7; useAVX2 && n > 0 {
		bits = beyondEdge8(&xs[0], &ys[0], &zs[0], n, rx, ry, rz, edge)
		i = n
	}
	for ; i < len(xs); i++ {
		dx, dy, dz := xs[i]-rx, ys[i]-ry, zs[i]-rz
		bits |= uint64(b2i(dx*dx+dy*dy+dz*dz >= edge)) << i
	}
	return bits
}

// writeTwoBands writes, for recipient r and a cell whose pairs with r's
// cell fall in two bands, the senders of its near list that are closer
// than edge (squared) and those of its far list that are not: the lists
// are merged in canonical order (both are sorted) and each sender in
// either is placed once.
func (p *Pipeline) writeTwoBands(w *batchOut, near, far []int32, r int32, edge float32) {
	f := &p.frame
	rx, ry, rz := f.x[r], f.y[r], f.z[r]
	for len(near) > 0 || len(far) > 0 {
		var a int32
		inNear, inFar := false, false
		switch {
		case len(far) == 0 || len(near) > 0 && near[0] < far[0]:
			a, near, inNear = near[0], near[1:], true
		case len(near) == 0 || far[0] < near[0]:
			a, far, inFar = far[0], far[1:], true
		default: // in both lists
			a, near, far, inNear, inFar = near[0], near[1:], far[1:], true, true
		}
		if a == r {
			continue
		}
		dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
		if beyond := dx*dx+dy*dy+dz*dz >= edge; beyond && inFar || !beyond && inNear {
			w.one(a)
		}
	}
}

// chooseByTiers writes to sel the senders due, in order, and returns how
// many. Each pair's period comes from the tier table, stretched by the
// recipient's spread (all below interest.FastPeriods), and each pair is
// taken without a branch:
// whether it is due is a coin toss the CPU cannot predict. With AVX2,
// eight pairs an instruction (chooseByTiers8, aimed at the recipient by
// tierKernel.aim); else, or without room to read whole groups, one by one.
func (t *picker) chooseByTiers(sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues, tiers *interest.Tiers) int {
	if n := len(changed); useAVX2 && n > 0 {
		// Whole groups of eight, reading past the last sender into the
		// slices' capacity where there is room (as beyondEdge does; the
		// residues one more, for the gather's four-byte loads), those
		// lanes left out. sel takes eight values a group, from the next
		// free entry on.
		if roomForGroups(n, sel, changed, xs, ys, zs, res) {
			t.k.self, t.k.lo = t.r-t.lo, t.lo
			return chooseByTiers8(&sel[0], &changed[0], &xs[0], &ys[0], &zs[0], &res[0], n, &t.k)
		}
	}
	return t.chooseByTiersOneByOne(sel, changed, xs, ys, zs, res, tiers)
}

// roomForGroups reports whether the vector kernels may read and write n
// senders as whole groups of eight: every slice has the room, the residues
// one more (the gather's four-byte loads run past a sender's residues).
func roomForGroups(n int, sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues) bool {
	up := (n + 7) &^ 7
	return cap(sel) >= up && cap(changed) >= up && cap(xs) >= up && cap(ys) >= up && cap(zs) >= up && cap(res) > up
}

// chooseByTiersOneByOne is chooseByTiers a pair at a time. It is a
// function of its own so that its loop keeps everything in registers.
func (t *picker) chooseByTiersOneByOne(sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues, tiers *interest.Tiers) int {
	rx, ry, rz, oldest, tick, want, spread := t.rx, t.ry, t.rz, t.oldest, t.tick, &t.want, t.spread
	self := t.r - t.lo
	sel = sel[:len(changed)]
	xs, ys, zs, res = xs[:len(changed)], ys[:len(changed)], zs[:len(changed)], res[:len(changed)]
	m := 0
	for k, c := range changed {
		dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
		period := min(stretch(tiers.PeriodSq(dx*dx+dy*dy+dz*dz), spread), interest.FastPeriods-1) // the min: a no-op that drops the bounds checks
		sel[m] = t.lo + int32(k)
		m += b2i(c > oldest) & b2i(c+uint64(period) > tick) & b2i(res[k][period] == want[period]) & b2i(int32(k) != self)
	}
	return m
}

// tierBands is the tier table as chooseByTiers8 searches it: the squared
// band limits of interest.Tiers.Bands and each band's period, capped below
// interest.FastPeriods as chooseByTiers caps it (tierKernel.aim stretches
// them by the recipient's spread).
type tierBands struct {
	limSq  [interest.MaxSteps][8]float32 // limSq[k-1] is band k's limit, eight times
	period [interest.MaxSteps + 1]int32
}

// bandsOf lays out tiers for chooseByTiers8, which counts the limits a
// distance has reached: the band the table's search finds, since the
// limits never decrease (interest.Tiers.Bands).
func bandsOf(tiers *interest.Tiers) (b tierBands) {
	lim, periods := tiers.Bands()
	for k := range b.limSq {
		for i := range b.limSq[k] {
			b.limSq[k][i] = lim[k+1]
		}
	}
	for k, p := range periods {
		b.period[k] = int32(min(p, interest.FastPeriods-1))
	}
	return b
}

// The vector search takes eight bands, one a lane.
var _ [interest.MaxSteps + 1 - 8]struct{}
var _ [8 - interest.MaxSteps - 1]struct{}

// tierKernel is what chooseByTiers8 reads besides the senders: the bands,
// the recipient (position, residue at each band's period, the ticks as
// chooseByTiers compares them) and constant vectors. Ticks are compared
// unsigned in Go and signed by AVX2, so they are stored with the top bit
// flipped (biased), which makes the two agree.
type tierKernel struct {
	bands       *tierBands
	lut         *[256]uint64 // compressLUT
	period      [8]int32     // band k's period, stretched by the recipient's spread
	want        [8]int32     // the recipient's residue at band k's period
	farPeriod   [8]int32     // under throttling: band k's period combined with the throttle's, stretched
	farWant     [8]int32     // the recipient's residue at it
	nearSq      [8]float32   // the throttle distance, squared: farPeriod applies from it on
	oldest      [4]uint64    // biased
	tick        [4]uint64    // biased
	sign        [4]uint64    // the bias, 1 << 63
	lane        [8]int32     // 0 to 7
	laneRes     [8]int32     // lane * the size of interest.Residues
	one         [8]int32
	two         [8]int32
	four        [8]int32
	eight       [8]int32
	low         [8]int32 // 0xFF
	groupRes    int64    // eight senders' residues, in bytes
	rx, ry, rz  float32
	self, lo    int32 // the recipient's index among the senders (any value when not one); the first sender's actor
	held        int64 // chooseThrottled8's count of pairs throttling alone held back
	initialized bool
	throttled   bool // farPeriod is set and every period in it is below interest.FastPeriods
}

// compressLUT[m] holds, byte by byte from the lowest, the indices of the
// set bits of m (0 to 7), ascending: the permute that packs the chosen
// lanes of a group to its front.
var compressLUT = func() (t [256]uint64) {
	for m := range 256 {
		at := 0
		for i := range 8 {
			if m>>i&1 != 0 {
				t[m] |= uint64(i) << (8 * at)
				at++
			}
		}
	}
	return t
}()

// aim loads recipient t (chooseByTiers' fields, its residues and spread
// included) and the tier table into k.
func (k *tierKernel) aim(t *picker, bands *tierBands) {
	if !k.initialized {
		const resSize = int32(unsafe.Sizeof(interest.Residues{}))
		for i := range int32(8) {
			k.lane[i], k.laneRes[i] = i, i*resSize
			k.one[i], k.two[i], k.four[i], k.eight[i], k.low[i] = 1, 2, 4, 8, 0xFF
		}
		k.sign = [4]uint64{1 << 63, 1 << 63, 1 << 63, 1 << 63}
		k.groupRes = int64(8 * resSize)
		k.lut = &compressLUT
		k.initialized = true
	}
	k.bands, k.throttled = bands, false // aimThrottled sets it
	k.rx, k.ry, k.rz = t.rx, t.ry, t.rz
	for i := range 4 {
		k.oldest[i], k.tick[i] = t.oldest^1<<63, t.tick^1<<63
	}
	for b, p := range bands.period {
		sp := min(stretch(uint8(p), t.spread), interest.FastPeriods-1)
		k.period[b], k.want[b] = int32(sp), int32(t.want[sp])
	}
}

// aimThrottled adds to aim the periods of pairs at or past throttle's
// distance in a cluster at pressure level: each band's combined with the
// throttle's, stretched by the recipient's spread, for chooseThrottled8.
// It leaves k.throttled false when a period would reach
// interest.FastPeriods (the pair's phase then decides, which the vector
// loop does not do).
func (k *tierKernel) aimThrottled(t *picker, bands *tierBands, throttle interest.Throttle, level uint8) {
	tp := throttle.FarPeriod(level)
	k.throttled = true
	for b, p := range bands.period {
		cp := interest.Combine(uint8(p), tp) // at least the band's own period
		k.throttled = k.throttled && int(cp)*int(t.spread) < interest.FastPeriods
		fp := min(stretch(cp, t.spread), interest.FastPeriods-1)
		k.farPeriod[b], k.farWant[b] = int32(fp), int32(t.want[fp])
	}
	for i := range k.nearSq {
		k.nearSq[i] = throttle.DistanceSq()
	}
}

// chooseThrottled is chooseByTiers under throttling (level above 0): a
// pair's period is the larger of its interest period and its throttle
// period, stretched by the recipient's spread. It also returns how many
// pairs throttling alone held back: due at their (stretched) interest
// period this tick, not at the combined one. A period below
// interest.FastPeriods is decided by the residue tables, a longer one by
// the pair's phase halves; both are computed and one taken, without a
// branch. The unstretched periods must be below interest.FastPeriods.
func (t *picker) chooseThrottled(sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues, half []uint32, tiers *interest.Tiers, throttle interest.Throttle, level uint8) (m, held int) {
	if n := len(changed); useAVX2 && n > 0 && t.k.throttled {
		// As chooseByTiers: whole groups of eight, where there is room.
		if roomForGroups(n, sel, changed, xs, ys, zs, res) {
			t.k.self, t.k.lo, t.k.held = t.r-t.lo, t.lo, 0
			m = chooseThrottled8(&sel[0], &changed[0], &xs[0], &ys[0], &zs[0], &res[0], n, &t.k)
			return m, int(t.k.held)
		}
	}
	return t.chooseThrottledOneByOne(sel, changed, xs, ys, zs, res, half, tiers, throttle, level)
}

// chooseThrottledOneByOne is chooseThrottled a pair at a time, for every
// period: the short ones by the residue tables, the long ones by the
// pair's phase halves.
func (t *picker) chooseThrottledOneByOne(sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues, half []uint32, tiers *interest.Tiers, throttle interest.Throttle, level uint8) (m, held int) {
	rx, ry, rz, oldest, tick, want := t.rx, t.ry, t.rz, t.oldest, t.tick, &t.want
	spread, rhalf, clock := t.spread, t.rhalf, t.clock
	self := t.r - t.lo
	sel = sel[:len(changed)]
	xs, ys, zs, res, half = xs[:len(changed)], ys[:len(changed)], zs[:len(changed)], res[:len(changed)], half[:len(changed)]
	due := func(k int, period uint8) int {
		short := min(period, interest.FastPeriods-1)
		long := b2i(period >= interest.FastPeriods)
		return (1-long)&b2i(res[k][short] == want[short]) | long&b2i(clock.Sends(half[k]+rhalf, period))
	}
	for k, c := range changed {
		dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
		d := dx*dx + dy*dy + dz*dz
		ip := tiers.PeriodSq(d)
		period := stretch(interest.Combine(ip, throttle.PeriodSq(d, level)), spread)
		ip = stretch(ip, spread)
		live := b2i(c > oldest) & b2i(int32(k) != self)
		sent := live & b2i(c+uint64(period) > tick) & due(k, period)
		sel[m] = t.lo + int32(k)
		m += sent
		held += (1 - sent) & live & b2i(c+uint64(ip) > tick) & due(k, ip)
	}
	return m, held
}

// joinRun extends the actors [lo, hi) of stencil position i over the
// following positions that are decided pair by pair too (no class) and
// whose actors continue them, and returns the last position taken and
// the run's end.
func (f *Frame) joinRun(cells []int32, classes []cellClass, i int, hi int32) (int, int32) {
	for i+1 < len(cells) && classes[i+1] == (cellClass{}) && f.cells[cells[i+1]].actors.lo == hi {
		i++
		hi = f.cells[cells[i]].actors.hi
	}
	return i, hi
}

// growSel makes room in sel for n senders.
func (sc *relayScratch) growSel(n int) {
	if len(sc.sel) < n {
		sc.sel = make([]int32, (n+n/4+7)&^7) // whole groups of eight: chooseByTiers8
	}
}

// cellBoxes is the boxes of a recipient cell's stencil positions, axis by
// axis, with their classes' edges: what pointBands8 reads, eight positions
// an instruction. n is the positions it covers, a multiple of 8 and at
// most maskActors (the rest are padding); later positions use pointPeriod.
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

// relayScratch is one Relay unit's memory of the cell classes of the
// recipient cell it last saw; recipients of one cell are consecutive, so
// each cell is classified once per unit.
type relayScratch struct {
	cell    int32
	classes []cellClass
	boxes   cellBoxes  // the classes' boxes and edges, for pointBands8
	sel     []int32    // senders chosen in one cell
	pick    picker     // the current recipient, for choosing in two-band cells
	rslot   [256]int32 // per tier period: the due list slot of the current recipient
	spreads [256]int32 // this tick's recipients by spread (under the budget), for the next tick's lists
	bwant   [256]uint8 // per tier period: the residue gatherBase wants at its stretched period
	runs    []int32    // per stencil position of the recipient cell: see uniformRuns
	retry   bool       // gather is choosing again after a jump of the spread
	aim     int        // the records a tick its recipients' spreads aim at (aimFor its cluster's pressure)
	// For recipients over their budget (gatherOwed), one at a time: the
	// backlog's working memory, the senders offered and those Take chose.
	backlog  interest.Scratch
	offered  []int32
	taken    []uint32
	owedRoom int // the senders backlog, offered and taken have room for
	// batch is the current recipient's datagrams, back to back. One buffer
	// per unit, written and handed to the transport recipient after
	// recipient, stays in the core's cache, where a buffer per recipient
	// would write the whole tick's output to memory.
	batch []byte
	// Units run side by side on different cores and write their scratch
	// for every recipient: keep neighbouring units' scratch off each
	// other's cache lines (and the line pairs that CPUs fetch together).
	_ [128]byte
}

// reserveOwed makes room in the unit's backlog memory for rounds of n
// senders. Units grow it to what their recipients need, and to the most
// any unit has needed (BeginRelay): a unit whose recipients first go over
// their budget late in a run then finds it ready.
func (sc *relayScratch) reserveOwed(n int) {
	if n <= sc.owedRoom {
		return
	}
	sc.offered = slices.Grow(sc.offered[:0], n)
	sc.taken = slices.Grow(sc.taken[:0], n)
	sc.backlog.Reserve(n)
	sc.owedRoom = n
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
	few := p.tiers.Longest() > 1 && c.actors.hi-c.actors.lo < minClassified
	// The throttle lengthens a pair's period to tp at most (Combine takes
	// the larger): a class whose every period is at least tp is out of its
	// reach at this level, and keeps its lists.
	tp := p.cfg.Throttle.FarPeriod(level)
	for i, di := range cells {
		d := &f.cells[di]
		if few && d.actors.hi-d.actors.lo < minClassified {
			out[i] = cellClass{}
			continue
		}
		nx, fx := boxSpan(c.min[0], c.max[0], d.min[0], d.max[0])
		ny, fy := boxSpan(c.min[1], c.max[1], d.min[1], d.max[1])
		nz, fz := boxSpan(c.min[2], c.max[2], d.min[2], d.max[2])
		farSq := fx*fx + fy*fy + fz*fz
		lo, hi, edge, ok := p.tiers.Span(nx*nx+ny*ny+nz*nz, farSq)
		out[i] = cellClass{}
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
// inside a run, and those not in one band, get 1.
func uniformRuns(cells []int32, classes []cellClass, out []int32) []int32 {
	out = resizeSlice(out, len(cells))
	for i := 0; i < len(cells); {
		n := 1
		if period := classes[i].period(); period > 0 && !classes[i].reach {
			for i+n < len(cells) && cells[i+n] == cells[i]+int32(n) && classes[i+n].period() == period && !classes[i+n].reach {
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

// batchOut writes a recipient's batch: datagrams of at most
// MaxRecordsPerBatch records, each behind its header. Its buffer has room
// for every record the recipient could get (Frame.reserve), so writing
// never allocates.
type batchOut struct {
	buf     []byte
	records []byte
	n, head int
	left    int   // room in the current datagram
	count   int32 // records written
	tick    uint32
}

// newBatchOut starts writing into buf, whose capacity Frame.reserve made
// large enough for every record the recipient could get.
func newBatchOut(buf, records []byte, tick uint64) batchOut {
	return batchOut{buf: buf[:cap(buf)], records: records, tick: uint32(tick)}
}

// open starts a new datagram once the current one is full. It is outlined
// so that one stays small enough to inline.
func (w *batchOut) open() {
	if w.count > 0 {
		net.SetBatchCount(w.buf[w.head:], net.MaxRecordsPerBatch)
	}
	w.head = w.n
	net.AppendBatchHeader(w.buf[w.n:w.n], w.tick, 0) // writes in place: the capacity is there
	w.n += net.BatchHeaderSize
	w.left = net.MaxRecordsPerBatch
}

// write appends the records of the chosen senders (with AVX2 one 32-byte
// move a record where there is room: roomFor32).
func (w *batchOut) write(sel []int32) {
	for len(sel) > 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(len(sel), w.left)
		if w.roomFor32(k) {
			copyRecordsAt(&w.buf[w.n], &w.records[0], &sel[0], k)
		} else {
			n, buf, recs := w.n, w.buf, w.records
			for _, a := range sel[:k] {
				o := int(a) * net.RecordSize
				copyRecord(buf[n:n+net.RecordSize], recs[o:o+net.RecordSize])
				n += net.RecordSize
			}
		}
		w.wrote(k)
		sel = sel[k:]
	}
}

// recordOverrun is how far past a record copyRecords reads and writes.
const recordOverrun = 32 - net.RecordSize

// roomFor32 reports whether the next k records may be copied with one
// 32-byte move each (copyRecords, copyRecordsAt): the CPU has AVX2, and
// the batch and the records have room for the moves' overrun.
func (w *batchOut) roomFor32(k int) bool {
	return useAVX2 && cap(w.buf) >= w.n+k*net.RecordSize+recordOverrun && cap(w.records) >= len(w.records)+recordOverrun
}

// wrote counts k records just written at w.n.
func (w *batchOut) wrote(k int) {
	w.n += k * net.RecordSize
	w.left -= k
	w.count += int32(k)
}

// writeSet appends the records of senders lo+i for the set bits i of set,
// ascending: with AVX2 one 32-byte move a record where there is room
// (roomFor32).
func (w *batchOut) writeSet(set uint64, lo int32) {
	for set != 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(bits.OnesCount64(set), w.left)
		if w.roomFor32(k) {
			set = copyRecords(&w.buf[w.n], &w.records[0], set, int(lo), k)
		} else {
			n, buf, recs := w.n, w.buf, w.records
			for range k {
				o := (int(lo) + bits.TrailingZeros64(set)) * net.RecordSize
				copyRecord(buf[n:n+net.RecordSize], recs[o:o+net.RecordSize])
				n += net.RecordSize
				set &= set - 1
			}
		}
		w.wrote(k)
	}
}

// one appends sender a's record.
func (w *batchOut) one(a int32) {
	if w.left == 0 {
		w.open()
	}
	o := int(a) * net.RecordSize
	copyRecord(w.buf[w.n:w.n+net.RecordSize], w.records[o:o+net.RecordSize])
	w.n += net.RecordSize
	w.left--
	w.count++
}

// block appends records lo to hi-1 of packed, if any.
func (w *batchOut) block(packed []byte, lo, hi int32) {
	if hi > lo {
		w.run(packed[lo*net.RecordSize : hi*net.RecordSize])
	}
}

// run appends records packed back to back, a datagram at a time.
func (w *batchOut) run(recs []byte) {
	for len(recs) > 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(len(recs)/net.RecordSize, w.left)
		n := copy(w.buf[w.n:], recs[:k*net.RecordSize])
		w.n += n
		w.left -= k
		w.count += int32(k)
		recs = recs[n:]
	}
}

// copyRecord copies one record as three register moves. A copy of a
// [net.RecordSize]byte array would do the same work through a call to
// runtime.memmove (the compiler cannot rule out overlap), and that call
// and the spills around it were a quarter of the relay's time.
func copyRecord(dst, src []byte) {
	_, _ = dst[19], src[19]
	binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
	binary.LittleEndian.PutUint64(dst[8:], binary.LittleEndian.Uint64(src[8:]))
	binary.LittleEndian.PutUint32(dst[16:], binary.LittleEndian.Uint32(src[16:]))
}

// copyRecord moves exactly 20 bytes: this fails to compile if the record size changes.
var _ [net.RecordSize - 20]struct{}
var _ [20 - net.RecordSize]struct{}

// finish writes the last datagram's record count and returns the batch.
func (w *batchOut) finish() []byte {
	if w.count > 0 {
		net.SetBatchCount(w.buf[w.head:], int((w.count-1)%net.MaxRecordsPerBatch+1))
	}
	return w.buf[:w.n]
}

// due reports whether a reduced pair (period above 1) sends this tick: by
// the residue tables for the usual short periods, else by the rule itself,
// from the pair's phase halves (interest.SenderHalf, RecipientHalf).
func (p *Pipeline) due(res, want *interest.Residues, period uint8, senderHalf, recipientHalf uint32) bool {
	if period < interest.FastPeriods {
		return res[period] == want[period]
	}
	return p.clock.Sends(senderHalf+recipientHalf, period)
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

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

// visit calls fn for every sender in r's stencil that has ever changed,
// with its periods, whether it is due this tick and whether throttling
// alone kept it back.
func (p *Pipeline) visit(r int32, level, spread uint8, fn func(a int32, ip, period uint8, due, throttled bool)) {
	f := &p.frame
	clock := p.clock
	tick := f.Tick
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	want := clock.Want(rid)
	rhalf := interest.RecipientHalf(rid)
	g := &f.groups[f.group[r]]
	for _, ci := range f.stencilCells(g) {
		for a := f.cells[ci].actors.lo; a < f.cells[ci].actors.hi; a++ {
			changed := f.changed[a]
			if changed == 0 || a == r {
				continue
			}
			dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
			ip, period := p.periods(dx*dx+dy*dy+dz*dz, level)
			if spread > 1 {
				ip, period = stretch(ip, spread), stretch(period, spread)
			}
			due := changed+uint64(period) > tick && (period <= 1 || p.due(&f.res[a], &want, period, f.half[a], rhalf))
			throttled := !due && period > ip && changed+uint64(ip) > tick && (ip <= 1 || p.due(&f.res[a], &want, ip, f.half[a], rhalf))
			fn(a, ip, period, due, throttled)
		}
	}
}

// gatherOwed builds recipient r's batch under the per-connection budget:
// every sender in view is offered to the recipient's backlog (due or still
// owed), the backlog picks at most MaxRecordsPerTick by accumulated
// priority (closer and longer-waiting senders first), and the picks are
// written in canonical order. What is cut stays owed, not lost.
func (p *Pipeline) gatherOwed(r int32, s *session, level, spread uint8, throttled *int64, sc *relayScratch) int32 {
	f := &p.frame
	longest := uint8(min(p.longest*uint64(spread), 255))
	owed := s.backlog.Owed() > 0
	senders := f.stencilSenders(&f.groups[f.group[r]])
	sc.reserveOwed(senders)
	s.backlog.Reserve(senders)
	s.backlog.Use(&sc.backlog) // one scratch per unit, not per recipient
	sc.offered = sc.offered[:0]
	due := 0
	p.visit(r, level, spread, func(a int32, _, period uint8, isDue, thr bool) {
		if thr {
			*throttled++
		}
		if isDue {
			due++
		}
		if !isDue && !owed {
			return
		}
		s.backlog.Offer(f.id[a], interest.Weight(period, longest), isDue)
		sc.offered = append(sc.offered, a)
	})
	if owed { // the fast path did not run: adjust the spread here
		s.adjustSpread(due, p.cfg.MaxRecordsPerTick, sc.aim, p.pressedSpread)
	}
	sc.taken = s.backlog.Take(p.cfg.MaxRecordsPerTick, sc.taken[:0])
	// Take returns its picks in offer order: keep those offers, in place.
	chosen := sc.offered[:0]
	for _, a := range sc.offered {
		if len(chosen) < len(sc.taken) && f.id[a] == sc.taken[len(chosen)] {
			chosen = append(chosen, a)
		}
	}
	w := newBatchOut(reserve(sc.batch, senders), f.records, f.Tick)
	w.write(chosen)
	sc.batch = w.finish()
	f.relays[r] = w.count
	return w.count
}
