package scheduler

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// MaxWorkers is the most goroutines a [Pool] puts on one Run, the caller
// included. Larger worker counts are clamped to it.
const MaxWorkers = 64

// Job is a batch of work units. The pool calls RunUnit once for every unit of
// a Run, possibly from several goroutines at once, each i in [0, len(units)).
// Units of one Run must not depend on each other's order. RunUnit returns or
// panics; it must not call runtime.Goexit (t.FailNow in a test), which would
// leave the Run waiting forever. Pass a pointer to a long-lived value so that
// handing it to Run does not allocate.
type Job interface {
	RunUnit(i int)
}

// Unit describes one work unit of a [Job]: its identity across runs and its
// predicted cost, which decides when it is handed out.
type Unit struct {
	// Key names the unit across runs (a cluster or shard id, say) so the pool
	// can learn its measured cost. Key 0 means "no identity": Cost is used as
	// given and the measured time is not remembered. Keys share one table per
	// Pool, so jobs that run on the same pool should use disjoint keys.
	Key uint64
	// Cost is the caller's estimate, in any consistent measure (nanoseconds,
	// actor pairs, ...). Negative and NaN costs count as 0. Once units with a
	// positive Cost have been measured, the pool converts Cost to nanoseconds
	// with the learned ratio, so it can be compared with learned keys.
	Cost float64
}

// RunStats records what one Run did; the metrics line prints units, pooled,
// parallel (Wall) and speedup from it.
type RunStats struct {
	Units   int           // units run
	Pooled  int           // units run by pool worker goroutines
	Caller  int           // units run on the calling goroutine
	Workers int           // goroutines that took part, the caller included (most of any Run, for a sum)
	Busy    time.Duration // summed time spent inside RunUnit
	Wall    time.Duration // wall-clock time of the Run
}

// Speedup is summed unit time over wall time: near 1 means the pool bought
// nothing, near Workers means every goroutine was busy the whole Run. It is 0
// when nothing ran.
func (s RunStats) Speedup() float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Busy) / float64(s.Wall)
}

// Add accumulates o into s, for a tick that calls Run several times.
func (s *RunStats) Add(o RunStats) {
	s.Units += o.Units
	s.Pooled += o.Pooled
	s.Caller += o.Caller
	s.Workers = max(s.Workers, o.Workers)
	s.Busy += o.Busy
	s.Wall += o.Wall
}

// UnitPanic is the value Run (and [RunInline], [Schedule.Run]) panics with on
// the caller's goroutine when a unit panicked. The batch still completed:
// every other unit ran. When several units panic, the lowest index is kept.
type UnitPanic struct {
	System string // the system the unit belongs to; empty for a plain Job
	Unit   int    // index of the unit in the Job (in the system's plan for a system)
	Value  any    // the value the unit panicked with
	Stack  []byte // the panicking goroutine's stack
}

// Error describes the panic; the stack is in Stack.
func (p *UnitPanic) Error() string {
	if p.System != "" {
		return fmt.Sprintf("scheduler: system %q unit %d panicked: %v", p.System, p.Unit, p.Value)
	}
	return fmt.Sprintf("scheduler: unit %d panicked: %v", p.Unit, p.Value)
}

// Unwrap returns the panic value when it is an error.
func (p *UnitPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// Pool is a fork/join pool: persistent worker goroutines plus the goroutine
// that calls Run, which works too. Each goroutine of a Run has a home block
// of the units, most expensive first, and steals from the others' once its
// own is done; Run returns only when every unit has finished and every
// worker has left the batch.
//
// One goroutine at a time may call Run; a second concurrent (or nested, from
// inside a unit) Run panics. Close releases the workers. The zero Pool is not
// usable: call [NewPool].
type Pool struct {
	workers   int // 0 = GOMAXPROCS at each Run
	maxPooled int // 0 = unlimited
	running   atomic.Bool
	closed    bool

	crew   []*worker
	exited sync.WaitGroup

	// The batch. Written by Run before waking workers, read-only to them
	// until every woken worker has left: that wait is what keeps a straggler
	// of this batch from claiming units of the next one.
	job       Job
	batch     []int32 // the pooled units, home block by home block (see home)
	took      []int64 // measured ns per unit index
	blocks    []homeBlock
	parts     int          // goroutines this batch is cut for: blocks[:parts]
	remaining atomic.Int64 // pooled units not yet finished
	drainers  atomic.Int32 // woken workers not yet out of the drain loop
	finished  chan struct{}
	left      chan struct{}

	panicMu  sync.Mutex
	panicked *UnitPanic

	// called is the most workers a Run has called since the last Prewake:
	// the ones the next tick will likely call again. lastCalled is how
	// many the last Run called (Schedule.Run reads it).
	called, lastCalled int

	costs  costModel
	order  []int32
	ranked []uint64 // rankKey of each unit
	keys   []uint64 // home's scratch

	// Test hooks: drainDelay sleeps a worker at the end of each drain loop
	// iteration; skipDrainerWait removes the wait for drainers, which is
	// the bug the alternating-batches test exists to catch.
	drainDelay      time.Duration
	skipDrainerWait bool
}

// A worker's state: idle; called (a batch is published for it and it is
// counted in drainers, but it has not started); draining. Run revokes a call
// the worker has not taken up (called -> idle) once every unit is claimed.
const (
	idle int32 = iota
	called
	draining
)

type worker struct {
	wake  chan struct{}
	state atomic.Int32
	// awakeUntil is the Unix time (ns) until which a worker woken by
	// Prewake polls for its call; 0 when none is pending.
	awakeUntil atomic.Int64
	// For tests: how often the worker went to sleep waiting for a token,
	// and how often it woke from that sleep.
	parks, woken atomic.Int64
	ran          int
	busy         int64
	home         int      // its block of each batch: crew index + 1 (the caller's is 0)
	_            [64]byte // keep workers' counters off each other's cache lines
}

// homeBlock is the part of a batch one goroutine takes first: batch[front:
// back] are its units not yet claimed. Its owner claims at the front, the
// costliest first; a goroutine whose own block is empty claims at the back,
// the cheapest. Both ends are one word, so a claim is one compare-and-swap.
type homeBlock struct {
	ends atomic.Uint64 // front in the low 32 bits, back in the high 32
	_    [56]byte      // one block a cache line: owners claim without sharing
}

// claim takes the unit at the front of b, or at its back, and returns its
// batch position; false when b is empty.
func (b *homeBlock) claim(back bool) (int, bool) {
	for {
		v := b.ends.Load()
		front, end := uint32(v), uint32(v>>32)
		if front >= end {
			return 0, false
		}
		next, at := v+1, front // front+1: the low word cannot carry, front < end
		if back {
			next, at = v-1<<32, end-1
		}
		if b.ends.CompareAndSwap(v, next) {
			return int(at), true
		}
	}
}

// NewPool returns a pool of the given size, the calling goroutine included:
// workers-1 goroutines at most are started, lazily, on the first Run that
// needs them. workers 0 means runtime.GOMAXPROCS(0), read at each Run; sizes
// above [MaxWorkers] are clamped. NewPool panics if workers is negative.
func NewPool(workers int) *Pool {
	if workers < 0 {
		panic(fmt.Sprintf("scheduler: NewPool needs workers >= 0 (0 = GOMAXPROCS), got %d", workers))
	}
	return &Pool{
		workers:  min(workers, MaxWorkers),
		finished: make(chan struct{}, 1),
		left:     make(chan struct{}, 1),
		costs:    newCostModel(),
	}
}

// SetMaxPooledUnits caps how many units of one Run are handed to the pool
// (maxWorkUnitsPerTick): the cheapest units past the cap run on the calling
// goroutine. 0, the default, means no cap. It panics on a negative n and must
// not be called during Run.
func (p *Pool) SetMaxPooledUnits(n int) {
	if n < 0 {
		panic(fmt.Sprintf("scheduler: SetMaxPooledUnits needs n >= 0 (0 = no cap), got %d", n))
	}
	p.maxPooled = n
}

// Size is the number of goroutines the next Run may use, the caller included.
func (p *Pool) Size() int {
	n := p.workers
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return min(n, MaxWorkers)
}

// Estimate is the pool's learned cost of the unit key: an EWMA of its
// measured times. ok is false for key 0 and for keys not measured in the
// last runs. Call it from the goroutine that calls Run, between Runs.
func (p *Pool) Estimate(key uint64) (cost time.Duration, ok bool) {
	ns, ok := p.costs.estimate(key)
	return time.Duration(ns), ok
}

// Close stops the worker goroutines and waits for them to exit. It is
// idempotent; Run after Close panics. Close must not race with Run.
func (p *Pool) Close() {
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.crew {
		close(w.wake)
	}
	p.exited.Wait()
	p.crew = nil
}

// Run calls job.RunUnit(i) exactly once for every i in [0, len(units)),
// spread over the pool, and returns when all have finished. Each goroutine
// taking part (the caller and the workers called) has a home block: a run
// of consecutive unit indices of about an equal share of the predicted cost,
// which it runs longest first, by learned or given cost (ties in index
// order); one whose block is done takes the cheapest left of the fullest
// other block. Unit i thus runs on the same goroutine Run after Run while
// the costs hold, and what it writes (its rows, its clients' send queues)
// stays in one core's cache instead of crossing to another's each tick.
// Each unit's measured time feeds the cost of its Key for later Runs.
//
// A panicking unit does not stop the others: once all have run, Run panics
// with a *[UnitPanic] on the caller's goroutine, and the pool stays usable.
// Run does not allocate once the pool has seen a Run this large and the
// units' keys are known (the cost table grows for new keys).
func (p *Pool) Run(job Job, units []Unit) RunStats {
	stats, up := p.run(job, units)
	if up != nil {
		panic(up)
	}
	return stats
}

// run is Run returning the unit panic instead of raising it.
func (p *Pool) run(job Job, units []Unit) (RunStats, *UnitPanic) {
	if p.closed {
		panic("scheduler: Run on a closed Pool")
	}
	if !p.running.CompareAndSwap(false, true) {
		panic("scheduler: Pool.Run called while another Run is in progress; one goroutine runs the pool (is a unit calling Run?)")
	}
	defer p.running.Store(false)
	p.lastCalled = 0
	if len(units) == 0 {
		return RunStats{}, nil
	}
	start := time.Now()
	order := p.rank(units)
	pooled := len(order)
	if p.maxPooled > 0 && pooled > p.maxPooled {
		pooled = p.maxPooled
	}
	helpers := min(p.Size(), pooled) - 1
	p.ensureCrew(helpers)
	p.called = max(p.called, helpers)
	p.lastCalled = helpers

	p.job = job
	p.batch = p.home(order[:pooled], helpers+1)
	p.took = slices.Grow(p.took[:0], len(units))[:len(units)]
	p.remaining.Store(int64(pooled))
	p.drainers.Store(int32(helpers))
	for _, w := range p.crew[:helpers] {
		w.state.Store(called)
		select {
		case w.wake <- struct{}{}:
		default: // a token from a revoked call is still queued: it wakes the worker just as well
		}
	}

	// The caller takes the units past the cap while the workers start on
	// the expensive ones, then joins the drain.
	var me worker
	clock := newUnitClock()
	for _, i := range order[pooled:] {
		p.runGuarded(job, int(i))
		ns := clock.lap()
		p.took[i] = ns
		me.ran++
		me.busy += ns
	}
	callerLast := p.drain(job, p.batch, p.took, &me, false)

	// Every unit is claimed. Workers that have not started yet are told not
	// to: they will never touch this batch, so there is no need to wait for
	// them to wake. Those that have started are waited for until they have
	// left the drain loop, not only until the last unit is done: a worker
	// still inside the loop when Run returns would claim units of the next
	// batch with this one's job.
	revoked := 0
	for _, w := range p.crew[:helpers] {
		if w.state.CompareAndSwap(called, idle) {
			revoked++
		}
	}
	if !callerLast {
		spinUntil(func() bool { return p.remaining.Load() == 0 })
		<-p.finished
	}
	if helpers > 0 && !p.skipDrainerWait && (revoked == 0 || p.drainers.Add(-int32(revoked)) != 0) {
		spinUntil(func() bool { return p.drainers.Load() == 0 })
		<-p.left
	}

	stats := RunStats{Units: len(units), Caller: me.ran, Busy: time.Duration(me.busy), Workers: 1 + helpers - revoked}
	for _, w := range p.crew[:helpers] {
		stats.Pooled += w.ran
		stats.Busy += time.Duration(w.busy)
		w.ran, w.busy = 0, 0
	}
	p.costs.observe(units, p.took)
	p.job = nil
	stats.Wall = time.Since(start)
	return stats, p.takePanic()
}

// Prewake wakes, ahead of the next Run, the workers that the Runs since
// the previous Prewake called (as many as can run beside the caller: at
// most GOMAXPROCS-1), and has them poll for that Run until d from now
// instead of sleeping. Waking a sleeping worker takes the Go runtime, the
// kernel and, in a virtual machine, the hypervisor: tens of microseconds
// on bare metal, hundreds on a busy cloud VM, time in which the caller
// runs the tick's first parallel phase alone. A server calls Prewake that
// long before a tick is due (Server.Run); the workers poll without
// yielding, so each keeps its own thread and processor, and they go back
// to sleep once d has passed without a Run. Like Run, it is called from
// the goroutine that runs the pool.
func (p *Pool) Prewake(d time.Duration) {
	n := min(p.called, runtime.GOMAXPROCS(0)-1)
	p.called = 0
	if n <= 0 || d <= 0 {
		return
	}
	until := time.Now().Add(d).UnixNano()
	for _, w := range p.crew[:n] {
		w.awakeUntil.Store(until)
		select {
		case w.wake <- struct{}{}:
		default: // already has a token: it is awake or about to be
		}
	}
}

// RunInline runs job.RunUnit(0) ... job.RunUnit(n-1) in index order on the
// calling goroutine, with the same panic contract as [Pool.Run]: every unit
// runs, then the lowest-index panic is re-raised as a *[UnitPanic]. It is
// the "no pool" path for small batches.
func RunInline(job Job, n int) RunStats {
	stats, up := runInline(job, n)
	if up != nil {
		panic(up)
	}
	return stats
}

func runInline(job Job, n int) (RunStats, *UnitPanic) {
	if n <= 0 {
		return RunStats{}, nil
	}
	start := time.Now()
	var first *UnitPanic
	for i := range n {
		if up := runRecovered(job, i); up != nil && first == nil {
			first = up
		}
	}
	wall := time.Since(start)
	return RunStats{Units: n, Caller: n, Workers: 1, Busy: wall, Wall: wall}, first
}
