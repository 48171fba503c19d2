package main

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/throng-go/throng/net"
	"github.com/throng-go/throng/systems"
)

// meter turns tick stats and timings into one line a second and a summary
// at the end. It runs on the tick goroutine.
type meter struct {
	log       *slog.Logger
	transport net.Transport
	began     time.Time
	firstOut  uint64
	last      systems.TickStats

	window, run tally
}

// tally is what a stretch of ticks did.
type tally struct {
	since       time.Time
	outAtStart  uint64 // transport bytes out when the stretch began
	ticks       int64
	relays      int64
	corrections int64
	work        histogram
}

func (t *tally) add(st systems.TickStats, work time.Duration) {
	t.ticks++
	t.relays += st.Relays
	t.corrections += int64(st.Corrections)
	t.work.add(work)
}

func newMeter(log *slog.Logger, transport net.Transport, now time.Time) *meter {
	m := &meter{log: log, transport: transport, began: now}
	m.firstOut = m.bytesOut()
	m.window = tally{since: now, outAtStart: m.firstOut}
	m.run = tally{since: now, outAtStart: m.firstOut}
	return m
}

// bytesOut is everything the server has sent: movement datagrams and
// reliable frames.
func (m *meter) bytesOut() uint64 {
	s := m.transport.Stats()
	return s.DatagramBytesOut + s.ReliableBytesOut
}

// tick records one tick and prints the line when a second has passed.
func (m *meter) tick(st systems.TickStats, work time.Duration) {
	m.last = st
	m.window.add(st, work)
	m.run.add(st, work)
	now := time.Now()
	if now.Sub(m.window.since) < time.Second {
		return
	}
	w := &m.window
	elapsed := now.Sub(w.since).Seconds()
	out := m.bytesOut()
	m.log.Info("second",
		"tick", st.Tick,
		"hz", round(float64(w.ticks)/elapsed, 1),
		"actors", st.Actors,
		"clusters", st.Clusters,
		"biggest", st.Biggest,
		"units", st.Units,
		"relays/tick", w.relays/w.ticks,
		"out", rate(float64(out-w.outAtStart)/elapsed),
		"corrections", w.corrections,
		"work_ms", ms(w.work.mean()),
		"p95_ms", ms(w.work.quantile(0.95)),
	)
	w.work.reset()
	*w = tally{since: now, outAtStart: out, work: w.work}
}

// summary prints the whole run.
func (m *meter) summary(now time.Time, bots *crowd) {
	r := &m.run
	elapsed := now.Sub(r.since).Seconds()
	relaysPerTick := int64(0)
	if r.ticks > 0 {
		relaysPerTick = r.relays / r.ticks
	}
	welcomed := 0
	for _, w := range bots.welcomed {
		if w {
			welcomed++
		}
	}
	attrs := []any{
		"ticks", r.ticks,
		"seconds", round(elapsed, 1),
		"hz", round(float64(r.ticks)/elapsed, 1),
		"players", welcomed,
		"relays/tick", relaysPerTick,
		"out", rate(float64(m.bytesOut()-r.outAtStart) / elapsed),
		"corrections", r.corrections,
		"rejected", m.last.Rejected,
		"dropped", m.last.DroppedInputs,
		"stale", m.last.StaleInputs,
		"work_ms", ms(r.work.mean()),
		"p95_ms", ms(r.work.quantile(0.95)),
		"max_ms", ms(r.work.max),
		"bot_updates/s", int64(float64(bots.counts.updates) / elapsed),
		"bot_records/s", int64(float64(bots.counts.records) / elapsed),
	}
	if bots.counts.refused > 0 {
		attrs = append(attrs, "refused", bots.counts.refused, "reason", bots.refusedWhy)
	}
	m.log.Info("summary", attrs...)
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func ms(d time.Duration) float64 {
	return round(float64(d)/float64(time.Millisecond), 2)
}

// rate formats bytes a second with a unit: 812B/s, 45.3kB/s, 3.41MB/s.
func rate(bytesPerSecond float64) string {
	switch {
	case bytesPerSecond >= 1e6:
		return fmt.Sprintf("%.2fMB/s", bytesPerSecond/1e6)
	case bytesPerSecond >= 1e3:
		return fmt.Sprintf("%.1fkB/s", bytesPerSecond/1e3)
	}
	return fmt.Sprintf("%.0fB/s", bytesPerSecond)
}
