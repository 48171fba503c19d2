package scheduler_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkCoreHandoff measures what a fork/join tick pays on the machine
// for every piece of data one core writes and another reads: the round
// trip of one cache line between two goroutines that poll it (on two
// cores: it needs GOMAXPROCS >= 2), and the time per 64-byte line to read
// a 256 KiB buffer the other core has just written, against reading it
// after writing it on the same core. A tick hands a frame (positions,
// records, due lists) from Move's cores to every Relay core, and each
// core's sends to the sessions it relays: on a machine where these
// figures are high (hundreds of nanoseconds a round trip), the
// Relay units' summed time grows when they run side by side
// (BenchmarkTick's busy-us/tick), and two cores buy less than twice the
// speed.
//
//	go test -run '^$' -bench BenchmarkCoreHandoff ./scheduler
func BenchmarkCoreHandoff(b *testing.B) {
	if runtime.GOMAXPROCS(0) < 2 {
		b.Skip("needs two cores: GOMAXPROCS >= 2")
	}
	b.Run("roundtrip", func(b *testing.B) {
		var line struct {
			v atomic.Int64
			_ [56]byte
		}
		n := int64(b.N)
		done := make(chan struct{})
		go func() { // answers each odd value with the next even one
			defer close(done)
			for i := int64(1); i < 2*n; i += 2 {
				for line.v.Load() != i {
				}
				line.v.Store(i + 1)
			}
		}()
		for i := int64(0); i < 2*n; i += 2 {
			for line.v.Load() != i {
			}
			line.v.Store(i + 1)
		}
		<-done
	})
	const size = 256 << 10
	for _, remote := range []bool{false, true} {
		b.Run(fmt.Sprintf("read256KiB/remote=%v", remote), func(b *testing.B) {
			buf := make([]uint64, size/8)
			var turn atomic.Int64 // odd: the writer's turn; even: the reader's
			done := make(chan struct{})
			write := func(k int64) {
				for i := range buf {
					buf[i] = uint64(k) + uint64(i)
				}
			}
			n := int64(b.N)
			if remote {
				go func() {
					defer close(done)
					for k := int64(1); k < 2*n; k += 2 {
						for turn.Load() != k {
						}
						write(k)
						turn.Store(k + 1)
					}
				}()
			} else {
				close(done)
			}
			var sum uint64
			var reading time.Duration
			for k := int64(0); k < 2*n; k += 2 {
				if remote {
					turn.Store(k + 1)
					for turn.Load() != k+2 {
					}
				} else {
					write(k)
				}
				start := time.Now()
				for i := 0; i < len(buf); i += 8 { // one word per line
					sum += buf[i]
				}
				reading += time.Since(start)
			}
			<-done
			b.ReportMetric(float64(reading.Nanoseconds())/float64(b.N)/float64(size/64), "ns/line")
			if sum == 1 {
				b.Log(sum) // keeps the reads
			}
		})
	}
}
