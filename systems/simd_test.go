package systems

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// TestKernelsUseVEXOnly reads simd_amd64.s: every instruction that names
// an X or Y register is a VEX one (its mnemonic starts with V). A legacy
// SSE instruction there (MOVQ DX, X11) ran each kernel call ten times
// slower on CPUs that save the Y registers' upper halves around it, and
// gave the same bytes, so no other test would notice.
func TestKernelsUseVEXOnly(t *testing.T) {
	src, err := os.ReadFile("simd_amd64.s")
	require.NoError(t, err)
	vector := regexp.MustCompile(`\b[XY](1[0-5]|[0-9])\b`)
	macros := map[string]bool{} // their uses are checked where they are defined
	for _, m := range regexp.MustCompile(`(?m)^#define (\w+)`).FindAllStringSubmatch(string(src), -1) {
		macros[m[1]] = true
	}
	checked := 0
	for n, line := range strings.Split(string(src), "\n") {
		code, _, _ := strings.Cut(line, "//")
		for _, ins := range strings.Split(code, ";") {
			ins = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(ins), "\\"))
			name, _, _ := strings.Cut(ins, "(")
			if !vector.MatchString(ins) || strings.HasPrefix(ins, "#define") || macros[name] {
				continue
			}
			checked++
			assert.True(t, strings.HasPrefix(ins, "V"), "simd_amd64.s:%d: %q is a legacy SSE instruction on a vector register", n+1, ins)
		}
	}
	require.Greater(t, checked, 50, "the file's vector instructions were found")
}

// beyondEdgeOneByOne is beyondEdge's rule, one sender at a time.
func beyondEdgeOneByOne(xs, ys, zs []float32, rx, ry, rz, edge float32) uint64 {
	var bits uint64
	for i, x := range xs {
		dx, dy, dz := x-rx, ys[i]-ry, zs[i]-rz
		if dx*dx+dy*dy+dz*dz >= edge {
			bits |= 1 << i
		}
	}
	return bits
}

// TestBeyondEdgeDecidesLikeThePairs: beyondEdge (eight senders an
// instruction where the CPU has AVX2) sets exactly the bits the pair rule
// does, for cells of 0 to 64 senders, half of the cases with the edge at
// one sender's exact squared distance, where a different rounding would
// show.
func TestBeyondEdgeDecidesLikeThePairs(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	r := rand.New(rand.NewPCG(1, 2))
	for it := range 100000 {
		n := r.IntN(maskActors + 1)
		room := n + r.IntN(8) // senders past the cell, read and dropped where there is room
		xs, ys, zs := make([]float32, room), make([]float32, room), make([]float32, room)
		for i := range room {
			xs[i], ys[i], zs[i] = r.Float32()*8192-2048, r.Float32()*8192-2048, r.Float32()*200
		}
		xs, ys, zs = xs[:n], ys[:n], zs[:n]
		rx, ry, rz := r.Float32()*4096, r.Float32()*4096, r.Float32()*100
		edge := float32(2048 * 2048)
		if it%2 == 0 && n > 0 {
			k := r.IntN(n)
			dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
			edge = dx*dx + dy*dy + dz*dz
		}
		require.Equal(t, beyondEdgeOneByOne(xs, ys, zs, rx, ry, rz, edge), beyondEdge(xs, ys, zs, rx, ry, rz, edge), "case %d, %d senders", it, n)
	}
}

// BenchmarkBeyondEdge decides a cell of 16 senders (a 5 x 5 grid's at 400
// players) against one recipient.
//
//	go test -run '^$' -bench BenchmarkBeyondEdge ./systems
func BenchmarkBeyondEdge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 16
	xs, ys, zs := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		xs[i], ys[i], zs[i] = r.Float32()*4096, r.Float32()*4096, r.Float32()*10
	}
	var bits uint64
	for b.Loop() {
		bits ^= beyondEdge(xs, ys, zs, 2000, 2000, 5, 2048*2048)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/sender")
	if bits == 1<<63 {
		b.Log(bits) // keeps the calls
	}
}

// TestPointBandsDecideLikePointPeriod: pointBands (pointBands8 with AVX2,
// the Go loop with -tags purego) puts every box in the band pointPeriod
// does, for random boxes around and away from the recipient, half of them
// with the edge at one of the box's exact bounds, where a different
// rounding would show.
func TestPointBandsDecideLikePointPeriod(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	r := rand.New(rand.NewPCG(5, 6))
	var b cellBoxes
	for it := range 20000 {
		n := 1 + r.IntN(maskActors)
		cells := make([]int32, n)
		classes := make([]cellClass, n)
		f := &Frame{cells: make([]cell, n)}
		rx, ry, rz := r.Float32()*4096, r.Float32()*4096, r.Float32()*100
		for i := range n {
			c := &f.cells[i]
			for k := range 3 {
				a, z := r.Float32()*8192-2048, r.Float32()*1024
				c.min[k], c.max[k] = a, a+z
			}
			cells[i] = int32(i)
			classes[i] = cellClass{near: 1, far: 2, edge: float32(2048 * 2048)}
			if r.IntN(2) == 0 { // the edge at the box's own nearest or farthest bound
				nx, fx := axisSpan(c.min[0]-rx, c.max[0]-rx)
				ny, fy := axisSpan(c.min[1]-ry, c.max[1]-ry)
				nz, fz := axisSpan(c.min[2]-rz, c.max[2]-rz)
				classes[i].edge = nx*nx + ny*ny + nz*nz
				if r.IntN(2) == 0 {
					classes[i].edge = fx*fx + fy*fy + fz*fz
				}
			}
		}
		b.fill(f, cells, classes)
		near, far := pointBands(&b, rx, ry, rz)
		for i := range n {
			want := pointPeriod(rx, ry, rz, &f.cells[i], classes[i])
			got := pointBand(classes[i], near>>i, far>>i)
			require.Equal(t, want, got, "case %d, box %d of %d", it, i, n)
		}
	}
}

// TestWriteSetWritesLikeOneByOne: a batch written set by set and list by
// list (writeSet, write: 32-byte moves with AVX2, where there is room)
// holds the same bytes, datagram headers included, as one written a record
// at a time, over sets that cross datagram boundaries and buffers with and
// without room to spare.
func TestWriteSetWritesLikeOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const senders = 300
	records := randomRecords(r, senders, recordOverrun)
	for it := range 2000 {
		var sets []uint64
		var los []int32
		total := 0
		for range 1 + r.IntN(12) {
			set := r.Uint64() & r.Uint64()
			lo := int32(r.IntN(senders - 64))
			sets, los = append(sets, set), append(los, lo)
			total += bits.OnesCount64(set)
		}
		datagrams := (total + wire.MaxRecordsPerBatch - 1) / wire.MaxRecordsPerBatch
		room := max(datagrams, 1)*datagramSize + r.IntN(2)*recordOverrun
		a := newBatchOut(make([]byte, 0, room), records, uint64(it))
		b := newBatchOut(make([]byte, 0, room), records, uint64(it))
		for k, set := range sets {
			var sel []int32
			for s := set; s != 0; s &= s - 1 {
				sel = append(sel, los[k]+int32(bits.TrailingZeros64(s)))
				b.one(sel[len(sel)-1])
			}
			if k%2 == 0 {
				a.writeSet(set, los[k])
			} else if len(sel) > 0 {
				a.write(sel)
			}
		}
		require.Equal(t, b.finish(), a.finish(), "case %d", it)
	}
}

// tiersForTest builds a tier table of up to MaxSteps random steps whose
// periods stay below interest.FastPeriods, as chooseByTiers requires, or
// at times the zero table (interest management off).
func tiersForTest(t testing.TB, r *rand.Rand) interest.Tiers {
	if r.IntN(10) == 0 {
		return interest.Tiers{}
	}
	steps := make([]interest.Step, r.IntN(interest.MaxSteps+1))
	d, p := float32(0), uint8(1)
	for i := range steps {
		d += 1 + r.Float32()*600
		p = min(p+uint8(r.IntN(4)), interest.FastPeriods-1)
		steps[i] = interest.Step{BeyondUnits: d, Period: p}
	}
	tiers, err := interest.NewTiers(steps, interest.FastPeriods-1)
	require.NoError(t, err)
	return tiers
}

// TestChooseByTiersDecidesLikeThePairs: chooseByTiers8 (eight pairs an
// instruction with AVX2) and the branch-free loop choose exactly the
// senders the rule does, step by step with branches (pairsDueOneByOne),
// in the same order, over random tier tables and spreads, runs of 1 to 70
// senders with and without room past them, senders on a band's exact
// limit (where another rounding or a strict comparison would show), the
// recipient among the senders or not, and ticks near the top of the
// uint64 range, where a signed comparison or the sum's wrap would show.
func TestChooseByTiersDecidesLikeThePairs(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	r := rand.New(rand.NewPCG(11, 12))
	for it := range 20000 {
		tiers := tiersForTest(t, r)
		c := newPairsCase(r, it, &tiers, 1)
		pick := &c.pick
		bands := bandsOf(&tiers)
		pick.k.aim(pick, &bands)
		pick.k.self, pick.k.lo = pick.r-pick.lo, pick.lo
		n := len(c.changed)
		want := pairsDueOneByOne(pick, c.changed, c.xs, c.ys, c.zs, c.res, &tiers)
		one := make([]int32, n)
		m := pick.chooseByTiersOneByOne(one, c.changed, c.xs, c.ys, c.zs, c.res, &tiers)
		require.Equal(t, want, one[:m], "case %d: %d senders, spread %d: one by one", it, n, pick.spread)
		if useAVX2 {
			got := make([]int32, (n+7)&^7)
			k := chooseByTiers8(&got[0], &c.changed[0], &c.xs[0], &c.ys[0], &c.zs[0], &c.res[0], n, &pick.k)
			require.Equal(t, want, got[:k], "case %d: %d senders, spread %d: vector", it, n, pick.spread)
		}
	}
}

// TestChooseThrottledDecidesLikeThePairs: under throttling, chooseThrottled8
// chooses the senders the one-by-one loop does, in the same order, and
// counts the same pairs held back by throttling alone, over random tier
// tables, throttle distances (senders on both sides, some exactly on it),
// pressure levels and spreads whose periods all stay short.
func TestChooseThrottledDecidesLikeThePairs(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the one-by-one loop decides every pair")
	}
	r := rand.New(rand.NewPCG(15, 16))
	vector := 0
	for it := range 20000 {
		tiers := tiersForTest(t, r)
		maxSkip := 1 + r.IntN(interest.FastPeriods-1)
		throttle, err := interest.NewThrottle(r.Float32()*1500, maxSkip)
		require.NoError(t, err)
		level := uint8(1 + r.IntN(maxSkip+1))
		longest := max(int(tiers.Longest()), int(throttle.FarPeriod(level)))
		c := newPairsCase(r, it, &tiers, longest)
		pick := &c.pick
		if it%5 == 0 { // senders exactly at the throttle distance
			pick.rx, pick.ry, pick.rz = 0, 0, 0
			for i := range min(4, len(c.xs)) {
				c.xs[i], c.ys[i], c.zs[i] = float32(math.Sqrt(float64(throttle.DistanceSq()))), 0, 0
			}
		}
		pick.clock, pick.rhalf = interest.NewClock(pick.tick), r.Uint32() // the one-by-one loop computes phases too
		bands := bandsOf(&tiers)
		pick.k.aim(pick, &bands)
		pick.k.aimThrottled(pick, &bands, throttle, level)
		n := len(c.changed)
		one := make([]int32, n)
		half := make([]uint32, n)
		m, held := pick.chooseThrottledOneByOne(one, c.changed, c.xs, c.ys, c.zs, c.res, half, &tiers, throttle, level)
		require.True(t, pick.k.throttled, "case %d: the periods stay short", it)
		got := make([]int32, (n+7)&^7)
		k, kheld := pick.chooseThrottled(got, c.changed, c.xs, c.ys, c.zs, c.res, half, &tiers, throttle, level)
		require.Equal(t, one[:m], got[:k], "case %d: %d senders, level %d, spread %d", it, n, level, pick.spread)
		require.Equal(t, held, kheld, "case %d: held back", it)
		if held > 0 {
			vector++
		}
	}
	assert.Greater(t, vector, 1000, "cases where throttling held pairs back")
}

// pairsCase is one recipient and a run of senders, with room past them
// for whole groups of eight.
type pairsCase struct {
	pick       picker
	changed    []uint64
	xs, ys, zs []float32
	res        []interest.Residues
}

// newPairsCase draws 1 to 70 senders around a recipient, some on a band's
// exact limit (where another rounding or a strict comparison would show),
// change ticks around the recipient's window, every fourth case near the
// top of the uint64 range (where a signed comparison or the sum's wrap
// would show), the recipient among the senders or not, and a spread that
// keeps periods up to longest short.
func newPairsCase(r *rand.Rand, it int, tiers *interest.Tiers, longest int) *pairsCase {
	limSq, _ := tiers.Bands()
	n := 1 + r.IntN(70)
	room := (n+7)&^7 + 1 + r.IntN(3)
	c := &pairsCase{
		changed: make([]uint64, room),
		xs:      make([]float32, room), ys: make([]float32, room), zs: make([]float32, room),
		res: make([]interest.Residues, room),
	}
	tick := uint64(1000 + r.IntN(1000))
	if it%4 == 0 {
		tick = ^uint64(0) - uint64(r.IntN(40)) // c + period wraps for some senders
	}
	pick := &c.pick
	pick.spread = uint8(1 + r.IntN((interest.FastPeriods-1)/max(int(tiers.Longest()), longest))) // stretched periods stay short
	pick.tick = tick
	pick.oldest = tick - uint64(r.IntN(20))
	pick.lo = int32(r.IntN(5000))
	pick.r = pick.lo + int32(r.IntN(n+2)) - 1 // often among the senders, at times just outside
	if it%3 == 0 {
		pick.rx, pick.ry, pick.rz = r.Float32()*2000-1000, r.Float32()*2000-1000, r.Float32()*50
	}
	for i := range room {
		c.changed[i] = tick - uint64(r.IntN(24)) + uint64(r.IntN(3))
		c.xs[i] = pick.rx + r.Float32()*3000 - 1500
		c.ys[i] = pick.ry + r.Float32()*3000 - 1500
		c.zs[i] = pick.rz + r.Float32()*40 - 20
		if r.IntN(4) == 0 { // exactly on a band's limit (the recipient at the origin)
			pick.rx, pick.ry, pick.rz = 0, 0, 0
			if k := 1 + r.IntN(interest.MaxSteps); !math.IsInf(float64(limSq[k]), 1) {
				c.xs[i], c.ys[i], c.zs[i] = float32(math.Sqrt(float64(limSq[k]))), 0, 0
			}
		}
		for p := 2; p < interest.FastPeriods; p++ { // residues modulo 0 and 1 are 0
			c.res[i][p] = uint8(r.IntN(3))
		}
	}
	for p := 2; p < interest.FastPeriods; p++ {
		pick.want[p] = uint8(r.IntN(3))
	}
	c.changed, c.xs, c.ys, c.zs, c.res = c.changed[:n], c.xs[:n], c.ys[:n], c.zs[:n], c.res[:n]
	return c
}

// pairsDueOneByOne is the relay's rule for the pairs of recipient t, with
// a branch for each step: not the recipient, changed since the oldest
// tick the recipient could have missed, within the pair's period (the
// tier table's, stretched by the recipient's spread) of the tick, and on
// its phase.
func pairsDueOneByOne(t *picker, changed []uint64, xs, ys, zs []float32, res []interest.Residues, tiers *interest.Tiers) []int32 {
	due := []int32{}
	for k, c := range changed {
		if c <= t.oldest || t.lo+int32(k) == t.r {
			continue
		}
		dx, dy, dz := xs[k]-t.rx, ys[k]-t.ry, zs[k]-t.rz
		period := stretch(tiers.PeriodSq(dx*dx+dy*dy+dz*dz), t.spread)
		if c+uint64(period) <= t.tick {
			continue
		}
		if period > 1 && res[k][period] != t.want[period] {
			continue
		}
		due = append(due, t.lo+int32(k))
	}
	return due
}

// BenchmarkChooseByTiers decides runs of senders against one recipient
// with the default tiers: 6 (about the mean run at world/10000, a 3 x 3
// stencil of sparse chunks) and 24, eight pairs an instruction (vector,
// where the CPU has AVX2) and one by one.
//
//	go test -run '^$' -bench BenchmarkChooseByTiers ./systems
func BenchmarkChooseByTiers(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	tiers := defaultTiers(b)
	bands := bandsOf(&tiers)
	const room = 64
	changed := make([]uint64, room)
	xs, ys, zs := make([]float32, room), make([]float32, room), make([]float32, room)
	res := make([]interest.Residues, room+1)
	for i := range room {
		changed[i] = 100 - uint64(r.IntN(2))
		xs[i], ys[i], zs[i] = r.Float32()*600-300, r.Float32()*600-300, r.Float32()*10
		for p := range res[i] {
			res[i][p] = uint8(r.IntN(3))
		}
	}
	var pick picker
	pick.tick, pick.oldest, pick.r, pick.spread = 100, 90, -1, 1
	pick.k.aim(&pick, &bands)
	sel := make([]int32, room)
	for _, n := range []int{6, 24} {
		for _, mode := range []string{"vector", "onebyone"} {
			b.Run(fmt.Sprintf("senders=%d/mode=%s", n, mode), func(b *testing.B) {
				if mode == "vector" && !useAVX2 {
					b.Skip("no AVX2")
				}
				m := 0
				for b.Loop() {
					m += pick.chooseByTiersOneByOneOr(mode == "vector", sel, changed[:n], xs[:n], ys[:n], zs[:n], res[:n], &tiers)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/pair")
				if m == -1 {
					b.Log(m)
				}
			})
		}
	}
}

func (t *picker) chooseByTiersOneByOneOr(vector bool, sel []int32, changed []uint64, xs, ys, zs []float32, res []interest.Residues, tiers *interest.Tiers) int {
	if vector {
		return t.chooseByTiers(sel, changed, xs, ys, zs, res, tiers)
	}
	return t.chooseByTiersOneByOne(sel, changed, xs, ys, zs, res, tiers)
}

// baseRecipient returns a pipeline whose frame holds actors actors, the
// recipient r among them at a random place (coord, and a height), and the
// default tiers' cycle of quotients: what the base-list kernels read of it.
func baseRecipient(rng *rand.Rand, r int32, actors int, coord func() float32) *Pipeline {
	p := &Pipeline{}
	f := &p.frame
	f.x, f.y, f.z = make([]float32, actors), make([]float32, actors), make([]float32, actors)
	f.x[r], f.y[r], f.z[r] = coord(), coord(), float32(rng.IntN(64))
	f.due.cycle = 12
	return p
}

// TestChooseBasedDecidesLikeOneByOne: chooseBased8 chooses the base-list
// candidates chooseBasedOneByOne does, in the same order, over random
// runs of cells (one band and two, candidates exactly on an edge, the
// recipient among them), ages, quotients and phases; and gives up (-1)
// exactly where a candidate's class has no periods, which the Go loop
// decides by the tier table.
func TestChooseBasedDecidesLikeOneByOne(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: chooseBasedOneByOne is the only chooser")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	coord := func() float32 { return float32(rng.IntN(8192)) - 4096 + float32(rng.IntN(4))/4 }
	gaveUp := 0
	for it := range 20000 {
		n := 1 + rng.IntN(70)
		classes := make([]cellClass, 1+rng.IntN(8))
		first := int32(rng.IntN(200))
		r := int32(rng.IntN(3 * n))
		p := baseRecipient(rng, r, 3*n, coord)
		f := &p.frame
		spread := uint8(5 + rng.IntN(40))
		var info baseCands
		info.resize(n)
		cands := padded([]int32(nil), n)
		cell := int32(0)
		for i := range n {
			if rng.IntN(3) == 0 && int(cell) < len(classes)-1 {
				cell++
			}
			cands[i] = int32(i*3 + rng.IntN(3)) // ascending, as a list's frame indices are
			if rng.IntN(4) == 0 {
				cands[i] = r // the recipient's own cell: it is not its own sender
			}
			info.x[i], info.y[i], info.z[i] = coord(), coord(), float32(rng.IntN(64))
			info.cell[i], info.age[i], info.quot[i] = first+cell, uint8(rng.IntN(24)), uint8(rng.IntN(12))
		}
		for i := range classes {
			near := uint8(1 + rng.IntN(6))
			far := near + uint8(rng.IntN(3)) // at most 8: the kernel's table
			switch rng.IntN(6) {
			case 0: // one band
				classes[i] = cellClass{near: near, far: near, edge: float32(math.Inf(1))}
			case 1: // an edge exactly at a candidate's distance
				j := rng.IntN(n)
				dx, dy, dz := info.x[j]-f.x[r], info.y[j]-f.y[r], info.z[j]-f.z[r]
				classes[i] = cellClass{near: near, far: far, edge: dx*dx + dy*dy + dz*dz}
			case 2:
				if rng.IntN(10) == 0 { // no class: the tier table decides
					classes[i] = cellClass{}
					continue
				}
				fallthrough
			default:
				classes[i] = cellClass{near: near, far: far, edge: float32(rng.IntN(1 << 25))}
			}
		}
		sc := &relayScratch{}
		k := &sc.baseK
		for tp := range uint8(8) {
			// Any stretched period, 0 (a band the pass leaves to the
			// other) and 255 (the cap) among them.
			sc.bdue[tp+1], sc.bperiod[tp+1] = uint64(rng.Uint32()), uint8(rng.IntN(256))
			require.True(t, k.setDue(tp+1, sc.bdue[tp+1], sc.bperiod[tp+1]))
		}
		k.aim(f, r)
		k.picks, k.x, k.y, k.z, k.cell = &cands[0], &info.x[0], &info.y[0], &info.z[0], &info.cell[0]
		k.age, k.quot, k.classes, k.first = &info.age[0], &info.quot[0], &classes[0], first
		got := make([]int32, (n+7)&^7)
		m := chooseBased8(&got[0], k, n)
		unclassed := false
		for i := range n {
			c := classes[info.cell[i]-first]
			dx, dy, dz := info.x[i]-f.x[r], info.y[i]-f.y[r], info.z[i]-f.z[r]
			tp := c.near
			if dx*dx+dy*dy+dz*dz >= c.edge {
				tp = c.far
			}
			unclassed = unclassed || tp == 0
		}
		if unclassed {
			require.Equal(t, -1, m, "case %d: a candidate without a class must be left to the Go loop", it)
			gaveUp++
			continue
		}
		want := make([]int32, n)
		w := p.chooseBasedOneByOne(want, cands, info, classes, first, r, spread, sc)
		require.Equal(t, want[:w], got[:max(m, 0)], "case %d: %d candidates, spread %d", it, n, spread)
	}
	t.Logf("%d cases left to the Go loop", gaveUp)
	assert.Positive(t, gaveUp)
}

// TestChooseBasedWideDecidesByTheTable: chooseBased16 chooses the
// base-list candidates chooseBasedOneByOne does where the tier table
// decides every pair (cells without a class), in the same order, over
// random tables of one to four bands and radii (none, or cutting through
// the candidates), candidates on a limit, at the recipient, at infinity
// and not a number away, runs of any length (a last group cut short),
// ages, quotients and phases.
func TestChooseBasedWideDecidesByTheTable(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512: chooseBased8 or the Go loop decides")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	coord := func() float32 { return float32(rng.IntN(8192)) - 4096 + float32(rng.IntN(4))/4 }
	chosen := 0
	for it := range 20000 {
		n := 1 + rng.IntN(70)
		r := int32(rng.IntN(3 * n))
		p := baseRecipient(rng, r, 3*n, coord)
		f := &p.frame
		var steps []interest.Step
		period := uint8(1)
		for range rng.IntN(4) {
			period += uint8(rng.IntN(3))
			steps = append(steps, interest.Step{BeyondUnits: float32(1 + rng.IntN(4096)), Period: min(period, 8)})
		}
		slices.SortFunc(steps, func(a, b interest.Step) int { return cmp.Compare(a.BeyondUnits, b.BeyondUnits) })
		tiers, err := interest.NewTiers(steps, 8)
		if err != nil {
			continue // two steps at one distance
		}
		reach := float32(math.Inf(1))
		if rng.IntN(2) == 0 {
			reach = float32(rng.IntN(1 << 25))
		}
		kind := uint8(rng.IntN(3))
		p.tierSets = make([]interest.Tiers, kind+1)
		p.kindReach = make([]float32, kind+1)
		p.tierSets[kind], p.kindReach[kind] = tiers, reach
		p.kindBands = append(make([]tierBands, kind), bandsOf(&tiers))
		p.kindLimits = append(make([]int, kind), finiteLimits(&p.kindBands[kind]))
		f.cells = []cell{{kind: kind}}
		spread := uint8(5 + rng.IntN(27)) // a stretched period of at most 8 spreads stays below 256
		var info baseCands
		info.resize(n)
		cands := padded([]int32(nil), n)
		for i := range n {
			cands[i] = int32(i*3 + rng.IntN(3))
			if rng.IntN(4) == 0 {
				cands[i] = r
			}
			info.x[i], info.y[i], info.z[i] = coord(), coord(), float32(rng.IntN(64))
			switch rng.IntN(12) {
			case 0: // on a limit
				lim, _ := tiers.Bands()
				d := float32(math.Sqrt(float64(lim[1+rng.IntN(3)])))
				info.x[i], info.y[i], info.z[i] = f.x[r]+d, f.y[r], f.z[r]
			case 1:
				info.x[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
			case 2:
				info.y[i] = float32(math.NaN())
			case 3:
				info.x[i], info.y[i], info.z[i] = f.x[r], f.y[r], f.z[r]
			}
			info.cell[i], info.age[i], info.quot[i] = 0, uint8(rng.IntN(256)), uint8(rng.IntN(40))
		}
		sc := &relayScratch{}
		k := &sc.baseK
		for tp := range uint8(8) {
			// Any stretched period, 0 (a band the pass leaves to the
			// other) and 255 (the cap) among them.
			sc.bdue[tp+1], sc.bperiod[tp+1] = uint64(rng.Uint32()), uint8(rng.IntN(256))
			require.True(t, k.setDue(tp+1, sc.bdue[tp+1], sc.bperiod[tp+1]))
		}
		k.aim(f, r)
		k.ready, k.wide, k.table = true, true, -1
		classes := []cellClass{{}} // no class: the table decides each pair
		got := make([]int32, n+16)
		m := p.chooseBased(got, cands, info, classes, 0, r, spread, kind, sc)
		require.Equal(t, int32(kind), k.table, "case %d: the wide kernel took the table", it)
		want := make([]int32, n)
		w := p.chooseBasedOneByOne(want, cands, info, classes, 0, r, spread, sc)
		require.Equal(t, want[:w], got[:m], "case %d: %d candidates, spread %d, table %v, reach %v", it, n, spread, steps, reach)
		chosen += w
	}
	assert.Positive(t, chosen)
}

// BenchmarkChooseBased decides a recipient's base-list candidates as in a
// square of 1,000 at the defaults: 70 candidates over 25 cells, half of
// them in two bands, one by one, eight at a time by the classes and
// sixteen at a time by the distances.
//
//	go test -run '^$' -bench BenchmarkChooseBased ./systems
func BenchmarkChooseBased(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, ncells = 70, 25
	p := &Pipeline{}
	f := &p.frame
	f.x, f.y, f.z = []float32{1000}, []float32{1500}, []float32{0}
	f.due.cycle = 12
	classes := make([]cellClass, ncells)
	for i := range classes {
		classes[i] = cellClass{near: 1, far: 1, edge: float32(math.Inf(1))}
		if i%2 == 0 {
			classes[i] = cellClass{near: 1, far: 2, edge: 2048 * 2048}
		}
	}
	var info baseCands
	info.resize(n)
	cands := padded([]int32(nil), n)
	for i := range n {
		cands[i] = int32(1 + i)
		info.x[i], info.y[i] = float32(rng.IntN(4096)), float32(rng.IntN(4096))
		info.cell[i], info.age[i], info.quot[i] = int32(i*ncells/n), 0, uint8(rng.IntN(12))
	}
	sc := &relayScratch{}
	k := &sc.baseK
	for tp := range uint8(8) {
		sc.bdue[tp+1], sc.bperiod[tp+1] = uint64(rng.Uint32()), (tp+1)*13
		k.setDue(tp+1, sc.bdue[tp+1], sc.bperiod[tp+1])
	}
	k.aim(f, 0)
	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	require.NoError(b, err)
	p.kindBands, p.kindReach = []tierBands{bandsOf(&tiers)}, []float32{float32(math.Inf(1))}
	p.kindLimits = []int{finiteLimits(&p.kindBands[0])}
	sel := make([]int32, n+16)
	for _, mode := range []string{"one-by-one", "vector", "wide"} {
		b.Run("mode="+mode, func(b *testing.B) {
			if mode == "vector" && !useAVX2 || mode == "wide" && !useAVX512 {
				b.Skip("no AVX2 or AVX-512")
			}
			k.ready, k.wide, k.table = mode != "one-by-one", mode == "wide", -1
			m := 0
			for b.Loop() {
				m += p.chooseBased(sel, cands, info, classes, 0, 0, 13, 0, sc)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/candidate")
		})
	}
}

// TestMergeSorted16MergesAsTheGoLoop: the AVX-512 merge of the base and
// capped lists' choices gives the two in canonical order, as
// mergeAscending does, for random splits of up to 64 senders, either side
// empty, one wholly after the other.
func TestMergeSorted16MergesAsTheGoLoop(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(49, 50))
	for it := range 5000 {
		n := rng.IntN(65)
		a, b, want := twoChoices(rng, n, 9000, it%7 == 0)
		// Garbage past both ends, which the merge reads and must not take.
		for _, s := range [][]int32{a, b} {
			for _, i := range []int{len(s), cap(s) - 1} {
				if i < cap(s) {
					s[:cap(s)][i] = int32(rng.IntN(20000) - 10000)
				}
			}
		}
		dst := make([]int32, 64+16)
		mergeSorted16(&dst[0], &a[:1][0], len(a), &b[:1][0], len(b))
		require.Equal(t, want, dst[:n], "case %d: %v and %v", it, a, b)
	}
}
