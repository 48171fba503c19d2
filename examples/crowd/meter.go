package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/systems"
)

// meter prints one line a second of wall time (after the first tick that
// ends one: an overloaded server's lines come when its ticks do) and a
// summary of the whole run at the end. Its figures are the server's own
// counters (systems.TickStats) over the second, the same definitions as the
// server's once-a-second summary (throng.Stats.Second), which covers
// tick-rate ticks rather than a second of wall time. It runs on the tick
// goroutine.
type meter struct {
	log      *slog.Logger
	srv      *throng.Server
	bots     func() fleet.Totals
	withBots bool         // in-process bots to report on
	plaza    *plaza.World // the plaza scenario's world, whose prop changes the lines count; nil for others
	last     systems.TickStats

	window, run tally
}

// tally is what a stretch of ticks did, and where the running counts stood
// when it began.
type tally struct {
	since     time.Time
	ticks     int64
	relays    int64
	throttled int64
	pressure  int
	moveBytes int64 // movement bytes handed to the transport
	propsSent int64 // Prop frames sent
	propsTold int64 // prop changes the joins told (TickStats.PropUpdates)
	work      histogram

	base     systems.TickStats // the server's running totals when it began
	bytesOut uint64            // transport bytes out when it began
	cpu      time.Duration     // process CPU when it began
	bots     fleet.Totals      // the bots' counts when it began
	changes  uint64            // the plaza's prop changes when it began
}

func (m *meter) begin(now time.Time) tally {
	cpu, _ := fleet.ProcessCPU()
	return tally{since: now, base: m.last, bytesOut: m.transportStats().bytesOut(), cpu: cpu, bots: m.bots(), changes: m.propChanges()}
}

// propChanges is the plaza's running count of prop changes, 0 without a
// plaza.
func (m *meter) propChanges() uint64 {
	if m.plaza == nil {
		return 0
	}
	return m.plaza.PropChanges()
}

func (t *tally) add(st systems.TickStats, work time.Duration) {
	t.ticks++
	t.relays += st.Relays
	t.throttled += st.Throttled
	t.pressure = max(t.pressure, st.Pressure)
	t.moveBytes += st.BytesOut
	t.propsSent += int64(st.PropsSent)
	t.propsTold += int64(st.PropUpdates)
	t.work.add(work)
}

// newMeter meters srv; withBots says whether this process runs bots whose
// figures (read with bots) belong in the lines.
func newMeter(log *slog.Logger, srv *throng.Server, bots func() fleet.Totals, withBots bool, now time.Time) *meter {
	m := &meter{log: log, srv: srv, bots: bots, withBots: withBots}
	m.window = m.begin(now)
	m.run = m.window
	return m
}

// transportCounts is the transport's counters.
type transportCounts wire.Stats

func (m *meter) transportStats() transportCounts { return transportCounts(m.srv.Transport().Stats()) }

// bytesOut is everything handed to the transport: movement datagrams and
// reliable frames.
func (s transportCounts) bytesOut() uint64 { return s.DatagramBytesOut + s.ReliableBytesOut }

// sessions is the number of clients connected now.
func (s transportCounts) sessions() uint64 { return s.Opened - s.Closed }

// dropped is every update the server did not apply: dropped, stale or over
// the rate limit (throng.SecondStats.DroppedInputs).
func dropped(st systems.TickStats) uint64 { return st.DroppedInputs + st.StaleInputs + st.RateLimited }

// tick records one tick and prints the line when a second has passed.
func (m *meter) tick(st systems.TickStats, work time.Duration) {
	m.last = st
	m.window.add(st, work)
	m.run.add(st, work)
	now := time.Now()
	w := &m.window
	d := now.Sub(w.since)
	if d < time.Second {
		return
	}
	secs := d.Seconds()
	attrs := []any{
		"tick", st.Tick,
		"hz", fleet.Round(float64(w.ticks)/secs, 1),
		"work_ms", ms(w.work.mean()),
		"p95_ms", ms(w.work.quantile(0.95)),
		"players", m.transportStats().sessions(),
		"actors", st.Actors,
		"clusters", st.Clusters,
		"biggest", st.Biggest,
		"units", st.Units,
		"relays/tick", w.relays / w.ticks,
		"throttled/tick", w.throttled / w.ticks,
		"pressure", w.pressure,
		"owed", st.Owed,
		"waiting", st.Waiting,
		"out", rate(float64(w.moveBytes) / secs),
		"all_out", rate(float64(m.transportStats().bytesOut()-w.bytesOut) / secs),
		"busy_rejections", st.BusyRejections - w.base.BusyRejections,
		"dropped_inputs", dropped(st) - dropped(w.base),
		"corrections", st.CorrectionsSent - w.base.CorrectionsSent,
	}
	if m.plaza != nil {
		attrs = append(attrs, "prop_changes", m.propChanges()-w.changes, "prop_changes_told", w.propsTold, "props_sent", w.propsSent)
	}
	attrs = m.appendSaves(attrs)
	if m.withBots {
		bots := m.bots()
		attrs = append(attrs,
			"bots", bots.Active(),
			"bot_upd/s", fleet.UpdatesPerBot(bots.Records-w.bots.Records, bots.Active(), d),
			"bot_corrections", bots.Corrections-w.bots.Corrections)
	}
	attrs = append(attrs, "cpu", fleet.CPUPercent(w.cpu, d))
	m.log.Info("second", attrs...)
	w.work.reset()
	*w = m.begin(now)
}

// summary prints the whole run.
func (m *meter) summary(now time.Time) {
	r := &m.run
	elapsed := now.Sub(r.since)
	relaysPerTick := int64(0)
	if r.ticks > 0 {
		relaysPerTick = r.relays / r.ticks
	}
	st := m.last
	attrs := []any{
		"ticks", r.ticks,
		"seconds", fleet.Round(elapsed.Seconds(), 1),
		"hz", fleet.Round(float64(r.ticks)/elapsed.Seconds(), 1),
		"players", m.transportStats().sessions(),
		"relays/tick", relaysPerTick,
		"out", rate(float64(r.moveBytes) / elapsed.Seconds()),
		"all_out", rate(float64(m.transportStats().bytesOut()-r.bytesOut) / elapsed.Seconds()),
		"corrections", st.CorrectionsSent,
		"rejected", st.Rejected,
		"dropped", st.DroppedInputs,
		"stale", st.StaleInputs,
		"rate_limited", st.RateLimited,
		"busy_rejections", st.BusyRejections,
		"commands", st.Commands,
	}
	if m.plaza != nil {
		attrs = append(attrs, "prop_changes", m.propChanges()-r.changes, "prop_changes_told", r.propsTold, "props_sent", r.propsSent)
	}
	attrs = append(attrs,
		"work_ms", ms(r.work.mean()),
		"p95_ms", ms(r.work.quantile(0.95)),
		"p99_ms", ms(r.work.quantile(0.99)),
		"max_ms", ms(r.work.max),
		"cpu", fleet.CPUPercent(r.cpu, elapsed),
	)
	attrs = m.appendSaves(attrs)
	// Each system's time a tick over the last full second: on the tick
	// goroutine and in its units, summed over the cores that ran them.
	for _, w := range m.srv.SystemTimes(nil) {
		attrs = append(attrs, w.Name+"_ms", ms(w.Serial+w.Units))
	}
	if !m.withBots {
		m.log.Info("summary", attrs...)
		return
	}
	bots := m.bots()
	attrs = append(attrs,
		"bots_joined", bots.Joined,
		"bot_updates_sent/s", int64(float64(bots.MovesSent)/elapsed.Seconds()),
		"bot_upd/s", fleet.UpdatesPerBot(bots.Records, bots.Joined, elapsed),
		"bot_corrections", bots.Corrections,
		"bot_waves", bots.Waves,
		"bot_events", bots.Events)
	if bots.BusyRetries > 0 {
		attrs = append(attrs, "busy_retries", bots.BusyRetries)
	}
	if bots.Refused > 0 {
		attrs = append(attrs, "refused", bots.Refused, "reason", bots.Refusal)
	}
	if bots.Failed > 0 {
		attrs = append(attrs, "failed", bots.Failed)
	}
	if bots.Lost > 0 {
		attrs = append(attrs, "lost", bots.Lost, "loss", bots.Loss)
	}
	m.log.Info("summary", attrs...)
}

// appendSaves appends the saves' figures as the last tick published them
// (throng.Stats.Saves): how many were written, the latest one's freeze,
// its background write and its size. It appends nothing until a save has begun, so
// that a run without saves prints the lines it always did.
func (m *meter) appendSaves(attrs []any) []any {
	sv := m.srv.Stats().Saves
	if sv.Started == 0 {
		return attrs
	}
	return append(attrs, "saves", sv.Written, "save_freeze_ms", ms(sv.Freeze), "save_write_ms", ms(sv.Write), "save_bytes", sv.Bytes)
}

func ms(d time.Duration) float64 {
	return fleet.Round(float64(d)/float64(time.Millisecond), 2)
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
