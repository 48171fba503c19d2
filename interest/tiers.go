package interest

import (
	"fmt"
	"math"
)

// MaxSteps is the most steps a [Tiers] table holds. Seven reduced-rate bands
// (eight with full rate) is more than any game uses: with the default 2048
// units per band, visible pairs (at most two chunks apart, about 11,600
// units) reach only six bands. The fixed size lets [Tiers.PeriodSq] find a
// band in three comparisons and inline into the relay loop.
const MaxSteps = 7

// DefaultFullRateUnits is interestFullRateUnits when a server does not
// configure it: half of a default 4096-unit chunk.
const DefaultFullRateUnits = 2048

// DefaultMaxSkip is maxInterestSkipTicks when a server does not configure it.
const DefaultMaxSkip = 4

// CrowdTenthBeyondMetres is where [CrowdSteps] starts the one-in-ten band:
// 40 m past the one-in-five band, as that band is 40 m past the one-in-three.
const CrowdTenthBeyondMetres = 140

// Step is one row of an interest table: pairs at least BeyondUnits apart
// (and closer than the next step) are updated once every Period ticks.
type Step struct {
	// BeyondUnits is the distance, in world units, where this band starts.
	// It must be finite and not negative, and larger than the previous step's.
	BeyondUnits float32
	// Period is how many ticks apart this band's updates are: 1 is every
	// tick, 3 is one tick in three. It must be at least 1 and not shorter
	// than the previous step's.
	Period uint8
}

// Tiers maps the distance between a sender and a recipient to the period of
// their updates. Build it once at start-up with [NewTiers]; it is read-only
// afterwards and safe for any number of goroutines.
//
// The zero value is interest management switched off: every pair gets
// period 1 at every distance.
type Tiers struct {
	// limSq[k] for k in 1..7 is step k's BeyondUnits squared, ascending;
	// unused steps are +Inf so no distance reaches them. limSq[0] is never
	// compared: band 0 is "closer than every step".
	limSq [MaxSteps + 1]float32
	// extra[k] is band k's period minus one, so that the zero value means
	// period 1 everywhere.
	extra   [MaxSteps + 1]uint8
	longest uint8 // largest period minus one
}

// NewTiers builds the table for steps, capping every period at maxPeriod
// (maxInterestSkipTicks). Pairs closer than the first step get period 1.
// Nil or empty steps give a table that is period 1 everywhere.
//
// It returns an error when there are more than [MaxSteps] steps, when
// maxPeriod is outside 1..255, or when a step is malformed: a negative or
// non-finite distance, distances not strictly ascending, a period of 0, or
// a period shorter than an earlier one (farther pairs are never updated
// more often than nearer ones).
func NewTiers(steps []Step, maxPeriod int) (Tiers, error) {
	var t Tiers
	if maxPeriod < 1 || maxPeriod > math.MaxUint8 {
		return t, fmt.Errorf("interest: maxPeriod must be in 1..255, got %d", maxPeriod)
	}
	if len(steps) > MaxSteps {
		return t, fmt.Errorf("interest: at most %d steps, got %d", MaxSteps, len(steps))
	}
	for k := range t.limSq {
		t.limSq[k] = float32(math.Inf(1))
	}
	prev := Step{BeyondUnits: -1, Period: 1}
	for i, s := range steps {
		d := float64(s.BeyondUnits)
		switch {
		case math.IsNaN(d) || math.IsInf(d, 0) || d < 0:
			return Tiers{}, fmt.Errorf("interest: step %d: distance must be finite and not negative, got %v", i, s.BeyondUnits)
		case s.BeyondUnits <= prev.BeyondUnits:
			return Tiers{}, fmt.Errorf("interest: step %d: distance %v is not beyond the previous step's %v", i, s.BeyondUnits, prev.BeyondUnits)
		case s.Period == 0:
			return Tiers{}, fmt.Errorf("interest: step %d: period must be at least 1, got 0", i)
		case s.Period < prev.Period:
			return Tiers{}, fmt.Errorf("interest: step %d: period %d is shorter than the previous step's %d; farther pairs must not be updated more often", i, s.Period, prev.Period)
		}
		prev = s
		t.limSq[i+1] = float32(d * d)
		t.extra[i+1] = uint8(min(int(s.Period), maxPeriod) - 1)
	}
	// Unused bands repeat the last period, so the search may land on them
	// only for +Inf distances and still answer sensibly.
	for k := len(steps) + 1; k <= MaxSteps; k++ {
		t.extra[k] = t.extra[len(steps)]
	}
	t.longest = t.extra[len(steps)]
	return t, nil
}

// PeriodSq returns the update period for a pair whose squared distance is
// distSq: 1 closer than the first step, else the period of the farthest step
// whose distance the pair has reached (to float32 precision). The caller
// passes dx*dx + dy*dy (+ dz*dz) and never takes a square root. A NaN
// distance gets period 1.
//
// It is a binary search over the fixed table: three float comparisons, no
// square root, no division, no bounds checks, no allocation; it inlines.
// The search takes no branch: the relay's loop has other work to overlap
// with it and loses all of it on a mispredicted branch, so a branching
// form that wins alone (BenchmarkPeriodSq) loses in the tick. Measure end
// to end (BenchmarkTick) before changing it.
func (t *Tiers) PeriodSq(distSq float32) uint8 { return t.extraSq(distSq) + 1 }

// extraSq returns the period minus one.
func (t *Tiers) extraSq(distSq float32) uint8 { return t.extra[t.band(distSq)] }

// Span says how the pairs whose squared distances lie between near and far
// (near <= far) fall into the bands: lo and hi are the periods at near and
// at far. When both lie in one band, or in two neighbouring ones, ok is
// true and edge is where the second band begins (+Inf for one band): a pair
// at squared distance d in the span gets lo if d < edge, else hi, exactly as
// PeriodSq says. The relay uses it to decide a whole block of pairs with one
// comparison each.
func (t *Tiers) Span(near, far float32) (lo, hi uint8, edge float32, ok bool) {
	a, b := t.band(near), t.band(far)
	lo, hi = t.extra[a]+1, t.extra[b]+1
	switch b {
	case a:
		return lo, hi, float32(math.Inf(1)), true
	case a + 1:
		return lo, hi, t.limSq[b], true
	}
	return lo, hi, 0, false
}

// Bands returns the table PeriodSq searches: limSq[k], for k in 1..7, is
// the squared distance at which band k begins (+Inf for steps not used;
// limSq[0] is never compared), and periods[k] is band k's period.
// PeriodSq(d) is periods[band], where band is found by three comparisons:
// d >= limSq[4] sets bit 2, then d >= limSq[band|2] bit 1, then
// d >= limSq[band|1] bit 0. The limits never decrease, so the band is
// also the number of limits d has reached, k in 1..7 with d >= limSq[k]:
// what code deciding many pairs at once (the relay's vector loop) counts.
func (t *Tiers) Bands() (limSq [MaxSteps + 1]float32, periods [MaxSteps + 1]uint8) {
	for k, e := range t.extra {
		periods[k] = e + 1
	}
	return t.limSq, periods
}

// band returns the index of the band distSq falls in. Each probe of the
// binary search sets one bit of the index; the compiler sees it stay in
// 0..7, so there are no bounds checks either.
func (t *Tiers) band(distSq float32) uint {
	i := bit(distSq >= t.limSq[4]) << 2
	i |= bit(distSq >= t.limSq[i|2]) << 1
	return i | bit(distSq >= t.limSq[i|1])
}

// bit is 1 for true and 0 for false, without a branch: in a relay loop
// the distances of consecutive pairs are unrelated, and a branch per probe
// would be mispredicted about as often as taken.
func bit(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// Longest returns the longest period the table gives any pair (1 for the
// zero value).
func (t *Tiers) Longest() uint8 { return t.longest + 1 }

// Periods appends to dst the distinct periods the table gives, ascending,
// 1 first (every table gives period 1 to the closest pairs) and returns the
// result.
func (t *Tiers) Periods(dst []uint8) []uint8 {
	dst = append(dst, 1)
	for _, e := range t.extra {
		if p := e + 1; p > dst[len(dst)-1] {
			dst = append(dst, p)
		}
	}
	return dst
}

// DefaultSteps returns the default table: full rate closer than
// fullRateUnits, then periods 2, 3, 4 ... from each further multiple of
// fullRateUnits, up to maxSkip. With the defaults (2048, 4): period 1 below
// 2048 units, 2 from 2048, 3 from 4096, 4 from 6144 on.
//
// maxSkip below 2 gives no steps (full rate everywhere); above MaxSteps+1 it
// is clamped to MaxSteps+1. The result is fresh and the caller may change it.
func DefaultSteps(fullRateUnits float32, maxSkip int) []Step {
	maxSkip = min(maxSkip, MaxSteps+1)
	if maxSkip < 2 {
		return nil
	}
	steps := make([]Step, 0, maxSkip-1)
	for p := 2; p <= maxSkip; p++ {
		steps = append(steps, Step{BeyondUnits: float32(p-1) * fullRateUnits, Period: uint8(p)})
	}
	return steps
}

// CrowdSteps returns tiers for a dense crowd of players, in metres: full
// rate closer than 60 m, one update in 3 from 60 m, one in 5 from 100 m,
// one in 10 from [CrowdTenthBeyondMetres]. Tiers of this shape held a
// crowd of 200 players at 30 Hz. unitsPerMetre converts to the game's
// world units (1 for a world in metres; about 70 where a 4096-unit chunk
// is 58.5 m). Build it with a maxPeriod of at least 10, or the last bands
// are capped.
func CrowdSteps(unitsPerMetre float32) []Step {
	return []Step{
		{BeyondUnits: 60 * unitsPerMetre, Period: 3},
		{BeyondUnits: 100 * unitsPerMetre, Period: 5},
		{BeyondUnits: CrowdTenthBeyondMetres * unitsPerMetre, Period: 10},
	}
}
