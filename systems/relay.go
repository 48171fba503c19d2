package systems

import (
	"math/bits"
	"slices"
	"time"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// datagramSize is the size of a full movement datagram.
const datagramSize = wire.BatchHeaderSize + wire.MaxRecordsPerBatch*wire.RecordSize

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
		if p.watch != 0 && f.id[a] == p.watch {
			var batch []byte
			if n > 0 {
				batch = sc.batch
			}
			p.watchRelay(batch, f.sess[a])
		}
		if n == 0 {
			continue
		}
		total += int64(f.relays[a])
		s := wire.SessionID(f.session[a])
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
	datagrams := (senders + wire.MaxRecordsPerBatch - 1) / wire.MaxRecordsPerBatch
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

// growSel makes room in sel for n senders.
func (sc *relayScratch) growSel(n int) {
	if len(sc.sel) < n {
		sc.sel = make([]int32, (n+n/4+7)&^7) // whole groups of eight: chooseByTiers8
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
