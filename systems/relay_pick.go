package systems

import (
	"math"
	"unsafe"

	"github.com/throng-go/throng/interest"
)

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
	// cut is the squared radius of the senders' class (Class.Radius): no
	// pair at or beyond it is due. 0 means none (so is +Inf); the vector
	// kernels, which take the players' table alone, have none.
	cut float32
}

// reach returns t.cut, +Inf for none.
func (t *picker) reach() float32 {
	if t.cut == 0 {
		return float32(math.Inf(1))
	}
	return t.cut
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
	self, cut := t.r-t.lo, t.reach()
	sel = sel[:len(changed)]
	xs, ys, zs, res = xs[:len(changed)], ys[:len(changed)], zs[:len(changed)], res[:len(changed)]
	m := 0
	for k, c := range changed {
		dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
		d := dx*dx + dy*dy + dz*dz
		period := min(stretch(tiers.PeriodSq(d), spread), interest.FastPeriods-1) // the min: a no-op that drops the bounds checks
		sel[m] = t.lo + int32(k)
		m += b2i(c > oldest) & b2i(c+uint64(period) > tick) & b2i(res[k][period] == want[period]) & b2i(int32(k) != self) & b2i(d < cut)
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

// aim gives the picker the recipient's residues, want, and, where the
// vector kernels choose (chooseByTiers8, and at a level above 0
// chooseThrottled8), loads the recipient and the tier table into them.
// The picker's other fields must be set.
func (t *picker) aim(want interest.Residues, bands *tierBands, throttle interest.Throttle, level uint8) {
	t.want = want
	if !useAVX2 {
		return
	}
	t.k.aim(t, bands)
	if level > 0 {
		t.k.aimThrottled(t, bands, throttle, level)
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
	self, cut := t.r-t.lo, t.reach()
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
		live := b2i(c > oldest) & b2i(int32(k) != self) & b2i(d < cut) // beyond the radius: not in range at all
		sent := live & b2i(c+uint64(period) > tick) & due(k, period)
		sel[m] = t.lo + int32(k)
		m += sent
		held += (1 - sent) & live & b2i(c+uint64(ip) > tick) & due(k, ip)
	}
	return m, held
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
