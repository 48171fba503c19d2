package scheduler

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stepSystem is a parallel system of two units of work each, whose Plan
// takes lead (busy, on the calling goroutine) and then calls check.
type stepSystem struct {
	name       string
	lead, work time.Duration
	check      func()
}

func (s *stepSystem) Name() string   { return s.name }
func (s *stepSystem) Access() Access { return Uses(WriteResource("shared")) }
func (s *stepSystem) RunUnit(int)    { busy(s.work) }
func (s *stepSystem) Plan(_ *Tick, units []Unit) []Unit {
	busy(s.lead)
	if s.check != nil {
		s.check()
	}
	return append(units, Unit{Cost: 1}, Unit{Cost: 1})
}

// busy keeps the goroutine busy for d.
func busy(d time.Duration) {
	for start := time.Now(); time.Since(start) < d; {
	}
}

// TestWorkersStayUpThroughALongPlan: between two pool batches of a tick, a
// stage whose Plan runs longer than the workers' polling window (here
// 400 us against 50) keeps them awake through it, once the schedule has
// seen how long it takes, so the stage's batch does not wait for a worker
// to wake. Without that, the worker is asleep by the end of most such
// Plans (21 to 36 of 40 here; with it, 0 to 4).
//
// It measures whether a goroutine got to run, which other processes
// decide too: with both cores taken by other tests, a worker descheduled
// past its polling deadline parks, and a busy machine has given 13. So it
// takes the best of three tries (a broken keep-up fails all three), and
// the race detector's run, every package at once with -count=3, skips it.
func TestWorkersStayUpThroughALongPlan(t *testing.T) {
	if raceEnabled {
		t.Skip("a timing property: the race detector's run loads both cores")
	}
	best := 40
	for try := 0; try < 3 && best > 10; try++ {
		asleep := longPlansAsleep(t)
		t.Logf("try %d: asleep at the end of %d of 40 long Plans", try+1, asleep)
		best = min(best, asleep)
	}
	assert.LessOrEqual(t, best, 10, "ticks whose worker was asleep by the end of the long Plan, in the best of three tries")
}

// longPlansAsleep runs 40 ticks of a batch and a long Plan and returns
// after how many the worker was asleep by the end of the Plan.
func longPlansAsleep(t *testing.T) int {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := NewPool(2)
	defer p.Close()
	asleep, checked := 0, 0
	long := &stepSystem{name: "long", lead: 400 * time.Microsecond, check: func() {
		if len(p.crew) == 0 {
			return
		}
		w := p.crew[0]
		checked++
		if w.parks.Load() > w.woken.Load() {
			asleep++
		}
	}}
	var b Builder
	b.Add(&stepSystem{name: "first", work: 300 * time.Microsecond}) // the worker takes part
	b.Add(long)
	sched, err := b.Build()
	require.NoError(t, err)
	require.Len(t, sched.stages, 2, "the two systems conflict: one stage each")
	tick := &Tick{}
	// Ticks as Server.RunTicks paces them: the workers woken a little
	// ahead, so that they take part in the first batch.
	run := func() {
		p.Prewake(3 * time.Millisecond)
		time.Sleep(time.Millisecond)
		sched.Run(p, tick)
	}
	for range 5 { // the schedule learns the Plan's length
		run()
	}
	asleep, checked = 0, 0
	for range 40 {
		run()
	}
	require.Equal(t, 40, checked)
	return asleep
}
