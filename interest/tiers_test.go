package interest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
)

func defaultTiers(t testing.TB) *interest.Tiers {
	t.Helper()
	tiers, err := interest.NewTiers(interest.DefaultSteps(interest.DefaultFullRateUnits, interest.DefaultMaxSkip), interest.DefaultMaxSkip)
	require.NoError(t, err)
	return &tiers
}

func sq(d float32) float32 { return d * d }

func TestCloserThanFullRateAlwaysPeriodOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, full := range []float32{1, 100, 2048, 3000} {
		for _, maxSkip := range []int{2, 4, 8} {
			tiers, err := interest.NewTiers(interest.DefaultSteps(full, maxSkip), maxSkip)
			require.NoError(t, err)
			// At the edge, to float32 precision of the squared distance.
			for _, d := range []float32{0, full / 2, math.Nextafter32(full, 0)} {
				assert.Equal(t, uint8(1), tiers.PeriodSq(sq(d)), "full=%v maxSkip=%d d=%v", full, maxSkip, d)
			}
			// Anywhere inside, split over the axes as the relay computes it.
			for range 1000 {
				d := r.Float32() * full * 0.999
				a := r.Float64() * 2 * math.Pi
				dx, dy := d*float32(math.Cos(a)), d*float32(math.Sin(a))
				assert.Equal(t, uint8(1), tiers.PeriodSq(dx*dx+dy*dy), "full=%v maxSkip=%d d=%v", full, maxSkip, d)
			}
		}
	}
}

func TestTierBoundariesMatchDefaults(t *testing.T) {
	tiers := defaultTiers(t)
	cases := []struct {
		dist float32
		want uint8
	}{
		{0, 1}, {1, 1}, {2047, 1},
		{2048, 2}, {3000, 2}, {4095, 2},
		{4096, 3}, {6143, 3},
		{6144, 4}, {8192, 4}, {11585, 4}, {100000, 4},
		{float32(math.Inf(1)), 4},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, tiers.PeriodSq(sq(c.dist)), "distance %v", c.dist)
	}
	assert.Equal(t, uint8(4), tiers.Longest())
}

func TestDisabledInterestIsFullRateEverywhere(t *testing.T) {
	var zero interest.Tiers
	empty, err := interest.NewTiers(nil, 1)
	require.NoError(t, err)
	oneSkip, err := interest.NewTiers(interest.DefaultSteps(2048, 1), 4)
	require.NoError(t, err)
	for _, tiers := range []*interest.Tiers{&zero, &empty, &oneSkip} {
		for _, d := range []float32{0, 1, 2048, 4096, 1e6, float32(math.Inf(1))} {
			assert.Equal(t, uint8(1), tiers.PeriodSq(sq(d)), "distance %v", d)
		}
		assert.Equal(t, uint8(1), tiers.Longest())
	}
}

// unitsPerMetre is a world where a 4096-unit chunk is 58.5 m.
const unitsPerMetre = 70

func TestCrowdPresetMatchesItsMetres(t *testing.T) {
	for _, upm := range []float32{unitsPerMetre, 1, 100} {
		tiers, err := interest.NewTiers(interest.CrowdSteps(upm), 10)
		require.NoError(t, err)
		cases := []struct {
			metres float32
			want   uint8
		}{
			{0, 1}, {30, 1}, {59.9, 1},
			{60, 3}, {80, 3}, {99.9, 3},
			{100, 5}, {139.9, 5},
			{interest.CrowdTenthBeyondMetres, 10}, {500, 10},
		}
		for _, c := range cases {
			assert.Equal(t, c.want, tiers.PeriodSq(sq(c.metres*upm)), "%v m at %v units/m", c.metres, upm)
		}
	}
	// At 70 units a metre the bands start at 4200, 7000 and 9800 units.
	tiers, err := interest.NewTiers(interest.CrowdSteps(unitsPerMetre), 10)
	require.NoError(t, err)
	assert.Equal(t, uint8(1), tiers.PeriodSq(sq(4199)))
	assert.Equal(t, uint8(3), tiers.PeriodSq(sq(4200)))
	assert.Equal(t, uint8(5), tiers.PeriodSq(sq(7000)))
	assert.Equal(t, uint8(10), tiers.PeriodSq(sq(9800)))
}

func TestPeriodsAreCappedByMaxPeriod(t *testing.T) {
	tiers, err := interest.NewTiers(interest.CrowdSteps(1), 4)
	require.NoError(t, err)
	assert.Equal(t, uint8(1), tiers.PeriodSq(sq(10)))
	assert.Equal(t, uint8(3), tiers.PeriodSq(sq(60)))
	assert.Equal(t, uint8(4), tiers.PeriodSq(sq(100)))
	assert.Equal(t, uint8(4), tiers.PeriodSq(sq(1000)))
	assert.Equal(t, uint8(4), tiers.Longest())
}

func TestDefaultStepsFollowDesign(t *testing.T) {
	assert.Equal(t, []interest.Step{
		{BeyondUnits: 2048, Period: 2},
		{BeyondUnits: 4096, Period: 3},
		{BeyondUnits: 6144, Period: 4},
	}, interest.DefaultSteps(2048, 4))
	assert.Empty(t, interest.DefaultSteps(2048, 1))
	assert.Empty(t, interest.DefaultSteps(2048, -3))
	clamped := interest.DefaultSteps(1000, 50)
	require.Len(t, clamped, interest.MaxSteps)
	assert.Equal(t, uint8(interest.MaxSteps+1), clamped[len(clamped)-1].Period)
	_, err := interest.NewTiers(clamped, 255)
	assert.NoError(t, err)
}

// The table's answer equals reading the steps in order, on random tables.
func TestPeriodSqMatchesReadingStepsInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		n := r.IntN(interest.MaxSteps + 1)
		steps := make([]interest.Step, n)
		d, p := float32(0), uint8(1)
		for i := range steps {
			d += 1 + r.Float32()*3000
			p += uint8(r.IntN(3))
			steps[i] = interest.Step{BeyondUnits: d, Period: max(p, 1)}
		}
		maxPeriod := 1 + r.IntN(12)
		tiers, err := interest.NewTiers(steps, maxPeriod)
		require.NoError(t, err)
		for range 200 {
			dist := r.Float32() * (d + 3000)
			want := 1
			for _, s := range steps {
				if sq(dist) >= sq(s.BeyondUnits) {
					want = int(s.Period)
				}
			}
			want = min(want, maxPeriod)
			require.Equal(t, uint8(want), tiers.PeriodSq(sq(dist)), "steps %v max %d dist %v", steps, maxPeriod, dist)
		}
	}
}

// TestBandsSearchGivesPeriodSq: the search Bands documents, run on the
// table it returns, and the count of limits reached both give PeriodSq's
// period for distances anywhere, on the steps' own limits (where a strict
// comparison would differ), for +Inf and for NaN, with 0 to MaxSteps
// steps, and for the zero Tiers.
func TestBandsSearchGivesPeriodSq(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 300 {
		steps := make([]interest.Step, r.IntN(interest.MaxSteps+1))
		d, p := float32(0), uint8(1)
		for i := range steps {
			d += 1 + r.Float32()*3000
			p += uint8(r.IntN(3))
			steps[i] = interest.Step{BeyondUnits: d, Period: p}
		}
		tiers, err := interest.NewTiers(steps, 1+r.IntN(20))
		require.NoError(t, err)
		limSq, _ := tiers.Bands()
		dists := []float32{float32(math.Inf(1)), float32(math.NaN()), 0}
		for _, l := range limSq[1 : len(steps)+1] {
			dists = append(dists, l, math.Nextafter32(l, 0))
		}
		for range 100 {
			dists = append(dists, sq(r.Float32()*(d+3000)))
		}
		checkBands(t, &tiers, dists, fmt.Sprint(steps))
	}
	var zero interest.Tiers
	checkBands(t, &zero, []float32{0, 1, 1e9, float32(math.Inf(1)), float32(math.NaN())}, "zero Tiers")
}

func checkBands(t *testing.T, tiers *interest.Tiers, dists []float32, name string) {
	t.Helper()
	limSq, periods := tiers.Bands()
	for _, dsq := range dists {
		band := bit(dsq >= limSq[4]) << 2
		band |= bit(dsq >= limSq[band|2]) << 1
		band |= bit(dsq >= limSq[band|1])
		reached := 0
		for k := 1; k <= interest.MaxSteps; k++ {
			reached += bit(dsq >= limSq[k])
		}
		require.Equal(t, tiers.PeriodSq(dsq), periods[band], "%s, squared distance %v: the search", name, dsq)
		require.Equal(t, band, reached, "%s, squared distance %v: the count", name, dsq)
	}
}

func bit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestNewTiersRejectsMalformedSteps(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	tooMany := interest.DefaultSteps(10, interest.MaxSteps+1)
	tooMany = append(tooMany, interest.Step{BeyondUnits: 1e6, Period: 200})
	cases := []struct {
		name      string
		steps     []interest.Step
		maxPeriod int
		says      string
	}{
		{"max period 0", nil, 0, "maxPeriod"},
		{"max period 256", nil, 256, "maxPeriod"},
		{"too many steps", tooMany, 255, "at most"},
		{"negative distance", []interest.Step{{BeyondUnits: -1, Period: 2}}, 4, "not negative"},
		{"NaN distance", []interest.Step{{BeyondUnits: nan, Period: 2}}, 4, "finite"},
		{"infinite distance", []interest.Step{{BeyondUnits: inf, Period: 2}}, 4, "finite"},
		{"descending", []interest.Step{{BeyondUnits: 200, Period: 2}, {BeyondUnits: 100, Period: 3}}, 4, "not beyond"},
		{"duplicate", []interest.Step{{BeyondUnits: 100, Period: 2}, {BeyondUnits: 100, Period: 3}}, 4, "not beyond"},
		{"period 0", []interest.Step{{BeyondUnits: 100, Period: 0}}, 4, "at least 1"},
		{"shorter farther", []interest.Step{{BeyondUnits: 100, Period: 3}, {BeyondUnits: 200, Period: 2}}, 4, "shorter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := interest.NewTiers(c.steps, c.maxPeriod)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), "interest: "), err.Error())
			assert.Contains(t, err.Error(), c.says)
		})
	}
}

// The design: with the default tiers, 400 actors spread uniformly over one
// 4096 x 4096 chunk give about 118,000 relays per tick averaged over a
// window, against 159,600 without interest management.
func TestDefaultTiersRelayAboutThreeQuartersOfSquare(t *testing.T) {
	tiers := defaultTiers(t)
	r := rand.New(rand.NewPCG(400, 4096))
	const n = 400
	xs, ys := make([]float32, n), make([]float32, n)
	for i := range xs {
		xs[i], ys[i] = r.Float32()*4096, r.Float32()*4096
	}
	clock := interest.NewClock(1000)
	const window = 12 // lcm(1, 2, 3, 4): every pair's share is exact
	relays, pairs := 0, 0
	for tick := uint64(1000); tick < 1000+window; tick++ {
		clock.Set(tick)
		for s := range n {
			for rc := range n {
				if s == rc {
					continue
				}
				pairs++
				dx, dy := xs[s]-xs[rc], ys[s]-ys[rc]
				p := tiers.PeriodSq(dx*dx + dy*dy)
				if p == 1 || clock.Sends(interest.Phase(uint32(s), uint32(rc)), p) {
					relays++
				}
			}
		}
	}
	assert.Equal(t, 159600*window, pairs)
	perTick := float64(relays) / window
	t.Logf("square/400 with default tiers: %.0f relays/tick", perTick)
	assert.InDelta(t, 118000, perTick, 118000*0.03)
}

// Span must agree with PeriodSq for every distance inside the span it
// describes, or the relay's block decisions would differ from pair by pair.
func TestSpanAgreesWithPeriodSqInsideIt(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, steps := range [][]interest.Step{
		interest.DefaultSteps(2048, 4),
		interest.CrowdSteps(70),
		{{BeyondUnits: 100, Period: 2}, {BeyondUnits: 101, Period: 2}, {BeyondUnits: 5000, Period: 9}},
		nil,
	} {
		tiers, err := interest.NewTiers(steps, 16)
		require.NoError(t, err)
		for range 5000 {
			a, b := r.Float32()*12000, r.Float32()*12000
			near, far := min(a, b)*min(a, b), max(a, b)*max(a, b)
			lo, hi, edge, ok := tiers.Span(near, far)
			require.Equal(t, tiers.PeriodSq(near), lo)
			require.Equal(t, tiers.PeriodSq(far), hi)
			if !ok {
				continue
			}
			for range 8 {
				d := near + r.Float32()*(far-near)
				want := lo
				if d >= edge {
					want = hi
				}
				require.Equal(t, tiers.PeriodSq(d), want, "steps %v: %v in [%v, %v], edge %v", steps, d, near, far, edge)
			}
		}
	}
}

func TestPeriodsListsEveryPeriodTheTableGives(t *testing.T) {
	studio, err := interest.NewTiers(interest.CrowdSteps(unitsPerMetre), 10)
	require.NoError(t, err)
	capped, err := interest.NewTiers(interest.CrowdSteps(unitsPerMetre), 5)
	require.NoError(t, err)
	var off interest.Tiers
	assert.Equal(t, []uint8{1, 2, 3, 4}, defaultTiers(t).Periods(nil))
	assert.Equal(t, []uint8{1, 3, 5, 10}, studio.Periods(nil))
	assert.Equal(t, []uint8{1, 3, 5}, capped.Periods(nil), "periods capped at maxPeriod collapse into one")
	assert.Equal(t, []uint8{1}, off.Periods(nil), "the zero value is full rate everywhere")
	// Every distance's period is in the list.
	for _, tiers := range []*interest.Tiers{defaultTiers(t), &studio, &capped} {
		periods := tiers.Periods(nil)
		for d := float32(0); d < 20000; d += 97 {
			assert.Contains(t, periods, tiers.PeriodSq(d*d), "distance %v", d)
		}
	}
}
