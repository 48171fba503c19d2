package throng

import (
	"slices"
	"sync"
	"time"

	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// Stats is what an operator sees: what the last tick did, and the summary of
// the last full second (one second's worth of ticks at the configured rate).
// [Server.Stats] returns a copy; it is safe to call from any goroutine.
type Stats struct {
	systems.TickStats
	// Pooled is how many of the tick's work units ran on pool workers
	// rather than the tick goroutine.
	Pooled int
	// Work is how long the last tick took, start to end.
	Work time.Duration
	// Second summarises the last full second.
	Second SecondStats
	// Saves counts the world saves (Server.Save) and describes the latest.
	Saves SaveStats
}

// SaveStats counts world saves and describes the latest one written.
type SaveStats struct {
	// Started and Written count saves begun and saves durable on disk;
	// Failed counts those whose write failed (logged).
	Started, Written, Failed uint64
	// Freeze is the latest save's pause of the tick goroutine; Write its
	// background time (encoding, checksums, writing, fsync); Bytes its
	// file's size.
	Freeze, Write time.Duration
	Bytes         int64
}

// Speedup is the last tick's summed Move and Relay time over the parallel
// phase's wall time: near 1 means the pool bought nothing.
func (s Stats) Speedup() float64 {
	if s.Parallel <= 0 {
		return 0
	}
	return float64(s.Busy) / float64(s.Parallel)
}

// SecondStats summarises one second's worth of ticks (TickRate ticks).
type SecondStats struct {
	// Ticks is how many ticks the summary covers; 0 until the first
	// second is complete.
	Ticks int
	// TickRate is the achieved rate in Hz over the second.
	TickRate float64
	// WorkAvg, WorkP5 and WorkP95 describe the time each tick took.
	WorkAvg, WorkP5, WorkP95 time.Duration
	// OverBudget is the share of ticks that took longer than the tick
	// period.
	OverBudget float64
	// Players is the number of connected sessions at the end of the second.
	Players int
	// BytesPerSecond is movement bytes handed to the transport per second.
	BytesPerSecond float64
	// BusyRejections, DroppedInputs (dropped, stale or rate-limited
	// updates) and Corrections count what happened during the second.
	BusyRejections, DroppedInputs, Corrections uint64
	// Admitting is false while admission control turns new players away.
	Admitting bool
}

// SystemWork is what one system of the schedule took per tick, averaged
// over the last full second: the built-in ones (systems.IngestName, ...)
// and every one added with [Server.AddSystem].
type SystemWork struct {
	Name string
	// Serial is its time on the tick goroutine: a serial system's run when
	// it runs there, a parallel system's Plan with the passes it runs
	// through scheduler.Tick.Parallel (the relay's Plan builds its due
	// lists so).
	Serial time.Duration
	// Units is the time spent in its units, summed over the goroutines
	// that ran them (CPU time, not wall time).
	Units time.Duration
}

// meter collects per-tick figures into per-second summaries and decides
// admission. It belongs to the tick goroutine; published is the copy other
// goroutines read.
type meter struct {
	work      []time.Duration
	scratch   []time.Duration
	start     time.Time
	bytes     int64
	base      systems.TickStats // running totals at the start of the second
	busy      bool
	took      []scheduler.SystemTime // the systems' times summed over the second
	mu        sync.Mutex
	published Stats
	systems   []SystemWork // the last full second's, per tick
	saves     SaveStats    // guarded by mu: the save goroutines write it
}

func (m *meter) saveStarted(freeze time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves.Started++
	m.saves.Freeze = freeze
}

func (m *meter) saveFinished(res save.Result, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.saves.Failed++
		return
	}
	m.saves.Written++
	m.saves.Write = res.Write
	m.saves.Bytes = res.Bytes
}

// addTimes adds one tick's system times to the second's.
func (m *meter) addTimes(times []scheduler.SystemTime) {
	if len(m.took) != len(times) { // the first tick: the schedule is fixed from then on
		m.took = append(m.took[:0], times...)
		return
	}
	for i, t := range times {
		m.took[i].Serial += t.Serial
		m.took[i].Units += t.Units
	}
}

// SystemTimes appends to dst what each system of the schedule took per
// tick, averaged over the last full second, in schedule order (see
// scheduler.Schedule.Stages), and returns it; nothing before the first
// second is complete. It is safe to call from any goroutine and allocates
// nothing when dst has room.
func (s *Server) SystemTimes(dst []SystemWork) []SystemWork {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	return append(dst, s.meter.systems...)
}

// record adds one tick and, once a second's worth of ticks is in, closes
// the second: summary, admission decision, log line. It returns whether
// admission is closed.
func (s *Server) record(st systems.TickStats, pooled int, work time.Duration, now time.Time) {
	m := &s.meter
	if m.start.IsZero() {
		m.start = now.Add(-work)
		m.base = st
	}
	m.work = append(m.work, work)
	m.bytes += st.BytesOut
	out := Stats{TickStats: st, Pooled: pooled, Work: work}
	if len(m.work) >= s.settings.TickRate {
		out.Second = s.closeSecond(st, now)
	} else {
		m.mu.Lock()
		out.Second = m.published.Second
		m.mu.Unlock()
	}
	m.mu.Lock()
	out.Saves = m.saves
	m.published = out
	m.mu.Unlock()
	if every := s.settings.Parallelism.MetricsLogIntervalTicks; every > 0 && st.Tick%uint64(every) == 0 {
		s.log.Info("throng tick", "tick", st.Tick, "actors", st.Actors, "clusters", st.Clusters,
			"biggest", st.Biggest, "units", st.Units, "pooled", pooled, "relays", st.Relays,
			"throttled", st.Throttled, "parallel_us", st.Parallel.Microseconds(),
			"join_us", st.JoinTime.Microseconds(), "speedup", roundTo(out.Speedup(), 2))
	}
}

func (s *Server) closeSecond(st systems.TickStats, now time.Time) SecondStats {
	m := &s.meter
	period := s.settings.TickPeriod()
	sum := SecondStats{Ticks: len(m.work), Players: s.pipe.Players()}
	elapsed := now.Sub(m.start)
	if elapsed > 0 {
		sum.TickRate = float64(len(m.work)) / elapsed.Seconds()
		sum.BytesPerSecond = float64(m.bytes) / elapsed.Seconds()
	}
	m.scratch = append(m.scratch[:0], m.work...)
	slices.Sort(m.scratch)
	var total time.Duration
	over := 0
	for _, w := range m.scratch {
		total += w
		if w > period {
			over++
		}
	}
	n := len(m.scratch)
	sum.WorkAvg = total / time.Duration(n)
	sum.WorkP5 = m.scratch[n*5/100]
	sum.WorkP95 = m.scratch[min(n*95/100, n-1)]
	sum.OverBudget = float64(over) / float64(n)
	sum.BusyRejections = st.BusyRejections - m.base.BusyRejections
	sum.DroppedInputs = (st.DroppedInputs + st.StaleInputs + st.RateLimited) -
		(m.base.DroppedInputs + m.base.StaleInputs + m.base.RateLimited)
	sum.Corrections = st.CorrectionsSent - m.base.CorrectionsSent

	adm := s.settings.Admission
	m.busy = adm.Enabled && float64(sum.WorkP95) > adm.BusyShare*float64(period)
	s.pipe.SetBusy(m.busy)
	sum.Admitting = !m.busy

	m.mu.Lock()
	m.systems = m.systems[:0]
	for _, t := range m.took {
		m.systems = append(m.systems, SystemWork{Name: t.Name, Serial: t.Serial / time.Duration(n), Units: t.Units / time.Duration(n)})
	}
	m.mu.Unlock()
	for i := range m.took {
		m.took[i].Serial, m.took[i].Units = 0, 0
	}

	m.work, m.bytes, m.start, m.base = m.work[:0], 0, now, st
	if s.settings.Parallelism.MetricsLogIntervalTicks > 0 {
		sv := m.saveStats()
		s.log.Info("throng second", "hz", roundTo(sum.TickRate, 2),
			"work_avg_ms", ms(sum.WorkAvg), "work_p5_ms", ms(sum.WorkP5), "work_p95_ms", ms(sum.WorkP95),
			"over_budget", roundTo(sum.OverBudget, 3), "players", sum.Players,
			"bytes_per_s", int64(sum.BytesPerSecond), "busy_rejections", sum.BusyRejections,
			"dropped_inputs", sum.DroppedInputs, "corrections", sum.Corrections,
			"admitting", sum.Admitting, "pressure", st.Pressure, "owed", st.Owed, "waiting", st.Waiting,
			"saves", sv.Written, "save_freeze_ms", ms(sv.Freeze), "save_write_ms", ms(sv.Write), "save_bytes", sv.Bytes)
	}
	return sum
}

// saveStats returns the saves' counts and the latest save's figures.
func (m *meter) saveStats() SaveStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

func ms(d time.Duration) float64 { return roundTo(float64(d)/float64(time.Millisecond), 3) }

func roundTo(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
