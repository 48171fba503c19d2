package interest

import (
	"fmt"
	"math"
)

// DefaultThrottleDistanceUnits is throttleDistanceUnits when a server does
// not configure it: one chunk.
const DefaultThrottleDistanceUnits = 4096

// DefaultMaxThrottleSkip is maxThrottleSkipTicks when a server does not
// configure it: longer than the default tiers' longest period (4), so that
// throttling sheds relays beyond what interest management already does.
const DefaultMaxThrottleSkip = 8

// Throttle spaces out the updates of far pairs in a cluster under pressure.
// Pairs closer than its distance are never throttled; farther pairs get
// period 1 + level, capped at maxSkip. Build it once with [NewThrottle]; it is
// a small read-only value, safe for any number of goroutines.
//
// The zero value is throttling switched off: period 1 at any pressure.
type Throttle struct {
	nearSq   float32 // throttleDistanceUnits squared
	maxLevel uint8   // maxSkip - 1: the highest level that still changes a period
}

// NewThrottle returns the throttle for throttleDistanceUnits and
// maxThrottleSkipTicks. It returns an error when distanceUnits is negative or
// not finite, or maxSkip is outside 1..255 (1 means never throttle).
func NewThrottle(distanceUnits float32, maxSkip int) (Throttle, error) {
	d := float64(distanceUnits)
	if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
		return Throttle{}, fmt.Errorf("interest: throttle distance must be finite and not negative, got %v", distanceUnits)
	}
	if maxSkip < 1 || maxSkip > math.MaxUint8 {
		return Throttle{}, fmt.Errorf("interest: maxThrottleSkipTicks must be in 1..255, got %d", maxSkip)
	}
	return Throttle{nearSq: float32(d * d), maxLevel: uint8(maxSkip - 1)}, nil
}

// PeriodSq returns the throttle period for a pair at squared distance distSq
// in a cluster at pressure level: 1 when the pair is closer than the
// throttle distance (or the distance is NaN), whatever the level; else
// 1 + level, capped at maxSkip. Combine it with the interest period by
// [Combine], never by multiplying.
func (t Throttle) PeriodSq(distSq float32, level uint8) uint8 { return t.extraSq(distSq, level) + 1 }

// extraSq returns the period minus one.
func (t Throttle) extraSq(distSq float32, level uint8) uint8 {
	extra := min(level, t.maxLevel)
	if !(distSq >= t.nearSq) {
		extra = 0
	}
	return extra
}

// Reaches reports whether a pair at a squared distance up to farSq may be
// throttled at all: false when even farSq is closer than the throttle
// distance, so that every pair closer than it keeps its interest period
// at any pressure.
func (t Throttle) Reaches(farSq float32) bool { return !(farSq < t.nearSq) }

// FarPeriod returns the throttle period at level of the pairs it reaches
// (at or past its distance): PeriodSq of any such pair.
func (t Throttle) FarPeriod(level uint8) uint8 { return min(level, t.maxLevel) + 1 }

// DistanceSq returns the throttle distance squared: PeriodSq lengthens the
// period of a pair at a squared distance of at least this, and of no other.
func (t Throttle) DistanceSq() float32 { return t.nearSq }

// MaxLevel returns the highest pressure level that still lengthens a period
// (maxSkip - 1). Use it as [PressureRule.MaxLevel]: a higher level would
// change nothing but slow the recovery.
func (t Throttle) MaxLevel() uint8 { return t.maxLevel }

// Combine returns the period of a pair that both interest and throttling
// space out: the larger of the two, never their product. Interest 4 and
// throttle 3 send once every 4 ticks, not every 12, and the pair still sends
// exactly once in every window of that period.
func Combine(interest, throttle uint8) uint8 { return max(interest, throttle) }

// Rates is the whole per-pair rate rule, interest and throttle together, for
// a relay loop that wants one call per pair.
type Rates struct {
	Interest Tiers    // zero value: interest management off
	Throttle Throttle // zero value: adaptive throttling off
}

// PeriodSq returns [Combine] of r.Interest.PeriodSq(distSq) and
// r.Throttle.PeriodSq(distSq, level).
func (r *Rates) PeriodSq(distSq float32, level uint8) uint8 {
	e := min(level, r.Throttle.maxLevel)
	if !(distSq >= r.Throttle.nearSq) {
		e = 0
	}
	return max(r.Interest.extraSq(distSq), e) + 1
}

// DefaultAlpha is the weight of the newest sample in an [EWMA] whose Alpha
// is left zero. At 60 Hz it forgets a spike in about 10 ticks (a sixth of a
// second) while smoothing single-tick jitter by a factor of five.
const DefaultAlpha = 0.2

// EWMA is an exponentially weighted moving average of a cluster's cost per
// tick. The zero value is ready, with [DefaultAlpha].
type EWMA struct {
	// Alpha is the weight of the newest sample, in (0, 1]; 1 follows the
	// samples exactly. Zero, and anything outside (0, 1], mean DefaultAlpha.
	Alpha float64

	value  float64
	primed bool
}

// Observe folds one tick's sample x into the average. The first sample after
// the zero value or [EWMA.Reset] sets the average to x, so a new cluster does
// not start from zero cost. NaN and infinite samples are ignored.
func (e *EWMA) Observe(x float64) {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return
	}
	if !e.primed {
		e.value, e.primed = x, true
		return
	}
	a := e.Alpha
	if !(a > 0 && a <= 1) {
		a = DefaultAlpha
	}
	e.value += a * (x - e.value)
}

// Value returns the smoothed cost (0 before the first sample).
func (e *EWMA) Value() float64 { return e.value }

// Reset forgets every sample; Alpha is kept.
func (e *EWMA) Reset() { e.value, e.primed = 0, false }

// DefaultReleaseBelow is [PressureRule.ReleaseBelow] when left zero.
const DefaultReleaseBelow = 0.8

// DefaultReleaseTicks is [PressureRule.ReleaseTicks] when left zero: half a
// second at 60 Hz. Scale it with the tick rate to keep the same time (15 at
// 30 Hz, 60 at 120 Hz).
const DefaultReleaseTicks = 30

// PressureRule says how a cluster's pressure moves. Zero fields take the
// defaults named on them. Build it once; it is a plain value.
type PressureRule struct {
	// MaxLevel is the highest pressure level; use [Throttle.MaxLevel]. Zero
	// means pressure never rises.
	MaxLevel uint8
	// ReleaseBelow is the share of the budget under which a tick counts as
	// calm, in (0, 1]. Between it and the full share pressure holds, which is
	// what keeps it from flapping. Zero or out of range means
	// DefaultReleaseBelow.
	ReleaseBelow float64
	// ReleaseTicks is how many calm ticks in a row lower the level by one.
	// Zero or negative means DefaultReleaseTicks.
	ReleaseTicks int
}

// Pressure is one cluster's throttle level, carried from tick to tick by
// whoever tracks the cluster. The zero value is level 0 (no throttling).
//
// It is deterministic in its inputs. Fed measured wall-clock cost, the level
// (and so the output) depends on the machine; feed it a counted cost (relay
// decisions, records) where runs must be byte-identical across core counts.
type Pressure struct {
	level uint8
	calm  int // consecutive calm ticks since the last change or busy tick
}

// Update moves the pressure for one tick, given the cluster's smoothed cost
// ([EWMA.Value]) and its share of targetTickBudgetMicros, in the same unit,
// and returns the new level:
//
//   - cost above share: up one level (at most rule.MaxLevel), calm count reset;
//   - cost below rule.ReleaseBelow * share: one more calm tick; after
//     rule.ReleaseTicks of them in a row, down one level and count again;
//   - in between (or NaN): the level holds and the calm count resets.
//
// So pressure rises as fast as the overload is seen, falls one step per
// ReleaseTicks once the load is clearly gone, and never moves tick to tick
// on a cost that hovers near the budget.
func (p *Pressure) Update(rule PressureRule, smoothedCost, share float64) uint8 {
	below := rule.ReleaseBelow
	if !(below > 0 && below <= 1) {
		below = DefaultReleaseBelow
	}
	release := rule.ReleaseTicks
	if release <= 0 {
		release = DefaultReleaseTicks
	}
	switch {
	case smoothedCost > share:
		p.calm = 0
		if p.level < rule.MaxLevel {
			p.level++
		}
	case smoothedCost < below*share:
		p.calm++
		if p.calm >= release {
			p.calm = 0
			if p.level > 0 {
				p.level--
			}
		}
	default:
		p.calm = 0
	}
	p.level = min(p.level, rule.MaxLevel)
	return p.level
}

// Level returns the current pressure level, for [Throttle.PeriodSq].
func (p *Pressure) Level() uint8 { return p.level }
