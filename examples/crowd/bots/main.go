// Bots runs the crowd example's bots in a process of their own, as QUIC
// (or WebSocket) clients of a crowd server, so that server and bots can be
// watched (and their CPU use read) apart:
//
//	go run ./examples/crowd -bots 0 -addr 127.0.0.1:7777          # the server, until Ctrl-C
//	go run ./examples/crowd/bots -addr 127.0.0.1:7777 -n 500      # 500 bots, until Ctrl-C
//
// A server started with -transport ws prints its URL; give that as -addr
// (ws://127.0.0.1:7777/throng) and the bots connect over WebSockets.
//
// Bot k (from -first) says hello with the token -token-prefix k ("bot-17");
// the crowd server lets any token in (development mode) and places a token
// ending in N at spawn N of its population. The bots wander the -scenario
// built with -seed for -first+-n players, so with the server's -scenario
// and -seed (both default to square and 1) each bot wanders the part of
// the world it was placed in. Each bot sends at most 30 updates a second
// (10 standing still; 10 either way on the plaza), reads its movement
// batches and snaps to corrections. A bot told "server busy" dials again once a second for
// -retry-busy (30 s), as a player would. -insecure (the default) accepts
// the server's development certificate; -insecure=false verifies it
// against the system's roots.
//
// Once a second it prints one line:
//
//	bots         bots connected now
//	joined       bots welcomed so far
//	refused      bots the server turned away (the first reason follows at the end)
//	failed       dials that failed (no server, timeout)
//	lost         bots whose connection closed (server gone, kicked)
//	sent/s       updates all the bots sent in the second
//	upd/bot/s    movement records each bot received in the second
//	corrections  corrections received in the second
//	cpu          this process's CPU use, % of one core
//
// and a summary at the end. It runs for -duration (0: until Ctrl-C) and
// stops early, with an error, when no bot is connected any more.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/client"
)

// figuresHelp ends -h: what the figures of the lines mean.
const figuresHelp = `
Each second a line (key=value):
  bots         bots connected now
  joined       bots welcomed so far
  refused      bots the server turned away (the summary gives the first reason)
  failed       dials that failed (no server, timeout)
  lost         bots whose connection closed (server gone, kicked)
  sent/s       updates all the bots sent in the second
  upd/bot/s    movement records each bot received in the second
  corrections  corrections received in the second
  cpu          this process's CPU use, % of one core
`

// config is the command line.
type config struct {
	addr        string
	n           int
	first       int
	scenario    string
	seed        uint64
	duration    time.Duration
	insecure    bool
	tokenPrefix string
	drivers     int
	retryBusy   time.Duration
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bots", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./examples/crowd/bots -addr HOST:PORT|ws://HOST:PORT/PATH -n N [flags]")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), figuresHelp)
	}
	fs.StringVar(&c.addr, "addr", "127.0.0.1:7777", "the crowd server's address: host:port (QUIC, UDP), or the ws:// URL a -transport ws server prints")
	fs.IntVar(&c.n, "n", 100, "number of bots")
	fs.IntVar(&c.first, "first", 0, "number of the first bot, to share a server with other bot processes")
	fs.StringVar(&c.scenario, "scenario", "square", "where the bots wander: "+strings.Join(scenario.Names(), ", ")+"; match the server's")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the population and the bots; match the server's")
	fs.DurationVar(&c.duration, "duration", 0, "how long to run; 0 runs until Ctrl-C")
	fs.BoolVar(&c.insecure, "insecure", true, "accept any server certificate (a development server's self-signed one)")
	fs.StringVar(&c.tokenPrefix, "token-prefix", fleet.DefaultTokenPrefix, "start of every bot's token, followed by its number")
	fs.IntVar(&c.drivers, "drivers", 0, "goroutines stepping the bots; 0 = GOMAXPROCS")
	fs.DurationVar(&c.retryBusy, "retry-busy", 30*time.Second, `how long a bot told "server busy" keeps dialing again, once a second; 0 never`)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("bots: unexpected arguments %q", fs.Args())
	case c.addr == "":
		return config{}, errors.New("bots: -addr is empty; give the server's host:port or ws:// URL")
	case c.n < 1:
		return config{}, fmt.Errorf("bots: -n must be at least 1, got %d", c.n)
	case c.first < 0:
		return config{}, fmt.Errorf("bots: -first must not be negative, got %d", c.first)
	case c.duration < 0:
		return config{}, fmt.Errorf("bots: -duration must not be negative, got %v", c.duration)
	case c.tokenPrefix == "":
		return config{}, errors.New("bots: -token-prefix is empty")
	case c.drivers < 0:
		return config{}, fmt.Errorf("bots: -drivers must not be negative, got %d", c.drivers)
	case c.retryBusy < 0:
		return config{}, fmt.Errorf("bots: -retry-busy must not be negative, got %v", c.retryBusy)
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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

// run connects the bots and drives them until ctx is done or none is
// connected any more, printing a line a second and a summary to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	pop, err := scenario.New(cfg.scenario, cfg.first+cfg.n, cfg.seed)
	if err != nil {
		return fmt.Errorf("bots: %w", err)
	}
	fl, err := fleet.Start(fleet.Config{
		Addr: cfg.addr, Population: pop, Seed: cfg.seed, First: cfg.first,
		TokenPrefix: cfg.tokenPrefix, Drivers: cfg.drivers, RetryBusyFor: cfg.retryBusy,
		Client: client.Config{InsecureSkipVerify: cfg.insecure},
	})
	if err != nil {
		return fmt.Errorf("bots: %w", err)
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{ReplaceAttr: dropTimeAndLevel}))
	log.Info("start", "addr", cfg.addr, "bots", cfg.n, "first", cfg.first, "scenario", pop.Name,
		"token", fmt.Sprintf("%s%d..%s%d", cfg.tokenPrefix, cfg.first, cfg.tokenPrefix, cfg.first+cfg.n-1))

	grown := make(chan fleet.Growth, 1)
	go func() { grown <- fl.Grow(ctx, cfg.n) }()
	began := time.Now()
	cpu0, _ := fleet.ProcessCPU()
	err = watch(ctx, fl, grown, log)
	fl.Close()
	elapsed := time.Since(began)
	t := fl.Totals()
	attrs := []any{
		"seconds", fleet.Round(elapsed.Seconds(), 1),
		"joined", t.Joined, "refused", t.Refused, "failed", t.Failed, "lost", t.Lost,
		"sent/s", fleet.Round(float64(t.MovesSent)/elapsed.Seconds(), 0),
		"upd/bot/s", fleet.UpdatesPerBot(t.Records, t.Joined, elapsed),
		"corrections", t.Corrections,
		"cpu", fleet.CPUPercent(cpu0, elapsed),
	}
	if t.BusyRetries > 0 {
		attrs = append(attrs, "busy_retries", t.BusyRetries)
	}
	if t.Refusal != "" {
		attrs = append(attrs, "refusal", t.Refusal)
	}
	if t.Loss != "" {
		attrs = append(attrs, "loss", t.Loss)
	}
	log.Info("summary", attrs...)
	return err
}

// watch prints a line a second until ctx is done (nil) or, once every dial
// has ended, no bot is connected (an error saying why).
func watch(ctx context.Context, fl *fleet.Fleet, grown <-chan fleet.Growth, log *slog.Logger) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, lastAt := fl.Totals(), time.Now()
	cpu, _ := fleet.ProcessCPU()
	dialing := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case g := <-grown:
			dialing = false
			if err := g.Err(); err != nil && ctx.Err() == nil {
				log.Warn("bots", "error", err)
			}
		case now := <-tick.C:
			t, d := fl.Totals(), now.Sub(lastAt)
			log.Info("second",
				"bots", t.Active(), "joined", t.Joined, "refused", t.Refused, "failed", t.Failed, "lost", t.Lost,
				"sent/s", fleet.Round(float64(t.MovesSent-last.MovesSent)/d.Seconds(), 0),
				"upd/bot/s", fleet.UpdatesPerBot(t.Records-last.Records, t.Active(), d),
				"corrections", t.Corrections-last.Corrections,
				"cpu", fleet.CPUPercent(cpu, d),
			)
			last, lastAt = t, now
			cpu, _ = fleet.ProcessCPU()
		}
		if t := fl.Totals(); !dialing && t.Active() == 0 {
			return fmt.Errorf("bots: no bot is connected any more (%d joined, %d refused, %d failed, %d lost): %s",
				t.Joined, t.Refused, t.Failed, t.Lost, cmp.Or(t.Loss, t.Refusal, "every dial failed"))
		}
	}
}

func dropTimeAndLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}
