package systems

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// The dense walk: a recipient at spread 1 and pressure level 0 decides
// every sender of its stencil by one test a pair, a group of pairs an
// instruction, reading nothing but the senders' positions and one word
// each, their due keys.
//
// A sender's due key says, for each tier period p of the interest tables,
// whether the sender has something new to say at p (it changed within p
// ticks) and its phase residue modulo p: bit off[p] + (half mod p), set
// when it changed within p. A recipient wants, at each period, one residue
// (interest.Clock.Want): one bit of the same layout. So a pair is due when
// its band's period's wanted bit is set in the sender's key, and the walk
// needs for each pair its distance, its band (the limits it has reached),
// the recipient's bit for that band and one AND. The keys change only
// when a sender's phase key does or its age passes a period, so Move
// stores them rarely (setIfChanged).
//
// It takes the place of the cell walk (gatherCells) where every tier
// period is short and the periods together fit 32 bits (with the default
// tiers, 1+2+3+4 = 10). In a crowd most cell pairs straddle a band's edge,
// and the cell walk paid for each a decision, bit sets and a branch the
// CPU could not predict; the dense walk pays the same for every pair and
// nothing for a cell. With AVX-512 the due records are packed into the
// batch in the same pass (denseCopy16); with AVX2 the pass writes bit
// sets, and a second pass packs the records by them, a group of eight at
// a time (denseCopy8). Every way the same senders in the same order
// (stencil runs of consecutive actors, ascending), so the same bytes.

// denseLayout is where each tier period's bits lie in a due key (off),
// and, by a sender's age in ticks (up to FastPeriods-1, older as the
// last), the bits of the periods it is still within (age). ok says the
// relay takes the dense walk: there are periods to tell apart, they fit
// (all below interest.FastPeriods, their sum at most 32), and the CPU has
// the vector kernels (without them, a Go loop a pair costs more than the
// cell walk's lists).
type denseLayout struct {
	ok  bool
	off [interest.FastPeriods]uint8
	age [interest.FastPeriods]uint32
}

// layDense lays out the due keys for the tier periods (ascending, each
// once, 1 first: dueLists.tierPeriods).
func layDense(periods []uint8) (l denseLayout) {
	if len(periods) < 2 || !useAVX2 {
		// One period: a pair's band never matters, and a stencil row's
		// due lists are one block copy (gatherCells). Without AVX2, a Go
		// loop a pair costs more than the cell walk's lists.
		return denseLayout{}
	}
	sum := 0
	for _, p := range periods {
		if p >= interest.FastPeriods {
			return denseLayout{}
		}
		sum += int(p)
	}
	if sum > 32 {
		return denseLayout{}
	}
	at := uint8(0)
	for _, p := range periods {
		l.off[p] = at
		bitsOf := uint32(1)<<p - 1
		for a := range l.age {
			if a < int(p) {
				l.age[a] |= bitsOf << at
			}
		}
		at += p
	}
	l.ok = true
	return l
}

// resKey returns the residue bits of a sender whose residues are res, at
// every tier period: the due key of a sender that just changed.
func (l *denseLayout) resKey(periods []uint8, res *interest.Residues) uint32 {
	var k uint32
	for _, p := range periods {
		k |= 1 << (l.off[p] + res[p%interest.FastPeriods])
	}
	return k
}

// dueKey returns the due key of a sender with residue bits resKey that
// last changed at tick changed (0: never), at tick.
func (l *denseLayout) dueKey(resKey uint32, changed, tick uint64) uint32 {
	if changed == 0 {
		return 0
	}
	return resKey & l.age[min(tick-changed, interest.FastPeriods-1)]
}

// spreadKeys are the due keys at a spread s above 1, for the dense walk
// of its recipients: a pair at tier period t is due at t*s, so the tier
// periods stretched by s are laid out as the tier periods are at spread 1
// (with the default tiers, 2+4+6+8 at spread 2 and 3+6+9+12 at 3 fit 32
// bits; from 4 they do not). They are built on a tick whose last tick had
// recipients at s (Pipeline.keySpreads), one pass over the actors, where
// the spread's due lists would cost four sets of lists.
type spreadKeys struct {
	spread  uint8
	layout  denseLayout
	periods []uint8                      // the stretched tier periods, ascending, each once
	tickDue [interest.FastPeriods]uint32 // per stretched period, tickDue this tick
	keys    []uint32                     // per actor; readable a group of sixteen past the end
}

// layKeyedSpreads returns the spreads from 2 whose stretched tier periods
// (of periods, the tier periods) the dense walk lays out, in order: none
// unless spread 1's are (dense).
func layKeyedSpreads(dense denseLayout, periods []uint8) []spreadKeys {
	var out []spreadKeys
	for s := 2; dense.ok; s++ {
		var stretched []uint8
		for _, tp := range periods {
			if int(tp)*s >= interest.FastPeriods {
				return out
			}
			stretched = append(stretched, tp*uint8(s))
		}
		slices.Sort(stretched)
		stretched = slices.Compact(stretched)
		l := layDense(stretched)
		if !l.ok {
			return out // a longer spread's periods add up to more
		}
		out = append(out, spreadKeys{spread: uint8(s), layout: l, periods: stretched})
	}
	return out
}

// build computes every actor's key at the spread this tick: its residue
// bits at the stretched periods, kept for those it changed within.
func (k *spreadKeys) build(f *Frame) {
	n := f.Len()
	k.keys = padded(k.keys, n)
	keys, changed, res := k.keys[:n], f.changed[:n], f.res[:n]
	for a := range keys {
		keys[a] = k.layout.dueKey(k.layout.resKey(k.periods, &res[a]), changed[a], f.Tick)
	}
}

// denseKernel is what denseDue8 reads: the recipient's position, the
// table's band limits (bands, limits of them finite), the recipient's bit
// for each band's period (want) and the kind's radius squared (cut; +Inf
// for none). denseCopy16 reads the table as steps, the run (its columns
// from the run's first sender, n of them, the groups to drop lanes of)
// and the batch (dst, where the next record goes, and end, where the
// current datagram's records end), which it moves on.
type denseKernel struct {
	bands      *tierBands
	want       [8]uint32
	rx, ry, rz float32
	cut        float32
	limits     int64
	// steps is the table as denseCopy16 reads it: the first band's bit
	// (steps[0].want), then three limits, each with the bit of the band
	// from it on (+Inf and a copy of the last bit for limits a table has
	// not), then the cut with bit 0.
	steps [5]denseStep
	lut   *[256]uint64 // widenLUT
	// denseCopy8's: the groups' masks (denseDue's), compressLUT and
	// lowLUT.
	masks      *byte
	clut       *[256]uint64
	low        *[256][8]uint8
	xs, ys, zs *float32
	keys       *uint32
	recs       *byte
	n          int64
	// The group holding the recipient and the group past the last sender
	// (or -1, past every group), and the lanes of each kept.
	selfAt, tailAt     int64
	selfDrop, tailDrop uint32
	dst, end           uintptr
	header             uint64 // a full datagram's header
	//lint:ignore U1000 written and read by denseCopy16 alone (simd_amd64.s)
	saved int64 // denseCopy16's spill of its group index
	// Due bytes (relay_bytes.go): bytes says the keys are due bytes, bwant
	// is the recipient's residue in each band's byte, by rank and band
	// (rank*byteBands + band), and ranks the run's senders' ranks.
	bytes bool
	bwant [8]uint32
	ranks []uint8
}

// denseStep is one of denseKernel.steps: from limit on, the bit want.
type denseStep struct {
	limit float32
	want  uint32
}

// aimSteps lays out k.steps from k.want, k.bands and k.cut, for at most
// three finite limits.
func (k *denseKernel) aimSteps() {
	k.steps[0] = denseStep{want: k.want[0]}
	for i := 1; i <= 3; i++ {
		k.steps[i] = denseStep{limit: k.bands.limSq[i-1][0], want: k.want[i]}
		if int64(i) > k.limits {
			k.steps[i] = denseStep{limit: float32(math.Inf(1)), want: k.want[k.limits]}
		}
	}
	k.steps[4] = denseStep{limit: k.cut}
}

// widenLUT[m] has, for each bit i of m, the five bits from 5i: a mask of
// eight senders as the mask of their records' dwords.
var widenLUT = func() (t [256]uint64) {
	for m := range t {
		for i := range 8 {
			if m>>i&1 != 0 {
				t[m] |= 0x1F << (5 * i)
			}
		}
	}
	return t
}()

// densePass is how writeDense writes a run: decided and copied in one
// pass (denseCopy16, AVX-512), decided into bit sets and packed by them
// a group of eight at a time (denseCopy8, AVX2), or decided into bit sets
// whose records writeSet copies (any CPU).
type densePass uint8

const (
	denseBits densePass = iota
	densePass8
	densePass16
)

// bestDensePass is the fastest pass this CPU has.
var bestDensePass = func() densePass {
	switch {
	case useAVX512:
		return densePass16
	case useAVX2:
		return densePass8
	}
	return denseBits
}()

// lowLUT[m][k] is the lowest k set bits of m: the lanes of a group of
// eight whose records fit before a datagram's end (denseCopy8).
var lowLUT = func() (t [256][8]uint8) {
	for m := range 256 {
		for k := range 8 {
			low, rest := 0, m
			for range k {
				if rest != 0 {
					low |= rest & -rest
					rest &= rest - 1
				}
			}
			t[m][k] = uint8(low)
		}
	}
	return t
}()

// denseWith returns the keys a recipient at spread, whose stencil is
// cells holding senders, takes the dense walk by at level 0, or keysNone
// for the cell walk: at spread 1 the due keys where the walk is laid out;
// above it the spread's due bytes where they fit the stencil (bytesFit),
// its due keys of bits where this tick has them, and its due bytes where
// it has neither those nor lists (the walk costs less than pairs decided
// one by one).
func (p *Pipeline) denseWith(spread uint8, cells []int32, senders int, sc *relayScratch) uint8 {
	if spread == 1 {
		if p.dense.ok {
			return keysBits
		}
		return keysNone
	}
	byted, keyed := p.byted[spread] > 0, p.keyed[spread] > 0
	switch {
	case byted && (!keyed && !p.frame.due.listed(spread) || p.bytesFit(cells, senders, sc)):
		return keysBytes
	case keyed:
		return keysBits
	}
	return keysNone
}

// denseWith's answers.
const (
	keysNone uint8 = iota
	keysBits
	keysBytes
)

// gatherDense writes the senders due to recipient r, at spread and level
// 0, by the keys with says (denseWith), run by run of its stencil
// (sc.stencilRuns: consecutive actors of one table), each run by
// writeDense: by the due keys, spread 1's (Frame.dueKey) or the spread's
// (spreadKeys), or by the spread's due bytes (gatherBytes). cells is r's
// stencil, whose cells the runs are.
func (p *Pipeline) gatherDense(w *batchOut, r int32, spread uint8, cells []int32, with uint8, sc *relayScratch) {
	f := &p.frame
	rhalf := interest.RecipientHalf(f.key[r])
	if with == keysBytes {
		p.gatherBytes(w, r, &p.byteKeys[p.byted[spread]-1], rhalf, sc)
		return
	}
	layout, keys, due := &p.dense, f.dueKey, &p.denseDue
	if spread > 1 {
		k := &p.spreadKeys[p.keyed[spread]-1]
		layout, keys, due = &k.layout, k.keys, &k.tickDue
	}
	var bit periodBits
	for _, tp := range f.due.tierPeriods {
		q := tp * spread // below FastPeriods: the layout has it
		bit[tp] = 1 << (layout.off[q] + uint8(f.due.wantResidue(q, due[q], rhalf)))
	}
	k := &sc.dense
	k.rx, k.ry, k.rz = f.x[r], f.y[r], f.z[r]
	k.lut = &widenLUT
	// At a spread above 1 a ranked kind's periods are stretched further
	// (rankedSpread), which the spread's keys do not know: its cells, and
	// the sparse cells that may hold one (cell.mixed), are decided pair
	// by pair (rankedPairs), the run's other cells by their keys.
	ranks := spread > 1 && p.maxRank > 0
	var want interest.Residues
	aimed, wanted, ci := -1, false, 0
	if spread == 1 && len(sc.stencilRuns) > 3 {
		if cols := p.stencilCols(sc); cols.state == colsBuilt {
			p.aimDense(k, int(sc.stencilRuns[2]), &bit)
			sc.denseMask = w.writeCols(k, cols, sc.stencilRuns, r, sc.denseMask)
			return
		}
	}
	for j := 0; j+2 < len(sc.stencilRuns); j += 3 {
		lo, hi, kind := sc.stencilRuns[j], sc.stencilRuns[j+1], int(sc.stencilRuns[j+2])
		if kind != aimed {
			p.aimDense(k, kind, &bit)
			aimed = kind
		}
		if !ranks {
			p.denseRun(w, k, keys, lo, hi, r, sc)
			continue
		}
		from := lo
		for at := lo; at < hi; ci++ { // the run's cells, in the stencil's order
			c := &f.cells[cells[ci]]
			at = c.actors.hi
			if p.ranked(cells[ci], spread) {
				p.denseRun(w, k, keys, from, c.actors.lo, r, sc)
				if !wanted {
					want, wanted = p.clock.Want(f.key[r]), true
				}
				p.rankedPairs(w, r, cells[ci], spread, cellClass{}, &want, rhalf)
				from = c.actors.hi
			}
		}
		p.denseRun(w, k, keys, from, hi, r, sc)
	}
}

// periodBits is a recipient's bit in the due keys at each tier period,
// by period (all below interest.FastPeriods, so five bits index it
// without a division).
type periodBits [32]uint32

// aimDense aims k, aimed at the recipient, at the senders of kind, with
// bit the recipient's bit at each tier period.
func (p *Pipeline) aimDense(k *denseKernel, kind int, bit *periodBits) {
	b := &p.kindBands[kind]
	for band, tp := range b.period {
		k.want[band] = bit[tp&31] // tp < FastPeriods
	}
	k.bands, k.cut, k.limits = b, p.kindReach[kind], int64(p.kindLimits[kind])
}

// stencilCols is the unit's current recipient cell's stencil as one run:
// its senders' positions and due keys at spread 1, run after run. A
// sparse world's stencil is a few short runs of actors (a row of chunks
// each, a few senders a chunk), and a pass of the dense walk has a cost
// of its own (its setup, a group partly filled, a dependency chain no
// other group overlaps) that there outweighs its pairs: three runs of
// eight cost more than twice one run of twenty-four. So the unit copies
// the columns once for the cell, and each of its recipients decides the
// whole stencil in one pass (writeCols).
type stencilCols struct {
	state      uint8 // colsUnbuilt for the unit's current cell, colsNone or colsBuilt
	xs, ys, zs []float32
	keys       []uint32
}

// stencilCols' states.
const (
	colsUnbuilt uint8 = iota // not yet looked at for the current cell
	colsNone                 // the stencil is one run, of more than one kind, or large
	colsBuilt
)

// maxColsStencil is the most senders a stencil copied into columns may
// hold: beyond a few groups a run, a run's cost is its pairs.
const maxColsStencil = 128

// stencilCols returns the unit's columns of its current cell's stencil
// (sc.stencilRuns), built on the cell's first call: colsBuilt where the
// stencil is more than one run, every run of one kind, and at most
// maxColsStencil senders.
func (p *Pipeline) stencilCols(sc *relayScratch) *stencilCols {
	c := &sc.cols
	if c.state != colsUnbuilt {
		return c
	}
	c.state = colsNone
	runs := sc.stencilRuns
	n := 0
	for j := 0; j+2 < len(runs); j += 3 {
		if runs[j+2] != runs[2] {
			return c
		}
		n += int(runs[j+1] - runs[j])
	}
	if len(runs) <= 3 || n > maxColsStencil {
		return c
	}
	f := &p.frame
	c.fill(runs, n, f.x, f.y, f.z, f.dueKey)
	return c
}

// fill copies into the columns the positions xs, ys, zs and due keys of
// the n actors of runs (Pipeline.stencilRuns), run after run.
func (c *stencilCols) fill(runs []int32, n int, xs, ys, zs []float32, keys []uint32) {
	c.xs, c.ys, c.zs, c.keys = padded(c.xs, n), padded(c.ys, n), padded(c.zs, n), padded(c.keys, n)
	at := 0
	for j := 0; j+2 < len(runs); j += 3 {
		lo, hi := runs[j], runs[j+1]
		copy(c.xs[at:], xs[lo:hi])
		copy(c.ys[at:], ys[lo:hi])
		copy(c.zs[at:], zs[lo:hi])
		copy(c.keys[at:], keys[lo:hi])
		at += int(hi - lo)
	}
	c.state = colsBuilt
}

// writeCols writes the senders of runs (lo, hi, kind: a stencil's runs,
// in canonical order) due to recipient r, not r itself, k aimed at r and
// the runs' kind, cols holding the runs' columns: decided in one pass
// into bit sets (masks' memory, which it returns), whose records are
// copied run by run from the frame's (writeSet), at most 56 senders a
// set.
func (w *batchOut) writeCols(k *denseKernel, cols *stencilCols, runs []int32, r int32, masks []byte) []byte {
	self, at := -1, 0
	for j := 0; j+2 < len(runs); j += 3 {
		if lo, hi := runs[j], runs[j+1]; lo <= r && r < hi {
			self = at + int(r-lo)
		}
		at += int(runs[j+1] - runs[j])
	}
	masks = w.denseMasks(k, cols.xs, cols.ys, cols.zs, cols.keys, self, masks)
	at = 0
	for j := 0; j+2 < len(runs); j += 3 {
		for a, hi := runs[j], runs[j+1]; a < hi; a += 56 {
			m := min(56, int(hi-a))
			set := binary.LittleEndian.Uint64(masks[at/8:]) >> (at % 8) & (1<<m - 1)
			if set != 0 {
				w.writeSet(set, a)
			}
			at += m
		}
	}
	return masks
}

// denseRun writes the senders of actors lo to hi-1 (if any) due to
// recipient r by their keys, k aimed at r and their table (writeDense).
func (p *Pipeline) denseRun(w *batchOut, k *denseKernel, keys []uint32, lo, hi, r int32, sc *relayScratch) {
	f := &p.frame
	sc.denseMask = w.writeDense(k, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], keys[lo:hi], lo, r, sc.denseMask, bestDensePass)
}

// writeDense writes the senders lo+i, for i from 0 to len(xs)-1, of the
// columns xs, ys, zs (positions) and keys (due keys), that are due to
// recipient r (k aimed at it) and not r itself, as pass says where the
// table (for denseCopy16, at most three finite limits) and the room allow
// (roomForDense) and the batch is not thinning (a thinned batch keeps
// some of the due records, record by record: batchOut.thin), and, for
// denseCopy8, where the bit sets it packs by are not sparse (sparseMasks);
// else decided into bit sets and copied by writeSet. Due bytes (k.bytes)
// take denseBytes16 where pass is denseCopy16, and denseCopy8 where their
// ranks (k.ranks) cannot be read a whole group past the run. masks is the
// bit sets' memory, which it returns.
func (w *batchOut) writeDense(k *denseKernel, xs, ys, zs []float32, keys []uint32, lo, r int32, masks []byte, pass densePass) []byte {
	n := len(xs)
	if n == 0 {
		return masks
	}
	self := -1
	if lo <= r && int(r) < int(lo)+n {
		self = int(r - lo)
	}
	if k.bytes && pass == densePass16 && cap(k.ranks) < (n+15)&^15 {
		pass = densePass8 // denseBytes16 reads the ranks a whole group past the run
	}
	vector := w.passes(k, pass) && w.roomForDense(n, int(lo)+n) && colsRoom(xs, ys, zs, keys)
	if vector && pass == densePass16 { // decided and packed in one pass
		return w.densePass(k, xs, ys, zs, keys, w.records[int(lo)*wire.RecordSize:], self, masks, pass)
	}
	masks = w.denseMasks(k, xs, ys, zs, keys, self, masks)
	if vector && !sparseMasks(masks, n) { // packed by the bit sets
		return w.densePass(k, xs, ys, zs, keys, w.records[int(lo)*wire.RecordSize:], self, masks, pass)
	}
	for i := 0; i < n; i += 64 {
		if set := binary.LittleEndian.Uint64(masks[i/8:]); set != 0 {
			w.writeSet(set, lo+int32(i))
		}
	}
	return masks
}

// passes reports whether pass may write a run for k's table into this
// batch: a vector pass (denseCopy16 takes tables of up to three finite
// limits; denseCopy8 packs what denseDue decided, by any table) into a
// batch that is not thinning.
func (w *batchOut) passes(k *denseKernel, pass densePass) bool {
	return (pass == densePass8 || pass == densePass16 && k.limits <= 3) && w.thin == nil
}

// colsRoom reports whether the columns may be read a group of sixteen
// past their last sender, as the vector passes read them.
func colsRoom(xs, ys, zs []float32, keys []uint32) bool {
	up := (len(xs) + 15) &^ 15
	return cap(xs) >= up && cap(ys) >= up && cap(zs) >= up && cap(keys) >= up
}

// densePass writes, by pass (a vector pass: passes), the senders of the
// columns xs, ys, zs and keys due to k's recipient, but for the one at
// self (-1: none), from recs on, the first sender's record; for
// denseCopy8, decided into masks already (denseMasks). The batch, the
// columns and the records have room for the pass's reads and writes past
// the last sender (roomForDense, colsRoom). It returns masks.
func (w *batchOut) densePass(k *denseKernel, xs, ys, zs []float32, keys []uint32, recs []byte, self int, masks []byte, pass densePass) []byte {
	n := len(xs)
	if w.header == 0 {
		w.header = w.fullHeader()
	}
	k.recs, k.n, k.header = &recs[0], int64(n), w.header
	base := uintptr(unsafe.Pointer(&w.buf[0]))
	k.dst, k.end = base+uintptr(w.n), base+uintptr(w.n+w.left*wire.RecordSize)
	end := k.end
	if pass == densePass8 { // masks decided (writeDense)
		k.masks, k.clut, k.low = &masks[0], &compressLUT, &lowLUT
		denseCopy8(k)
	} else {
		k.xs, k.ys, k.zs, k.keys = &xs[0], &ys[0], &zs[0], &keys[0]
		k.selfAt, k.tailAt = -1, -1
		if self >= 0 {
			k.selfAt, k.selfDrop = int64(self)&^15, ^uint32(1<<(self&15))
		}
		if n%16 != 0 {
			k.tailAt, k.tailDrop = int64(n&^15), 1<<(n%16)-1
		}
		k.aimSteps()
		if k.bytes {
			denseBytes16(k)
		} else {
			denseCopy16(k)
		}
	}
	opened := int((k.end - end) / datagramSize)
	written := (int(k.dst-base) - w.n - opened*wire.BatchHeaderSize) / wire.RecordSize
	if opened > 0 {
		if w.count > 0 { // the datagram it filled (see open)
			wire.SetBatchCount(w.buf[w.head:], wire.MaxRecordsPerBatch)
		}
		w.head = int(k.end-base) - datagramSize
	}
	w.n = int(k.dst - base)
	w.left = int(k.end-k.dst) / wire.RecordSize
	w.count += int32(written)
	return masks
}

// sparseMasks reports whether fewer than one in four of the n senders of
// masks (denseMasks') are due: then their records are copied by their set
// bits (writeSet), a word of 64 senders at a time, where denseCopy8 would
// branch on every group of eight, most of them empty or of one sender,
// as unpredictably as a coin.
func sparseMasks(masks []byte, n int) bool {
	due := 0
	for i := 0; i < n; i += 64 {
		due += bits.OnesCount64(binary.LittleEndian.Uint64(masks[i/8:]))
	}
	return due*4 < n
}

// denseMasks decides the senders of xs, ys, zs and keys into bit sets
// (denseDue) in masks' memory, which it returns, without the one at self
// (-1: none).
func (w *batchOut) denseMasks(k *denseKernel, xs, ys, zs []float32, keys []uint32, self int, masks []byte) []byte {
	n := len(xs)
	masks = resizeSlice(masks, (n+63)/64*8+8)
	if k.bytes {
		denseDueBytes(masks, xs, ys, zs, keys, k)
	} else {
		denseDue(masks, xs, ys, zs, keys, k)
	}
	if self >= 0 {
		masks[self/8] &^= 1 << (self % 8)
	}
	return masks
}

// denseDue writes to masks, bit i of byte i/8 for sender i, which of the
// senders at xs, ys, zs with due keys keys are due to k's recipient, and
// clears the bits past them to the next eight bytes. With AVX2, eight
// senders an instruction (denseDue8), reading whole groups where the
// slices have the room; else, and for the rest, one by one.
func denseDue(masks []byte, xs, ys, zs []float32, keys []uint32, k *denseKernel) {
	n := len(xs)
	ys, zs, keys = ys[:n], zs[:n], keys[:n]
	i := 0
	if up := denseGroups(n, cap(xs), cap(ys), cap(zs), cap(keys)); up > 0 {
		denseDue8(&masks[0], &xs[0], &ys[0], &zs[0], &keys[0], up, k)
		i = min(up, n)
	}
	clearPast(masks, i, n)
	for ; i < n; i++ {
		dx, dy, dz := xs[i]-k.rx, ys[i]-k.ry, zs[i]-k.rz
		d := dx*dx + dy*dy + dz*dz
		due := keys[i]&k.want[k.bands.bandOf(d)] != 0 && d < k.cut
		masks[i/8] |= byte(b2i(due)) << (i % 8)
	}
}

// denseGroups returns how many of n senders a vector kernel decides (a
// multiple of eight): with AVX2, n rounded up to whole groups where every
// column's capacity (caps) holds them, else down; without, none.
func denseGroups(n int, caps ...int) int {
	if !useAVX2 || n == 0 {
		return 0
	}
	up := (n + 7) &^ 7
	for _, c := range caps {
		if c < up {
			return n &^ 7
		}
	}
	return up
}

// clearPast clears the bits of masks (a bit a sender) from sender i, the
// first a vector kernel did not decide (i of n: its whole group's lanes
// past n dropped), to the end of the eight bytes past n's last word.
func clearPast(masks []byte, i, n int) {
	clear(masks[(i+7)/8 : (n+63)/64*8])
	if i%8 != 0 {
		masks[i/8] &= 1<<(i%8) - 1
	}
}

// bandOf returns the band of squared distance d: the limits it has reached.
func (b *tierBands) bandOf(d float32) int {
	n := 0
	for k := range b.limSq {
		n += b2i(d >= b.limSq[k][0])
	}
	return n
}

// finiteLimits returns how many of b's band limits are finite: the
// bands a distance can reach beyond the first.
func finiteLimits(b *tierBands) int {
	n := 0
	for k := range b.limSq {
		if !math.IsInf(float64(b.limSq[k][0]), 1) {
			n++
		}
	}
	return n
}
