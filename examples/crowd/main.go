// Crowd runs a Throng server with in-process bots on the in-memory
// transport and prints what the tick does, once a second:
//
//	go run ./examples/crowd                                  # 400 bots on one square, 10 s
//	go run ./examples/crowd -scenario town -players 1000 -duration 0   # until Ctrl-C
//
// Scenarios (see package scenario): square (everyone on one 4096 x 4096
// chunk), town (a hub with about 70% of the relay work, two towns, two
// interiors, travellers) and world (spread over 64 x 64 chunks). Bots
// wander, stop and turn, and send at most 30 updates a second (10 standing
// still). The server ticks on this goroutine; the bots run on another.
//
// Every second it prints one line: tick, achieved tick rate, actors,
// clusters, the biggest cluster, work units, relays per tick, bytes sent per
// second, corrections, and the tick's work (average and p95, in ms). At the
// end it prints a summary of the whole run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/systems"
)

// config is the command line.
type config struct {
	scenario string
	players  int
	hz       int
	duration time.Duration
	workers  int
	inline   bool
	interest bool
	seed     uint64
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("crowd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.scenario, "scenario", "square", "population: "+strings.Join(scenario.Names(), ", "))
	fs.IntVar(&c.players, "players", 400, "number of bots")
	fs.IntVar(&c.hz, "hz", 30, "tick rate, 1 to 240")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run; 0 runs until Ctrl-C")
	fs.IntVar(&c.workers, "workers", 0, "worker threads for the parallel phases; 0 = GOMAXPROCS")
	fs.BoolVar(&c.inline, "inline", false, "run every phase on the tick goroutine (parallelism off)")
	fs.BoolVar(&c.interest, "interest", true, "interest management: far pairs get fewer updates")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the population and the bots")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("crowd: unexpected arguments %q", fs.Args())
	}
	switch {
	case c.players < 1:
		return config{}, fmt.Errorf("crowd: -players must be at least 1, got %d", c.players)
	case c.duration < 0:
		return config{}, fmt.Errorf("crowd: -duration must not be negative, got %v", c.duration)
	case c.workers < 0:
		return config{}, fmt.Errorf("crowd: -workers must not be negative, got %d", c.workers)
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run starts the server and the bots, ticks until ctx is done, and writes
// the per-second lines and the summary to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	pop, err := scenario.New(cfg.scenario, cfg.players, cfg.seed)
	if err != nil {
		return fmt.Errorf("crowd: %w", err)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{ReplaceAttr: dropTimeAndLevel}))
	srv, err := throng.New(throng.Options{
		TickRate: new(cfg.hz),
		Parallelism: throng.Parallelism{
			Enabled:            new(!cfg.inline),
			WorkerThreads:      cfg.workers,
			InterestManagement: new(cfg.interest),
		},
		Admit:  pop.Admit,
		Logger: log,
	})
	if err != nil {
		return fmt.Errorf("crowd: %w", err)
	}
	bots, err := newCrowd(srv.Mem(), pop, cfg.seed)
	if err != nil {
		srv.Close()
		return fmt.Errorf("crowd: %w", err)
	}
	settings := srv.Settings()
	mode := "parallel"
	if cfg.inline {
		mode = "inline"
	}
	start := []any{
		"scenario", pop.Name, "players", len(pop.Spawns), "hz", settings.TickRate,
		"mode", mode, "workers", settings.Parallelism.Workers(), "interest", cfg.interest,
		"gomaxprocs", runtime.GOMAXPROCS(0),
	}
	if pop.Name == "town" {
		start = append(start, "hub_relay_share", fmt.Sprintf("%.1f%%", 100*pop.RelayWork().Share(scenario.RegionHub)))
	}
	log.Info("start", start...)

	period := settings.TickPeriod()
	var wg sync.WaitGroup
	wg.Go(func() { bots.run(ctx, period) })
	m := newMeter(log, srv.Transport(), time.Now())
	tickLoop(ctx, srv, period, m.tick)
	wg.Wait()
	err = srv.Close()
	m.summary(time.Now(), bots)
	return err
}

// tickLoop ticks srv on a fixed grid (start + n*period) until ctx is done,
// timing each tick; like Server.Run, a late tick delays the next one but
// not the grid, and slots more than a tick late are skipped.
func tickLoop(ctx context.Context, srv *throng.Server, period time.Duration, after func(systems.TickStats, time.Duration)) {
	next := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		began := time.Now()
		st := srv.Tick()
		after(st, time.Since(began))
		next = next.Add(period)
		if now := time.Now(); now.After(next) {
			next = next.Add(now.Sub(next) / period * period)
		}
		timer.Reset(time.Until(next))
	}
}

func dropTimeAndLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}
