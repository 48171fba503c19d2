package scheduler

import (
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"time"
)

// ensureCrew starts worker goroutines until there are at least n.
func (p *Pool) ensureCrew(n int) {
	for len(p.crew) < n {
		w := &worker{wake: make(chan struct{}, 1), home: len(p.crew) + 1}
		p.crew = append(p.crew, w)
		p.exited.Add(1)
		go p.serve(w)
	}
}

func (p *Pool) serve(w *worker) {
	defer p.exited.Done()
	isCalled := func() bool { return w.state.Load() == called }
	for {
		if !spinUntil(isCalled) && !w.sleep() {
			return
		}
		if until := w.awakeUntil.Swap(0); until > 0 && !isCalled() {
			pollTill(until, isCalled) // woken ahead of a Run: see Prewake
		}
		// Called (seen while spinning or woken): the wake token, if any,
		// stays queued and is taken as a stale call later, which the CAS
		// below turns away like any revoked call.
		if !w.state.CompareAndSwap(called, draining) {
			continue // revoked: the batch was done before this worker woke
		}
		// Whoever finishes the last unit signals finished from inside
		// drain; leaving is signalled here, by the last worker out.
		p.drain(p.job, p.batch, p.took, w, true)
		w.state.Store(idle)
		if p.drainers.Add(-1) == 0 {
			signal(p.left)
		}
	}
}

// sleep waits for a wake token and reports whether the pool is still
// open. A token already queued (a Run's, sent while the worker was
// polling) is taken without sleeping.
func (w *worker) sleep() bool {
	select {
	case _, open := <-w.wake:
		return open
	default:
	}
	w.parks.Add(1)
	_, open := <-w.wake
	w.woken.Add(1)
	return open
}

// drain runs units, its home block's first, then others', until none are
// left. It reports whether this goroutine finished the batch's last unit
// (and so whether the caller must wait for the worker that did).
func (p *Pool) drain(job Job, batch []int32, took []int64, w *worker, isWorker bool) (finishedLast bool) {
	clock := newUnitClock()
	for {
		c, ok := p.claim(w.home)
		if !ok {
			return finishedLast
		}
		i := batch[c]
		p.runGuarded(job, int(i))
		ns := clock.lap()
		took[i] = ns
		w.ran++
		w.busy += ns
		if p.remaining.Add(-1) == 0 {
			finishedLast = true
			if isWorker {
				signal(p.finished)
			}
		}
		if isWorker && p.drainDelay > 0 {
			time.Sleep(p.drainDelay)
			clock.lap() // the delay is not the unit's cost
		}
	}
}

// claim returns the batch position of the next unit for the goroutine
// whose block is home: its own block's front, else the back of the block
// with the most units left; false once every unit is claimed.
func (p *Pool) claim(home int) (int, bool) {
	blocks := p.blocks[:p.parts]
	if home < len(blocks) {
		if c, ok := blocks[home].claim(false); ok {
			return c, true
		}
	}
	for {
		fullest, most := -1, uint32(0)
		for k := range blocks {
			v := blocks[k].ends.Load()
			if left := uint32(v>>32) - uint32(v); left > most { // front never passes back
				fullest, most = k, left
			}
		}
		if fullest < 0 {
			return 0, false
		}
		if c, ok := blocks[fullest].claim(true); ok {
			return c, true
		}
	}
}

// home lays out a batch for parts goroutines: pooled (units in rank order,
// p.ranked their keys) is cut, in unit index order, into parts runs of
// about equal predicted cost, each sorted longest first, and blocks[k] is
// set to the k-th. A run's units are ones a cluster's shards or a table's
// rows next to each other, and the cut moves only when the costs do.
func (p *Pool) home(pooled []int32, parts int) []int32 {
	n := len(pooled)
	// By index: the index in the high word, the cost's bits in the low.
	p.keys = slices.Grow(p.keys[:0], n)
	total := 0.0
	for _, k := range p.ranked[:n] {
		cost := ^uint32(k >> 32)
		p.keys = append(p.keys, uint64(uint32(k))<<32|uint64(cost))
		total += float64(math.Float32frombits(cost))
	}
	slices.Sort(p.keys)
	if len(p.blocks) < parts {
		p.blocks = make([]homeBlock, parts)
	}
	p.parts = parts
	// Unit j goes to the block its cost's midpoint falls in; with no costs
	// known, to an equal share of the count.
	start, block, before := 0, 0, 0.0
	for j, k := range p.keys {
		cost := float64(math.Float32frombits(uint32(k)))
		at := int(float64(j) * float64(parts) / float64(n))
		if total > 0 && !math.IsInf(total, 1) {
			at = int((before + cost/2) / total * float64(parts))
		}
		before += cost
		for ; block < min(at, parts-1); block++ {
			p.setBlock(block, start, j)
			start = j
		}
		// Back to a rank key: sorting the run then puts it longest first.
		p.keys[j] = rankKey(cost, int(k>>32))
	}
	for ; block < parts; block++ {
		p.setBlock(block, start, n)
		start = n
	}
	for k := range parts {
		v := p.blocks[k].ends.Load()
		slices.Sort(p.keys[uint32(v):uint32(v>>32)])
	}
	for j, k := range p.keys {
		pooled[j] = int32(uint32(k))
	}
	return pooled
}

func (p *Pool) setBlock(k, front, back int) {
	p.blocks[k].ends.Store(uint64(back)<<32 | uint64(front))
}

// unitClock times consecutive units with one monotonic clock read per unit:
// each lap is the time since the previous one (the claim between units is
// counted with the unit; it is a few nanoseconds).
type unitClock struct {
	base time.Time
	prev time.Duration
}

func newUnitClock() unitClock { return unitClock{base: time.Now()} }

func (c *unitClock) lap() int64 {
	at := time.Since(c.base)
	ns := at - c.prev
	c.prev = at
	return int64(ns)
}

func (p *Pool) runGuarded(job Job, i int) {
	if up := runRecovered(job, i); up != nil {
		p.recordPanic(up)
	}
}

// runRecovered runs one unit and returns its panic, if any.
func runRecovered(job Job, i int) (up *UnitPanic) {
	defer func() {
		if r := recover(); r != nil {
			up = &UnitPanic{Unit: i, Value: r, Stack: debug.Stack()}
		}
	}()
	job.RunUnit(i)
	return nil
}

func (p *Pool) recordPanic(up *UnitPanic) {
	p.panicMu.Lock()
	if p.panicked == nil || up.Unit < p.panicked.Unit {
		p.panicked = up
	}
	p.panicMu.Unlock()
}

func (p *Pool) takePanic() *UnitPanic {
	p.panicMu.Lock()
	up := p.panicked
	p.panicked = nil
	p.panicMu.Unlock()
	return up
}

// spinWindow is how long a goroutine of the pool polls before it parks:
// a worker waiting for the next Run, the caller waiting for the workers to
// finish. A tick runs its parallel phases back to back with short serial
// steps between them, and waking a parked goroutine costs tens of
// microseconds (a futex and a thread switch) every phase, on every worker.
// Polling yields the processor at each step (runtime.Gosched), so other
// goroutines still run; after the window the pool parks as before.
const spinWindow = 50 * time.Microsecond

// spinUntil polls done, yielding between polls, for at most spinWindow,
// and reports whether done became true.
func spinUntil(done func() bool) bool {
	start := time.Now()
	for i := 0; ; i++ {
		if done() {
			return true
		}
		if i%8 == 7 && time.Since(start) > spinWindow {
			return false
		}
		runtime.Gosched()
	}
}

// pollTill polls done until the Unix time until (ns), without yielding,
// and reports whether done became true.
func pollTill(until int64, done func() bool) bool {
	for i := 0; ; i++ {
		if done() {
			return true
		}
		if i%64 == 63 && time.Now().UnixNano() > until {
			return false
		}
	}
}

// signal posts a wake-up without blocking; each batch posts at most one per
// channel and the caller takes it before the next batch starts.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
