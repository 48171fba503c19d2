package systems

import "fmt"

// Limits caps what one client may send. The zero value means no limits.
type Limits struct {
	// MovingPerSecond and StandingPerSecond are the most movement updates a
	// second a client may send while moving and while standing still (an
	// update that repeats the last position). The excess is dropped and
	// counted, not an error.
	MovingPerSecond, StandingPerSecond int
	// FloodFactor and FloodSeconds: a client sending more than FloodFactor
	// times MovingPerSecond in each of FloodSeconds consecutive seconds is
	// disconnected with a reason.
	FloodFactor, FloodSeconds int
	// MaxSpeed is the fastest a client may move its actor, in world units a
	// second (0: no limit but the chunk rule). Move checks it with an
	// allowance of distance per actor (MoveInput.Allowance) that grows by
	// MaxSpeed a second, to at most one second's worth, and that each
	// accepted update spends; an update beyond it is rejected with
	// RejectTooFast and corrected.
	MaxSpeed float32
}

// Allowance is kept in millionths of a second of sending: a moving update
// costs 1e6/MovingPerSecond, a standing one 1e6/StandingPerSecond, and every
// tick period of time refills 1e6/tickRate, so a client sending exactly at
// its limit neither gains nor loses. Half a second of burst absorbs network
// jitter.
const (
	allowanceSecond = 1_000_000
	allowanceBurst  = allowanceSecond / 2
)

// limiter is one session's rate limiter, advanced by the server's clock in
// tick periods (Pipeline.Skip): one a tick, and the periods a server
// running behind skipped. So an honest client sending at its limit is never
// counted over it because the server ticked slowly, and ticks driven one
// after another (tests, benchmarks) drop the same updates on any machine.
type limiter struct {
	allowance   int64
	refilled    uint64 // the clock (tick periods) at the last refill
	windowStart uint64 // the clock at the start of the current one-second window
	windowCount int    // updates received in it
	strikes     int    // consecutive windows over the flood limit
}

// admit reports whether an update received at now (the server's clock in
// tick periods) may be kept, and whether the client is flooding and must
// go (with the reason).
func (l *limiter) admit(lim *Limits, tickRate int, now uint64, standing bool) (keep bool, flood string) {
	if lim.MovingPerSecond <= 0 {
		return true, ""
	}
	rate := uint64(max(tickRate, 1))
	if l.refilled == 0 {
		l.allowance, l.refilled, l.windowStart = allowanceBurst, now, now
	}
	if now > l.refilled {
		l.allowance = min(l.allowance+int64(now-l.refilled)*allowanceSecond/int64(rate), allowanceBurst)
		l.refilled = now
	}
	if now >= l.windowStart+rate {
		floodLimit := lim.FloodFactor * lim.MovingPerSecond
		if lim.FloodFactor > 0 && l.windowCount > floodLimit {
			l.strikes++
		} else {
			l.strikes = 0
		}
		l.windowStart, l.windowCount = now, 0
	}
	l.windowCount++
	if lim.FloodSeconds > 0 && l.strikes >= lim.FloodSeconds {
		return false, fmt.Sprintf("flooding: more than %d movement updates a second for %d seconds (the limit is %d)",
			lim.FloodFactor*lim.MovingPerSecond, l.strikes, lim.MovingPerSecond)
	}
	cost := int64(allowanceSecond / lim.MovingPerSecond)
	if standing && lim.StandingPerSecond > 0 {
		cost = int64(allowanceSecond / lim.StandingPerSecond)
	}
	if l.allowance < cost {
		return false, ""
	}
	l.allowance -= cost
	return true, ""
}
