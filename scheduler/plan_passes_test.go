package scheduler_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/scheduler"
)

// unitFunc runs a function as a job's units.
type unitFunc func(int)

func (f unitFunc) RunUnit(i int) { f(i) }

// prefixSums is a parallel system whose Plan computes the running sums of
// its data in passes, as the relay builds its lists: each part's total on
// the pool, the parts' starts on the tick goroutine, then each part's sums
// on the pool. Its own units double the sums, one part each.
type prefixSums struct {
	data, out []int
	parts     int
	totals    []int
	starts    []int
	sum, fill unitFunc
	onSum     func(part int) // called first in each part's sum, if set
	passStats []scheduler.RunStats
}

func newPrefixSums(n, parts int) *prefixSums {
	s := &prefixSums{data: make([]int, n), out: make([]int, n), parts: parts,
		totals: make([]int, parts), starts: make([]int, parts)}
	for i := range s.data {
		s.data[i] = i%13 + 1
	}
	s.sum = func(u int) {
		if s.onSum != nil {
			s.onSum(u)
		}
		lo, hi := s.part(u)
		total := 0
		for _, v := range s.data[lo:hi] {
			total += v
		}
		s.totals[u] = total
	}
	s.fill = func(u int) {
		lo, hi := s.part(u)
		at := s.starts[u]
		for i := lo; i < hi; i++ {
			at += s.data[i]
			s.out[i] = at
		}
	}
	return s
}

func (s *prefixSums) part(u int) (lo, hi int) {
	return len(s.data) * u / s.parts, len(s.data) * (u + 1) / s.parts
}

func (s *prefixSums) Name() string { return "Prefix" }
func (s *prefixSums) Access() scheduler.Access {
	return scheduler.Uses(scheduler.WriteResource("sums"))
}

func (s *prefixSums) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	for u := range s.parts {
		units = append(units, scheduler.Unit{Key: uint64(u) + 1, Cost: 1})
	}
	s.passStats = append(s.passStats[:0], t.Parallel(s.sum, units))
	at := 0
	for u, n := range s.totals {
		s.starts[u] = at
		at += n
	}
	s.passStats = append(s.passStats, t.Parallel(s.fill, units))
	return units
}

func (s *prefixSums) RunUnit(u int) {
	lo, hi := s.part(u)
	for i := lo; i < hi; i++ {
		s.out[i] *= 2
	}
}

func (s *prefixSums) want() []int {
	want := make([]int, len(s.data))
	at := 0
	for i, v := range s.data {
		at += v
		want[i] = 2 * at
	}
	return want
}

func TestPlanPassesRunOnThePoolBeforeTheUnits(t *testing.T) {
	s := newPrefixSums(1000, 4)
	r := &rendezvous{n: 2}
	s.onSum = func(u int) {
		if u < 2 {
			r.arrive(u)
		}
	}
	sched := build(t, s)
	pool := scheduler.NewPool(2)
	defer pool.Close()
	stats := sched.Run(pool, &scheduler.Tick{})
	assert.Zero(t, r.missed.Load(), "two units of the first pass ran at the same time")
	assert.Equal(t, s.want(), s.out, "each pass finished before the next step began")
	require.Len(t, s.passStats, 2)
	for _, ps := range s.passStats {
		assert.Equal(t, 4, ps.Units)
	}
	assert.Equal(t, 12, stats.Units, "the passes' units count in the Run's")
	assert.Positive(t, s.passStats[0].Pooled, "a worker took part in the first pass")
	assert.Positive(t, stats.Pooled)
}

func TestPlanPassesRunInOrderWithoutAPool(t *testing.T) {
	for _, where := range []string{"schedule", "bare tick"} {
		s := newPrefixSums(100, 5)
		var order []int
		caller := goroutineID()
		s.onSum = func(u int) {
			order = append(order, u)
			assert.Equal(t, caller, goroutineID(), where)
		}
		if where == "schedule" {
			stats := build(t, s).Run(nil, &scheduler.Tick{})
			assert.Equal(t, 15, stats.Units, where)
			assert.Zero(t, stats.Pooled, where)
		} else {
			s.Plan(&scheduler.Tick{}, nil) // a Plan called outside a schedule
			for u := range s.parts {
				s.RunUnit(u)
			}
		}
		assert.Equal(t, []int{0, 1, 2, 3, 4}, order, where)
		assert.Equal(t, s.want(), s.out, where)
	}
}

func TestPlanPassPanicIsNamedWithTheSystem(t *testing.T) {
	s := newPrefixSums(100, 4)
	s.onSum = func(u int) {
		if u == 2 {
			panic("bad part")
		}
	}
	var ranUnits sync.Map
	sched := build(t, s, parallel("Later", 2, func(i int) { ranUnits.Store(i, true) }, scheduler.ReadResource("sums")))
	pool := scheduler.NewPool(2)
	defer pool.Close()
	for _, p := range []*scheduler.Pool{pool, nil} {
		up := unitPanicOf(t, sched, p)
		assert.Equal(t, "Prefix", up.System)
		assert.Equal(t, 2, up.Unit)
		assert.Equal(t, "bad part", up.Value)
	}
	_, ran := ranUnits.Load(0)
	assert.False(t, ran, "the stages after the panic did not run")
	s.onSum = nil
	assert.NotPanics(t, func() { sched.Run(pool, &scheduler.Tick{}) }, "the pool is usable after")
	assert.Equal(t, s.want(), s.out)
}

func TestPlanPassesDoNotAllocate(t *testing.T) {
	s := newPrefixSums(1000, 4)
	sched := build(t, s)
	pool := scheduler.NewPool(2)
	defer pool.Close()
	tick := &scheduler.Tick{}
	sched.Run(pool, tick)
	assert.Zero(t, testing.AllocsPerRun(100, func() { sched.Run(pool, tick) }), "pooled")
	assert.Zero(t, testing.AllocsPerRun(100, func() { sched.Run(nil, tick) }), "inline")
}

// fanOut is a structural serial system whose one call fans out over the
// pool with Tick.Parallel.
type fanOut struct {
	units []scheduler.Unit
	job   *rendezvous
	stats scheduler.RunStats
}

func (f *fanOut) Name() string             { return "FanOut" }
func (f *fanOut) Access() scheduler.Access { return scheduler.Uses(scheduler.Structural()) }
func (f *fanOut) RunSerial(t *scheduler.Tick) {
	f.stats = t.Parallel(unitFunc(f.job.arrive), f.units)
}

func TestSerialSystemAloneFansOutOnThePool(t *testing.T) {
	f := &fanOut{units: []scheduler.Unit{{Key: 1, Cost: 1}, {Key: 2, Cost: 1}}, job: &rendezvous{n: 2}}
	sched := build(t, f, serial("Calm", nop, scheduler.Read[Position]()))
	require.Equal(t, [][]string{{"FanOut"}, {"Calm"}}, sched.Stages())
	pool := scheduler.NewPool(2)
	defer pool.Close()
	stats := sched.Run(pool, &scheduler.Tick{})
	assert.Zero(t, f.job.missed.Load(), "its two units ran at the same time")
	assert.Equal(t, 1, f.stats.Pooled)
	assert.Equal(t, 2, stats.Units, "its units count in the Run's (Calm, a call on the calling goroutine, does not)")
}
