package interest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/interest"
)

// The per-pair and per-tick calls allocate nothing, and a warmed-up
// Backlog allocates nothing per tick.
func TestHotCallsDoNotAllocate(t *testing.T) {
	tiers := defaultTiers(t)
	rates := rates3(t)
	th := rates.Throttle
	clock := interest.NewClock(0)
	var (
		sinkPeriod uint8
		sinkBool   bool
		sinkPhase  uint32
		tick       uint64
		ewma       interest.EWMA
		pressure   interest.Pressure
	)
	rule := interest.PressureRule{MaxLevel: th.MaxLevel()}
	calls := map[string]func(){
		"Tiers.PeriodSq":    func() { sinkPeriod = tiers.PeriodSq(5000 * 5000) },
		"Rates.PeriodSq":    func() { sinkPeriod = rates.PeriodSq(5000*5000, 2) },
		"Throttle.PeriodSq": func() { sinkPeriod = th.PeriodSq(5000*5000, 2) },
		"Combine":           func() { sinkPeriod = interest.Combine(sinkPeriod, 3) },
		"Phase":             func() { sinkPhase = interest.Phase(sinkPhase, 9) },
		"Sends":             func() { sinkBool = interest.Sends(sinkPhase, tick, 3) },
		"Clock.Sends":       func() { sinkBool = clock.Sends(sinkPhase, 3) },
		"Clock.Set":         func() { tick++; clock.Set(tick) },
		"EWMA.Observe":      func() { ewma.Observe(float64(tick)) },
		"Pressure.Update":   func() { sinkPeriod = pressure.Update(rule, ewma.Value(), 8000) },
	}
	for name, f := range calls {
		assert.Zero(t, testing.AllocsPerRun(1000, f), name)
	}
	_, _ = sinkBool, sinkPeriod

	// 400 senders in view, 100 fit: the cut path, every tick.
	var b interest.Backlog
	batch := make([]uint32, 0, 400)
	step := func() {
		tick++
		for s := uint32(0); s < 400; s++ {
			// Offered in reverse so that Take has to sort.
			b.Offer(400-s, uint8(1+s%4), (uint64(s)+tick)%3 != 0)
		}
		batch = b.Take(100, batch[:0])
	}
	for range 50 {
		step() // grow the slices to their working size
	}
	assert.Zero(t, testing.AllocsPerRun(100, step), "Backlog Offer+Take")

	// Reserved for the senders in view, a backlog working in a reserved
	// scratch allocates nothing from its first round on: each run below is
	// the first two rounds of a new backlog in a new scratch (AllocsPerRun
	// runs once more than it counts).
	type reserved struct {
		backlog interest.Backlog
		scratch interest.Scratch
	}
	fresh := make([]reserved, 6)
	for i := range fresh {
		fresh[i].backlog.Reserve(400)
		fresh[i].scratch.Reserve(400)
		fresh[i].backlog.Use(&fresh[i].scratch)
	}
	next := 0
	firstRounds := func() {
		b = fresh[next].backlog
		next++
		step()
		step()
	}
	assert.Zero(t, testing.AllocsPerRun(len(fresh)-1, firstRounds), "the first rounds of a reserved Backlog")
}
