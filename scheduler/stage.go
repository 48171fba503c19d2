package scheduler

import (
	"fmt"
	"strings"
	"time"
)

// stage is a set of systems that do not conflict, with the reused batch
// that runs them together on the pool.
type stage struct {
	members []*member
	job     stageJob
	// lead is what the stage runs on the calling goroutine alone before
	// any unit of it starts (its serial system, when that is all it holds;
	// else its parallel systems' Plans), in nanoseconds, as an EWMA; and
	// poolAfter says whether a later stage of the schedule uses the pool.
	lead      float64
	poolAfter bool
	planning  planning // what Tick.Parallel uses during the stage's Plans
}

// direct reports whether the stage is a single serial system, which runs
// on the calling goroutine rather than as a pool batch.
func (st *stage) direct() bool { return len(st.members) == 1 && st.members[0].serial != nil }

// leadAlpha weighs the newest lead-in in a stage's EWMA.
const leadAlpha = 0.25

// stageJob runs one stage as a single pool batch: one unit per serial system,
// then each parallel system's planned units, with their keys salted.
type stageJob struct {
	t      *Tick
	owners []*member
	starts []int // starts[k] is the first batch index of owners[k]'s units
	units  []Unit
}

// RunUnit runs batch unit i: a serial system, or a unit of a parallel one.
func (j *stageJob) RunUnit(i int) {
	k := j.owner(i)
	if m := j.owners[k]; m.serial != nil {
		m.serial.RunSerial(j.t)
	} else {
		m.parallel.RunUnit(i - j.starts[k])
	}
}

// owner is the index in owners of the system batch unit i belongs to.
func (j *stageJob) owner(i int) int {
	lo, hi := 0, len(j.starts)-1 // invariant: starts[lo] <= i < starts[hi+1]
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if j.starts[mid] <= i {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// Run runs the stages in order; each stage finishes before the next starts.
// Within a stage, the systems' work is one pool batch: serial systems and
// parallel systems' units run concurrently on the pool's goroutines. A stage
// holding a single serial system (every structural system, for one) runs it
// directly on the calling goroutine. A nil pool runs everything on the
// calling goroutine, stage by stage, each stage's systems in the order
// [Schedule.Stages] lists them: the inline path.
//
// The returned stats sum the pool batches, the parallel systems run
// inline and the passes systems run with [Tick.Parallel]; serial systems
// run on the calling goroutine are not counted themselves. A
// panicking unit, or a serial system running on the pool, is re-raised once
// its stage has finished as a *[UnitPanic] naming the system and its unit
// (the lowest unit of the first such system), and the later stages do not
// run; a serial system on the calling goroutine panics as it is. Run does
// not allocate once the plans have reached their steady size.
//
// Between two pool batches of one Run, the workers poll for the next one
// for a while (spinWindow) and then sleep, and a sleeping worker can take
// hundreds of microseconds to wake (on a busy virtual machine): a stage
// whose serial lead-in (a serial system, or its systems' Plans) has been
// longer than that keeps the workers that the batches before it used
// awake through it ([Pool.Prewake]), when a later stage will use the pool:
// otherwise the next batch would start on the calling goroutine alone while
// the workers wake. The cost: the workers poll instead of sleeping through
// such lead-ins.
func (s *Schedule) Run(pool *Pool, t *Tick) RunStats {
	for i := range s.stages {
		for _, m := range s.stages[i].members {
			m.took = SystemTime{Name: m.name}
		}
	}
	var total RunStats
	pooled := false // a batch of this Run called workers: they are polling or asleep now
	for i := range s.stages {
		st := &s.stages[i]
		if pooled && (st.poolAfter || !st.direct()) {
			if lead := time.Duration(st.lead); lead > spinWindow/2 {
				pool.Prewake(2*lead + spinWindow)
			}
		}
		stats, up := st.run(pool, t)
		if up != nil {
			panic(up)
		}
		usedPool := !st.direct() || stats.Units > 0 // a serial system's Tick.Parallel passes
		pooled = pooled || pool != nil && usedPool && pool.lastCalled > 0
		total.Add(stats)
	}
	return total
}

// observeLead adds one lead-in, started at start, to the stage's EWMA.
func (st *stage) observeLead(start time.Time) {
	ns := float64(time.Since(start))
	if st.lead == 0 {
		st.lead = ns
		return
	}
	st.lead += leadAlpha * (ns - st.lead)
}

func (st *stage) run(pool *Pool, t *Tick) (RunStats, *UnitPanic) {
	if st.direct() {
		start := time.Now()
		st.planning.stats = RunStats{}
		st.runSerial(pool, st.members[0], t)
		st.members[0].took.Serial = time.Since(start)
		st.observeLead(start)
		return st.planning.stats, nil
	}
	if pool == nil {
		return st.runInline(t)
	}
	j := &st.job
	j.t, j.owners, j.starts, j.units = t, st.members, j.starts[:0], j.units[:0]
	start := time.Now()
	st.planning.stats = RunStats{}
	for _, m := range st.members {
		j.starts = append(j.starts, len(j.units))
		if m.serial != nil {
			j.units = append(j.units, Unit{Key: saltKey(m.salt, 1)})
			continue
		}
		planned := time.Now()
		m.plan = st.plan(pool, m, t)
		m.took.Serial = time.Since(planned)
		for _, u := range m.plan {
			j.units = append(j.units, Unit{Key: saltKey(m.salt, u.Key), Cost: u.Cost})
		}
	}
	st.observeLead(start)
	stats, up := pool.run(j, j.units)
	// Each unit's measured time (pool.took) to its system.
	for k, m := range j.owners {
		hi := len(j.units)
		if k+1 < len(j.starts) {
			hi = j.starts[k+1]
		}
		for _, ns := range pool.took[j.starts[k]:hi] {
			m.took.Units += time.Duration(ns)
		}
	}
	stats.Add(st.planning.stats)
	if up != nil {
		k := j.owner(up.Unit)
		up.System, up.Unit = j.owners[k].name, up.Unit-j.starts[k]
	}
	j.t = nil
	return stats, up
}

// plan calls m's Plan with t set up for Tick.Parallel on pool (nil:
// inline).
func (st *stage) plan(pool *Pool, m *member, t *Tick) []Unit {
	st.enter(pool, m, t)
	defer st.leave(t)
	return m.parallel.Plan(t, m.plan[:0])
}

// runSerial runs m, alone in its stage, on the calling goroutine, with t
// set up for Tick.Parallel on pool (nil: inline).
func (st *stage) runSerial(pool *Pool, m *member, t *Tick) {
	st.enter(pool, m, t)
	defer st.leave(t)
	m.serial.RunSerial(t)
}

// enter points t at the stage's planning for m's Plan or RunSerial, and
// leave clears it: at any other time Tick.Parallel runs inline.
func (st *stage) enter(pool *Pool, m *member, t *Tick) {
	pl := &st.planning
	pl.pool, pl.system, pl.salt = pool, m.name, m.salt
	t.planning = pl
}

func (st *stage) leave(t *Tick) { t.planning, st.planning.pool = nil, nil }

func (st *stage) runInline(t *Tick) (RunStats, *UnitPanic) {
	var total RunStats
	var first *UnitPanic
	st.planning.stats = RunStats{}
	for _, m := range st.members {
		start := time.Now()
		if m.serial != nil {
			m.serial.RunSerial(t)
			m.took.Serial = time.Since(start)
			continue
		}
		m.plan = st.plan(nil, m, t)
		m.took.Serial = time.Since(start)
		stats, up := runInline(m.parallel, len(m.plan))
		m.took.Units = stats.Busy
		if up != nil && first == nil {
			up.System = m.name
			first = up
		}
		total.Add(stats)
	}
	total.Add(st.planning.stats)
	return total, first
}

// saltKey mixes a system's salt into a unit key (splitmix64's finalizer) so
// systems' keys do not collide in the pool's cost table. Key 0 stays 0.
func saltKey(salt, key uint64) uint64 {
	if key == 0 {
		return 0
	}
	x := key ^ salt
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if x == 0 {
		x = 1
	}
	return x
}

// SystemTime is what one system took in a [Schedule.Run].
type SystemTime struct {
	Name string
	// Serial is its time on the goroutine that called Run: a serial
	// system's RunSerial when it runs there (alone in its stage, or
	// inline), a parallel system's Plan, with the passes it ran through
	// [Tick.Parallel].
	Serial time.Duration
	// Units is the time spent in its units, summed over the goroutines
	// that ran them (a serial system sharing a stage runs as one unit).
	Units time.Duration
}

// Times appends to dst what each system took in the last Run, in the order
// [Schedule.Stages] lists them, and returns it; a system the Run did not
// reach (a panic stopped it) took nothing. It allocates nothing when dst
// has room.
func (s *Schedule) Times(dst []SystemTime) []SystemTime {
	for i := range s.stages {
		for _, m := range s.stages[i].members {
			dst = append(dst, m.took)
		}
	}
	return dst
}

// Stages returns the systems' names, stage by stage, in the order Run runs
// the stages; within a stage, in registration order as bent by pins.
func (s *Schedule) Stages() [][]string {
	out := make([][]string, len(s.stages))
	for i, st := range s.stages {
		for _, m := range st.members {
			out[i] = append(out[i], m.name)
		}
	}
	return out
}

// String prints the plan, one stage after another, each system with its kind
// and access, and for systems past the first stage the reason they are not
// earlier:
//
//	stage 1
//	  Move (parallel): reads components.MoveInput; writes components.Transform
//	    after Ingest: Ingest writes components.MoveInput, Move reads it
func (s *Schedule) String() string {
	var b strings.Builder
	for i, st := range s.stages {
		fmt.Fprintf(&b, "stage %d\n", i)
		for _, m := range st.members {
			kind := "serial"
			if m.parallel != nil {
				kind = "parallel"
			}
			fmt.Fprintf(&b, "  %s (%s): %s\n", m.name, kind, m.access)
			if m.why != "" {
				fmt.Fprintf(&b, "    %s\n", m.why)
			}
		}
	}
	return b.String()
}
