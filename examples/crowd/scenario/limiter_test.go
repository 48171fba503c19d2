package scenario

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tickAt is the exact time of tick k at hz ticks a second, as a fixed-rate
// driver keeps it (start + k*period, without drift).
func tickAt(k, hz int) time.Duration {
	return time.Duration(int64(k) * int64(time.Second) / int64(hz))
}

func TestLimiterAllowsEveryTickAtTheMovingRate(t *testing.T) {
	l := NewSendLimiter(30, 10)
	for k := range 300 {
		require.True(t, l.Allow(tickAt(k, 30), true), "tick %d refused", k)
	}
}

func TestLimiterSendsEveryThirdTickStandingAt30Hz(t *testing.T) {
	l := NewSendLimiter(30, 10)
	var sent []int
	for k := range 300 {
		if l.Allow(tickAt(k, 30), false) {
			sent = append(sent, k)
		}
	}
	require.Len(t, sent, 100, "10 updates a second for 10 s")
	for i, k := range sent {
		assert.Equal(t, 3*i, k)
	}
}

func TestLimiterHalvesA60HzClientWhileMoving(t *testing.T) {
	l := NewSendLimiter(30, 10)
	n := 0
	for k := range 600 {
		if l.Allow(tickAt(k, 60), true) {
			n++
			assert.Zero(t, k%2, "tick %d: sends must be evenly spaced, not bursts", k)
		}
	}
	assert.Equal(t, 300, n)
}

// TestLimiterNeverExceedsItsRateInAnySecond polls the limiter far faster
// than it allows, on a jittery clock, switching between moving and standing,
// and checks every one-second window.
func TestLimiterNeverExceedsItsRateInAnySecond(t *testing.T) {
	type send struct {
		at     time.Duration
		moving bool
	}
	rng := rand.New(rand.NewPCG(7, 7))
	l := NewSendLimiter(30, 10)
	var sends []send
	var now time.Duration
	for now < 20*time.Second {
		now += time.Duration(rng.Int64N(int64(3 * time.Millisecond)))
		moving := (now/(3*time.Second))%2 == 0 || (now/(700*time.Millisecond))%3 == 0
		if l.Allow(now, moving) {
			sends = append(sends, send{now, moving})
		}
	}
	for i, s := range sends {
		in := 0 // sends in the window (s.at - 1s + slack, s.at]
		for j := i; j >= 0 && sends[j].at > s.at-time.Second+LimiterSlack; j-- {
			in++
		}
		limit := 30
		if !s.moving {
			limit = 10
		}
		require.LessOrEqual(t, in, limit, "window ending at send %d (%v, moving %v)", i, s.at, s.moving)
		if i > 0 {
			rate := 10
			if s.moving {
				rate = 30
			}
			require.GreaterOrEqual(t, s.at-sends[i-1].at, time.Second/time.Duration(rate)-LimiterSlack, "send %d too soon", i)
		}
	}
	// Not starved either: the first 3 s are all moving.
	firstSecond := 0
	for _, s := range sends {
		if s.at < time.Second {
			firstSecond++
		}
	}
	assert.GreaterOrEqual(t, firstSecond, 28, "a client polling every ~1.5 ms gets close to 30 updates a second")
}

func TestZeroLimiterAllowsNothing(t *testing.T) {
	var l SendLimiter
	assert.False(t, l.Allow(time.Hour, true))
}

// TestLimiterSendsEveryThirdStepOfATruncatedPeriod: a driver that adds
// time.Second/30 (33,333,333 ns) a step reaches 100 ms a nanosecond late
// every third step; a 10-a-second limiter still lets every third step out.
func TestLimiterSendsEveryThirdStepOfATruncatedPeriod(t *testing.T) {
	l := NewSendLimiter(10, 10)
	var now time.Duration
	sent := 0
	for k := range 300 {
		if l.Allow(now, true) {
			assert.Zero(t, k%3, "step %d", k)
			sent++
		}
		now += time.Second / 30
	}
	assert.Equal(t, 100, sent, "10 a second for 10 s")
}
