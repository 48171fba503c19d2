package throng

import (
	"bufio"
	"context"
	"errors"
	stdnet "net"
	"net/http"
	"time"

	"github.com/throng-go/throng/internal/promtext"
)

// metricsServer serves the server's figures in the Prometheus text format
// (version 0.0.4) at /metrics on Settings.MetricsListen. It reads
// [Server.Stats] and [Server.SystemTimes], so scrapes never touch the tick.
// The format is a few lines of text a series, written here rather than
// with Prometheus' client library, which would come into every program
// built on Throng for the sake of this one page.
type metricsServer struct {
	http     *http.Server
	listener stdnet.Listener
}

// metric is one series of the page: its name (without the throng_
// prefix), help text, type and how to read it from a Stats.
type metric struct {
	name, help, kind string
	read             func(Stats) float64
}

// metrics lists the page's series, in the order it prints them.
var metrics = []metric{
	{"tick", "Number of the last tick.", "gauge", func(st Stats) float64 { return float64(st.Tick) }},
	{"actors", "Actors in the world at the last tick.", "gauge", func(st Stats) float64 { return float64(st.Actors) }},
	{"clusters", "Clusters of occupied chunks at the last tick.", "gauge", func(st Stats) float64 { return float64(st.Clusters) }},
	{"biggest_cluster_actors", "Actors in the largest cluster.", "gauge", func(st Stats) float64 { return float64(st.Biggest) }},
	{"work_units", "Work units of the last tick.", "gauge", func(st Stats) float64 { return float64(st.Units) }},
	{"pooled_units", "Work units run on pool workers in the last tick.", "gauge", func(st Stats) float64 { return float64(st.Pooled) }},
	{"relays", "Movement records relayed in the last tick.", "gauge", func(st Stats) float64 { return float64(st.Relays) }},
	{"throttled", "Pairs held back by adaptive throttling in the last tick.", "gauge", func(st Stats) float64 { return float64(st.Throttled) }},
	{"joins_waiting", "Players whose Hello waits for its turn to join (admission.joinAppearsPerTick).", "gauge", func(st Stats) float64 { return float64(st.Waiting) }},
	{"pressure_level", "Highest cluster throttle pressure in the last tick.", "gauge", func(st Stats) float64 { return float64(st.Pressure) }},
	{"owed_records", "Records owed to clients under the per-connection budget.", "gauge", func(st Stats) float64 { return float64(st.Owed) }},
	{"parallel_seconds", "Wall time of the parallel phase of the last tick.", "gauge", func(st Stats) float64 { return st.Parallel.Seconds() }},
	{"join_seconds", "Time of the serial join of the last tick.", "gauge", func(st Stats) float64 { return st.JoinTime.Seconds() }},
	{"speedup", "Summed unit time over parallel wall time in the last tick.", "gauge", Stats.Speedup},
	{"tick_rate_hertz", "Achieved tick rate over the last second.", "gauge", func(st Stats) float64 { return st.Second.TickRate }},
	{"work_avg_seconds", "Average work per tick over the last second.", "gauge", func(st Stats) float64 { return st.Second.WorkAvg.Seconds() }},
	{"work_p5_seconds", "5th percentile of work per tick over the last second.", "gauge", func(st Stats) float64 { return st.Second.WorkP5.Seconds() }},
	{"work_p95_seconds", "95th percentile of work per tick over the last second.", "gauge", func(st Stats) float64 { return st.Second.WorkP95.Seconds() }},
	{"over_budget_ratio", "Share of ticks over the tick period in the last second.", "gauge", func(st Stats) float64 { return st.Second.OverBudget }},
	{"players", "Connected sessions.", "gauge", func(st Stats) float64 { return float64(st.Second.Players) }},
	{"bytes_per_second", "Movement bytes sent per second over the last second.", "gauge", func(st Stats) float64 { return st.Second.BytesPerSecond }},
	{"admitting", "1 while new players are admitted, 0 while the server is busy.", "gauge", func(st Stats) float64 {
		if st.Second.Admitting || st.Second.Ticks == 0 {
			return 1
		}
		return 0
	}},
	{"busy_rejections_total", "Sessions turned away because the server was busy.", "counter", func(st Stats) float64 { return float64(st.BusyRejections) }},
	{"dropped_inputs_total", "Client updates dropped: out of turn, stale or over the rate limit.", "counter", func(st Stats) float64 {
		return float64(st.DroppedInputs + st.StaleInputs + st.RateLimited)
	}},
	{"rate_limited_total", "Client updates dropped by the rate limit.", "counter", func(st Stats) float64 { return float64(st.RateLimited) }},
	{"kicked_total", "Clients disconnected for flooding.", "counter", func(st Stats) float64 { return float64(st.Kicked) }},
	{"malformed_frames_total", "Frames that could not be decoded.", "counter", func(st Stats) float64 { return float64(st.Malformed) }},
	{"rejected_updates_total", "Updates rejected by validation.", "counter", func(st Stats) float64 { return float64(st.Rejected) }},
	{"nonfinite_transforms_total", "Transforms the game's systems left not finite (NaN, infinite), put back where the actor was last relayed.", "counter", func(st Stats) float64 { return float64(st.NonFinite) }},
	{"corrections_total", "Corrections sent to clients.", "counter", func(st Stats) float64 { return float64(st.CorrectionsSent) }},
	{"commands_total", "Commands of the game's own handed to its systems.", "counter", func(st Stats) float64 { return float64(st.Commands) }},
	{"events_sent_total", "Events of the game's own sent to clients.", "counter", func(st Stats) float64 { return float64(st.EventsSent) }},
	{"saves_total", "World saves written to disk.", "counter", func(st Stats) float64 { return float64(st.Saves.Written) }},
	{"save_failures_total", "World saves whose write failed.", "counter", func(st Stats) float64 { return float64(st.Saves.Failed) }},
	{"save_freeze_seconds", "Time the latest save paused the tick to copy the world.", "gauge", func(st Stats) float64 { return st.Saves.Freeze.Seconds() }},
	{"save_write_seconds", "Time the latest save written took in the background: encoding, checksums, writing, fsync.", "gauge", func(st Stats) float64 { return st.Saves.Write.Seconds() }},
	{"save_bytes", "Size of the latest save file written.", "gauge", func(st Stats) float64 { return float64(st.Saves.Bytes) }},
}

// writeMetrics writes the page: every series of metrics, then each
// system's times (Server.SystemTimes), labelled by system.
func (s *Server) writeMetrics(w *bufio.Writer) {
	p := promtext.New(w)
	st := s.Stats()
	for _, m := range metrics {
		p.Header("throng_"+m.name, m.help, m.kind)
		p.Sample("throng_"+m.name, m.read(st))
	}
	times := s.SystemTimes(nil)
	p.Header("throng_system_serial_seconds",
		"Time per tick a system spent on the tick goroutine (its run, or its Plan), averaged over the last second.", "gauge")
	for _, t := range times {
		p.Labelled("throng_system_serial_seconds", "system", t.Name, t.Serial.Seconds())
	}
	p.Header("throng_system_unit_seconds",
		"Time per tick spent in a system's units, summed over the goroutines that ran them, averaged over the last second.", "gauge")
	for _, t := range times {
		p.Labelled("throng_system_unit_seconds", "system", t.Name, t.Units.Seconds())
	}
}

// startMetrics listens on addr and serves /metrics for s.
func startMetrics(s *Server, addr string) (*metricsServer, error) {
	ln, err := stdnet.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", promtext.ContentType)
		w := bufio.NewWriter(rw)
		s.writeMetrics(w)
		w.Flush()
	})
	m := &metricsServer{listener: ln, http: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("throng: metrics listener stopped", "err", err)
		}
	}()
	return m, nil
}

// Addr returns the address the metrics listener is bound to.
func (m *metricsServer) Addr() string { return m.listener.Addr().String() }

func (m *metricsServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return m.http.Shutdown(ctx)
}
