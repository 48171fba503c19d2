package interest_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
)

func throttle3(t testing.TB) interest.Throttle {
	t.Helper()
	th, err := interest.NewThrottle(interest.DefaultThrottleDistanceUnits, 3) // the example: interest 4 + throttle 3 give 4
	require.NoError(t, err)
	return th
}

func rates3(t testing.TB) *interest.Rates {
	t.Helper()
	return &interest.Rates{Interest: *defaultTiers(t), Throttle: throttle3(t)}
}

// sendsInWindow counts the ticks a pair sends in [start, start+n).
func sendsInWindow(rates *interest.Rates, dist float32, level uint8, phase uint32, start, n uint64) int {
	clock := interest.NewClock(start)
	sends := 0
	for tick := start; tick < start+n; tick++ {
		clock.Set(tick)
		if clock.Sends(phase, rates.PeriodSq(dist*dist, level)) {
			sends++
		}
	}
	return sends
}

func TestInterestAndThrottleTakeLargerPeriod(t *testing.T) {
	assert.Equal(t, uint8(4), interest.Combine(4, 3), "interest 4 + throttle 3")
	assert.Equal(t, uint8(4), interest.Combine(3, 4))
	assert.Equal(t, uint8(1), interest.Combine(1, 1))

	rates := rates3(t)
	cases := []struct {
		dist  float32
		level uint8
		want  uint8
	}{
		{7000, 2, 4}, // interest 4, throttle 3: 4, not 12
		{7000, 0, 4}, // interest alone
		{5000, 2, 3}, // interest 3, throttle 3
		{5000, 1, 3}, // interest 3, throttle 2
		{4096, 9, 3}, // throttle capped at maxThrottleSkipTicks
		{3000, 2, 2}, // interest 2; too near to throttle
		{1000, 2, 1}, // full rate at any pressure
	}
	for _, c := range cases {
		assert.Equal(t, c.want, rates.PeriodSq(c.dist*c.dist, c.level), "distance %v level %d", c.dist, c.level)
		direct := interest.Combine(rates.Interest.PeriodSq(c.dist*c.dist), rates.Throttle.PeriodSq(c.dist*c.dist, c.level))
		assert.Equal(t, direct, rates.PeriodSq(c.dist*c.dist, c.level), "Rates agrees with Combine")
	}

	// On the wire: a far pair under full pressure is heard 12 times in 48
	// ticks (every 4th), and still exactly once in every 4 consecutive ticks.
	phase := interest.Phase(3, 9)
	assert.Equal(t, 12, sendsInWindow(rates, 7000, 2, phase, 500, 48))
	for start := uint64(500); start < 548; start++ {
		require.Equal(t, 1, sendsInWindow(rates, 7000, 2, phase, start, 4), "window from tick %d", start)
	}
}

func TestNearPairsNeverThrottled(t *testing.T) {
	th := throttle3(t)
	rates := rates3(t)
	for level := range math.MaxUint8 + 1 {
		for _, d := range []float32{0, 1, 1000, 2047, 3000, 4095} {
			require.Equal(t, uint8(1), th.PeriodSq(d*d, uint8(level)), "distance %v level %d", d, level)
			require.Equal(t, rates.Interest.PeriodSq(d*d), rates.PeriodSq(d*d, uint8(level)), "distance %v level %d", d, level)
		}
	}
	// Under full pressure a pair closer than interestFullRateUnits still
	// hears every tick.
	for _, d := range []float32{10, 1500, 2047} {
		assert.Equal(t, 60, sendsInWindow(rates, d, th.MaxLevel(), interest.Phase(1, 2), 0, 60), "distance %v", d)
	}
}

func TestFarPairsSpacedUpToMaxThrottleSkip(t *testing.T) {
	th := throttle3(t)
	assert.Equal(t, uint8(2), th.MaxLevel())
	for level, want := range []uint8{1, 2, 3, 3, 3} {
		for _, d := range []float32{4096, 5000, 1e5} {
			assert.Equal(t, want, th.PeriodSq(d*d, uint8(level)), "distance %v level %d", d, level)
		}
		assert.Equal(t, want, th.FarPeriod(uint8(level)), "level %d: the period of the pairs it reaches", level)
	}
	never, err := interest.NewThrottle(4096, 1)
	require.NoError(t, err)
	assert.Equal(t, uint8(1), never.PeriodSq(1e10, 200), "maxSkip 1 never throttles")
}

func TestZeroValuesSwitchRatesOff(t *testing.T) {
	var th interest.Throttle
	var rates interest.Rates
	for _, d := range []float32{0, 5000, 1e6} {
		assert.Equal(t, uint8(1), th.PeriodSq(d*d, 255))
		assert.Equal(t, uint8(1), rates.PeriodSq(d*d, 255))
	}
	assert.Zero(t, th.MaxLevel())
}

func TestNewThrottleRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		dist    float32
		maxSkip int
	}{
		{-1, 3}, {float32(math.NaN()), 3}, {float32(math.Inf(1)), 3}, {4096, 0}, {4096, 256},
	} {
		_, err := interest.NewThrottle(c.dist, c.maxSkip)
		require.Error(t, err, "distance %v maxSkip %d", c.dist, c.maxSkip)
		assert.True(t, strings.HasPrefix(err.Error(), "interest: "), err.Error())
	}
}

func TestPressureRisesOneLevelPerOverloadedTick(t *testing.T) {
	rule := interest.PressureRule{MaxLevel: 5}
	var p interest.Pressure
	for want := uint8(1); want <= 7; want++ {
		assert.Equal(t, min(want, 5), p.Update(rule, 9000, 8000))
	}
	assert.Equal(t, uint8(5), p.Level())

	var never interest.Pressure
	assert.Zero(t, never.Update(interest.PressureRule{}, 1e9, 1), "MaxLevel 0 never rises")
}

func TestPressureDecaysWithoutFlapping(t *testing.T) {
	th := throttle3(t)
	const share = 8000.0 // one cluster owns the whole budget
	const release = 10
	rule := interest.PressureRule{MaxLevel: th.MaxLevel(), ReleaseTicks: release}
	var cost interest.EWMA
	var p interest.Pressure
	var levels []uint8
	tick := func(raw float64) uint8 {
		cost.Observe(raw)
		levels = append(levels, p.Update(rule, cost.Value(), share))
		return levels[len(levels)-1]
	}

	// Overload: pressure climbs to the top in as many ticks as levels.
	for range 40 {
		tick(1.5 * share)
	}
	require.Equal(t, []uint8{1, 2, 2}, levels[:3])

	// Load hovering just under budget with tick-to-tick jitter of +-25%:
	// the smoothed cost stays between 80% and 100%, so the level holds.
	for i := range 200 {
		jitter := []float64{0.7, 1.2}[i%2]
		require.Equal(t, uint8(2), tick(jitter*share), "hovering tick %d (smoothed %.0f)", i, cost.Value())
	}

	// Load removed: the level falls one step per `release` calm ticks and
	// never goes back up.
	start := len(levels)
	for range 100 {
		tick(0.4 * share)
	}
	fall := levels[start:]
	for i := 1; i < len(fall); i++ {
		require.LessOrEqual(t, fall[i], fall[i-1], "level rose after the load fell (tick %d)", i)
	}
	require.Zero(t, fall[len(fall)-1])
	firstDrop := slices.IndexFunc(fall, func(l uint8) bool { return l < 2 })
	secondDrop := slices.IndexFunc(fall, func(l uint8) bool { return l < 1 })
	assert.Equal(t, release, secondDrop-firstDrop, "one step per ReleaseTicks")
	assert.Less(t, secondDrop, 40, "pressure gone within 40 ticks of the load")

	// Over the whole run the level moved 0->1->2 and 2->1->0, nothing else
	// (0->1 was the first tick, before levels[0]): no flaps.
	changes := 0
	for i := 1; i < len(levels); i++ {
		if levels[i] != levels[i-1] {
			changes++
		}
	}
	assert.Equal(t, 3, changes)
}

func TestPressureHoldsOnNaNCost(t *testing.T) {
	rule := interest.PressureRule{MaxLevel: 2, ReleaseTicks: 1}
	var p interest.Pressure
	p.Update(rule, 2, 1)
	for range 5 {
		assert.Equal(t, uint8(1), p.Update(rule, math.NaN(), 1))
	}
}

func TestEWMASmoothsCost(t *testing.T) {
	var e interest.EWMA
	assert.Zero(t, e.Value())
	e.Observe(100)
	assert.Equal(t, 100.0, e.Value(), "the first sample sets the average")
	e.Observe(200)
	assert.InDelta(t, 100+interest.DefaultAlpha*100, e.Value(), 1e-9)
	e.Observe(math.NaN())
	e.Observe(math.Inf(1))
	assert.InDelta(t, 100+interest.DefaultAlpha*100, e.Value(), 1e-9, "NaN and Inf are ignored")

	// A step from 0 to 1000 converges geometrically.
	f := interest.EWMA{Alpha: 0.5}
	f.Observe(0)
	for range 10 {
		f.Observe(1000)
	}
	assert.InDelta(t, 1000*(1-math.Pow(0.5, 10)), f.Value(), 1e-9)

	g := interest.EWMA{Alpha: 1}
	g.Observe(3)
	g.Observe(7)
	assert.Equal(t, 7.0, g.Value(), "Alpha 1 follows the samples")

	for _, bad := range []float64{-1, 2, math.NaN()} {
		h := interest.EWMA{Alpha: bad}
		h.Observe(0)
		h.Observe(10)
		assert.InDelta(t, 10*interest.DefaultAlpha, h.Value(), 1e-9, "Alpha %v falls back to the default", bad)
	}

	g.Reset()
	assert.Zero(t, g.Value())
	g.Observe(42)
	assert.Equal(t, 42.0, g.Value(), "after Reset the next sample primes again")
}
