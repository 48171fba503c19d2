package throng

import (
	"context"
	"errors"
	stdnet "net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsServer serves the server's figures in the Prometheus text format
// at /metrics on Settings.MetricsListen. It has its own registry (nothing
// process-global) and reads [Server.Stats], so scrapes never touch the tick.
type metricsServer struct {
	http     *http.Server
	listener stdnet.Listener
}

// systemCollector reports Server.SystemTimes, one series a system: the
// schedule, and so the label values, is known only once the first tick
// has built it.
type systemCollector struct {
	s             *Server
	serial, units *prometheus.Desc
}

func (c *systemCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.serial
	ch <- c.units
}

func (c *systemCollector) Collect(ch chan<- prometheus.Metric) {
	for _, w := range c.s.SystemTimes(nil) {
		ch <- prometheus.MustNewConstMetric(c.serial, prometheus.GaugeValue, w.Serial.Seconds(), w.Name)
		ch <- prometheus.MustNewConstMetric(c.units, prometheus.GaugeValue, w.Units.Seconds(), w.Name)
	}
}

// startMetrics listens on addr and serves /metrics for s.
func startMetrics(s *Server, addr string) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, read func(Stats) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "throng", Name: name, Help: help},
			func() float64 { return read(s.Stats()) }))
	}
	counter := func(name, help string, read func(Stats) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "throng", Name: name, Help: help},
			func() float64 { return read(s.Stats()) }))
	}
	gauge("tick", "Number of the last tick.", func(st Stats) float64 { return float64(st.Tick) })
	gauge("actors", "Actors in the world at the last tick.", func(st Stats) float64 { return float64(st.Actors) })
	gauge("clusters", "Clusters of occupied chunks at the last tick.", func(st Stats) float64 { return float64(st.Clusters) })
	gauge("biggest_cluster_actors", "Actors in the largest cluster.", func(st Stats) float64 { return float64(st.Biggest) })
	gauge("work_units", "Work units of the last tick.", func(st Stats) float64 { return float64(st.Units) })
	gauge("pooled_units", "Work units run on pool workers in the last tick.", func(st Stats) float64 { return float64(st.Pooled) })
	gauge("relays", "Movement records relayed in the last tick.", func(st Stats) float64 { return float64(st.Relays) })
	gauge("throttled", "Pairs held back by adaptive throttling in the last tick.", func(st Stats) float64 { return float64(st.Throttled) })
	gauge("joins_waiting", "Players whose Hello waits for its turn to join (admission.joinAppearsPerTick).", func(st Stats) float64 { return float64(st.Waiting) })
	gauge("pressure_level", "Highest cluster throttle pressure in the last tick.", func(st Stats) float64 { return float64(st.Pressure) })
	gauge("owed_records", "Records owed to clients under the per-connection budget.", func(st Stats) float64 { return float64(st.Owed) })
	gauge("parallel_seconds", "Wall time of the parallel phase of the last tick.", func(st Stats) float64 { return st.Parallel.Seconds() })
	gauge("join_seconds", "Time of the serial join of the last tick.", func(st Stats) float64 { return st.JoinTime.Seconds() })
	gauge("speedup", "Summed unit time over parallel wall time in the last tick.", Stats.Speedup)
	gauge("tick_rate_hertz", "Achieved tick rate over the last second.", func(st Stats) float64 { return st.Second.TickRate })
	gauge("work_avg_seconds", "Average work per tick over the last second.", func(st Stats) float64 { return st.Second.WorkAvg.Seconds() })
	gauge("work_p5_seconds", "5th percentile of work per tick over the last second.", func(st Stats) float64 { return st.Second.WorkP5.Seconds() })
	gauge("work_p95_seconds", "95th percentile of work per tick over the last second.", func(st Stats) float64 { return st.Second.WorkP95.Seconds() })
	gauge("over_budget_ratio", "Share of ticks over the tick period in the last second.", func(st Stats) float64 { return st.Second.OverBudget })
	gauge("players", "Connected sessions.", func(st Stats) float64 { return float64(st.Second.Players) })
	gauge("bytes_per_second", "Movement bytes sent per second over the last second.", func(st Stats) float64 { return st.Second.BytesPerSecond })
	gauge("admitting", "1 while new players are admitted, 0 while the server is busy.", func(st Stats) float64 {
		if st.Second.Admitting || st.Second.Ticks == 0 {
			return 1
		}
		return 0
	})
	counter("busy_rejections_total", "Sessions turned away because the server was busy.", func(st Stats) float64 { return float64(st.BusyRejections) })
	counter("dropped_inputs_total", "Client updates dropped: out of turn, stale or over the rate limit.", func(st Stats) float64 {
		return float64(st.DroppedInputs + st.StaleInputs + st.RateLimited)
	})
	counter("rate_limited_total", "Client updates dropped by the rate limit.", func(st Stats) float64 { return float64(st.RateLimited) })
	counter("kicked_total", "Clients disconnected for flooding.", func(st Stats) float64 { return float64(st.Kicked) })
	counter("malformed_frames_total", "Frames that could not be decoded.", func(st Stats) float64 { return float64(st.Malformed) })
	counter("rejected_updates_total", "Updates rejected by validation.", func(st Stats) float64 { return float64(st.Rejected) })
	counter("corrections_total", "Corrections sent to clients.", func(st Stats) float64 { return float64(st.CorrectionsSent) })
	counter("commands_total", "Commands of the game's own handed to its systems.", func(st Stats) float64 { return float64(st.Commands) })
	counter("events_sent_total", "Events of the game's own sent to clients.", func(st Stats) float64 { return float64(st.EventsSent) })
	reg.MustRegister(&systemCollector{s: s,
		serial: prometheus.NewDesc("throng_system_serial_seconds",
			"Time per tick a system spent on the tick goroutine (its run, or its Plan), averaged over the last second.",
			[]string{"system"}, nil),
		units: prometheus.NewDesc("throng_system_unit_seconds",
			"Time per tick spent in a system's units, summed over the goroutines that ran them, averaged over the last second.",
			[]string{"system"}, nil),
	})

	ln, err := stdnet.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
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
