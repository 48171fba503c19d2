package systems

import (
	"github.com/throng-go/throng/interest"
)

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
