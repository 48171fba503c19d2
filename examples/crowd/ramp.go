package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/systems"
)

// heldShare is the share of the target tick rate a step must achieve to
// count as held.
const heldShare = 0.95

// rampStep is one row of the load test: what a number of bots cost.
type rampStep struct {
	bots    int           // asked for
	players int           // the server's sessions at the end of the hold
	missing int           // bots asked for but not connected at the end
	why     string        // why some are missing: the first refusal or failure
	retries int           // dials made again after "server busy" while joining
	hz      float64       // achieved tick rate over the hold
	p95     time.Duration // of the tick's work over the hold
	out     float64       // bytes handed to the transport a second
	perBot  float64       // movement records each bot received a second
	cpu     float64       // process CPU, % of one core; -1 unknown
	tick    float64       // the tick's own share of cpu (see runRamp); -1 unknown
}

// held reports whether the step kept at least heldShare of the target rate
// with every bot in.
func (s rampStep) held(target int) bool {
	return s.missing == 0 && s.hz >= heldShare*float64(target)
}

// largestHeld returns the most bots of a held step, 0 if none was.
func largestHeld(steps []rampStep, target int) int {
	most := 0
	for _, s := range steps {
		if s.held(target) {
			most = max(most, s.bots)
		}
	}
	return most
}

const rampColumns = "%6s %8s %6s %7s %11s %10s %6s %6s %7s  %s\n"

func writeRampHeader(w io.Writer, cfg config, hz int) {
	fmt.Fprintf(w, "ramp: %s over %s, target %d Hz, held = at least %.1f Hz (%.0f%%) with every bot in; each step: %v settle, %v measured; gomaxprocs %d\n",
		cfg.scenario, cfg.transport, hz, heldShare*float64(hz), 100*heldShare, cfg.settle, cfg.hold, runtime.GOMAXPROCS(0))
	stacks := map[string]string{transportQUIC: "both QUIC stacks", transportWS: "both WebSocket stacks", transportMem: "the in-memory handoff"}[cfg.transport]
	fmt.Fprintf(w, "cpu%% is this process (server and bots together) in %% of one core; tick%% the server tick's share of it, other%% the rest (bots, %s, runtime)\n", stacks)
	fmt.Fprintf(w, rampColumns, "bots", "players", "hz", "p95_ms", "out/s", "upd/bot/s", "cpu%", "tick%", "other%", "held")
}

func writeRampRow(w io.Writer, s rampStep, target int) {
	held := "yes"
	switch {
	case s.missing > 0:
		held = fmt.Sprintf("no: %d not in (%s)", s.missing, s.why)
	case !s.held(target):
		held = "no"
	}
	if s.retries > 0 {
		held += fmt.Sprintf(" (%d dials again after busy)", s.retries)
	}
	other := -1.0
	if s.cpu >= 0 && s.tick >= 0 {
		other = max(s.cpu-s.tick, 0)
	}
	fmt.Fprintf(w, rampColumns,
		fmt.Sprint(s.bots), fmt.Sprint(s.players), fmt.Sprintf("%.1f", s.hz),
		fmt.Sprintf("%.2f", ms(s.p95)), rate(s.out), fmt.Sprintf("%.1f", s.perBot),
		percent(s.cpu), percent(s.tick), percent(other), held)
}

func writeRampEnd(w io.Writer, steps []rampStep, target int) {
	if most := largestHeld(steps, target); most > 0 {
		fmt.Fprintf(w, "largest step held at >= %.0f%% of %d Hz: %d bots\n", 100*heldShare, target, most)
		return
	}
	fmt.Fprintf(w, "no step held at >= %.0f%% of %d Hz\n", 100*heldShare, target)
}

func percent(p float64) string {
	if p < 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f", p)
}

// runRamp is the load test: a server ticking at its rate on its own
// goroutine and in-process bots on cfg's transport (QUIC or WebSocket
// fleets, or the in-memory crowd: the server's whole session path without
// a network stack), grown step by step. Each
// step connects the new bots, waits cfg.settle, measures cfg.hold and
// prints a row; the ramp stops after the first step not held, or when ctx
// ends.
//
// The CPU figures come from getrusage over the hold: cpu is the whole
// process. tick estimates the server tick's own part: each tick's serial
// time plus the summed wall time of its parallel work units (a unit that
// waits for a core counts the wait too), so it is an upper bound of the
// tick's CPU; the server's QUIC transport (encryption, sockets, writer
// goroutines) is not in it and lands in "other" with the bots.
func runRamp(ctx context.Context, cfg config, out io.Writer) error {
	largest := cfg.ramp[len(cfg.ramp)-1]
	pop, err := scenario.New(cfg.scenario, largest, cfg.seed)
	if err != nil {
		return fmt.Errorf("crowd: %w", err)
	}
	pop = shuffled(pop, cfg.seed)
	srv, _, addr, err := newServer(cfg, pop, newLogger(out))
	if err != nil {
		return err
	}
	var (
		bots   rampBots
		wg     sync.WaitGroup
		ticked = func() {}
	)
	stepping, stopStepping := context.WithCancel(context.Background())
	defer stopStepping()
	if cfg.transport == transportMem {
		mc, err := newMemCrowd(srv.Mem(), pop, 0, cfg.seed)
		if err != nil {
			srv.Close()
			return fmt.Errorf("crowd: %w", err)
		}
		bots, ticked = mc, mc.ticked
		wg.Go(func() { mc.run(stepping, srv.Settings().TickPeriod()) })
	} else {
		fl, err := fleet.Start(fleet.Config{
			Addr: addr, Population: pop, Seed: cfg.seed,
			Client:          client.Config{InsecureSkipVerify: true},
			RetryBusyFor:    busyRetryFor,
			DialConcurrency: dialConcurrency(cfg.transport),
		})
		if err != nil {
			srv.Close()
			return fmt.Errorf("crowd: %w", err)
		}
		bots = fl
	}
	var rec recorder
	ticking, stopTicking := context.WithCancel(context.Background())
	each := func(st systems.TickStats, work time.Duration) { rec.add(st, work); ticked() }
	wg.Go(func() { _ = srv.RunTicks(ticking, each) }) // its one error, a bad schedule, cannot happen here: the crowd's systems are pinned soundly

	hz := srv.Settings().TickRate
	writeRampHeader(out, cfg, hz)
	var steps []rampStep
	for _, n := range cfg.ramp {
		g := bots.Grow(ctx, n)
		if !sleep(ctx, cfg.settle) || !joined(ctx, srv) {
			break
		}
		s, ok := measure(ctx, srv, bots, &rec, cfg.hold)
		if !ok {
			break
		}
		s.bots = n
		s.missing = max(n-bots.Totals().Active(), 0)
		s.why = whyMissing(g, bots.Totals())
		s.retries = g.BusyRetries
		writeRampRow(out, s, hz)
		steps = append(steps, s)
		if !s.held(hz) {
			break
		}
	}
	bots.Close()
	stopStepping()
	stopTicking()
	wg.Wait()
	err = srv.Close()
	writeRampEnd(out, steps, hz)
	return err
}

// joinWait is the longest the load test waits, after a step's settle, for
// the players still waiting their turn to join (admission.joinAppearsPerTick).
const joinWait = time.Minute

// joined waits until no player waits its turn to join, or joinWait has
// passed; false if ctx ended first.
func joined(ctx context.Context, srv *throng.Server) bool {
	for deadline := time.Now().Add(joinWait); srv.Stats().Waiting > 0 && time.Now().Before(deadline); {
		if !sleep(ctx, 100*time.Millisecond) {
			return false
		}
	}
	return true
}

// rampBots is the load test's bots: a QUIC or WebSocket fleet, or the
// in-memory crowd.
type rampBots interface {
	Grow(ctx context.Context, n int) fleet.Growth
	Totals() fleet.Totals
	Close() error
}

// whyMissing gives the first reason a bot is not in: refused, failed to
// connect, or lost since.
func whyMissing(g fleet.Growth, t fleet.Totals) string {
	switch {
	case g.Refusal != nil:
		return "refused: " + g.Refusal.Reason
	case g.Failure != nil:
		return g.Failure.Error()
	}
	return cmp.Or(t.Loss, t.Refusal, "?")
}

// measure watches the server and the bots for hold and returns the step's
// figures (bots, missing and why left to the caller); false if ctx ended
// first.
func measure(ctx context.Context, srv *throng.Server, fl rampBots, rec *recorder, hold time.Duration) (rampStep, bool) {
	bytesOut := func() uint64 {
		s := srv.Transport().Stats()
		return s.DatagramBytesOut + s.ReliableBytesOut
	}
	rec.take() // the settle's ticks
	began := time.Now()
	cpu0, cpuOK := fleet.ProcessCPU()
	bots0, out0 := fl.Totals(), bytesOut()
	if !sleep(ctx, hold) {
		return rampStep{}, false
	}
	t := rec.take()
	elapsed := time.Since(began)
	cpu1, _ := fleet.ProcessCPU()
	bots1, out1 := fl.Totals(), bytesOut()
	s := rampStep{
		players: int(transportCounts(srv.Transport().Stats()).sessions()),
		hz:      float64(t.ticks) / elapsed.Seconds(),
		p95:     t.work.quantile(0.95),
		out:     float64(out1-out0) / elapsed.Seconds(),
		perBot:  fleet.UpdatesPerBot(bots1.Records-bots0.Records, bots1.Active(), elapsed),
		cpu:     -1,
		tick:    -1,
	}
	if cpuOK {
		s.cpu = 100 * float64(cpu1-cpu0) / float64(elapsed)
		s.tick = 100 * float64(t.tickCPU) / float64(elapsed)
	}
	return s, true
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// shuffled returns p with its spawns in a random order fixed by seed, so
// that the first k of them are a fair sample of the whole (a town lists its
// hub first).
func shuffled(p scenario.Population, seed uint64) scenario.Population {
	spawns := slices.Clone(p.Spawns)
	rng := rand.New(rand.NewPCG(seed, 0x72616d70))
	rng.Shuffle(len(spawns), func(i, j int) { spawns[i], spawns[j] = spawns[j], spawns[i] })
	return scenario.Population{Name: p.Name, Spawns: spawns, Gait: p.Gait}
}

// recorder adds up ticks for the ramp: the tick goroutine adds, the ramp
// takes.
type recorder struct {
	mu sync.Mutex
	t  rampTally
}

// rampTally is what the ticks since the last take did.
type rampTally struct {
	ticks   int64
	work    histogram
	tickCPU time.Duration // serial time plus summed parallel unit time
}

func (r *recorder) add(st systems.TickStats, work time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t.ticks++
	r.t.work.add(work)
	r.t.tickCPU += max(work-st.Parallel, 0) + st.Busy
}

// take returns the tally so far and starts a new one.
func (r *recorder) take() rampTally {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.t
	r.t = rampTally{}
	return t
}
