// Zones runs one world split over zone servers in a 2 x 2 grid that talk
// over NATS, with a gateway that keeps each player's one connection while
// its actor is handed from zone to zone, and bots that roam across the
// borders. It prints key=value lines each second and a summary line at
// the end:
//
//	go run ./examples/zones                              # 400 bots, 10 s, all in one process
//	go run ./examples/zones -players 2000 -duration 30s
//	go run ./examples/zones -zones 1                     # the same world on one server, to compare
//	go run ./examples/zones -cpuprofile zones.prof       # and where the time went: go tool pprof zones.prof
//	go run ./examples/zones -crowd corner -balance       # a crowd in zone 1's quarter, spread by a coordinator
//	go run ./examples/zones -crowd borders -world 512 -players 10000 -join-rate 500 -duration 120s
//	                                                     # a large world, its players along the borders
//
// In one process (the default) it starts an embedded nats-server with
// JetStream on a free loopback port, publishes the zone map, starts the
// four zone servers (each with a NATS connection of its own, ticking at
// -hz on a goroutine of its own, without a worker pool: four pools would
// only poll against each other), a gateway on an in-memory front and the
// bots on it. The world is
// 4 x 4 chunks (-world sets its side); zone i holds a corner, and the bots
// roam a square of one chunk around the centre where the four meet
// (-crowd corner: zone 1's quarter; -crowd borders: boxes one chunk
// square straddling the borders, spread along their whole length, so
// that a large world's players cross as often as the centre's without
// all standing in one square). A zone server hands a bot's actor to its neighbour once
// it stands -handoff-margin past the border (a quarter chunk), so that a
// bot wandering along a border is not switched at each step across it.
// With -balance a zone.Coordinator moves borders toward the lighter
// zones, from the zone servers' load reports: by their actors, with
// -balance-by pairs by the pairs their actors make with those in sight
// (what the relay's work grows with), with -balance-by work by their
// tick time.
//
// # Each part a process of its own
//
// Against a standalone nats-server with JetStream (nats-server -js), each
// zone server, then the gateway with the bots:
//
//	go run ./examples/zones -role zone -zone 1 -nats nats://127.0.0.1:4222 -duration 0
//	go run ./examples/zones -role zone -zone 2 -nats nats://127.0.0.1:4222 -duration 0
//	go run ./examples/zones -role zone -zone 3 -nats nats://127.0.0.1:4222 -duration 0
//	go run ./examples/zones -role zone -zone 4 -nats nats://127.0.0.1:4222 -duration 0
//	go run ./examples/zones -role gateway -nats nats://127.0.0.1:4222 -players 400
//
// Or the gateway process serves NATS itself (an embedded nats-server with
// JetStream, its store gone when the process ends), and the zone
// processes connect to it (every process waits up to 10 seconds for its
// NATS server, so the order they start in does not matter):
//
//	go run ./examples/zones -role gateway -nats-listen 127.0.0.1:4222 -players 400 &
//	go run ./examples/zones -role zone -zone 1 -nats nats://127.0.0.1:4222 -duration 0
//	...
//
// A gateway process lets its bots in once every zone server has reported
// (at most 30 seconds, then with a line saying which were not heard).
// Serving NATS from the gateway process saves a process where they share
// a machine: every message the zones and the gateway exchange wakes one
// process fewer (docs/zones.md has the figures). It also makes the
// gateway process the one NATS lives in: when it stops, so do NATS and
// what its store held (the zone map, the player directory).
//
// Where the processes share one machine's cores, give the zone processes
// -pool=false (a zone process without a pool runs with GOMAXPROCS=1) and
// the gateway process and a nats-server GOMAXPROCS=1 in their environment:
// more Ps than a process needs only let its idle threads spin against the
// others'. Give every one of them GODEBUG=schedtrace=2147483647 too, which
// keeps the Go runtime's monitor thread from waking every 20 us after each
// spell the process idles (docs/operations.md, "Processes that share a
// machine's cores"):
//
//	GOMAXPROCS=1 GODEBUG=schedtrace=2147483647 nats-server -js &
//	GODEBUG=schedtrace=2147483647 go run ./examples/zones -role zone -zone 1 -pool=false -nats nats://127.0.0.1:4222 -duration 0 &
//	...
//	GOMAXPROCS=1 GODEBUG=schedtrace=2147483647 go run ./examples/zones -role gateway -nats nats://127.0.0.1:4222 -players 400
//
// Every process prints its own lines: a zone process its server's, the
// gateway process its bots'. Give them all the same -zones, -world,
// -crowd, -players and -seed: the zone servers place a bot where the
// gateway's bots think it is (the first process records them in NATS, and
// one started with others stops and says so). A zone process writes its map to NATS only if NATS holds none; with
// -balance the gateway process runs the coordinator too. With -save DIR a zone server saves its world every -save-every in
// DIR/zone-N and starts from the latest save there: kill one zone's
// process and start it again, and its players connect again to their
// actors.
//
// # The lines
//
//	hz, p95_ms        each zone's achieved tick rate and 95th percentile of
//	                  its tick's work, over the last second (zone 1 first)
//	players           players connected to the zone servers, each server's
//	                  count at the end of its second: a player in a hand-off
//	                  is open at both servers for a moment (its shadow), so
//	                  the sum may pass the bots by the hand-offs under way
//	zone_players      of them, each zone's (zone 1 first)
//	ghosts            ghosts the zone servers hold (actors lent by neighbours)
//	handoff_records   hand-offs the zone servers remember, to answer late
//	                  repeats (zone.HandoffStats.Records)
//	handoffs          hand-offs completed in the second (zone.HandoffStats.Committed)
//	switches          players' sessions taken by a new zone server in the second
//	switch_p99_ticks  99th percentile, so far, of a switch's length in tick
//	                  periods: from the old server letting the session go to
//	                  the new one welcoming it (HandoffStats.SwitchTicks)
//	lost_inputs       moves sent during a switch that reached neither server
//	                  (HandoffStats.InputsMissed), so far
//	duplicated_inputs moves the old server applied that the new one would
//	                  apply again (HandoffStats.InputsDuplicated), so far
//	sessions_lost     sessions that could not follow their actor, so far
//	ghost_kb, relay_kb ghost batches sent to neighbours, and movement
//	                  datagrams sent to players, in the second
//	players_filed     players who left, filed in the player directory as
//	                  kept by their zone (zone.Stats.PlayersFiled), so far
//	gateways_lost     gateways the zone servers took for dead and let the
//	                  sessions of go (gateway.Transport.GatewaysLost), so far
//	bots welcomes     bots in play; Welcomes after the first (one a switch)
//	corrections refused closed
//	                  what the bots were told
//	retries zone_gone rejoined
//	                  bots that dialled again (turned away as busy, their
//	                  zone's server gone or restarted, no Welcome in 5 s),
//	                  disconnects because a zone's server was gone, and
//	                  bots welcomed again after one
//	borders_moved     with -balance: borders the coordinator moved, so far
//	nats_disconnects  times this process's NATS connections lost their server
//	cpu               this process's CPU time over wall time (2.0: two cores)
//
// The summary line adds hz_min and p95_ms_max (the worst zone's worst
// second), switch_p50_ticks and switch_p95_ticks (as switch_p99_ticks),
// switch_ticks (the switches by tick periods begun, 0 to 7 or more,
// slash-separated: the tail a percentile rounds off), ghost_share (ghost
// bytes over relay bytes) and ghost_unkeyed (ghost records that left out
// a field their receiver may not have heard, and made it ask for a
// keyframe: zone.Stats.Unkeyed). A gateway process that waited in vain
// for some zone servers says so first, with "unheard zones=3,4
// waited=30s".
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
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/zone"
)

type config struct {
	role      string
	zone      int
	zones     int
	players   int
	duration  time.Duration
	hz        int
	seed      uint64
	nats      string
	natsAt    string
	joinRate  int
	save      string
	saveEvery time.Duration
	profile   string
	balance   bool
	balanceBy string
	crowd     string
	world     int
	margin    float64
	pool      bool
}

func parse(args []string, errOut io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("zones", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&c.role, "role", "all", "what this process runs: all, zone (one zone server: -zone) or gateway (the gateway and the bots)")
	fs.IntVar(&c.zone, "zone", 0, "with -role zone: the zone this process holds, 1 to -zones")
	fs.IntVar(&c.zones, "zones", 4, "zones the world is cut into: 4 (2 x 2) or 1 (the whole world on one server)")
	fs.IntVar(&c.players, "players", 400, "bots")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run; 0 runs until Ctrl-C")
	fs.IntVar(&c.hz, "hz", 30, "tick rate of the zone servers")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the bots' spawns and walks")
	fs.StringVar(&c.nats, "nats", "", "NATS server URL; empty starts an embedded one on a free port (with -role all; -role gateway takes -nats-listen instead)")
	fs.StringVar(&c.natsAt, "nats-listen", "", "with -role gateway, instead of -nats: serve NATS from this process, an embedded nats-server with JetStream listening on host:port (the zone processes' -nats nats://host:port)")
	fs.IntVar(&c.joinRate, "join-rate", 200, "bots that connect a second, until all are in")
	fs.StringVar(&c.save, "save", "", "directory each zone server saves its world in (DIR/zone-N), and starts from when a save is there")
	fs.DurationVar(&c.saveEvery, "save-every", 5*time.Second, "with -save: time between saves")
	fs.StringVar(&c.profile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof reads it)")
	fs.BoolVar(&c.balance, "balance", false, "run a coordinator that moves borders toward lighter zones (with -role all or gateway)")
	fs.StringVar(&c.balanceBy, "balance-by", "actors", "with -balance: the load the coordinator balances: the zones' actors, the pairs they make with those in sight (a crowd weighs more than as many spread out) or the zone servers' tick time (work)")
	fs.StringVar(&c.crowd, "crowd", "centre", "where the bots roam: centre (where the four zones meet), corner (zone 1's quarter) or borders (along the borders' whole length)")
	fs.IntVar(&c.world, "world", 4, "chunks on a side of the square world, even: each of four zones holds a quarter")
	fs.Float64Var(&c.margin, "handoff-margin", scenario.ChunkSize/4, "world units an actor must stand past a border before it is handed off (zone.Options.HandoffMargin); 0 hands off at the border")
	fs.BoolVar(&c.pool, "pool", true, "with -role zone: give the zone server a worker pool (Parallelism); false when zone processes share one machine's cores, where their pools would poll against each other (the process then runs with GOMAXPROCS=1 unless the environment sets it)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.role != "all" && c.role != "zone" && c.role != "gateway":
		return c, fmt.Errorf("-role: all, zone or gateway, not %q", c.role)
	case c.natsAt != "" && (c.role != "gateway" || c.nats != ""):
		return c, errors.New("-nats-listen: only with -role gateway, and instead of -nats")
	case c.role == "zone" && c.nats == "":
		return c, errors.New("-role zone needs -nats, the URL of the NATS server the parts share")
	case c.role == "gateway" && c.nats == "" && c.natsAt == "":
		return c, errors.New("-role gateway needs -nats, the URL of the NATS server the parts share, or -nats-listen to serve one itself")
	case c.role == "zone" && (c.zone < 1 || c.zone > c.zones):
		return c, fmt.Errorf("-zone: 1 to %d, not %d", c.zones, c.zone)
	case c.players < 0:
		return c, fmt.Errorf("-players: not negative, got %d", c.players)
	case c.hz < 1:
		return c, fmt.Errorf("-hz: at least 1, got %d", c.hz)
	case c.joinRate < 1:
		return c, fmt.Errorf("-join-rate: at least 1, got %d", c.joinRate)
	case c.saveEvery < 0:
		return c, fmt.Errorf("-save-every: not negative, got %v", c.saveEvery)
	case !slices.Contains(crowds, c.crowd):
		return c, fmt.Errorf("-crowd: centre, corner or borders, not %q", c.crowd)
	case c.world < 2 || c.world > maxWorld || c.world%2 != 0:
		return c, fmt.Errorf("-world: an even number of chunks from 2 to %d, not %d", maxWorld, c.world)
	case !slices.Contains(measures, c.balanceBy):
		return c, fmt.Errorf("-balance-by: actors, pairs or work, not %q", c.balanceBy)
	case !(c.margin >= 0 && c.margin < scenario.ChunkSize):
		return c, fmt.Errorf("-handoff-margin: from 0 to below a chunk (%d), not %v", scenario.ChunkSize, c.margin)
	}
	if c.natsAt != "" {
		if _, _, err := listenAddr(c.natsAt); err != nil {
			return c, err
		}
	}
	return c, nil
}

// measures are -balance-by's names, in zone.LoadMeasure's order.
var measures = []string{zone.LoadActors.String(), zone.LoadPairs.String(), zone.LoadWork.String()}

// zoneWait is how long a gateway process waits for the zone servers
// before letting its bots in (awaitZones).
const zoneWait = 30 * time.Second

// maxWorld is the widest world -world takes, in chunks: positions across
// it keep a precision of a unit or finer in float32.
const maxWorld = 1024

func main() {
	c, err := parse(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err == nil {
		if n := c.maxProcs(); n > 0 {
			runtime.GOMAXPROCS(n)
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		err = run(ctx, c, os.Stdout)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "zones:", err)
		os.Exit(1)
	}
}

// run runs what c.role says until c.duration has passed or ctx ends,
// printing to out.
func run(ctx context.Context, c config, out io.Writer) error {
	m, err := zoneMap(c.zones, int32(c.world))
	if err != nil {
		return err
	}
	pop := population(c.players, c.seed, c.crowd, int32(c.world))
	url := c.nats
	if url == "" {
		var stopNATS func()
		if url, stopNATS, err = startNATS(c.natsAt); err != nil {
			return err
		}
		defer stopNATS()
	}
	if c.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var lost atomic.Uint64 // disconnects of this run's NATS connections from their server

	var servers []*zoneServer
	defer func() {
		for _, s := range servers {
			s.close()
		}
	}()
	if c.role != "gateway" {
		for _, zn := range m.Zones {
			if c.role == "zone" && zn.ID != zone.ID(c.zone) {
				continue
			}
			s, err := startZone(ctx, url, m, zn.ID, c, pop, log, &lost)
			if err != nil {
				return err
			}
			servers = append(servers, s)
		}
	}
	var gw *gateway.Gateway
	var players *bots
	if c.role != "zone" {
		nc, err := connect(ctx, url, "gateway", &lost)
		if err != nil {
			return fmt.Errorf("gateway: NATS: %w", err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		if err := agree(ctx, js, c); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		// The gateway routes by the map in force: written here if no zone
		// process has yet, watched as borders move.
		if _, _, err := zone.EnsureMap(ctx, js, "", m); err != nil {
			return err
		}
		maps, err := zone.WatchMap(ctx, js, "")
		if err != nil {
			return err
		}
		defer maps.Stop()
		kept, err := zone.WatchPlayers(ctx, js, "")
		if err != nil {
			return err
		}
		defer kept.Stop()
		if c.role == "gateway" {
			missing, err := awaitZones(ctx, nc, m, zoneWait)
			if err != nil {
				return err
			}
			if len(missing) > 0 {
				// Their players are let in all the same: the gateway
				// tells them when their zone's server is gone.
				fmt.Fprintf(out, "unheard zones=%s waited=%v\n", joinIDs(missing), zoneWait)
			}
		}
		front := mem.New(mem.Options{})
		if gw, err = gateway.New(gateway.Config{Conn: nc, Name: "gateway", Front: front, Route: router{maps, kept, pop}.route}); err != nil {
			return err
		}
		defer gw.Close()
		if err := nc.Flush(); err != nil {
			return err
		}
		players = newBots(front, pop, c.seed, c.joinRate)
	}
	var coord *zone.Coordinator
	if c.balance && c.role != "zone" {
		nc, err := connect(ctx, url, "coordinator", &lost)
		if err != nil {
			return fmt.Errorf("coordinator: NATS: %w", err)
		}
		defer nc.Close()
		measure := zone.LoadMeasure(slices.Index(measures, c.balanceBy))
		if coord, err = zone.NewCoordinator(ctx, nc, zone.CoordinatorOptions{Measure: measure, Logger: log}); err != nil {
			return err
		}
		defer coord.Close()
	}
	fmt.Fprintf(out, "start role=%s zones=%d players=%d hz=%d nats=%s\n", c.role, c.zones, c.players, c.hz, url)
	if c.profile != "" {
		f, err := os.Create(c.profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	period := time.Second / time.Duration(c.hz)
	done := make(chan struct{})
	running := 0
	for _, s := range servers {
		running++
		go func() {
			defer func() { done <- struct{}{} }()
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(firstTick(time.Now(), m, s.id, period))):
			}
			s.srv.Run(ctx)
		}()
	}
	if coord != nil {
		running++
		go func() {
			defer func() { done <- struct{}{} }()
			coord.Run(ctx, time.Second)
		}()
	}
	if gw != nil {
		running += 2
		go func() {
			defer func() { done <- struct{}{} }()
			gw.Run(ctx, period)
		}()
		go func() {
			defer func() { done <- struct{}{} }()
			players.run(ctx, period)
		}()
	}
	meter := newMeter(out, servers, gw, players, coord, &lost)
	every := time.NewTicker(time.Second)
	defer every.Stop()
	var prev totals
	for loop := true; loop; {
		select {
		case <-ctx.Done():
			loop = false
		case <-every.C:
			prev = meter.line(prev)
		}
	}
	for range running {
		<-done
	}
	meter.summary()
	return nil
}
