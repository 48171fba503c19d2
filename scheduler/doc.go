// Package scheduler is Throng's engine room: the fork/join [Pool] that runs
// every parallel phase of the tick, and the [Schedule] that orders systems,
// built-in and users' own, by what they declare they touch.
//
// It imports nothing of Throng's. Component types are identified by their
// reflect.Type ([Read], [Write]), so the package needs nothing of the ECS.
//
// # The pool
//
// A [Pool] is persistent worker goroutines plus the goroutine that calls
// [Pool.Run], which works too. A Run cuts the units of a [Job] into one home
// block per goroutine taking part: consecutive units of about equal
// predicted cost, each block run most expensive first, and a goroutine done
// with its own block takes the cheapest units left in the fullest other
// one. Each [Unit] carries a Key and a predicted Cost, and the measured
// time of every keyed unit feeds an EWMA that ranks and places it on the
// next Run, so a unit runs on the same goroutine Run after Run and what it
// writes stays in one core's cache. Run returns only when every unit has
// finished and every worker has left the batch, so no straggler can claim a
// unit of the next one. It reports [RunStats]: summed unit time, wall time,
// units run by workers (pooled) and by the caller, and the speedup. Small
// batches can skip the pool with [RunInline].
//
// # The access model
//
// Every [System] declares its [Access]: the component types it reads and
// writes, the named resources it reads and writes, and whether it is
// structural (creates or removes entities, adds or removes components).
// Two systems conflict when one writes something the other reads or writes,
// or when either is structural. Conflicting systems never run at the same
// time and keep their registration order; others may share a stage.
//
//	registered in this order         reads        writes        stage
//	  Ingest (serial)                 -            MoveInput       0
//	  Move   (parallel)               MoveInput    Transform       1  after Ingest: MoveInput
//	  Regen  (parallel, yours)        -            Health          0  no conflict: runs beside Ingest
//	  Relay  (parallel)               Transform    res "outbox"    2  after Move: Transform
//	  Join   (serial, structural)     -            -               3  structural: alone
//
//	  stage 0 | Ingest  Regen |   one pool batch; Ingest is one unit, Regen's units beside it
//	  stage 1 | Move          |   Move's units over the pool
//	  stage 2 | Relay         |
//	  stage 3 | Join          |   alone, on the tick goroutine
//
// A system may also be pinned [Before] or [After] a named system, which puts
// it in an earlier or later stage than that system whatever its access; where
// pins and registration order disagree about two conflicting systems, the
// pins win.
// [Schedule.String] prints the stages with the reason each system is where
// it is. The declaration is a promise: the scheduler does not check it, and
// a system that touches more than it declares races with its stage mates.
//
// # Writing a system
//
// A serial system is one call per tick; a parallel one plans work units on
// the tick goroutine and runs them on the pool:
//
//	type Regen struct{ hp []float32 }
//
//	func (r *Regen) Name() string             { return "Regen" }
//	func (r *Regen) Access() scheduler.Access { return scheduler.Uses(scheduler.Write[Health]()) }
//	func (r *Regen) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
//		for lo := 0; lo < len(r.hp); lo += 256 {
//			units = append(units, scheduler.Unit{Key: uint64(lo/256) + 1, Cost: 256})
//		}
//		return units
//	}
//	func (r *Regen) RunUnit(i int) { /* heal r.hp[i*256 : (i+1)*256] */ }
//
// A Plan whose units need work done first that splits by itself (the relay
// builds its due lists a period a unit), or in passes (count in parallel,
// sum the counts, then place in parallel), runs it on the pool with
// [Tick.Parallel]: the pool
// is idle while Plans are called, so a pass costs one batch's handoff, and
// with no pool it runs inline. A serial system alone in its stage (a
// structural one, say) may fan out the same way.
//
// Register it with [Builder.Add], pinned if it must run at a given point
// (Add(regen, scheduler.After("Move"))), build once with [Builder.Build] and
// call [Schedule.Run] every tick; pass a nil pool to run it all inline.
//
// # Task -> API
//
//   - Run a batch of work units on all cores: [NewPool], [Pool.Run], [Job], [Unit]
//   - Run the same batch on the calling goroutine: [RunInline]
//   - Cap the units handed to workers (maxWorkUnitsPerTick): [Pool.SetMaxPooledUnits]
//   - Read the learned cost of a unit key: [Pool.Estimate]
//   - Print units, pooled, parallel time, speedup: [RunStats], [RunStats.Speedup], [RunStats.Add]
//   - Find which unit panicked: [UnitPanic]
//   - Declare what a system touches: [Uses], [Read], [Write], [ReadResource], [WriteResource], [Structural]
//   - Check two declarations: [Access.ConflictsWith]
//   - Write a system: [System], [SerialSystem], [ParallelSystem], [Tick]
//   - Run passes of a Plan's own on the pool before its units: [Tick.Parallel]
//   - Order systems into stages: [NewBuilder], [Builder.Add], [Before], [After], [Builder.Build]
//   - Run a tick: [Schedule.Run]; see why a system runs where it does: [Schedule.String], [Schedule.Stages]
//   - Stop the workers: [Pool.Close]
package scheduler
