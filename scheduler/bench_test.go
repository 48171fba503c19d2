package scheduler_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/throng-go/throng/scheduler"
)

// emptyJob's units do nothing: a Run of it costs only the fork/join.
type emptyJob struct{}

func (*emptyJob) RunUnit(int) {}

const benchUnits = 64

func benchUnitList() []scheduler.Unit {
	units := make([]scheduler.Unit, benchUnits)
	for i := range units {
		units[i] = scheduler.Unit{Key: uint64(i) + 1, Cost: float64(i % 5)}
	}
	return units
}

// BenchmarkPoolRun measures the fork/join overhead of one Run of 64 empty
// units at 1 .. GOMAXPROCS workers (inline: RunInline, no pool). This is the
// figure minActorsToOffload is derived from: offloading pays once a tick's
// parallel work exceeds it by enough to cover it.
func BenchmarkPoolRun(b *testing.B) {
	job := &emptyJob{}
	b.Run("inline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			scheduler.RunInline(job, benchUnits)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/run")
	})
	for workers := 1; workers <= min(runtime.GOMAXPROCS(0), scheduler.MaxWorkers); workers++ {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			pool := scheduler.NewPool(workers)
			defer pool.Close()
			units := benchUnitList()
			pool.Run(job, units)
			var pooled int
			b.ReportAllocs()
			for b.Loop() {
				pooled += pool.Run(job, units).Pooled
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/run")
			b.ReportMetric(float64(pooled)/float64(b.N), "pooled/run")
		})
	}
}

// BenchmarkScheduleRun measures one tick of a seven-system schedule shaped
// like the crowd pipeline, with empty systems: the scheduler's own cost.
func BenchmarkScheduleRun(b *testing.B) {
	var builder scheduler.Builder
	for _, s := range crowdRegistrations() {
		builder.Add(s)
	}
	sched, err := builder.Build()
	if err != nil {
		b.Fatal(err)
	}
	pool := scheduler.NewPool(0)
	defer pool.Close()
	tick := &scheduler.Tick{}
	sched.Run(pool, tick) // warm: workers started, plans and cost table sized
	b.ReportAllocs()
	for b.Loop() {
		sched.Run(pool, tick)
		tick.Number++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e3, "us/tick")
}
