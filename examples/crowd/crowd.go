package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/examples/crowd/viewer"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// busyRetryFor is how long an in-process bot told "server busy" keeps
// dialing again, once a second, as a player would.
const busyRetryFor = 30 * time.Second

// dialConcurrency is how many dials the bots have in flight on transport.
// A WebSocket dial is a TCP connection and an HTTP upgrade, cheap enough
// for a crowd arriving together to dial at once, as players would. A QUIC
// dial is a TLS handshake (after a Retry) in the bots and in the server,
// one process on the same cores: with dozens in flight on a full machine,
// some starve past their timeout, and a bot that never got in is a
// harness's failure, not the server's; sixteen at a time each finish.
func dialConcurrency(transport string) int {
	if transport == transportWS {
		return 256
	}
	return 16
}

// botSide is the in-process bots, on either transport.
type botSide interface {
	Totals() fleet.Totals
	Close() error
}

// runCrowd starts the server and the bots, ticks until ctx is done, and
// writes the start line, the per-second lines and the summary to out; with
// a save directory it then saves the world once more and writes the line
// msg=saved. It returns once the bots and the server are closed.
func runCrowd(ctx context.Context, cfg config, out io.Writer) error {
	pop, err := scenario.New(cfg.scenario, cfg.players, cfg.seed)
	if err != nil {
		return fmt.Errorf("crowd: %w", err)
	}
	log := newLogger(out)
	srv, world, addr, err := newServer(cfg, pop, log)
	if err != nil {
		return err
	}
	nbots := cfg.bots
	if nbots < 0 {
		nbots = cfg.players
	}
	period := srv.Settings().TickPeriod()
	var (
		bots   botSide
		wg     sync.WaitGroup
		ticked = func() {}
	)
	if cfg.transport == transportMem {
		mc, err := newMemCrowd(srv.Mem(), pop, nbots, cfg.seed)
		if err != nil {
			srv.Close()
			return fmt.Errorf("crowd: %w", err)
		}
		bots, ticked = mc, mc.ticked
		wg.Go(func() { mc.run(ctx, period) })
	} else {
		fl, err := fleet.Start(fleet.Config{
			Addr: addr, Population: pop, Seed: cfg.seed,
			Client:          client.Config{InsecureSkipVerify: true},
			RetryBusyFor:    busyRetryFor,
			DialConcurrency: dialConcurrency(cfg.transport),
			WaveEvery:       waveEvery,
		})
		if err != nil {
			srv.Close()
			return fmt.Errorf("crowd: %w", err)
		}
		bots = fl
		wg.Go(func() {
			// Dials complete on the server's ticks, which start below.
			if err := fl.Grow(ctx, nbots).Err(); err != nil && ctx.Err() == nil {
				log.Warn("bots", "error", err)
			}
		})
	}
	logStart(log, cfg, pop, srv, world, addr, nbots)

	m := newMeter(log, srv, bots.Totals, nbots > 0, time.Now())
	m.plaza = world
	// The meter reads the bots' totals before they are kicked, so that it
	// does not wait on the step this tick starts.
	each := func(st systems.TickStats, work time.Duration) { m.tick(st, work); ticked() }
	if err := srv.RunTicks(ctx, each); err != nil {
		bots.Close()
		wg.Wait()
		srv.Close()
		return fmt.Errorf("crowd: %w", err)
	}
	m.summary(time.Now()) // before closing: the sessions are still there
	rep, saveErr := saveOnStop(srv)
	if rep != nil {
		log.Info("saved", "file", rep.Path, "tick", rep.Tick, "actors", rep.Actors, "players", rep.Players, "bytes", rep.Bytes,
			"freeze_ms", ms(rep.Freeze), "write_ms", ms(rep.Write))
	}
	bots.Close()
	wg.Wait()
	if err := srv.Close(); err != nil {
		return err
	}
	return saveErr
}

// saveOnStop saves the world once more as the run ends, as Server.Run
// does, when the settings name a save directory (-save or the -config
// file's persistence.dir): it waits for a periodic save still being
// written, saves, and waits for that save to be written. It returns a nil
// report without a directory. Call it once the ticks have stopped.
func saveOnStop(srv *throng.Server) (*throng.SaveReport, error) {
	if srv.Settings().Persistence.Dir == "" {
		return nil, nil
	}
	if last := srv.LastSave(); last != nil {
		last.Wait() // a failure is logged and counted; the save below decides
	}
	p, err := srv.Save("")
	if err != nil {
		return nil, fmt.Errorf("crowd: the save as the run ends: %w", err)
	}
	rep, err := p.Wait()
	if err != nil {
		return nil, fmt.Errorf("crowd: the save as the run ends: %w", err)
	}
	return &rep, nil
}

// newServer builds the server for cfg on its transport, admitting every
// token at pop's spawns, with the plaza's world on it for the plaza
// scenario (nil otherwise). On QUIC it returns the address it listens on,
// on WebSocket the URL clients dial.
func newServer(cfg config, pop scenario.Population, log *slog.Logger) (*throng.Server, *plaza.World, string, error) {
	opts := cfg.serverOptions()
	if pop.Name == "plaza" && opts.LoadFrom != "" {
		// The plaza spawns its props and NPCs afresh, and a save holds
		// them without their Bodies and Strolls: they would stand twice.
		return nil, nil, "", errors.New("crowd: the plaza scenario starts its world afresh; it cannot -load a save")
	}
	opts.Admit = pop.AdmitAny
	opts.Logger = log
	addr := ""
	switch cfg.transport {
	case transportQUIC:
		q, err := quic.Listen(cfg.addr, quic.Config{Development: true})
		if err != nil {
			return nil, nil, "", fmt.Errorf("crowd: %w", err)
		}
		opts.Transport, addr = q, q.Addr().String()
	case transportWS:
		// The viewer page shares the WebSocket's origin (see package viewer).
		ws, err := websocket.Listen(cfg.addr, websocket.Config{Pages: viewer.Handler()})
		if err != nil {
			return nil, nil, "", fmt.Errorf("crowd: %w", err)
		}
		opts.Transport, addr = ws, ws.URL()
	}
	srv, err := throng.New(opts)
	if err != nil {
		if opts.Transport != nil {
			opts.Transport.Close()
		}
		return nil, nil, "", fmt.Errorf("crowd: %w", err)
	}
	if err := srv.AddSystem(&greeter{srv: srv}, scheduler.After(systems.IngestName)); err != nil {
		srv.Close()
		return nil, nil, "", fmt.Errorf("crowd: %w", err)
	}
	if pop.Name != "plaza" {
		return srv, nil, addr, nil
	}
	world, err := plaza.Setup(srv, plaza.Config{Seed: cfg.seed})
	if err != nil {
		srv.Close()
		return nil, nil, "", fmt.Errorf("crowd: %w", err)
	}
	return srv, world, addr, nil
}

// serverOptions returns the settings file's options (the defaults without
// -config) with the flags of the command line over them: a flag given
// overrides the file, a flag left at its default does not.
func (c config) serverOptions() throng.Options {
	opts := c.options
	if c.set["hz"] || opts.TickRate == nil {
		opts.TickRate = new(c.hz)
	}
	par := &opts.Parallelism
	if c.set["inline"] {
		par.Enabled = new(!c.inline)
	}
	if c.set["workers"] {
		par.WorkerThreads = c.workers
	}
	if c.set["interest"] {
		par.InterestManagement = new(c.interest)
	}
	per := &opts.Persistence
	if c.set["save"] {
		per.Dir = c.saveDir
	}
	if c.set["save-every"] || per.EverySeconds == nil {
		per.EverySeconds = new(c.saveEvery.Seconds())
	}
	if c.set["load"] {
		opts.LoadFrom = c.loadFrom
	}
	if c.set["spectate"] {
		opts.Debug.Listen = c.spectate
	}
	return opts
}

// waveEvery is how often each in-process bot waves: sends the command
// "wave", a message of the game's own.
const waveEvery = time.Second

// greeter is the example's own game logic, a system of its own: every
// "wave" a player sends, it answers with the event "waved back" to that
// player (Server.Commands, Server.SendEvent).
type greeter struct{ srv *throng.Server }

func (g *greeter) Name() string             { return "greeter" }
func (g *greeter) Access() scheduler.Access { return scheduler.Uses() }
func (g *greeter) RunSerial(*scheduler.Tick) {
	for _, c := range g.srv.Commands() {
		if string(c.Payload) == "wave" {
			g.srv.SendEvent(c.Actor, wavedBack)
		}
	}
}

var wavedBack = []byte("waved back")

func logStart(log *slog.Logger, cfg config, pop scenario.Population, srv *throng.Server, world *plaza.World, addr string, nbots int) {
	settings := srv.Settings()
	mode := "parallel"
	if !settings.Parallelism.Enabled {
		mode = "inline"
	}
	attrs := []any{"scenario", pop.Name, "players", len(pop.Spawns), "bots", nbots, "transport", cfg.transport}
	if addr != "" {
		attrs = append(attrs, "addr", addr)
	}
	if cfg.transport == transportWS {
		attrs = append(attrs, "viewer", viewerURL(addr))
	}
	attrs = append(attrs, "hz", settings.TickRate, "mode", mode, "workers", settings.Parallelism.Workers(),
		"interest", settings.Parallelism.InterestManagement, "throttling", settings.Parallelism.AdaptiveThrottling, "gomaxprocs", runtime.GOMAXPROCS(0))
	if per := settings.Persistence; per.Dir != "" {
		attrs = append(attrs, "save", per.Dir, "save_every", per.Every)
	}
	if settings.LoadFrom != "" {
		attrs = append(attrs, "load", settings.LoadFrom)
	}
	if a := srv.DebugAddr(); a != nil {
		attrs = append(attrs, "spectator", "http://"+a.String()+"/")
	}
	if pop.Name == "town" {
		attrs = append(attrs, "hub_relay_share", fmt.Sprintf("%.1f%%", 100*pop.RelayWork().Share(scenario.RegionHub)))
	}
	if world != nil {
		attrs = append(attrs, "props", len(world.Props()), "npcs", len(world.NPCs()), "prop_radius", srv.Settings().Props.RadiusUnits)
	}
	log.Info("start", attrs...)
	if nbots == 0 {
		log.Info("waiting for bots", "run", fmt.Sprintf("go run ./examples/crowd/bots -addr %s -n %d -scenario %s", addr, len(pop.Spawns), pop.Name))
	}
}

// newLogger writes key=value lines to out, without time and level: the
// lines are for reading.
func newLogger(out io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{ReplaceAttr: dropTimeAndLevel}))
}

func dropTimeAndLevel(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
		return slog.Attr{}
	}
	return a
}

// viewerURL is the page a browser opens to watch the crowd: the
// WebSocket's URL with http and no path.
func viewerURL(wsURL string) string {
	u := strings.Replace(wsURL, "ws://", "http://", 1)
	if i := strings.Index(u[len("http://"):], "/"); i >= 0 {
		u = u[:len("http://")+i]
	}
	return u + "/"
}
