package client

import (
	"testing"
	"time"

	"github.com/throng-go/throng/net/wire"

	"github.com/stretchr/testify/assert"
)

// offer offers a limiter n updates, one every step, each up to jitter late,
// and counts those it lets through.
func offer(n int, step, jitter, interval time.Duration) int {
	var l moveLimiter
	t0 := time.Unix(1000, 0)
	sent := 0
	for i := range n {
		late := time.Duration(int64(i) * 7919 % int64(jitter+1)) // deterministic, in [0, jitter]
		if l.allow(t0.Add(time.Duration(i)*step+late), interval) {
			sent++
		}
	}
	return sent
}

func TestMoveLimiterHoldsTheRateAndForgivesJitter(t *testing.T) {
	moving := time.Second / 30
	assert.Equal(t, 300, offer(300, moving, 10*time.Millisecond, moving),
		"a bot on a 30 Hz timer that fires up to 10 ms late sends every update")
	assert.InDelta(t, 300, offer(600, moving/2, 0, moving), 1,
		"offered 60 a second for 10 s, it sends 30 a second")
	assert.Equal(t, 1, offer(1000, 0, 0, moving), "a burst in one instant sends one")
	assert.InDelta(t, 100, offer(600, time.Second/60, 0, time.Second/10), 1,
		"standing still, 10 a second")
}

func TestClientPollAllocatesNothingInSteadyState(t *testing.T) {
	// A client without its network: what its reader goroutines would
	// queue, handed over by Poll.
	c := &Client{cfg: Config{}.resolved(), drained: make(chan struct{}, 1)}
	appear := wire.AppendAppear(nil, wire.Appear{Actor: 2})
	b := wire.AppendBatchHeader(nil, 1, 2)
	b = wire.AppendRecord(b, wire.Record{Actor: 2})
	b = wire.AppendRecord(b, wire.Record{Actor: 3})
	records := 0
	count := func(f *wire.Frame) {
		if f.Type == wire.TypeBatch {
			for i := range f.Batch.Len() {
				records += int(f.Batch.At(i).Actor)
			}
		}
	}
	steady := func() {
		c.keepReliable(appear)
		c.mu.Lock()
		c.datagrams = append(c.datagrams, b)
		c.mu.Unlock()
		if c.Poll(count) != 2 {
			t.Fatal("Poll lost a frame")
		}
	}
	for range 10 {
		steady()
	}
	assert.Zero(t, testing.AllocsPerRun(100, steady))
	assert.Equal(t, 5*(10+101), records)
}
