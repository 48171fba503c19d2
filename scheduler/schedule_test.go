package scheduler_test

import (
	"bytes"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/scheduler"
)

// probe is a test system's name and access; serialProbe and parallelProbe
// call run for every call or unit.
type probe struct {
	name   string
	access scheduler.Access
	run    func(unit int)
}

func (p *probe) Name() string             { return p.name }
func (p *probe) Access() scheduler.Access { return p.access }

type serialProbe struct{ probe }

func (s *serialProbe) RunSerial(*scheduler.Tick) { s.run(0) }

type parallelProbe struct {
	probe
	units int
}

func (p *parallelProbe) Plan(_ *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	for i := range p.units {
		units = append(units, scheduler.Unit{Key: uint64(i) + 1, Cost: 1})
	}
	return units
}
func (p *parallelProbe) RunUnit(i int) { p.run(i) }

func serial(name string, run func(int), items ...scheduler.Item) *serialProbe {
	return &serialProbe{probe{name: name, access: scheduler.Uses(items...), run: run}}
}

func parallel(name string, units int, run func(int), items ...scheduler.Item) *parallelProbe {
	return &parallelProbe{probe: probe{name: name, access: scheduler.Uses(items...), run: run}, units: units}
}

func nop(int) {}

func build(t *testing.T, systems ...scheduler.System) *scheduler.Schedule {
	t.Helper()
	b := scheduler.NewBuilder()
	for _, s := range systems {
		b.Add(s)
	}
	s, err := b.Build()
	require.NoError(t, err)
	return s
}

// overlapTracker records, with a sequence number, when each system's work
// starts and ends, and which systems were ever running at the same time.
type overlapTracker struct {
	mu       sync.Mutex
	seq      int
	active   map[string]int
	together map[[2]string]bool
	first    map[string]int // first start, this tick
	last     map[string]int // last end, this tick
}

func newOverlapTracker() *overlapTracker {
	return &overlapTracker{active: map[string]int{}, together: map[[2]string]bool{}}
}

func (o *overlapTracker) newTick() {
	o.first, o.last = map[string]int{}, map[string]int{}
}

func (o *overlapTracker) probe(name string) func(int) {
	return func(int) {
		o.mu.Lock()
		o.seq++
		if _, ok := o.first[name]; !ok {
			o.first[name] = o.seq
		}
		for other, n := range o.active {
			if n > 0 && other != name {
				o.together[[2]string{min(name, other), max(name, other)}] = true
			}
		}
		o.active[name]++
		o.mu.Unlock()
		time.Sleep(50 * time.Microsecond)
		o.mu.Lock()
		o.seq++
		o.active[name]--
		o.last[name] = o.seq
		o.mu.Unlock()
	}
}

func TestConflictingSystemsNeverOverlapAndKeepRegistrationOrder(t *testing.T) {
	o := newOverlapTracker()
	// Registration order, and the pairs that conflict (by the rules, not by
	// asking the scheduler).
	systems := []scheduler.System{
		serial("WritePos", o.probe("WritePos"), scheduler.Write[Position]()),
		parallel("ReadPosA", 8, o.probe("ReadPosA"), scheduler.Read[Position](), scheduler.Write[Velocity]()),
		parallel("ReadPosB", 8, o.probe("ReadPosB"), scheduler.Read[Position]()),
		serial("WriteHealth", o.probe("WriteHealth"), scheduler.Write[Health]()),
		parallel("WritePos2", 4, o.probe("WritePos2"), scheduler.Write[Position](), scheduler.WriteResource("log")),
		serial("ReadLog", o.probe("ReadLog"), scheduler.ReadResource("log"), scheduler.Read[Health]()),
		serial("Spawn", o.probe("Spawn"), scheduler.Structural()),
		parallel("ReadVel", 6, o.probe("ReadVel"), scheduler.Read[Velocity]()),
	}
	conflicting := [][2]string{
		{"WritePos", "ReadPosA"}, {"WritePos", "ReadPosB"}, {"WritePos", "WritePos2"},
		{"ReadPosA", "WritePos2"}, {"ReadPosB", "WritePos2"}, {"ReadPosA", "ReadVel"},
		{"WriteHealth", "ReadLog"}, {"WritePos2", "ReadLog"},
	}
	for _, s := range systems {
		if s.Name() != "Spawn" {
			conflicting = append(conflicting, [2]string{s.Name(), "Spawn"}, [2]string{"Spawn", s.Name()})
		}
	}
	sched := build(t, systems...)
	pool := scheduler.NewPool(4)
	defer pool.Close()
	for tick := range 30 {
		o.newTick()
		sched.Run(pool, &scheduler.Tick{Number: uint64(tick)})
		for _, pair := range conflicting {
			before, after := pair[0], pair[1]
			if slices.IndexFunc(systems, func(s scheduler.System) bool { return s.Name() == before }) >
				slices.IndexFunc(systems, func(s scheduler.System) bool { return s.Name() == after }) {
				continue
			}
			require.Less(t, o.last[before], o.first[after], "tick %d: %s must finish before %s starts", tick, before, after)
		}
	}
	for _, pair := range conflicting {
		assert.False(t, o.together[[2]string{min(pair[0], pair[1]), max(pair[0], pair[1])}], "%s and %s overlapped", pair[0], pair[1])
	}
	assert.True(t, o.together[[2]string{"ReadPosA", "ReadPosB"}], "two readers of Position shared a stage")
}

// rendezvous blocks each arriving unit until n have arrived, or gives up.
type rendezvous struct {
	n       int32
	arrived atomic.Int32
	missed  atomic.Int32
}

func (r *rendezvous) arrive(int) {
	r.arrived.Add(1)
	for deadline := time.Now().Add(5 * time.Second); r.arrived.Load() < r.n; runtime.Gosched() {
		if time.Now().After(deadline) {
			r.missed.Add(1)
			return
		}
	}
}

func TestNonConflictingSystemsRunAtTheSameTime(t *testing.T) {
	r := &rendezvous{n: 4}
	sched := build(t,
		serial("A", r.arrive, scheduler.Read[Position](), scheduler.Write[Health]()),
		serial("B", r.arrive, scheduler.Read[Position](), scheduler.WriteResource("log")),
		parallel("C", 2, r.arrive, scheduler.Read[Position](), scheduler.Write[Velocity]()),
	)
	require.Equal(t, [][]string{{"A", "B", "C"}}, sched.Stages())
	pool := scheduler.NewPool(4)
	defer pool.Close()
	stats := sched.Run(pool, &scheduler.Tick{})
	assert.Zero(t, r.missed.Load(), "two serial systems and a parallel system's two units were all running at once")
	assert.Equal(t, 4, stats.Units)
	assert.Equal(t, 3, stats.Pooled, "three of the four ran on pool workers")
}

func crowdRegistrations() []scheduler.System {
	return []scheduler.System{
		serial("Ingest", nop, scheduler.Write[Velocity](), scheduler.WriteResource("sessions")),
		serial("Prepare", nop, scheduler.Read[Position](), scheduler.WriteResource("snapshot")),
		parallel("Move", 4, nop, scheduler.Read[Velocity](), scheduler.Write[Position](), scheduler.ReadResource("snapshot")),
		parallel("Relay", 4, nop, scheduler.Read[Position](), scheduler.ReadResource("snapshot"), scheduler.WriteResource("outbox")),
		serial("Join", nop, scheduler.Structural()),
		serial("Regen", nop, scheduler.Write[Health]()),
		serial("Stats", nop, scheduler.Read[Health](), scheduler.ReadResource("outbox")),
	}
}

func TestStagePlanIsTheSameOnEveryBuild(t *testing.T) {
	b := scheduler.NewBuilder()
	for _, s := range crowdRegistrations() {
		b.Add(s)
	}
	first, err := b.Build()
	require.NoError(t, err)
	for range 50 {
		var fresh scheduler.Builder // the zero Builder works too
		for _, s := range crowdRegistrations() {
			fresh.Add(s)
		}
		again, err := fresh.Build()
		require.NoError(t, err)
		require.Equal(t, first.String(), again.String())
		same, err := b.Build()
		require.NoError(t, err)
		require.Equal(t, first.String(), same.String())
	}
	assert.Equal(t, [][]string{{"Ingest", "Prepare"}, {"Move"}, {"Relay"}, {"Join"}, {"Regen"}, {"Stats"}}, first.Stages())
}

func TestScheduleStringSaysWhySystemsRunWhereTheyDo(t *testing.T) {
	sched := build(t, crowdRegistrations()...)
	assert.Equal(t, `stage 0
  Ingest (serial): writes scheduler_test.Velocity; writes resource sessions
  Prepare (serial): reads scheduler_test.Position; writes resource snapshot
stage 1
  Move (parallel): reads scheduler_test.Velocity; writes scheduler_test.Position; reads resource snapshot
    after Ingest: Ingest writes scheduler_test.Velocity, Move reads it
stage 2
  Relay (parallel): reads scheduler_test.Position; reads resource snapshot; writes resource outbox
    after Move: Move writes scheduler_test.Position, Relay reads it
stage 3
  Join (serial): structural
    after Relay: Join is structural
stage 4
  Regen (serial): writes scheduler_test.Health
    after Join: Join is structural
stage 5
  Stats (serial): reads scheduler_test.Health; reads resource outbox
    after Regen: Regen writes scheduler_test.Health, Stats reads it
`, sched.String())
}

func TestPinsPlaceSystemsBeforeAndAfterNamedSystems(t *testing.T) {
	var b scheduler.Builder
	b.Add(serial("Move", nop, scheduler.Write[Position]()))
	b.Add(serial("Relay", nop, scheduler.Read[Position]()))
	// Conflicts with Move and is registered after it, but pinned before it.
	b.Add(serial("Teleport", nop, scheduler.Write[Position]()), scheduler.Before("Move"))
	// Conflicts with nothing, but pinned after Relay and before Audit.
	b.Add(serial("Log", nop, scheduler.ReadResource("log")), scheduler.After("Relay"), scheduler.Before("Audit"))
	b.Add(serial("Audit", nop))
	sched, err := b.Build()
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"Teleport"}, {"Move"}, {"Relay"}, {"Log"}, {"Audit"}}, sched.Stages())
	assert.Contains(t, sched.String(), "Move (serial): writes scheduler_test.Position\n    Teleport is pinned before Move\n")
	assert.Contains(t, sched.String(), "Log (serial): reads resource log\n    pinned after Relay\n")
	assert.Contains(t, sched.String(), "Audit (serial): touches nothing\n    Log is pinned before Audit\n")
}

// bothKinds is a system that is serial and parallel at once: rejected.
type bothKinds struct{ parallelProbe }

func (b *bothKinds) RunSerial(*scheduler.Tick) {}

// noKind has a name and access but no way to run.
type noKind struct{ probe }

func TestBuildReportsEveryMistake(t *testing.T) {
	cases := []struct {
		name  string
		setup func(b *scheduler.Builder)
		want  []string
	}{
		{"nil", func(b *scheduler.Builder) { b.Add(nil) }, []string{"scheduler: system #0 is nil"}},
		{"empty name", func(b *scheduler.Builder) { b.Add(serial("", nop)) }, []string{"has an empty name"}},
		{"duplicate", func(b *scheduler.Builder) { b.Add(serial("A", nop)).Add(serial("A", nop)) },
			[]string{`scheduler: two systems are named "A"; names must be unique`}},
		{"no kind", func(b *scheduler.Builder) { b.Add(&noKind{probe{name: "Idle"}}) }, []string{`system "Idle" (*scheduler_test.noKind) has neither RunSerial nor Plan and RunUnit`}},
		{"both kinds", func(b *scheduler.Builder) { b.Add(&bothKinds{parallelProbe{probe: probe{name: "Both"}}}) }, []string{`"Both" (*scheduler_test.bothKinds) is both`}},
		{"structural parallel", func(b *scheduler.Builder) { b.Add(parallel("P", 1, nop, scheduler.Structural())) },
			[]string{`"P" is parallel and structural`}},
		{"unknown target", func(b *scheduler.Builder) { b.Add(serial("A", nop), scheduler.After("Relya")) },
			[]string{`scheduler: system "A" is pinned after "Relya", which is not registered`}},
		{"self pin", func(b *scheduler.Builder) { b.Add(serial("A", nop), scheduler.Before("A")) },
			[]string{`system "A" is pinned before itself`}},
		{"cycle", func(b *scheduler.Builder) {
			b.Add(serial("A", nop), scheduler.Before("B")).Add(serial("B", nop), scheduler.Before("C")).
				Add(serial("C", nop), scheduler.Before("A")).Add(serial("D", nop))
		}, []string{`scheduler: pins form a cycle among "A", "B", "C"`}},
		{"several at once", func(b *scheduler.Builder) {
			b.Add(nil).Add(serial("A", nop), scheduler.After("X")).Add(serial("A", nop))
		}, []string{"#0 is nil", `pinned after "X"`, `two systems are named "A"`}},
	}
	for _, c := range cases {
		var b scheduler.Builder
		c.setup(&b)
		sched, err := b.Build()
		assert.Nil(t, sched, c.name)
		if assert.Error(t, err, c.name) {
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w, c.name)
			}
		}
	}
}

func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	return string(bytes.Fields(buf)[1])
}

func TestStructuralSystemRunsAloneOnTheCallingGoroutine(t *testing.T) {
	var ranOn string
	caller := goroutineID()
	sched := build(t,
		parallel("Move", 8, nop, scheduler.Write[Position]()),
		serial("Join", func(int) { ranOn = goroutineID() }, scheduler.Structural()),
		serial("Regen", nop, scheduler.Write[Health]()),
	)
	assert.Equal(t, [][]string{{"Move"}, {"Join"}, {"Regen"}}, sched.Stages())
	pool := scheduler.NewPool(4)
	defer pool.Close()
	sched.Run(pool, &scheduler.Tick{})
	assert.Equal(t, caller, ranOn)
}

// squares is a parallel system writing one output per unit, and sum a serial
// system reading them: the result must not depend on the pool.
type squares struct {
	out  []int
	tick uint64
}

func (s *squares) Name() string { return "Squares" }
func (s *squares) Access() scheduler.Access {
	return scheduler.Uses(scheduler.WriteResource("squares"))
}
func (s *squares) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	s.tick = t.Number
	for i := range s.out {
		units = append(units, scheduler.Unit{Key: uint64(i) + 1, Cost: float64(i % 7)})
	}
	return units
}
func (s *squares) RunUnit(i int) { s.out[i] = i*i + int(s.tick) }

func TestInlineRunMatchesPooledRun(t *testing.T) {
	results := map[string][]int{}
	for _, mode := range []string{"inline", "pooled"} {
		sq := &squares{out: make([]int, 100)}
		var total []int
		sched := build(t, sq, serial("Sum", func(int) {
			s := 0
			for _, v := range sq.out {
				s += v
			}
			total = append(total, s)
		}, scheduler.ReadResource("squares")))
		var pool *scheduler.Pool
		if mode == "pooled" {
			pool = scheduler.NewPool(3)
			defer pool.Close()
		}
		for tick := range 5 {
			stats := sched.Run(pool, &scheduler.Tick{Number: uint64(tick)})
			assert.Equal(t, 100, stats.Units, mode)
			if pool == nil {
				assert.Zero(t, stats.Pooled, "inline runs nothing on workers")
			}
		}
		results[mode] = total
	}
	assert.Equal(t, results["inline"], results["pooled"])
}

// unitPanicOf runs a tick of sched on pool (nil: inline) and returns the
// *UnitPanic it raised.
func unitPanicOf(t *testing.T, sched *scheduler.Schedule, pool *scheduler.Pool) (up *scheduler.UnitPanic) {
	t.Helper()
	defer func() {
		var ok bool
		up, ok = recover().(*scheduler.UnitPanic)
		require.True(t, ok, "the tick raised a *UnitPanic")
	}()
	sched.Run(pool, &scheduler.Tick{})
	return nil
}

func TestPanickingSystemIsNamedWithItsUnit(t *testing.T) {
	boom := func(i int) {
		if i == 3 {
			panic("boom")
		}
	}
	sched := build(t,
		serial("Calm", nop, scheduler.Read[Position]()),
		parallel("Boom", 6, boom, scheduler.Read[Position]()),
	)
	pool := scheduler.NewPool(2)
	defer pool.Close()
	for _, p := range []*scheduler.Pool{pool, nil} {
		up := unitPanicOf(t, sched, p)
		assert.Equal(t, "Boom", up.System)
		assert.Equal(t, 3, up.Unit)
		assert.Equal(t, `scheduler: system "Boom" unit 3 panicked: boom`, up.Error())
	}
	assert.NotPanics(t, func() { build(t, serial("Calm", nop)).Run(pool, &scheduler.Tick{}) }, "the pool is usable after")
}

func TestScheduleRunDoesNotAllocate(t *testing.T) {
	sched := build(t, crowdRegistrations()...)
	pool := scheduler.NewPool(4)
	defer pool.Close()
	tick := &scheduler.Tick{}
	sched.Run(pool, tick)
	assert.Zero(t, testing.AllocsPerRun(100, func() { sched.Run(pool, tick) }), "pooled")
	assert.Zero(t, testing.AllocsPerRun(100, func() { sched.Run(nil, tick) }), "inline")
}

// slowPlan is a parallel probe whose Plan takes at least delay.
type slowPlan struct {
	parallelProbe
	delay time.Duration
}

func (s *slowPlan) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	time.Sleep(s.delay)
	return s.parallelProbe.Plan(t, units)
}

func TestTimesSayWhatEachSystemTook(t *testing.T) {
	const ms = time.Millisecond
	sleep := func(d time.Duration) func(int) { return func(int) { time.Sleep(d) } }
	var boom atomic.Bool
	slow := serial("Slow", func(int) {
		if boom.Load() {
			panic("boom")
		}
		time.Sleep(3 * ms)
	}, scheduler.Structural())
	units := &slowPlan{parallelProbe: *parallel("Units", 4, sleep(2*ms), scheduler.Write[int]()), delay: ms}
	shared := serial("Shared", sleep(ms), scheduler.Read[string]())
	sched := build(t, slow, units, shared)
	require.Equal(t, [][]string{{"Slow"}, {"Units", "Shared"}}, sched.Stages())

	pool := scheduler.NewPool(2)
	defer pool.Close()
	for _, run := range []struct {
		name string
		pool *scheduler.Pool
	}{{"pooled", pool}, {"inline", nil}} {
		t.Run(run.name, func(t *testing.T) {
			sched.Run(run.pool, &scheduler.Tick{})
			times := sched.Times(nil)
			require.Len(t, times, 3)
			assert.Equal(t, []string{"Slow", "Units", "Shared"}, []string{times[0].Name, times[1].Name, times[2].Name})
			assert.GreaterOrEqual(t, times[0].Serial, 3*ms, "Slow ran on the calling goroutine")
			assert.Zero(t, times[0].Units)
			assert.GreaterOrEqual(t, times[1].Serial, ms, "Units' Plan")
			assert.GreaterOrEqual(t, times[1].Units, 8*ms, "Units' four units, summed")
			if run.pool != nil {
				assert.Zero(t, times[2].Serial, "Shared ran as a unit of its stage")
				assert.GreaterOrEqual(t, times[2].Units, ms)
			} else {
				assert.GreaterOrEqual(t, times[2].Serial, ms, "inline, Shared ran on the calling goroutine")
				assert.Zero(t, times[2].Units)
			}
		})
	}

	// A Run that a panic stops: the systems it did not reach took nothing
	// in it, whatever they took before.
	boom.Store(true)
	assert.Panics(t, func() { sched.Run(pool, &scheduler.Tick{}) })
	times := sched.Times(nil)
	assert.Zero(t, times[1].Serial+times[1].Units, "Units")
	assert.Zero(t, times[2].Serial+times[2].Units, "Shared")

	buf := make([]scheduler.SystemTime, 0, 3)
	assert.Zero(t, testing.AllocsPerRun(10, func() { buf = sched.Times(buf[:0]) }))
}
