package scheduler

import "time"

// Tick is what the tick loop tells systems about the tick being run. Systems
// get the world and other state through their own fields, set when they are
// constructed.
type Tick struct {
	Number uint64        // 0 for the first tick, then +1 per tick
	Delta  time.Duration // the nominal tick period (1/tick rate)

	planning *planning // set while the scheduler calls a Plan, or a serial system alone in its stage (see Parallel)
}

// planning is where [Tick.Parallel] runs while a stage's Plans, or its
// lone serial system, are called: the pool of the Run, the system's name
// and key salt, a reused unit buffer, and what the passes have run so far.
type planning struct {
	pool   *Pool
	system string
	salt   uint64
	units  []Unit
	stats  RunStats
}

// Parallel runs units of job to completion before it returns: on the
// pool the schedule runs on when it is called from a [ParallelSystem]'s
// Plan or from the RunSerial of a [SerialSystem] alone in its stage (so
// on the calling goroutine: a structural system, say), and on the calling
// goroutine otherwise (no pool, a serial system sharing its stage, or a
// call outside a schedule). It is for work that a system must finish before
// its units can start and that splits by itself (the relay builds its due
// lists a period a unit), or in passes with serial steps between them:
// count in parallel, sum on the tick goroutine, place in parallel. The
// pool is idle meanwhile, so a pass costs one batch's handoff, not a
// stage's.
//
// Keys share the calling system's space: keep them apart from its plan's.
// A unit that panics is re-raised as a *[UnitPanic] naming the system once
// the pass has finished, and the Plan (or RunSerial) does not resume. The
// passes' stats count in the stage's, as its units' do.
func (t *Tick) Parallel(job Job, units []Unit) RunStats {
	pl := t.planning
	if pl == nil || pl.pool == nil {
		stats, up := runInline(job, len(units))
		if up != nil {
			if pl != nil {
				up.System = pl.system
			}
			panic(up)
		}
		if pl != nil {
			pl.stats.Add(stats)
		}
		return stats
	}
	pl.units = pl.units[:0]
	for _, u := range units {
		pl.units = append(pl.units, Unit{Key: saltKey(pl.salt, u.Key), Cost: u.Cost})
	}
	stats, up := pl.pool.run(job, pl.units)
	if up != nil {
		up.System = pl.system
		panic(up)
	}
	pl.stats.Add(stats)
	return stats
}

// System is a named step of the tick that declares what it touches. A value
// registered with [Builder.Add] must also be a [SerialSystem] or a
// [ParallelSystem] (exactly one of them).
type System interface {
	// Name identifies the system in pins ([Before], [After]), errors and
	// [Schedule.String]. Names are unique within a schedule.
	Name() string
	// Access declares what the system reads and writes (see [Uses]). It is
	// called once, when the schedule is built; the declaration is a promise
	// the scheduler relies on, not something it checks at run time.
	Access() Access
}

// SerialSystem is a system that runs as one call per tick. When it shares a
// stage with other systems it may run on a pool worker at the same time as
// they do; alone in its stage (always the case for a structural system) it
// runs on the goroutine that called [Schedule.Run].
type SerialSystem interface {
	System
	RunSerial(t *Tick)
}

// ParallelSystem is a system whose work is split into units that the pool
// runs concurrently.
//
// Each tick the scheduler first calls Plan on the tick goroutine, then
// RunUnit(i) once for every unit i of the returned plan, from any goroutine,
// several at once. RunUnit must only touch what unit i owns (its rows, its
// output buffer) plus what Access declares as read; keep whatever it needs
// from the tick in the system during Plan.
type ParallelSystem interface {
	System
	Job
	// Plan appends this tick's units to units (a reused buffer, empty) and
	// returns it. Unit i of the result is run as RunUnit(i). Key lets the
	// pool learn each unit's cost across ticks; keys are private to the
	// system. An empty plan runs nothing.
	Plan(t *Tick, units []Unit) []Unit
}
