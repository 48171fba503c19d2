package systems

import (
	"math/bits"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/net/wire"
)

// The relay sends every recipient, each tick, the movement records of the
// senders due to it. Its rule is plain (relay_reference.go, visit); the
// rest applies the rule to blocks of pairs instead of to each pair:
// gather builds one recipient's batch, and the files beside this one hold
// one idea each:
//
//   - relay_reference.go: the rule, written plainly, that the tests hold
//     every fast path to (reference_test.go lists them);
//   - relay_dense.go: the dense walk, which most recipients at spread 1,
//     and those at the short spreads whose keys fit (spreadKeys), take:
//     every sender of the stencil decided by its due key, a group of pairs
//     an instruction, with no cells or lists;
//   - relay_bytes.go: due bytes, the dense walk's keys at any spread
//     above 1, where sparse chunks and ranked kinds would leave the
//     stencil to be decided cell by cell and pair by pair;
//   - relay_cells.go: cells, their boxes, classes and runs;
//   - relay_walk.go: one recipient's walk over its stencil, cell by cell,
//     and the strategy for each kind of cell (gatherCells), or, for a
//     small stencil at spread 1, the tier table alone (gatherSmall);
//   - due.go: the due lists the walk copies from;
//   - relay_pick.go: choosing senders where no list applies;
//   - relay_batch.go: writing records into datagrams;
//   - relay_budget.go: the per-connection budget: spreads, base lists, the
//     backlog;
//   - relay_near.go: the nearest senders, which a spread does not stretch;
//   - relay_thin.go: thinning, past the longest spread.
//
// The AVX2 kernels and the AVX-512 ones (simd_amd64.s) are chosen inside
// the functions that call them (beyondEdge, pointBands, chooseByTiers,
// chooseThrottled, chooseBased, denseDue, writeDense, picker.aim,
// batchOut.roomFor32), each with a Go loop beside it that other CPUs and
// -tags purego run; the code above them reads the same on every CPU.
//
// The words, in the order they build on one another (docs/relay.md has
// them with a picture, under "Words"):
//
//   - stencil: the 3x3 chunks around a recipient's chunk, in its
//     worldOrCell; its senders are their actors, in the frame's canonical
//     order.
//   - cell: a square of a chunk, which a crowded chunk is cut into (a
//     sparse chunk is one cell); a stencil is walked as its cells.
//   - box: the bounding box of a cell's actors after this tick's moves.
//     Two boxes bound the distance of every pair between their cells.
//   - band: a range of distances to which the tier table gives one period.
//   - class: how the pairs of a recipient cell and a sender cell fall into
//     bands (cellClass): all in one, in two either side of an edge, or
//     unknown (decided pair by pair).
//   - run: consecutive stencil cells in one band of one period; their due
//     lists lie back to back and are copied as one block.
//   - half, phase, residue: every actor's phase key (its id, or the key
//     it was given: components.PhaseKey) hashes to a sender half and a
//     recipient half; a pair's phase is the sender's half plus the
//     recipient's, and the pair sends when its phase plus the tick is a
//     multiple of its period. At period p the senders due to a recipient
//     depend on it only through one number, its residue: the remainder
//     modulo p that a sender's half must have.
//   - due list, slot: for each cell, period and residue, the cell's
//     senders due to every recipient with that residue, their records
//     packed back to back, built once a tick (due.go); a slot is one
//     (period, residue) pair, the same for every cell.
//   - spread: the factor on a budgeted recipient's periods that keeps its
//     records near its per-connection budget (adjustSpread).
//   - base list: for a long spread, the list by residue modulo the spread
//     itself, whose senders are then checked at their own stretched
//     period (gatherBase).
//   - stencil position: a cell's index in the recipient cell's stencil,
//     by which the classes, runs and boxes are kept (relayScratch).

// relayAhead is how many recipients ahead the relay asks for a session's
// lines: a recipient's walk outlasts a miss, so one or two suffice.
const relayAhead = 2

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
	told := sh.Lo // recipients before it were named to p.ahead
	lane := -1
	if p.laner != nil {
		lane = p.lanes.take()
		defer p.lanes.give(lane) // given back by a unit that panics, too
	}
	// With a budget, each recipient's session is read first thing (its
	// spread): sessions lie where they were allocated, each a miss the CPU
	// cannot predict, so the one relayAhead recipients on is asked for now.
	claim := cacheline.Claiming && p.cfg.MaxRecordsPerTick > 0
	for a := sh.Lo; a < sh.Hi; a++ {
		if pa := a + relayAhead; claim && pa < sh.Hi {
			if s := f.sess[pa]; s != nil {
				cacheline.Claim(unsafe.Slice((*byte)(unsafe.Pointer(&s.sessionRelay)), relayHot))
			}
		}
		if f.session[a] == 0 {
			f.relays[a] = 0
			continue
		}
		if p.ahead != nil {
			told = p.tellNext(sh, max(told, a+1))
		}
		n := p.gather(a, level, &throttled, sc)
		if s := f.sess[a]; s != nil && p.cfg.MaxRecordsPerTick > 0 {
			sc.spreads[max(s.spread, 1)]++ // for the next tick's lists and keys (BeginRelay)
			// And of them, those due bytes fit (gather leaves the unit's
			// scratch at the recipient's cell, but for one that owed).
			if g := &f.groups[f.group[a]]; p.bytesOK && byteSpread(s.spread) && sc.cell == f.cellIdx[a] && p.bytesFit(f.stencilCells(g), f.stencilSenders(g), sc) {
				sc.fitSpreads[s.spread]++
			}
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
		if p.laner != nil {
			p.laner.SendUnreliableBatchLane(lane, s, buf, datagramSize)
			continue
		}
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

// laneSet hands each Relay unit, for as long as it runs, a lane of the
// transport's (wire.LaneSender) that no other running unit holds: the
// lowest free one. A tick so uses as many lanes as units run at once (one
// when it runs inline), not one per shard: a lane the transport gathers
// into a message of its own costs a message, and the records its
// recipients share, once per lane.
type laneSet struct{ held atomic.Uint64 }

// take claims the lowest free lane. A pool runs at most
// scheduler.MaxWorkers (64) units at once, so one is always free.
func (l *laneSet) take() int {
	for {
		held := l.held.Load()
		lane := bits.TrailingZeros64(^held)
		if lane < 64 && l.held.CompareAndSwap(held, held|1<<lane) {
			return lane
		}
		if lane == 64 {
			runtime.Gosched()
		}
	}
}

// give frees lane, taken by take.
func (l *laneSet) give(lane int) { l.held.And(^(uint64(1) << lane)) }

// tellNext names to the transport (p.ahead) the first recipient with a
// session from index from on in shard sh, and returns the index after it
// (sh.Hi when there is none): building the current recipient's batch then
// covers the wait for that session's state.
func (p *Pipeline) tellNext(sh Shard, from int32) int32 {
	f := &p.frame
	for b := from; b < sh.Hi; b++ {
		if s := f.session[b]; s != 0 {
			p.ahead.WillSend(wire.SessionID(s))
			return b + 1
		}
	}
	return sh.Hi
}

// reserve returns buf emptied, with room for a record from each of senders
// (a stencil's actors, stencilSenders): a batch never needs more, so once
// a crowd has formed the units' buffers stop growing and the relay
// allocates nothing.
func reserve(buf []byte, senders int) []byte {
	// Whole datagrams: a stencil whose population wanders a little (actors
	// roaming across chunk borders) then stays within the capacity it has.
	datagrams := (senders + wire.MaxRecordsPerBatch - 1) / wire.MaxRecordsPerBatch
	if need := datagrams*datagramSize + denseOverrun; cap(buf) < need {
		return make([]byte, 0, need+need/4)
	}
	return buf[:0]
}

// stencilSenders returns the number of actors in stencil g: the most
// senders any of its recipients can be sent (linkPart counts them).
func (f *Frame) stencilSenders(g *group) int { return int(g.senders) }

// periods returns a pair's interest period and the period it gets once the
// cluster's throttle level is applied: the larger of the two, never their
// product. Pairs closer than the throttle distance are never throttled.
func (p *Pipeline) periods(tiers *interest.Tiers, distSq float32, level uint8) (interestPeriod, period uint8) {
	interestPeriod = tiers.PeriodSq(distSq)
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
	if level == 0 || p.throttleEveryReach {
		return level
	}
	for i := range p.tierSets {
		if th.FarPeriod(level) > p.tierSets[i].PeriodSq(th.DistanceSq()) {
			return level
		}
	}
	return 0
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
	spread, thin := uint8(1), uint8(0)
	owing := false
	if s != nil && budget > 0 {
		spread, thin = max(s.spread, 1), s.thin
		if owing = s.backlog.Owed() > 0; owing && !f.indexed {
			return p.gatherOwed(r, s, level, spread, thin, throttled, sc)
		}
	}
	g := &f.groups[f.group[r]]
	cells := f.stencilCells(g)
	nearing := p.nearing(spread)
	if nearing {
		p.nearestDue(r, spread, sc)
	}
	senders := f.stencilSenders(g)
	if rc := f.cellIdx[r]; sc.cell != rc {
		sc.small, sc.stencilRuns = p.stencilRuns(cells, senders, sc.stencilRuns)
		sc.classified, sc.ranked, sc.fit = false, false, fitUnknown
		sc.cols.state = colsUnbuilt
		sc.cell = rc
	}
	due := &f.due
	w := newBatchOut(reserve(sc.batch, senders), f.records, tick)
	if thin > 0 { // past the longest spread: the fast path writes only the share thinning keeps
		sc.thin.aim(f, r, keepOf(thin), nearing, sc.near)
		w.thin = &sc.thin
	}
	var held int64 // pairs throttling alone kept back
	with := keysNone
	if level == 0 {
		with = p.denseWith(spread, cells, senders, sc)
	}
	switch {
	case with != keysNone:
		p.gatherDense(&w, r, spread, cells, with, sc)
	case sc.small && spread == 1 && level == 0:
		p.gatherSmall(&w, r, cells, sc)
	case due.based[spread] && level == 0:
		p.rankCell(cells, sc)
		p.gatherBase(&w, r, spread, cells, sc)
	default:
		// Under throttling a spread with base lists is decided pair by pair.
		p.classifyCell(cells, level, sc)
		held = p.gatherCells(&w, r, level, spread, due.listed(spread) && !due.based[spread], cells, sc)
	}
	fast := w.count // the senders due at the spread (thinned), in canonical order
	w.thin = nil
	if nearing {
		w.write(sc.nearExtra) // and the nearest due at their tier period only
	}
	sc.batch = w.finish()
	if owing {
		// The batch holds the due senders: the backlog decides among
		// them and the senders owed (gatherOwed's adjustment: the spread
		// follows the due count).
		p.adjustSpread(s, int(w.count), nearing, spread, thin, sc)
		*throttled += held
		return p.pickOwed(r, s, level, spread, thin, fast, nearing, throttled, sc)
	}
	if s != nil && budget > 0 {
		p.adjustSpread(s, int(w.count), nearing, spread, thin, sc)
		if int(w.count) > budget {
			if (s.spread > spread || s.thin > thin) && !sc.retry {
				// The spread jumped: choose again at the new one, which
				// fits the budget as a rule, rather than cut hundreds of
				// records into the backlog, whose slow path would then run
				// for this recipient until they had all been sent.
				sc.retry = true
				n := p.gather(r, level, throttled, sc)
				sc.retry = false
				return n
			}
			if f.indexed {
				*throttled += held
				return p.pickOwed(r, s, level, spread, thin, fast, nearing, throttled, sc)
			}
			return p.gatherOwed(r, s, level, spread, thin, throttled, sc)
		}
	}
	*throttled += held
	f.relays[r] = w.count
	return w.count
}

// classifyCell gives the unit's scratch the classes, runs and ranks of
// the stencil cells of its current cell (sc.cell), unless it has them:
// each cell is classified once per unit, when a recipient of it first
// needs more than gatherSmall.
func (p *Pipeline) classifyCell(cells []int32, level uint8, sc *relayScratch) {
	if sc.classified {
		return
	}
	f := &p.frame
	sc.classes = p.classify(sc.cell, cells, level, sc.classes)
	sc.runs = f.uniformRuns(cells, sc.classes, sc.runs)
	p.rankCell(cells, sc)
	sc.boxes.n = -1 // filled when a recipient first needs them
	sc.flatDone = false
	sc.classified = true
}

// rankCell gives the unit's scratch the ranks of the stencil cells of its
// current cell and their runs of base lists (baseRuns), unless it has
// them: all a recipient with base lists reads of its cell where the
// candidates are decided by their distances (chooseBased16), which needs
// no classes.
func (p *Pipeline) rankCell(cells []int32, sc *relayScratch) {
	if sc.ranked {
		return
	}
	sc.rankedAt = resizeSlice(sc.rankedAt, len(cells))
	for i, ci := range cells {
		sc.rankedAt[i] = p.ranked(ci, 2)
	}
	sc.baseRuns = p.baseRuns(cells, sc.rankedAt, sc.baseRuns)
	sc.runBoxes = p.runBoxes(cells, sc.baseRuns, sc.runBoxes)
	sc.ranked = true
}

// growSel makes room in sel for n senders.
func (sc *relayScratch) growSel(n int) { sc.sel = grownSel(sc.sel, n) }

// grownSel returns sel, or a longer copy of it, with room for n senders
// and a whole group of sixteen past the last (chooseBased16).
func grownSel(sel []int32, n int) []int32 {
	if len(sel) < n+16 {
		sel = append(sel, make([]int32, (n+n/4+23)&^7-len(sel))...)
	}
	return sel
}

// relayScratch is one Relay unit's memory of the cell classes of the
// recipient cell it last saw; recipients of one cell are consecutive, so
// each cell is classified once per unit.
type relayScratch struct {
	layout  []int32 // the layout's counting sort's, for Move's unit (Frame.placeRange)
	cell    int32
	classes []cellClass
	boxes   cellBoxes  // the classes' boxes and edges, for pointBands
	sel     []int32    // senders chosen in one cell
	pick    picker     // the current recipient, for choosing in two-band cells
	rslot   [256]int32 // per tier period: the due list slot of the current recipient
	spreads [256]int32 // this tick's recipients by spread (under the budget), for the next tick's lists
	// fitSpreads: of them, those whose stencil the due bytes fit
	// (bytesFit), where the pipeline has them (Pipeline.bytesOK).
	fitSpreads [256]int32
	bwant      [256]uint8  // per tier period: the residue gatherBase wants at its stretched period
	bdue       [256]uint64 // per tier period: the base lists' quotients due at its stretched period (dueLists.quot)
	bperiod    [256]uint8  // per tier period: its stretched period in gatherBase's pass, 0 where the pass leaves its band to the other
	sel2       []int32     // gatherBase's choice from the capped lists, merged with sel's
	baseK      baseKernel  // what chooseBased8 and chooseBased16 read
	runs       []int32     // per stencil position of the recipient cell: see uniformRuns
	// classified: classes, runs and rankedAt are the current cell's
	// (classifyCell); ranked: rankedAt and baseRuns are (rankCell).
	// small: its stencil is small (gatherSmall).
	// stencilRuns: its runs of actors (Pipeline.stencilRuns).
	classified  bool
	ranked      bool
	small       bool
	stencilRuns []int32
	// flatRuns: per stencil position of the recipient cell, the run taken
	// as one range at a capped spread (see flatRuns), when flatDone.
	flatRuns []int32
	flatDone bool
	// gatherDense's kernel (the current recipient and table) and its
	// senders' masks.
	dense     denseKernel
	denseMask []byte
	cols      stencilCols // the current cell's stencil as one run (stencilCols), when it is a few short runs
	fit       uint8       // bytesFit's answer for the current cell, once asked (fitUnknown before)
	// rankedAt: per stencil position, whether its senders are decided by
	// rankedPairs under a spread (see Pipeline.ranked)
	rankedAt []bool
	// baseRuns: the stencil's runs of base lists (Pipeline.baseRuns), the
	// box around each run's senders (runBoxes), and baseTicks the tick's
	// due residues at the unit's last spread.
	baseRuns  []int32
	runBoxes  []cell
	merged    []int32 // the two passes' choices merged (mergeSorted16, mergeTwoEnds), and a group past them
	capAt     capEdgeAt
	baseTicks baseTicks
	retry     bool // gather is choosing again after a jump of the spread
	aim       int  // the records a tick its recipients' spreads aim at (aimFor its cluster's pressure)
	// For recipients over their budget (gatherOwed), one at a time: the
	// backlog's working memory, the senders offered and those Take chose.
	backlog  interest.Scratch
	offered  []int32
	taken    []uint32
	owedRoom int // the senders backlog, offered and taken have room for
	// pickOwed's lists: the due senders, the ids owed and those of them in
	// view, by frame index.
	dueIdx  []int32
	owedIDs []uint32
	owedIdx []int32
	// The current recipient's nearest senders (relay_near.go), those of
	// them sent whatever the budget, and those the fast path left out, by
	// frame index; nearBest is nearestOf's working list, and nearH the
	// distance squared within which the last recipient's were found, twice.
	near, nearSent, nearExtra []int32
	nearBest                  []nearCand
	nearTmp                   []nearCand // kthNearest's and selectNearest's working memory
	nearBits                  []uint64   // inFrameOrder's bit set
	nearH                     float32
	// thin is the recipient's thinning, when it thins (batchOut.thin).
	thin thinFilter
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

// reserveOwed makes room in the unit's backlog memory (and pickOwed's
// lists) for rounds of n senders. Units grow it to what their recipients
// need, and to the most any unit has needed (BeginRelay): a unit whose
// recipients first go over their budget late in a run then finds it ready.
func (sc *relayScratch) reserveOwed(n int) {
	if n <= sc.owedRoom {
		return
	}
	sc.offered = slices.Grow(sc.offered[:0], n)
	sc.taken = slices.Grow(sc.taken[:0], n)
	sc.dueIdx = slices.Grow(sc.dueIdx[:0], n)
	sc.owedIDs = slices.Grow(sc.owedIDs[:0], n)
	sc.owedIdx = slices.Grow(sc.owedIdx[:0], n)
	sc.backlog.Reserve(n)
	sc.owedRoom = n
}
