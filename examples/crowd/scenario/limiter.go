package scenario

import "time"

// SendLimiter spaces a client's movement updates the way a Throng server's
// default client limits ask of every client: at most a moving rate a second while moving (30) and a
// standing rate while standing still (10).
//
// Both limits hold in two senses: two updates are never closer than one
// interval (1 s / rate), and no half-open one-second window holds more than
// the moving rate of updates, nor more than the standing rate when it ends
// in an update sent standing still, both to within [LimiterSlack]. A client
// ticking at exactly the moving rate is allowed on every tick, and one
// ticking at k times a rate every k-th tick.
//
// Times are a monotonic clock of the caller's choice (a bot's own clock, or
// time since start), as a time.Duration. The zero value allows nothing; make
// one with [NewSendLimiter]. A SendLimiter is not safe for concurrent use.
type SendLimiter struct {
	moving, standing int
	sent             []time.Duration // ring of the latest send times
	next             int             // ring index of the next send
	count            int             // sends recorded, up to len(sent)
}

// LimiterSlack is how much shorter than an interval (or a second) a
// [SendLimiter] lets a gap be: a driver stepping a period truncated to the
// nanosecond (time.Second/30 is 33,333,333 ns) reaches three periods a
// nanosecond before 100 ms, and would otherwise be held back a whole step,
// sending 7.5 updates a second where 10 are allowed.
const LimiterSlack = time.Microsecond

// NewSendLimiter returns a limiter for movingPerSecond updates a second while
// moving and standingPerSecond while standing still. Rates below 1 are
// raised to 1.
func NewSendLimiter(movingPerSecond, standingPerSecond int) SendLimiter {
	m, s := max(movingPerSecond, 1), max(standingPerSecond, 1)
	return SendLimiter{moving: m, standing: s, sent: make([]time.Duration, max(m, s))}
}

// Allow reports whether an update may be sent at now, and if so records it.
// now must not go backwards between calls.
func (l *SendLimiter) Allow(now time.Duration, moving bool) bool {
	if len(l.sent) == 0 {
		return false
	}
	rate := l.standing
	if moving {
		rate = l.moving
	}
	if l.count > 0 && now-l.latest(1) < time.Second/time.Duration(rate)-LimiterSlack {
		return false
	}
	if l.count >= rate && now-l.latest(rate) < time.Second-LimiterSlack {
		return false
	}
	l.sent[l.next] = now
	l.next = (l.next + 1) % len(l.sent)
	l.count = min(l.count+1, len(l.sent))
	return true
}

// latest returns the time of the k-th latest send (k = 1 is the last);
// k must be 1 to l.count.
func (l *SendLimiter) latest(k int) time.Duration {
	return l.sent[(l.next-k+len(l.sent))%len(l.sent)]
}
