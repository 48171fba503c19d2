// Crowd runs a Throng server on QUIC with bots that connect to it as real
// QUIC clients, and prints what the server and the bots see, once a
// second:
//
//	go run ./examples/crowd                                  # 400 bots on one square, 10 s
//	go run ./examples/crowd -scenario town -players 1000 -duration 0   # until Ctrl-C
//	go run ./examples/crowd -transport mem                   # in-memory transport, no network
//	go run ./examples/crowd -transport ws                    # WebSockets, and a page to watch in a browser
//
// The server listens on 127.0.0.1 (-addr; port 0 picks a free one) in
// development mode: a self-signed certificate made at start, and every
// token let in (scenario.Population.AdmitAny), "bot-N" at spawn N of the
// population. The bots run in this process, a few goroutines stepping them
// (package fleet); each is a client.Client that wanders its part of the
// scenario (package scenario), sends at most 30 updates a second (10
// standing still; 10 either way on the plaza), reads its batches and snaps
// to corrections.
//
// -scenario plaza is the crowded worst case: players wandering and
// jumping around a plaza of 5,000 props that they push about, with 200
// NPCs among them that follow the players (package plaza, whose systems
// run on this server).
//
// With -transport ws the server speaks WebSockets (websocket.Transport, what
// browsers use; the bots dial it with client.DialWebSocket) and serves, beside
// the socket, a page that joins the crowd and draws it (package viewer):
// the start line gives its address as viewer=http://... .
//
// # Bots in a process of their own
//
//	go run ./examples/crowd -bots 0 -addr 127.0.0.1:7777     # serves until Ctrl-C
//	go run ./examples/crowd/bots -addr 127.0.0.1:7777 -n 500
//
// -bots 0 starts no bots and serves until Ctrl-C (unless -duration says
// otherwise); -players is then the population the bots are placed on.
//
// # The per-second line
//
// Once a second (after the tick that ends it, so an overloaded server's
// lines come as its ticks do) a line gives the server's figures over that
// second, from its own counters (systems.TickStats, the definitions
// throng.Stats.Second uses), then the bots' figures and the CPU:
//
//	hz               achieved tick rate
//	work_ms, p95_ms  time per tick, average and 95th percentile
//	players          clients connected now
//	actors clusters biggest units
//	                 the last tick's crowd and how it was cut into work units
//	relays/tick      movement records relayed, averaged over the second
//	throttled/tick   far pairs held back by adaptive throttling; 0 under the
//	                 per-connection budget (the default), where pressure
//	                 sends each client fewer records instead (relays/tick
//	                 falls)
//	pressure         highest throttle pressure of a cluster in the second
//	owed             records cut by the per-connection budget, owed to a later tick
//	waiting          players whose Hello waits for its turn to join (at most
//	                 admission.joinAppearsPerTick)
//	out              movement bytes handed to the transport a second
//	all_out          every byte handed to the transport a second: movement
//	                 and the reliable frames (appears, props, corrections)
//	busy_rejections  new players turned away as "server busy"
//	dropped_inputs   updates not applied: over the rate limit, stale, or early
//	corrections      corrections sent
//	prop_changes     with -scenario plaza: prop changes the plaza's physics
//	                 made (pushes, slides told, props come to rest), each
//	                 a World.Update or Nudge (package plaza)
//	prop_changes_told
//	                 with -scenario plaza: prop changes the server's joins
//	                 told (systems.TickStats.PropUpdates): the plaza's
//	                 changes of each tick are told in the next, so the
//	                 summary's is the plaza's less the last tick's, and
//	                 none is lost
//	props_sent       with -scenario plaza: Prop frames the server sent,
//	                 each change to every player within the prop radius
//	                 (80 m), and every prop that came into a player's sight
//	saves            saves written so far (shown once a save has begun)
//	save_freeze_ms   how long the latest save paused the tick goroutine to
//	                 copy the world
//	save_write_ms    how long the latest save took to write, in the
//	                 background while the world ticked on
//	save_bytes       the latest save file's size
//	bots             in-process bots connected
//	bot_upd/s        movement records (updates about the others) each bot
//	                 received a second
//	bot_corrections  corrections the bots received
//	cpu              this process's CPU use over the second, % of one core:
//	                 server and in-process bots together (200 is both cores
//	                 of a 2-core machine)
//
// At the end a summary covers the whole run (p99_ms and max_ms besides the
// seconds' figures; prop_changes and props_sent totalled with the plaza;
// with saves, save_freeze_ms,
// save_write_ms and save_bytes as the last tick saw them, once a save has begun), and
// says what each system of the tick took over its last second (ingest_ms,
// prepare_ms, move_ms, relay_ms, join_ms, greeter_ms: a tick's time in the
// system, on the tick goroutine and in its units summed over the cores
// that ran them; throng.Server's SystemTimes).
//
// The example has a little game logic of its own, to show how a game
// talks to its players: every in-process bot waves once a second (the
// command "wave", client.Client.SendCommand), and a system of the example's,
// the greeter, answers each wave with the event "waved back"
// (Server.Commands, Server.SendEvent). The summary counts them: commands
// (received by the server), bot_waves and bot_events (sent and received
// by the bots).
//
// # Saves
//
//	go run ./examples/crowd -save /tmp/crowd -save-every 5s
//	go run ./examples/crowd -load /tmp/crowd
//
// -save saves the world into a directory (throng's persistence section)
// every -save-every (10 s) while the server ticks, and once more as the
// run ends, after the summary (the line msg=saved). -spectate
// 127.0.0.1:7778 opens the server's spectator window there: a page that
// shows the whole world (chunks, clusters, work units, each chunk's relay
// cost, a watched player's interest) with live charts, pause and step. -load starts the world
// from the latest save of a directory, or from a save file (throng's
// loadFrom). A save keeps the actors without a client, the game's props
// and NPCs; players' actors are not kept, so a save of this example's
// crowd, all players, holds no actors. The flags override the -config
// file's persistence.dir, persistence.everySeconds and loadFrom (the
// plaza, which spawns its world afresh, refuses -load). The load
// test (-ramp) saves every -save-every too, but not as it ends.
//
// # Load test
//
//	go run ./examples/crowd -ramp 50,100,200,400,800 -hold 5s
//
// -ramp steps the number of in-process bots up against the server at -hz
// (30), on -transport (QUIC by default; mem runs the server's whole
// session path with bots that decode what they receive, without a network
// stack): at each step it connects the new bots, waits -settle
// (1 s) for the joins to pass, measures over -hold, and prints one row:
//
//	bots       bots asked for at this step
//	players    clients connected at the end of the hold
//	hz         achieved tick rate over the hold
//	p95_ms     95th percentile of the tick's work
//	out/s      bytes handed to the transport a second (movement and reliable
//	           frames, before QUIC's headers and encryption)
//	upd/bot/s  movement records each bot received a second
//	cpu%       this process's CPU (getrusage) over the hold, % of one core:
//	           server and bots together, they share the process
//	tick%      estimate of the server tick's own share: serial time plus the
//	           summed time of its parallel work units, over wall time; it
//	           leaves out both sides' QUIC stacks (encryption, sockets)
//	other%     cpu% - tick%: the bots, both QUIC stacks, the Go runtime
//	held       yes when hz >= 95% of -hz and every bot was let in; bots
//	           told "server busy" while joining dial again once a second
//	           for up to 30 s, as players would, and the row counts those
//	           dials
//
// It stops after the first step not held, and ends with the largest step
// held. The ramp ignores -players, -bots and -duration; the population is
// built for the largest step and shuffled, so any first k bots are a fair
// sample of the scenario.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/scenario"
)

// figuresHelp ends -h: what the figures mean (the package documentation
// says the same at more length).
const figuresHelp = `
Each second a line (key=value) gives the server's figures over the second:
  hz               achieved tick rate
  work_ms p95_ms   time per tick, average and 95th percentile
  players          clients connected now
  actors clusters biggest units   the last tick's crowd and its work units
  relays/tick      movement records relayed, per tick
  throttled/tick   far pairs held back by adaptive throttling (0 under the
                   per-connection budget: pressure lowers relays/tick instead)
  pressure         highest throttle pressure of a cluster
  owed             records cut by the per-connection budget, owed to a later tick
  waiting          players waiting their turn to join (admission.joinAppearsPerTick)
  out              movement bytes handed to the transport a second
  all_out          every byte handed to the transport a second: movement and
                   the reliable frames (appears, props, corrections)
  busy_rejections  new players turned away as "server busy"
  dropped_inputs   updates not applied: over the rate limit, stale, or early
  corrections      corrections sent
  prop_changes     -scenario plaza: prop changes the plaza's physics made
                   (pushes, slides told, props come to rest)
  prop_changes_told  -scenario plaza: prop changes the server told, each
                   in the tick after the plaza made it
  props_sent       -scenario plaza: Prop frames sent (each change to every
                   player within the prop radius, props coming into sight)
  saves            saves written so far (-save; shown once a save has begun)
  save_freeze_ms   how long the latest save paused the tick to copy the world
  save_write_ms    how long the latest save took to write in the background
  save_bytes       the latest save file's size
  bots             in-process bots connected
  bot_upd/s        movement records each bot received a second
  bot_corrections  corrections the bots received
  cpu              this process's CPU, % of one core (server and bots together)
The load test (-ramp) prints a row a step, measured over -hold:
  bots players     bots asked for; clients connected at the end
  hz p95_ms        achieved tick rate; 95th percentile of the tick's work
  out/s            bytes handed to the transport a second
  upd/bot/s        movement records each bot received a second
  cpu% tick% other%  process CPU (% of one core); the server tick's estimated
                   share (serial time + summed parallel unit time, no QUIC);
                   the rest: bots, both QUIC stacks, runtime
  held             yes when hz >= 95% of -hz with every bot in (bots told
                   "server busy" dial again once a second, up to 30 s)
It stops after the first step not held and prints the largest step held.
`

// config is the command line.
type config struct {
	scenario  string
	players   int
	bots      int // in-process bots; -1 means players
	transport string
	addr      string
	hz        int
	duration  time.Duration
	workers   int
	inline    bool
	interest  bool
	seed      uint64

	saveDir   string        // -save: the directory the world is saved into; "" for none
	saveEvery time.Duration // -save-every: the time between saves
	loadFrom  string        // -load: the save the world starts from; "" for none
	spectate  string        // -spectate: the spectator window's address; "" for none

	ramp   []int // steps of the load test; none runs the crowd
	hold   time.Duration
	settle time.Duration

	// options is the settings file -config names (throng.LoadOptionsFile),
	// the zero value without one; set names the flags given on the command
	// line, which override the file.
	options throng.Options
	set     map[string]bool

	cpuProfile string // file for a CPU profile of the run; "" for none
}

// The transports -transport names.
const (
	transportQUIC = "quic"
	transportWS   = "ws"
	transportMem  = "mem"
)

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("crowd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: go run ./examples/crowd [flags]")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), figuresHelp)
	}
	fs.StringVar(&c.scenario, "scenario", "square", "population: "+strings.Join(scenario.Names(), ", "))
	fs.IntVar(&c.players, "players", 400, "players the scenario is built for, and in-process bots unless -bots says otherwise")
	fs.IntVar(&c.bots, "bots", -1, "in-process bots; -1 means -players, 0 serves bots of other processes only (examples/crowd/bots)")
	fs.StringVar(&c.transport, "transport", transportQUIC, "quic (UDP on -addr, development TLS), ws (WebSocket, TCP on -addr, what browsers use) or mem (in-memory, no network)")
	fs.StringVar(&c.addr, "addr", "127.0.0.1:0", "address the server listens on (UDP for quic, TCP for ws); port 0 picks a free one")
	fs.IntVar(&c.hz, "hz", 30, "tick rate, 1 to 240")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run; 0 runs until Ctrl-C (the default with -bots 0)")
	fs.IntVar(&c.workers, "workers", 0, "worker threads for the parallel phases; 0 = GOMAXPROCS")
	fs.BoolVar(&c.inline, "inline", false, "run every phase on the tick goroutine (parallelism off)")
	fs.BoolVar(&c.interest, "interest", true, "interest management: far pairs get fewer updates")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the population and the bots")
	ramp := fs.String("ramp", "", "load test: bot counts to step through, ascending, e.g. 50,100,200,400,800")
	fs.DurationVar(&c.hold, "hold", 5*time.Second, "load test: how long each step is measured")
	fs.DurationVar(&c.settle, "settle", time.Second, "load test: wait after a step's bots joined, before measuring")
	fs.StringVar(&c.saveDir, "save", "", "save the world into this directory every -save-every, and once more as the run ends (throng's persistence.dir)")
	fs.DurationVar(&c.saveEvery, "save-every", 10*time.Second, "time between saves with -save; 0 saves only as the run ends (persistence.everySeconds)")
	fs.StringVar(&c.loadFrom, "load", "", "start the world from the latest save in this directory, or from this save file (throng's loadFrom)")
	fs.StringVar(&c.spectate, "spectate", "", "open the server's spectator window on this loopback host:port, e.g. 127.0.0.1:7778 (throng's debug.listen); the start line gives its address as spectator=http://...")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run (server and bots) to this file, for go tool pprof")
	configFile := fs.String("config", "", "settings file (JSON, the keys of throng.Options) the server starts from; -hz, -workers, -inline, -interest, -save, -save-every, -load and -spectate given on the command line override it")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	fs.Visit(func(f *flag.Flag) {
		if c.set == nil {
			c.set = map[string]bool{}
		}
		c.set[f.Name] = true
	})
	if *configFile != "" {
		opts, err := throng.LoadOptionsFile(*configFile)
		if err != nil {
			return config{}, fmt.Errorf("crowd: -config: %w", err)
		}
		c.options = opts
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("crowd: unexpected arguments %q", fs.Args())
	}
	if c.bots == 0 && !c.set["duration"] {
		c.duration = 0 // a server for other processes' bots runs until stopped
	}
	var err error
	if c.ramp, err = parseRamp(*ramp); err != nil {
		return config{}, err
	}
	switch {
	case c.players < 1:
		return config{}, fmt.Errorf("crowd: -players must be at least 1, got %d", c.players)
	case c.bots < -1:
		return config{}, fmt.Errorf("crowd: -bots must be -1 (as many as -players) or more, got %d", c.bots)
	case c.transport != transportQUIC && c.transport != transportWS && c.transport != transportMem:
		return config{}, fmt.Errorf("crowd: -transport must be %s, %s or %s, got %q", transportQUIC, transportWS, transportMem, c.transport)
	case c.transport == transportMem && c.bots == 0:
		return config{}, errors.New("crowd: -bots 0 serves bots of other processes, which need -transport quic or ws")
	case c.duration < 0:
		return config{}, fmt.Errorf("crowd: -duration must not be negative, got %v", c.duration)
	case c.workers < 0:
		return config{}, fmt.Errorf("crowd: -workers must not be negative, got %d", c.workers)
	case c.hold <= 0:
		return config{}, fmt.Errorf("crowd: -hold must be positive, got %v", c.hold)
	case c.settle < 0:
		return config{}, fmt.Errorf("crowd: -settle must not be negative, got %v", c.settle)
	case c.saveEvery < 0:
		return config{}, fmt.Errorf("crowd: -save-every must not be negative, got %v", c.saveEvery)
	}
	return c, nil
}

// parseRamp reads "50,100,200": positive counts, strictly ascending.
func parseRamp(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var steps []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("crowd: -ramp wants positive bot counts separated by commas, got %q", f)
		}
		if len(steps) > 0 && n <= steps[len(steps)-1] {
			return nil, fmt.Errorf("crowd: -ramp steps must ascend, got %d after %d", n, steps[len(steps)-1])
		}
		steps = append(steps, n)
	}
	return slices.Clip(steps), nil
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
	if cfg.duration > 0 && len(cfg.ramp) == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	if cfg.cpuProfile != "" {
		stopProfile, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer stopProfile()
	}
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// startCPUProfile profiles the process into the file at path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("crowd: -cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("crowd: -cpuprofile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// run runs the load test when cfg asks for one, else the crowd until ctx
// is done, writing to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if len(cfg.ramp) > 0 {
		return runRamp(ctx, cfg, out)
	}
	return runCrowd(ctx, cfg, out)
}
