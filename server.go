package throng

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// Server is an authoritative game server: one ECS world, one transport, and
// the tick pipeline (ingest, prepare, move, relay, join) plus the user's own
// systems, run by a scheduler at a fixed rate.
//
// A Server is driven from one goroutine: either [Server.Run] or repeated
// [Server.Tick] calls. Add systems before the first tick.
type Server struct {
	settings  Settings
	world     *ecs.World
	transport wire.Transport
	mem       *mem.Transport
	pipe      *systems.Pipeline
	pool      *scheduler.Pool
	builder   *scheduler.Builder
	schedule  *scheduler.Schedule
	log       *slog.Logger
	tick      uint64
	current   scheduler.Tick
	times     []scheduler.SystemTime // the last tick's, for the meter
	meter     meter
	metrics   *metricsServer
	spect     *spectatorServer // the debug listener, or nil
	saver     *save.Saver
	saveJob   saveJob
	saveUnits []scheduler.Unit
	lastSave  *PendingSave
	nextSave  time.Time // when the next periodic save is due
	types     []save.Type
}

// New validates opts (see [Options.Resolve]) and builds a server. Clamps
// applied to the settings are logged once. The server owns the transport
// from here on and closes it in [Server.Close].
func New(opts Options) (*Server, error) {
	settings, adjustments, err := opts.Resolve()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, a := range adjustments {
		log.Warn("throng: setting adjusted", "adjustment", a.String())
	}
	par := settings.Parallelism
	tiers, err := buildTiers(par)
	if err != nil {
		return nil, err
	}
	classes, err := buildClasses(settings)
	if err != nil {
		return nil, err
	}
	var throttle interest.Throttle
	if par.AdaptiveThrottling {
		if throttle, err = interest.NewThrottle(par.ThrottleDistanceUnits, par.MaxThrottleSkipTicks); err != nil {
			return nil, fmt.Errorf("throng: %w", err)
		}
	}
	s := &Server{settings: settings, log: log, transport: opts.Transport}
	if s.transport == nil {
		if s.transport, err = listen(settings.Network); err != nil {
			return nil, err
		}
	}
	if s.transport == nil {
		s.mem = mem.New(mem.Options{})
		s.transport = s.mem
	}
	// The transport is the server's from here on: close one it made if
	// New fails after all.
	made := opts.Transport == nil
	fail := func(err error) (*Server, error) {
		if made {
			s.transport.Close()
		}
		return nil, err
	}
	s.world = ecs.NewWorld(settings.ChunkSize)
	workers := par.WorkerThreads
	if !par.Enabled {
		workers = 1
	}
	s.pool = scheduler.NewPool(workers)
	s.pool.SetMaxPooledUnits(par.MaxWorkUnitsPerTick)
	s.pipe, err = systems.New(systems.Config{
		ChunkSize: settings.ChunkSize,
		TickRate:  settings.TickRate,
		Tiers:     tiers,
		Shards: systems.ShardPlan{
			Separation:       par.ClusterSeparationChunks,
			MinClusterActors: par.MinClusterActors,
			MinShardActors:   par.MinShardActors,
		},
		Parallel:           par.Enabled,
		MinActorsToOffload: par.MinActorsToOffload,
		Limits: systems.Limits{
			MovingPerSecond:   settings.Clients.MovingUpdatesPerSecond,
			StandingPerSecond: settings.Clients.StandingUpdatesPerSecond,
			FloodFactor:       settings.Clients.FloodFactor,
			FloodSeconds:      settings.Clients.FloodSeconds,
			MaxSpeed:          settings.Clients.MaxSpeedUnitsPerSecond,
		},
		Throttle:          throttle,
		BudgetMicros:      par.TargetTickBudgetMicros,
		PressWorkShare:    par.ThrottleWorkShare,
		MaxRecordsPerTick: settings.MaxRecordsPerTick,
		NearestSenders:    settings.NearestSenders,
		JoinAppears:       settings.Admission.JoinAppearsPerTick,
		Protocol:          opts.Protocol,
		Admit:             opts.Admit,
		SavedTypes:        opts.SavedTypes,
		PropRadius:        settings.Props.RadiusUnits,
		PropSlack:         settings.Props.SlackUnits,
		Classes:           classes,
	}, s.world, s.transport)
	if err != nil {
		s.pool.Close()
		return fail(fmt.Errorf("throng: %w", err))
	}
	if s.saver, err = save.NewSaver(s.world, opts.SavedTypes); err != nil {
		s.pool.Close()
		return fail(fmt.Errorf("throng: %w", err))
	}
	s.saveJob.saver = s.saver
	s.types = opts.SavedTypes
	if settings.LoadFrom != "" {
		if err := s.load(settings.LoadFrom, opts.SavedTypes); err != nil {
			s.pool.Close()
			return fail(err)
		}
	}
	if settings.MetricsListen != "" {
		if s.metrics, err = startMetrics(s, settings.MetricsListen); err != nil {
			s.pool.Close()
			return fail(fmt.Errorf("throng: metrics listener: %w", err))
		}
	}
	if settings.Debug.Listen != "" {
		if s.spect, err = startSpectator(s, settings.Debug); err != nil {
			s.pool.Close()
			if s.metrics != nil {
				s.metrics.close()
			}
			return fail(fmt.Errorf("throng: debug listener: %w", err))
		}
	}
	s.builder = scheduler.NewBuilder()
	for _, sys := range s.pipe.Systems() {
		s.builder.Add(sys)
	}
	return s, nil
}

// buildTiers turns the interest settings into the relay's tier table; with
// interest management off every pair gets every update.
func buildTiers(par ParallelSettings) (interest.Tiers, error) {
	if !par.InterestManagement {
		return interest.Tiers{}, nil
	}
	steps := make([]interest.Step, len(par.InterestTiers))
	for i, t := range par.InterestTiers {
		steps[i] = interest.Step{BeyondUnits: t.BeyondUnits, Period: uint8(min(t.Period, 255))}
	}
	tiers, err := interest.NewTiers(steps, par.MaxInterestSkipTicks)
	if err != nil {
		return interest.Tiers{}, fmt.Errorf("throng: interest tiers: %w", err)
	}
	return tiers, nil
}

// AddSystem registers a user's system with the scheduler, optionally pinned
// with scheduler.Before or scheduler.After relative to a built-in system
// (systems.IngestName, PrepareName, MoveName, RelayName, JoinName) or
// another user system. It must be called before the first tick; the
// schedule is built then, and errors in it (unknown pin targets, duplicate
// names, cycles) are returned by the first Tick's caller through
// [Server.Schedule].
func (s *Server) AddSystem(sys scheduler.System, pins ...scheduler.Placement) error {
	if s.schedule != nil {
		return fmt.Errorf("throng: AddSystem(%q) after the first tick; add systems before the server starts", sys.Name())
	}
	s.builder.Add(sys, pins...)
	return nil
}

// Schedule builds the schedule (if the first tick has not already) and
// returns it; its String method shows the stages and why each system runs
// where it does.
func (s *Server) Schedule() (*scheduler.Schedule, error) {
	if s.schedule == nil {
		sched, err := s.builder.Build()
		if err != nil {
			return nil, fmt.Errorf("throng: schedule: %w", err)
		}
		s.schedule = sched
	}
	return s.schedule, nil
}

// World returns the server's ECS world, for spawning props and for users'
// own systems.
func (s *Server) World() *ecs.World { return s.world }

// Transport returns the server's transport.
func (s *Server) Transport() wire.Transport { return s.transport }

// Attach makes session, open and without a Hello yet, the client of
// actor, an actor in the world without a client (not a prop), without
// Hello, Admit or spawn: in the next tick's join the session is welcomed
// to the actor and told what is around it, and from then on drives it as
// any player's. Others see the actor as before. It is how a session moves
// between servers with its actor (a zone server that took the actor in a
// hand-off). player names the session's player ("" for a guest): it is
// known by that name here, as if Admit had named it. Call it between
// ticks or from a serial system before Prepare. See
// [systems.Pipeline.Attach].
func (s *Server) Attach(session wire.SessionID, actor components.ActorID, player string) error {
	return s.pipe.Attach(session, actor, player)
}

// Detach lets actor's session go without ending either: the actor stays
// as one without a client, the session is forgotten and its frames
// dropped, and the transport is not told (the caller moves the
// connection on or closes it). It returns the session and its player's
// name ("" for a guest), which the server the session moves to attaches
// it with; the player is not kept here. Call it between ticks or from a
// serial system before Prepare. See [systems.Pipeline.Detach].
func (s *Server) Detach(actor components.ActorID) (wire.SessionID, string, error) {
	return s.pipe.Detach(actor)
}

// SavedTypes returns the components of the game's own that this server's
// saves keep (Options.SavedTypes): the ones a zone hand-off carries too.
func (s *Server) SavedTypes() []save.Type { return s.types }

// Commands returns the commands of the game's own that clients sent this
// tick ([client.Client.SendCommand]), in the order they arrived, each with
// its sender's actor: read them from a system of yours pinned after
// ingest (scheduler.After(systems.IngestName)), or between ticks. The
// slice and its payloads are valid until the next tick's ingest. A client
// may send [systems.MaxCommandsPerTick] a tick; the rest, and commands from
// a client not yet playing, are dropped and counted in DroppedInputs.
func (s *Server) Commands() []systems.Command { return s.pipe.Commands() }

// Changes returns what this tick's join did to actors, in the order it
// applied them: each spawned actor (ecs.Spawned: a player admitted this
// tick, with its session, or an actor your code spawned), each despawned
// one (ecs.Despawned: a player who left, or one you removed), chunk moves
// and teleports. Read it from a system of yours pinned after the join
// (scheduler.After(systems.JoinName)), or between ticks, to set up or
// clear what your game keeps per player. Valid until the next tick's join.
func (s *Server) Changes() []ecs.Change { return s.pipe.Changes() }

// SendEvent queues an event of the game's own (payload, opaque to Throng)
// on the reliable stream of actor's client, and reports whether it was
// queued: false for an actor unknown, despawned or without a client. The
// client reads it from Poll as a Frame of TypeEvent. Any system of yours
// may call it (serial or parallel, several at once), or your code between
// ticks.
func (s *Server) SendEvent(actor components.ActorID, payload []byte) bool {
	return s.pipe.SendEvent(actor, payload)
}

// mem.Transport returns the in-memory transport the server made because
// Options.Transport was nil, or nil if it was given one.
func (s *Server) Mem() *mem.Transport { return s.mem }

// Settings returns the resolved settings the server runs with.
func (s *Server) Settings() Settings { return s.settings }

// Stats returns what the last tick did and the last full second's summary.
// It is safe to call from any goroutine.
func (s *Server) Stats() Stats {
	s.meter.mu.Lock()
	defer s.meter.mu.Unlock()
	return s.meter.published
}

// Tick runs one tick: every system in schedule order. It panics if the
// schedule cannot be built (see [Server.Schedule]).
func (s *Server) Tick() systems.TickStats {
	sched, err := s.Schedule()
	if err != nil {
		panic(err)
	}
	start := time.Now()
	s.tick++
	s.pipe.SetShardsPerCluster(s.settings.Parallelism.ShardsPerCluster(s.pool.Size()))
	// The Tick lives in the Server: handed to systems through interfaces,
	// a local would escape and cost an allocation every tick.
	s.current = scheduler.Tick{Number: s.tick, Delta: s.settings.TickPeriod()}
	run := sched.Run(s.pool, &s.current)
	if f, ok := s.transport.(wire.Flusher); ok {
		f.Flush()
	}
	s.times = sched.Times(s.times[:0])
	s.meter.addTimes(s.times)
	now := time.Now()
	s.pipe.ObserveWork(now.Sub(start))
	st := s.pipe.Stats()
	s.record(st, run.Pooled, now.Sub(start), now)
	if s.spect != nil {
		s.spectate(now)
	}
	return st
}

// Run ticks at the configured rate until ctx is done, then closes the
// server (see [Server.RunTicks]).
func (s *Server) Run(ctx context.Context) error {
	if _, err := s.Schedule(); err != nil {
		return err
	}
	defer s.Close()
	err := s.RunTicks(ctx, nil)
	s.finalSave()
	return err
}

// finalSave saves the world as Run stops, when persistence.dir is set,
// and waits for every save to be written.
func (s *Server) finalSave() {
	if s.lastSave != nil {
		s.lastSave.Wait()
	}
	if s.settings.Persistence.Dir == "" {
		return
	}
	p, err := s.Save("")
	if err == nil {
		_, err = p.Wait()
	}
	if err != nil {
		s.log.Error("throng: the save on stopping failed", "err", err)
	}
}

// RunTicks ticks at the configured rate until ctx is done, and calls each,
// if not nil, after every tick with its stats and how long it took; unlike
// Run it leaves the server open. Ticks are scheduled on a fixed grid
// (start + n*period), so a slow tick delays the next one but does not
// shift the ones after it; if the server falls more than a tick behind it
// skips the missed slots instead of running a burst: a server that cannot
// keep its rate slows evenly, and tells its clients the rate it ticks at
// once a second while it is below 95% of the nominal one (a wire.Rate
// frame; client.Client.Rate), and once more when it is back.
// parallelism.workerWakeAheadMicros before each tick it wakes the worker
// pool ([Server.WakeWorkers]), so that the workers are running when the
// tick's parallel phases begin; a server without workers (a pool of one)
// wakes only for the tick.
func (s *Server) RunTicks(ctx context.Context, each func(systems.TickStats, time.Duration)) error {
	if _, err := s.Schedule(); err != nil {
		return err
	}
	period := s.settings.TickPeriod()
	ahead := s.wakeAhead()
	timer := time.NewTimer(0)
	defer timer.Stop()
	// waitUntil reports false if ctx ended first.
	waitUntil := func(at time.Time) bool {
		timer.Reset(time.Until(at))
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		}
	}
	next := time.Now()
	// The rate over each second of wall time, told to the clients while
	// the server is slowed (see systems.Pipeline.TellRate).
	second, ticks := next, 0
	for {
		if ahead > 0 {
			if time.Until(next) > ahead && !waitUntil(next.Add(-ahead)) {
				return nil
			}
			s.WakeWorkers()
		}
		if !waitUntil(next) {
			return nil
		}
		if s.spect != nil && s.holdForSpectator() {
			// Paused by a spectator: no tick, no rate told, the window
			// still served.
			second, ticks = time.Now(), 0
			next = time.Now().Add(period)
			continue
		}
		began := time.Now()
		st := s.Tick()
		if each != nil {
			each(st, time.Since(began))
		}
		ticks++
		s.saveIfDue()
		if d := time.Since(second); d >= time.Second {
			s.pipe.TellRate(uint16(min(math.Round(100*float64(ticks)/d.Seconds()), math.MaxUint16)))
			second, ticks = time.Now(), 0
		}
		next = next.Add(period)
		if now := time.Now(); now.After(next) {
			missed := now.Sub(next) / period
			next = next.Add(missed * period)
			s.pipe.Skip(uint64(missed))
		}
	}
}

// wakeAhead is how long before each tick RunTicks wakes the workers: 0
// for a pool of one, which has none to wake, so that a server without
// workers wakes once a tick and not twice.
func (s *Server) wakeAhead() time.Duration {
	if s.pool.Size() <= 1 {
		return 0
	}
	return s.settings.Parallelism.WakeAhead()
}

// saveIfDue starts a periodic save when persistence.everySeconds have
// passed since the last one began (and it is written).
func (s *Server) saveIfDue() {
	per := s.settings.Persistence
	if per.Dir == "" || per.Every <= 0 {
		return
	}
	now := time.Now()
	if s.nextSave.IsZero() {
		s.nextSave = now.Add(per.Every)
		return
	}
	if now.Before(s.nextSave) {
		return
	}
	if s.lastSave != nil {
		select {
		case <-s.lastSave.Done():
		default:
			return // still writing: try again after the next tick
		}
	}
	s.nextSave = now.Add(per.Every)
	if _, err := s.Save(""); err != nil {
		s.log.Error("throng: periodic save", "err", err)
	}
}

// WakeWorkers wakes the worker pool ahead of the next Tick: the workers
// the last ticks used poll for it, instead of sleeping, for twice
// parallelism.workerWakeAheadMicros (through the tick's serial start),
// then sleep again. [Server.RunTicks] calls it that long before each
// tick; a program that paces Tick itself can do the same. It does nothing when
// the setting is 0 or the last ticks ran inline. Call it from the
// goroutine that calls Tick.
func (s *Server) WakeWorkers() {
	s.pool.Prewake(2 * s.settings.Parallelism.WakeAhead())
}

// MetricsAddr returns the address of the Prometheus listener, or "" when
// metrics.listen is not set.
func (s *Server) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// Close waits for a save being written, stops the worker pool and the
// metrics listener and closes the transport.
func (s *Server) Close() error {
	if s.lastSave != nil {
		s.lastSave.Wait()
	}
	s.pool.Close()
	if s.metrics != nil {
		s.metrics.close()
	}
	if s.spect != nil {
		s.spect.close()
	}
	return s.transport.Close()
}
