package throng_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// slowdown is a user system that makes every tick take at least delay
// while it is on: load injected the way a heavy game system would.
type slowdown struct{ delay atomic.Int64 }

func (s *slowdown) Name() string             { return "slowdown" }
func (s *slowdown) Access() scheduler.Access { return scheduler.Uses() }
func (s *slowdown) RunSerial(*scheduler.Tick) {
	if d := time.Duration(s.delay.Load()); d > 0 {
		time.Sleep(d)
	}
}

func TestBusyServerTurnsNewPlayersAwayAndKeepsItsOwn(t *testing.T) {
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 200, Y: 100}, {X: 300, Y: 100}}
	opts := throng.Options{TickRate: new(30)}
	load := &slowdown{}
	st := newStageWith(t, opts, spawns[:2], func(srv *throng.Server) {
		require.NoError(t, srv.AddSystem(load, scheduler.After(systems.JoinName)))
	})
	load.delay.Store(int64(40 * time.Millisecond)) // over 90% of the 33.3 ms tick
	for k := range 31 {
		st.move(0, 100, 100+float32(k), 0)
		st.move(1, 200, 100+float32(k), 0)
		tick := st.tick()
		require.Len(t, st.senders(0, tick), 1, "players already in keep receiving while the server is loaded")
		require.Zero(t, st.srv.Stats().Pressure, "tick %d: no pressure for a cost throttling cannot shed (a game system's)", tick)
	}
	require.False(t, st.srv.Stats().Second.Admitting, "a second of slow ticks closes admission")

	late := st.srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p1")}) // spawns beside player 1
	require.NoError(t, err)
	require.NoError(t, late.Send(hello))
	st.tick()
	var refused wire.Refuse
	late.DrainReliable(func(f []byte) {
		if r, err := wire.DecodeRefuse(f); err == nil {
			refused = r
		}
	})
	assert.Equal(t, wire.RefuseBusy, refused.Code)
	assert.Equal(t, systems.BusyReason, string(refused.Reason))
	assert.EqualValues(t, 1, st.srv.Stats().BusyRejections)

	load.delay.Store(0)
	for k := 0; k < 90 && !st.srv.Stats().Second.Admitting; k++ {
		st.tick() // the second still holding slow ticks must pass first
	}
	require.True(t, st.srv.Stats().Second.Admitting, "admission reopens when the load falls")
	again := st.srv.Mem().Dial()
	require.NoError(t, again.Send(hello))
	st.tick()
	var welcomed bool
	again.DrainReliable(func(f []byte) {
		if _, err := wire.DecodeWelcome(f); err == nil {
			welcomed = true
		}
	})
	assert.True(t, welcomed, "a join succeeds once the load has dropped")
}

func TestClientRateLimits(t *testing.T) {
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 200, Y: 100}, {X: 300, Y: 100}, {X: 400, Y: 100}}
	st := newStage(t, throng.Options{TickRate: new(30)}, spawns)
	steady, eager, still, flooder := 0, 1, 2, 3
	heardSteady := 0
	for k := range 90 { // three seconds at 30 Hz
		x := float32(k)
		st.move(steady, 100+x, 100, 0) // 30/s moving: at the limit
		st.move(eager, 200+x, 100, 0)  // 100/s moving: 70/s too many
		st.move(eager, 200+x+0.3, 100, 0)
		if k%3 != 0 {
			st.move(eager, 200+x+0.6, 100, 0)
		}
		st.move(still, 300, 100, 0) // 30/s standing still: 20/s too many
		for j := range 40 {         // 1200/s: a flood
			p := st.players[flooder]
			p.seq++
			_ = p.client.Send(wire.AppendMove(nil, wire.Move{Seq: p.seq, X: 400 + x + float32(j)/100, Y: 100})) // fails once kicked
		}
		tick := st.tick()
		heardSteady += st.senders(eager, tick)[st.players[steady].actor]
	}
	stats := st.srv.Stats()
	assert.Equal(t, 90, heardSteady, "a client at 30 updates a second loses nothing")
	reason, kicked := st.players[flooder].client.CloseReason()
	assert.True(t, kicked, "the flooder is disconnected")
	assert.Contains(t, reason, "flooding")
	assert.EqualValues(t, 1, stats.Kicked)
	// What the limits let through in 3 s: 30/s moving plus half a second of
	// burst (105), 10/s standing plus burst (35). Eager sent 240 and loses
	// 135; still sent 90 and loses about 55; the flooder sent 2400 in the
	// two seconds before its kick and loses all but about 75 of them.
	assert.InDelta(t, 135+55+2325, int(stats.RateLimited), 10)
}

// TestAClientOverItsLimitMovesToItsLatestUpdate: a client sending three
// updates a tick (90 a second against a limit of 30) has two of them
// dropped every tick once its burst is spent, and the one the server keeps
// is the newest, so the others see where it is now, not where it was a
// frame or two ago. The counts are those of the limit either way.
func TestAClientOverItsLimitMovesToItsLatestUpdate(t *testing.T) {
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 200, Y: 100}}
	st := newStage(t, throng.Options{TickRate: new(30)}, spawns)
	eager, watcher := 0, 1
	for k := range 60 {
		x := 100 + float32(k)*3
		st.move(eager, x, 100, 0)
		st.move(eager, x+1, 100, 0)
		st.move(eager, x+2, 100, 0) // the newest of the tick
		st.move(watcher, 200, 100+float32(k), 0)
		tick := st.tick()
		if k < 30 { // half a second of burst and its aftermath
			continue
		}
		var seen []float32
		for _, r := range st.players[watcher].got[tick] {
			if r.Actor == st.players[eager].actor {
				seen = append(seen, r.X)
			}
		}
		require.Equal(t, []float32{x + 2}, seen, "tick %d: the watcher sees the eager client's latest update", tick)
	}
	assert.InDelta(t, 60*3-60-15, int(st.srv.Stats().RateLimited), 3, "the limit lets one a tick through, plus half a second of burst")
}

func TestMetricsLineCarriesEveryFieldConsistentWithTheTick(t *testing.T) {
	var logs bytes.Buffer
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 200, Y: 100}, {X: 300, Y: 200}, {X: 5000, Y: 100}}
	opts := parallel(2, 2, true)
	opts.TickRate = new(30)
	opts.Parallelism.MetricsLogIntervalTicks = 1
	opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st := newStage(t, opts, spawns)
	var tick int
	for k := range 30 {
		for i, s := range spawns {
			st.move(i, s.X+float32(k), s.Y, 0)
		}
		tick = st.tick()
	}
	received := 0
	for i := range st.players {
		received += len(st.players[i].got[tick])
	}
	var line, second string
	for _, l := range strings.Split(logs.String(), "\n") {
		switch {
		case strings.Contains(l, `msg="throng tick"`):
			line = l
		case strings.Contains(l, `msg="throng second"`):
			second = l
		}
	}
	for _, key := range []string{"tick", "actors", "clusters", "biggest", "units", "pooled", "relays",
		"throttled", "parallel_us", "join_us", "speedup"} {
		assert.Contains(t, line, " "+key+"=", "tick line lacks %s", key)
	}
	assert.Contains(t, line, fmt.Sprintf("tick=%d actors=4 clusters=1 biggest=4", tick))
	assert.Contains(t, line, fmt.Sprintf("relays=%d ", received), "relays equals the records the clients received")
	for _, key := range []string{"hz", "work_avg_ms", "work_p5_ms", "work_p95_ms", "over_budget", "players",
		"bytes_per_s", "busy_rejections", "dropped_inputs", "corrections"} {
		assert.Contains(t, second, " "+key+"=", "second line lacks %s", key)
	}
	assert.Contains(t, second, "players=4 ")
	sec := st.srv.Stats().Second
	assert.Equal(t, 30, sec.Ticks)
	assert.Positive(t, sec.TickRate)
	assert.LessOrEqual(t, sec.WorkP5, sec.WorkP95)
}

func TestPrometheusListenerServesTheFigures(t *testing.T) {
	opts := throng.Options{Metrics: throng.Metrics{Listen: "127.0.0.1:0"}}
	st := newStage(t, opts, []components.Transform{{X: 1, Y: 1}, {X: 2, Y: 2}})
	st.move(0, 3, 1, 0)
	st.tick()
	resp, err := http.Get("http://" + st.srv.MetricsAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(body)
	assert.Contains(t, text, "throng_actors 2")
	assert.Contains(t, text, "throng_relays 1")
	for _, name := range []string{"throng_tick_rate_hertz", "throng_work_p95_seconds", "throng_busy_rejections_total",
		"throng_dropped_inputs_total", "throng_bytes_per_second", "throng_players", "throng_commands_total", "throng_events_sent_total"} {
		assert.True(t, strings.Contains(text, "\n"+name+" "), "missing %s", name)
	}
	assert.Contains(t, text, "# TYPE throng_actors gauge\n")
	assert.Contains(t, text, "# TYPE throng_commands_total counter\n")
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	// Every line is a comment or a sample that Prometheus' text format reads.
	sample := regexp.MustCompile(`^throng_[a-z0-9_]+(\{system="[^"\\]*"\})? (NaN|[+-]Inf|-?[0-9.e+-]+)$`)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.HasPrefix(line, "# HELP ") && !strings.HasPrefix(line, "# TYPE ") {
			assert.Regexp(t, sample, line)
		}
	}

	// The saves' series are there, at 0, before any save.
	saves := []string{"throng_saves_total", "throng_save_failures_total", "throng_save_freeze_seconds",
		"throng_save_write_seconds", "throng_save_bytes"}
	for _, name := range saves {
		assert.Contains(t, text, "\n"+name+" 0\n", "%s before any save", name)
		assert.Contains(t, text, "# HELP "+name+" ")
	}
	assert.Contains(t, text, "# TYPE throng_saves_total counter\n")
	assert.Contains(t, text, "# TYPE throng_save_failures_total counter\n")
	assert.Contains(t, text, "# TYPE throng_save_freeze_seconds gauge\n")
	assert.Contains(t, text, "# TYPE throng_save_write_seconds gauge\n")
	assert.Contains(t, text, "# TYPE throng_save_bytes gauge\n")

	// A save written shows on the page once a tick has published it.
	p, err := st.srv.Save(t.TempDir())
	require.NoError(t, err)
	rep, err := p.Wait()
	require.NoError(t, err)
	st.tick() // the save is counted once Wait returns; a tick publishes it
	resp, err = http.Get("http://" + st.srv.MetricsAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	text = string(body)
	assert.Contains(t, text, "\nthrong_saves_total 1\n")
	assert.Contains(t, text, "\nthrong_save_failures_total 0\n")
	assert.Contains(t, text, fmt.Sprintf("\nthrong_save_bytes %v\n", float64(rep.Bytes)))
	for _, name := range []string{"throng_save_freeze_seconds", "throng_save_write_seconds"} {
		var seconds float64
		for line := range strings.Lines(text) {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				_, err := fmt.Sscan(v, &seconds)
				require.NoError(t, err)
			}
		}
		assert.Positive(t, seconds, "%s: the latest save's", name)
	}
}

func TestSystemTimesSayWhatEachSystemTook(t *testing.T) {
	opts := throng.Options{TickRate: new(30), Metrics: throng.Metrics{Listen: "127.0.0.1:0"}}
	load := &slowdown{}
	st := newStageWith(t, opts, []components.Transform{{X: 1, Y: 1}, {X: 2, Y: 2}}, func(srv *throng.Server) {
		require.NoError(t, srv.AddSystem(load, scheduler.After(systems.JoinName)))
	})
	assert.Empty(t, st.srv.SystemTimes(nil), "nothing before a second is complete")
	load.delay.Store(int64(2 * time.Millisecond))
	for k := range 30 { // a second at 30 Hz, the welcome tick's included
		st.move(0, 1, 1+float32(k)/10, 0)
		st.tick()
	}
	times := st.srv.SystemTimes(nil)
	var names []string
	for _, w := range times {
		names = append(names, w.Name)
	}
	require.Equal(t, []string{systems.IngestName, systems.PrepareName, systems.MoveName, systems.RelayName, systems.JoinName, "slowdown"}, names)
	slow := times[5]
	assert.GreaterOrEqual(t, slow.Serial, time.Millisecond, "29 ticks of 2 ms and one of none, per tick")
	assert.Zero(t, slow.Units, "alone in its stage, it runs on the tick goroutine")
	assert.LessOrEqual(t, slow.Serial, st.srv.Stats().Second.WorkAvg, "a part of the same second's average tick")

	resp, err := http.Get("http://" + st.srv.MetricsAddr() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var seconds float64
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, `throng_system_serial_seconds{system="slowdown"} `); ok {
			_, err := fmt.Sscan(v, &seconds)
			require.NoError(t, err)
		}
	}
	assert.GreaterOrEqual(t, seconds, 0.001, "the same figure at /metrics")
	assert.Contains(t, string(body), `throng_system_unit_seconds{system="relay"} `)
}
