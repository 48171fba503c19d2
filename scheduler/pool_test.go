package scheduler

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var demoBarrierBug = flag.Bool("scheduler.demo-barrier-bug", false,
	"run TestAlternatingBatchSizesBreakWithoutDrainerWait, which removes the pool's wait for drainers (run it without -race)")

// countingJob counts how often each of its units ran; each unit spins for
// work first.
type countingJob struct {
	runs []atomic.Int32
	work time.Duration
}

func newCountingJob(n int) *countingJob { return &countingJob{runs: make([]atomic.Int32, n)} }

func (j *countingJob) RunUnit(i int) {
	for start := time.Now(); time.Since(start) < j.work; {
	}
	j.runs[i].Add(1)
}

// badUnit returns the first unit that did not run exactly once.
func (j *countingJob) badUnit() (unit int, runs int32, ok bool) {
	for i := range j.runs {
		if n := j.runs[i].Load(); n != 1 {
			return i, n, true
		}
	}
	return 0, 0, false
}

func flatUnits(n int) []Unit {
	units := make([]Unit, n)
	for i := range units {
		units[i] = Unit{Key: uint64(i) + 1, Cost: 1}
	}
	return units
}

// batchReport is what alternateBatches saw.
type batchReport struct {
	pooled    int      // units run by pool workers, over all Runs
	anomalies []string // every inconsistency, in order
	hung      bool
}

// alternateBatches runs a long batch and a one-unit batch in turn, checking
// after every Run that each unit of that batch ran exactly once, and at the
// end that no unit of any earlier batch ran again after its Run returned.
// Each unit spins for unitWork, long enough for woken workers to join in.
// It stops at the first anomaly unless keepGoing, and gives up after
// timeout, reporting a hang.
func alternateBatches(p *Pool, runs, longBatch int, unitWork time.Duration, keepGoing bool, timeout time.Duration) batchReport {
	var (
		mu  sync.Mutex
		rep batchReport
	)
	note := func(format string, args ...any) bool {
		mu.Lock()
		defer mu.Unlock()
		rep.anomalies = append(rep.anomalies, fmt.Sprintf(format, args...))
		return keepGoing
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		long, short := flatUnits(longBatch), flatUnits(1)
		jobs := make([]*countingJob, 0, runs)
		atReturn := make([][]int32, 0, runs)
		for r := range runs {
			units := long
			if r%2 == 1 {
				units = short
			}
			job := newCountingJob(len(units))
			job.work = unitWork
			jobs = append(jobs, job)
			stats := p.Run(job, units)
			counts := make([]int32, len(units))
			for u := range counts {
				counts[u] = job.runs[u].Load()
			}
			atReturn = append(atReturn, counts)
			mu.Lock()
			rep.pooled += stats.Pooled
			mu.Unlock()
			if u, n, bad := job.badUnit(); bad && !note("Run #%d (%d units) returned with unit %d run %d times", r, len(units), u, n) {
				return
			}
		}
		for r, job := range jobs {
			for u, n := range atReturn[r] {
				if now := job.runs[u].Load(); now != n && !note("after Run #%d returned, its unit %d ran again (%d runs, %d at return)", r, u, now, n) {
					return
				}
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		mu.Lock()
		rep.hung = true
		mu.Unlock()
	}
	mu.Lock()
	defer mu.Unlock()
	return batchReport{pooled: rep.pooled, anomalies: slices.Clone(rep.anomalies), hung: rep.hung}
}

func TestAlternatingBatchSizesStayConsistent(t *testing.T) {
	for _, delay := range []time.Duration{0, 300 * time.Microsecond} {
		t.Run(fmt.Sprintf("drainDelay=%v", delay), func(t *testing.T) {
			p := NewPool(4)
			defer p.Close()
			p.drainDelay = delay
			runs := 4000
			if delay > 0 {
				runs = 600 // each long batch waits out a delayed worker
			}
			rep := alternateBatches(p, runs, 64, time.Microsecond, false, 30*time.Second)
			// On a machine slowed by the race detector or by its
			// neighbours the caller may run every unit before a worker
			// wakes: then again with units twenty times as long, checked
			// alike, so that the workers take part.
			if rep.pooled == 0 && !rep.hung && len(rep.anomalies) == 0 {
				t.Logf("no worker took part in %d Runs; again with longer units", runs)
				rep = alternateBatches(p, runs, 64, 20*time.Microsecond, false, 30*time.Second)
			}
			assert.False(t, rep.hung, "a Run never returned")
			assert.Empty(t, rep.anomalies)
			assert.Positive(t, rep.pooled, "workers took part, so batches had drainers to wait for")
			t.Logf("%d units of %d Runs were run by pool workers", rep.pooled, runs)
		})
	}
}

// TestAlternatingBatchSizesBreakWithoutDrainerWait shows that the wait for
// drainers is what keeps the test above passing: with it removed, a worker
// delayed at the end of its drain loop outlives its batch and claims units
// of the next one. It is a demonstration, off by default (and racy on
// purpose); run it with
//
//	go test ./scheduler -run WithoutDrainerWait -v -scheduler.demo-barrier-bug
func TestAlternatingBatchSizesBreakWithoutDrainerWait(t *testing.T) {
	if !*demoBarrierBug {
		t.Skip("demonstration of the barrier bug; enable with -scheduler.demo-barrier-bug (without -race)")
	}
	for attempt := range 3 {
		p := NewPool(4)
		p.drainDelay = 300 * time.Microsecond
		p.skipDrainerWait = true
		rep := alternateBatches(p, 600, 64, time.Microsecond, true, 10*time.Second)
		assert.True(t, rep.hung || len(rep.anomalies) > 0, "attempt %d: the pool kept its batches apart without the drainer wait", attempt)
		var early, late int
		for _, a := range rep.anomalies {
			if strings.HasPrefix(a, "after Run") {
				late++
			} else {
				early++
			}
		}
		t.Logf("attempt %d without the drainer wait: hung=%v, %d Runs returned early, %d units ran again after their Run returned",
			attempt, rep.hung, early, late)
		for _, a := range rep.anomalies[:min(len(rep.anomalies), 4)] {
			t.Logf("  %s", a)
		}
		// A hung pool still has a Run in flight: it is abandoned, not closed.
	}
}

func TestEveryUnitRunsExactlyOnce(t *testing.T) {
	for _, workers := range []int{0, 1, 2, 3, 8, 200} {
		for _, n := range []int{1, 2, 7, 64, 500} {
			p := NewPool(workers)
			job := newCountingJob(n)
			stats := p.Run(job, flatUnits(n))
			u, runs, bad := job.badUnit()
			assert.False(t, bad, "workers=%d n=%d: unit %d ran %d times", workers, n, u, runs)
			assert.Equal(t, n, stats.Units)
			assert.Equal(t, n, stats.Pooled+stats.Caller, "workers=%d n=%d", workers, n)
			assert.LessOrEqual(t, stats.Workers, min(p.Size(), n))
			p.Close()
		}
	}
}

func TestPoolSizeIsCappedAndZeroFollowsGOMAXPROCS(t *testing.T) {
	assert.Equal(t, MaxWorkers, NewPool(1000).Size())
	assert.Equal(t, 3, NewPool(3).Size())
	prev := runtime.GOMAXPROCS(3)
	defer runtime.GOMAXPROCS(prev)
	p := NewPool(0)
	defer p.Close()
	assert.Equal(t, 3, p.Size())
	stats := p.Run(&meetJob{want: 3}, flatUnits(50))
	assert.Equal(t, 3, stats.Workers, "a Run of 50 units on GOMAXPROCS=3 uses 3 goroutines")
	runtime.GOMAXPROCS(2)
	stats = p.Run(&meetJob{want: 2}, flatUnits(50))
	assert.Equal(t, 2, stats.Workers, "the pool follows GOMAXPROCS at each Run")
	assert.PanicsWithValue(t, "scheduler: NewPool needs workers >= 0 (0 = GOMAXPROCS), got -1", func() { NewPool(-1) })
}

// meetJob's first units wait (up to a second) until want units have
// started, so that every goroutine the Run may use takes part.
type meetJob struct {
	want    int32
	started atomic.Int32
}

func (j *meetJob) RunUnit(int) {
	j.started.Add(1)
	for deadline := time.Now().Add(time.Second); j.started.Load() < j.want && time.Now().Before(deadline); {
		runtime.Gosched()
	}
}

// panicJob panics in the listed units and counts the others.
type panicJob struct {
	countingJob
	panicAt map[int]bool
}

func (j *panicJob) RunUnit(i int) {
	j.countingJob.RunUnit(i)
	if j.panicAt[i] {
		panic(fmt.Sprintf("boom in %d", i))
	}
}

func TestPanickingUnitIsReportedWithItsIndexAndPoolStaysUsable(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	job := &panicJob{countingJob: *newCountingJob(100), panicAt: map[int]bool{71: true, 40: true}}
	var got any
	func() {
		defer func() { got = recover() }()
		p.Run(job, flatUnits(100))
	}()
	up, ok := got.(*UnitPanic)
	require.True(t, ok, "Run panics with a *UnitPanic, got %#v", got)
	assert.Equal(t, 40, up.Unit, "the lowest panicking unit is reported")
	assert.Equal(t, "boom in 40", up.Value)
	assert.Contains(t, string(up.Stack), "panicJob", "the stack is the unit's")
	assert.Equal(t, "scheduler: unit 40 panicked: boom in 40", up.Error())
	_, _, bad := job.badUnit()
	assert.False(t, bad, "every unit still ran exactly once")

	next := newCountingJob(100)
	assert.NotPanics(t, func() { p.Run(next, flatUnits(100)) })
	_, _, bad = next.badUnit()
	assert.False(t, bad, "the next Run works")

	errJob := &errPanicJob{err: errors.New("broken")}
	assert.PanicsWithError(t, "scheduler: unit 0 panicked: broken", func() { RunInline(errJob, 3) })
	func() {
		defer func() { assert.ErrorIs(t, recover().(*UnitPanic), errJob.err, "UnitPanic unwraps an error value") }()
		p.Run(errJob, flatUnits(3))
	}()
}

type errPanicJob struct{ err error }

func (j *errPanicJob) RunUnit(int) { panic(j.err) }

// nestedJob calls Run on its own pool from inside a unit.
type nestedJob struct{ p *Pool }

func (j *nestedJob) RunUnit(int) { j.p.Run(newCountingJob(1), flatUnits(1)) }

func TestRunFromInsideAUnitIsRejected(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	defer func() {
		up, ok := recover().(*UnitPanic)
		require.True(t, ok)
		assert.Contains(t, fmt.Sprint(up.Value), "another Run is in progress")
	}()
	p.Run(&nestedJob{p: p}, flatUnits(1))
}

func TestClosedPoolRefusesRuns(t *testing.T) {
	p := NewPool(4)
	p.Run(newCountingJob(10), flatUnits(10))
	p.Close()
	p.Close()
	assert.PanicsWithValue(t, "scheduler: Run on a closed Pool", func() { p.Run(newCountingJob(1), flatUnits(1)) })
}

// orderJob records the order units start in and sleeps per unit.
type orderJob struct {
	mu      sync.Mutex
	started []int
	sleep   map[int]time.Duration
}

func (j *orderJob) RunUnit(i int) {
	j.mu.Lock()
	j.started = append(j.started, i)
	j.mu.Unlock()
	time.Sleep(j.sleep[i])
}

func TestLongestFirstStartsMostExpensiveUnitsFirst(t *testing.T) {
	p := NewPool(1) // the caller alone: start order is dispatch order
	defer p.Close()
	costs := []float64{3, 50, 1, 50, 20, 7, 0, -4}
	units := make([]Unit, len(costs))
	for i, c := range costs {
		units[i] = Unit{Cost: c}
	}
	job := &orderJob{}
	p.Run(job, units)
	assert.Equal(t, []int{1, 3, 4, 5, 0, 2, 6, 7}, job.started, "descending cost, index order among ties")
}

func TestHomeBlocksSplitTheCostAndRunLongestFirst(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	costs := []float64{1, 1, 1, 1, 4, 1, 1, 1, 1, 4}
	units := make([]Unit, len(costs))
	for i, c := range costs {
		units[i] = Unit{Cost: c}
	}
	batch := p.home(p.rank(units), 2)
	// Half the cost each, in index order: units 0-4 and 5-9, each block
	// its costly unit first.
	assert.Equal(t, []int32{4, 0, 1, 2, 3, 9, 5, 6, 7, 8}, batch)
	for k, want := range [][2]int{{0, 5}, {5, 10}} {
		c, _ := p.blocks[k].claim(false)
		assert.Equal(t, want[0], c, "block %d's front", k)
		c, _ = p.blocks[k].claim(true)
		assert.Equal(t, want[1]-1, c, "block %d's back", k)
	}

	// Unknown costs: an equal count each.
	batch = p.home(p.rank(make([]Unit, 6)), 3)
	assert.Equal(t, []int32{0, 1, 2, 3, 4, 5}, batch)
	for k := range 3 {
		v := p.blocks[k].ends.Load()
		assert.Equal(t, [2]uint32{uint32(2 * k), uint32(2*k + 2)}, [2]uint32{uint32(v), uint32(v >> 32)}, "block %d", k)
	}
}

// pairedJob runs unit i (of 2n) only beside its partner (i+n or i-n): each
// waits for the other to start, so two goroutines go through units 0..n-1
// and n..2n-1 side by side, and records which goroutine ran it.
type pairedJob struct {
	n       int
	started []atomic.Bool
	ranBy   []atomic.Int64 // goroutine id
	stuck   atomic.Int32
}

func (j *pairedJob) RunUnit(i int) {
	j.started[i].Store(true)
	j.ranBy[i].Store(goroutineID())
	partner := (i + j.n) % (2 * j.n)
	for deadline := time.Now().Add(5 * time.Second); !j.started[partner].Load(); runtime.Gosched() {
		if time.Now().After(deadline) {
			j.stuck.Add(1)
			return
		}
	}
}

// goroutineID is the calling goroutine's number, from its stack header.
func goroutineID() int64 {
	var buf [32]byte
	line := string(buf[:runtime.Stack(buf[:], false)])
	var id int64
	_, _ = fmt.Sscanf(strings.TrimPrefix(line, "goroutine "), "%d", &id)
	return id
}

func TestHomeBlocksKeepEachUnitOnItsGoroutine(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("needs two processors for the caller and a worker side by side")
	}
	p := NewPool(2)
	defer p.Close()
	const n = 4
	units := make([]Unit, 2*n) // equal costs, not learned: the same cut every Run
	for i := range units {
		units[i].Cost = 1
	}
	caller := goroutineID()
	var worker int64
	for run := range 3 {
		job := &pairedJob{n: n, started: make([]atomic.Bool, 2*n), ranBy: make([]atomic.Int64, 2*n)}
		p.Run(job, units)
		require.Zero(t, job.stuck.Load(), "run %d: a unit's partner never started", run)
		if run == 0 {
			worker = job.ranBy[n].Load()
			require.NotEqual(t, caller, worker)
		}
		for i := range 2 * n {
			want := caller
			if i >= n {
				want = worker
			}
			assert.Equal(t, want, job.ranBy[i].Load(), "run %d: unit %d ran away from its home goroutine", run, i)
		}
	}
}

func TestMeasuredCostReordersUnitsOnNextRun(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	units := []Unit{{Key: 1, Cost: 1}, {Key: 2, Cost: 1}, {Key: 3, Cost: 1}, {Key: 4, Cost: 1}}
	slow := &orderJob{sleep: map[int]time.Duration{2: 3 * time.Millisecond}}
	p.Run(slow, units)
	assert.Equal(t, []int{0, 1, 2, 3}, slow.started, "equal given costs: index order")
	learned, ok := p.Estimate(3)
	require.True(t, ok)
	assert.GreaterOrEqual(t, learned, 3*time.Millisecond, "the estimate is the measured time")

	again := &orderJob{sleep: slow.sleep}
	p.Run(again, units)
	assert.Equal(t, 2, again.started[0], "the unit measured slowest goes first next time")
}

func TestNewUnitsAreRankedAgainstLearnedOnesByTheirCost(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	known := []Unit{{Key: 1, Cost: 100}, {Key: 2, Cost: 100}}
	p.Run(&orderJob{sleep: map[int]time.Duration{0: time.Millisecond, 1: time.Millisecond}}, known)

	// About 10 us per unit of Cost was learned: a new unit of Cost 10_000
	// (~100 ms) outranks the known ones, a new unit of Cost 1 does not.
	mixed := []Unit{{Key: 10, Cost: 1}, known[0], known[1], {Key: 11, Cost: 10_000}}
	job := &orderJob{}
	p.Run(job, mixed)
	assert.Equal(t, 3, job.started[0])
	assert.Equal(t, 0, job.started[3])
}

func TestUnseenKeysAreForgotten(t *testing.T) {
	p := NewPool(1)
	defer p.Close()
	p.Run(newCountingJob(1), []Unit{{Key: 7, Cost: 1}})
	_, ok := p.Estimate(7)
	require.True(t, ok)
	for range 2 * forgetAfterRuns {
		p.Run(newCountingJob(1), []Unit{{Key: 8, Cost: 1}})
	}
	_, ok = p.Estimate(7)
	assert.False(t, ok, "a key not seen for %d runs is dropped by the next sweep", forgetAfterRuns)
	assert.Len(t, p.costs.slotOf, 1, "the table holds only live keys")
	p.Run(newCountingJob(1), []Unit{{Key: 9, Cost: 1}})
	assert.Len(t, p.costs.table, 2, "a forgotten key's slot is reused")
	_, ok = p.Estimate(0)
	assert.False(t, ok, "key 0 is never learned")
}

func TestUnitsPastTheCapRunOnTheCaller(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	p.SetMaxPooledUnits(3)
	job := newCountingJob(40)
	stats := p.Run(job, flatUnits(40))
	_, _, bad := job.badUnit()
	assert.False(t, bad)
	assert.LessOrEqual(t, stats.Pooled, 3, "at most the cap is run by workers")
	assert.GreaterOrEqual(t, stats.Caller, 37)
	assert.LessOrEqual(t, stats.Workers, 3, "no worker is woken for units it may not take")
	assert.Panics(t, func() { p.SetMaxPooledUnits(-1) })
}

// spinJob keeps every goroutine busy for a while per unit.
type spinJob struct{ d time.Duration }

func (j *spinJob) RunUnit(int) {
	for start := time.Now(); time.Since(start) < j.d; {
	}
}

func TestRunStatsAccountForTheRun(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	stats := p.Run(&spinJob{d: 200 * time.Microsecond}, flatUnits(20))
	assert.Equal(t, 20, stats.Units)
	assert.Equal(t, 20, stats.Pooled+stats.Caller)
	assert.GreaterOrEqual(t, stats.Busy, 20*200*time.Microsecond, "Busy sums the unit times")
	assert.Positive(t, stats.Wall)
	assert.InDelta(t, float64(stats.Busy)/float64(stats.Wall), stats.Speedup(), 1e-9)
	assert.LessOrEqual(t, stats.Speedup(), 2.05, "two goroutines cannot do more than two goroutines' work")

	var sum RunStats
	sum.Add(stats)
	sum.Add(RunStats{Units: 1, Pooled: 1, Workers: 1, Busy: 1, Wall: 1})
	assert.Equal(t, 21, sum.Units)
	assert.Equal(t, stats.Pooled+1, sum.Pooled)
	assert.Equal(t, stats.Workers, sum.Workers)
	assert.Zero(t, RunStats{}.Speedup())

	inline := RunInline(newCountingJob(5), 5)
	assert.Equal(t, RunStats{Units: 5, Caller: 5, Workers: 1, Busy: inline.Wall, Wall: inline.Wall}, inline)
	assert.Equal(t, RunStats{}, p.Run(newCountingJob(0), nil), "an empty Run does nothing")
}

// noopJob is an empty unit: what the fork/join overhead is measured with.
type noopJob struct{}

func (*noopJob) RunUnit(int) {}

func TestSteadyStateRunDoesNotAllocate(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	units := flatUnits(64)
	job := &noopJob{}
	p.Run(job, units) // warm: workers started, buffers and cost table sized
	allocs := testing.AllocsPerRun(200, func() { p.Run(job, units) })
	assert.Zero(t, allocs, "Pool.Run allocates in steady state")
	allocs = testing.AllocsPerRun(200, func() { RunInline(job, len(units)) })
	assert.Zero(t, allocs, "RunInline allocates")
}

// TestPrewakeKeepsTheWorkersUpForTheNextRun: after Prewake, the workers
// the last Run called are polling, not asleep, when the next Run comes
// (and they take part); once the window has passed without a Run they
// sleep again. Nothing is woken for a pool whose Runs since the last
// Prewake called no worker.
func TestPrewakeKeepsTheWorkersUpForTheNextRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := NewPool(2)
	defer p.Close()
	p.Prewake(time.Second)
	assert.Empty(t, p.crew, "no Run called a worker yet: nothing to wake")

	stats := p.Run(&meetJob{want: 2}, flatUnits(2))
	require.Equal(t, 2, stats.Workers)
	w := p.crew[0]
	sleeping := func() bool { return w.parks.Load() == w.woken.Load()+1 }
	awake := func() bool { return w.parks.Load() == w.woken.Load() }
	require.Eventually(t, sleeping, 5*time.Second, time.Millisecond, "the worker sleeps after its Run")

	p.Prewake(10 * time.Second)
	require.Eventually(t, awake, 5*time.Second, time.Millisecond, "Prewake wakes it")
	time.Sleep(20 * time.Millisecond) // well past a Run's own polling window
	assert.True(t, awake(), "the worker is still up when the Run comes")
	stats = p.Run(&meetJob{want: 2}, flatUnits(2))
	assert.Equal(t, 2, stats.Workers)
	assert.Equal(t, 1, stats.Pooled, "the worker ran a unit")

	require.Eventually(t, sleeping, 5*time.Second, time.Millisecond, "the worker sleeps after its Run")
	p.Prewake(300 * time.Millisecond) // the Run since the last Prewake called it
	require.Eventually(t, awake, 5*time.Second, time.Millisecond, "Prewake wakes it")
	require.Eventually(t, sleeping, 5*time.Second, time.Millisecond, "the worker sleeps again once the window has passed")
	parks := w.parks.Load()
	p.Prewake(time.Second) // no Run since: nothing to wake
	time.Sleep(20 * time.Millisecond)
	assert.True(t, sleeping())
	assert.Equal(t, parks, w.parks.Load())
}
