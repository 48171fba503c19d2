package main

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/zone"
)

// meter prints the per-second lines and the summary of what runs in this
// process: its zone servers, and its gateway and bots if it has them.
type meter struct {
	out   io.Writer
	zones []*zoneServer
	gw    *gateway.Gateway
	bots  *bots
	coord *zone.Coordinator
	lost  *atomic.Uint64 // NATS disconnects (connect)
	start time.Time
	cpu0  time.Duration

	// The summary's: lowest rate and highest p95 of any zone in any full
	// second, and how many seconds were printed.
	hzMin   float64
	p95Max  time.Duration
	seconds int
}

func newMeter(out io.Writer, zones []*zoneServer, gw *gateway.Gateway, b *bots, coord *zone.Coordinator, lost *atomic.Uint64) *meter {
	cpu, _ := fleet.ProcessCPU()
	return &meter{out: out, zones: zones, gw: gw, bots: b, coord: coord, lost: lost, start: time.Now(), cpu0: cpu, hzMin: -1}
}

// totals are the zone servers' counts summed.
type totals struct {
	players, ghosts, records             int
	handoffs, switches, lost, duplicated uint64
	sessionsLost, ghostBytes, relayBytes uint64
	filed, gatewaysLost, unkeyed         uint64
	switchTicks                          [8]uint64
}

func (m *meter) totals() totals {
	var t totals
	for _, s := range m.zones {
		st := s.z.Stats()
		h := st.Handoffs
		t.players += s.srv.Stats().Second.Players
		t.ghosts += st.Ghosts
		t.records += h.Records
		t.handoffs += h.Committed
		t.switches += h.SessionsTaken
		t.lost += h.InputsMissed
		t.duplicated += h.InputsDuplicated
		t.sessionsLost += h.SessionsLost
		t.ghostBytes += st.BytesSent
		t.relayBytes += s.gt.Stats().DatagramBytesOut
		t.filed += st.PlayersFiled
		t.unkeyed += st.Unkeyed
		lost, _ := s.gt.GatewaysLost()
		t.gatewaysLost += lost
		for i, n := range h.SwitchTicks {
			t.switchTicks[i] += n
		}
	}
	return t
}

// percentile returns the switches' pct-th percentile in tick periods
// (the histogram's last bucket stands for that many or more).
func percentile(h [8]uint64, pct uint64) int {
	var n uint64
	for _, c := range h {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := (n*pct + 99) / 100
	var seen uint64
	for i, c := range h {
		if seen += c; seen >= want {
			return i
		}
	}
	return len(h) - 1
}

// line prints one per-second line.
func (m *meter) line(prev totals) totals {
	t := m.totals()
	var b strings.Builder
	fmt.Fprintf(&b, "t=%ds", int(time.Since(m.start).Round(time.Second)/time.Second))
	if len(m.zones) > 0 {
		hz, p95, each := make([]string, len(m.zones)), make([]string, len(m.zones)), make([]string, len(m.zones))
		full := true
		for i, s := range m.zones {
			sec := s.srv.Stats().Second
			hz[i], p95[i] = fmt.Sprintf("%.1f", sec.TickRate), fmt.Sprintf("%.2f", ms(sec.WorkP95))
			each[i] = fmt.Sprint(sec.Players)
			if sec.Ticks == 0 {
				full = false
				continue
			}
			if m.hzMin < 0 || sec.TickRate < m.hzMin {
				m.hzMin = sec.TickRate
			}
			m.p95Max = max(m.p95Max, sec.WorkP95)
		}
		if full {
			m.seconds++
		}
		fmt.Fprintf(&b, " zones=%d hz=%s p95_ms=%s players=%d zone_players=%s ghosts=%d handoff_records=%d handoffs=%d switches=%d switch_p99_ticks=%d lost_inputs=%d duplicated_inputs=%d sessions_lost=%d ghost_kb=%.1f relay_kb=%.1f players_filed=%d gateways_lost=%d",
			len(m.zones), strings.Join(hz, "/"), strings.Join(p95, "/"), t.players, strings.Join(each, "/"), t.ghosts, t.records,
			t.handoffs-prev.handoffs, t.switches-prev.switches, percentile(t.switchTicks, 99), t.lost, t.duplicated, t.sessionsLost,
			float64(t.ghostBytes-prev.ghostBytes)/1e3, float64(t.relayBytes-prev.relayBytes)/1e3, t.filed, t.gatewaysLost)
	}
	if m.bots != nil {
		n := m.bots.counts()
		fmt.Fprintf(&b, " bots=%d welcomes=%d corrections=%d refused=%d retries=%d zone_gone=%d rejoined=%d closed=%d", n.Joined, n.Welcomes, n.Corrections, n.Refused, n.Retries, n.ZoneGone, n.Rejoined, n.Closed)
	}
	if m.gw != nil {
		gs := m.gw.Stats()
		fmt.Fprintf(&b, " gateway_malformed=%d shadow_moves=%d shadows_ended=%d", gs.Malformed, gs.ShadowMoves, gs.ShadowsEnded)
	}
	if m.coord != nil {
		fmt.Fprintf(&b, " borders_moved=%d", m.coord.Stats().Moves)
	}
	fmt.Fprintf(&b, " nats_disconnects=%d cpu=%.2f", m.lost.Load(), m.cpu())
	fmt.Fprintln(m.out, b.String())
	return t
}

// cpu returns the process's CPU time since the start over the wall time:
// 2.0 is two cores busy.
func (m *meter) cpu() float64 {
	now, ok := fleet.ProcessCPU()
	if !ok {
		return 0
	}
	return (now - m.cpu0).Seconds() / time.Since(m.start).Seconds()
}

// summary prints the run's last line.
func (m *meter) summary() {
	t := m.totals()
	var b strings.Builder
	fmt.Fprintf(&b, "summary seconds=%.0f", time.Since(m.start).Seconds())
	if len(m.zones) > 0 {
		share := 0.0
		if t.relayBytes > 0 {
			share = float64(t.ghostBytes) / float64(t.relayBytes)
		}
		fmt.Fprintf(&b, " zones=%d players=%d hz_min=%.1f p95_ms_max=%.2f handoffs=%d switches=%d switch_p50_ticks=%d switch_p95_ticks=%d switch_p99_ticks=%d lost_inputs=%d duplicated_inputs=%d sessions_lost=%d ghost_share=%.3f ghost_unkeyed=%d",
			len(m.zones), t.players, max(m.hzMin, 0), ms(m.p95Max), t.handoffs, t.switches,
			percentile(t.switchTicks, 50), percentile(t.switchTicks, 95), percentile(t.switchTicks, 99),
			t.lost, t.duplicated, t.sessionsLost, share, t.unkeyed)
		fmt.Fprintf(&b, " switch_ticks=%s", histogram(t.switchTicks))
	}
	if m.bots != nil {
		n := m.bots.counts()
		fmt.Fprintf(&b, " bots=%d welcomes=%d corrections=%d refused=%d", n.Joined, n.Welcomes, n.Corrections, n.Refused)
		if n.Refusal != "" {
			fmt.Fprintf(&b, " first_refusal=%q", n.Refusal)
		}
	}
	if m.gw != nil {
		gs := m.gw.Stats()
		fmt.Fprintf(&b, " shadow_moves=%d shadows_ended=%d", gs.ShadowMoves, gs.ShadowsEnded)
	}
	if m.coord != nil {
		fmt.Fprintf(&b, " borders_moved=%d", m.coord.Stats().Moves)
	}
	fmt.Fprintf(&b, " nats_disconnects=%d cpu=%.2f", m.lost.Load(), m.cpu())
	fmt.Fprintln(m.out, b.String())
}

// histogram writes switch counts by tick periods begun, 0 to 7 or more,
// separated by slashes.
func histogram(h [8]uint64) string {
	var b strings.Builder
	for i, n := range h {
		if i > 0 {
			b.WriteByte('/')
		}
		fmt.Fprint(&b, n)
	}
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
