package throng_test

import (
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// tickMode is one way of running the tick: the modes every performance
// claim is measured in (docs/performance.md). inline+interest against
// parallel+interest is the parallel switch with the shipped interest
// management on; inline against parallel the same without it.
// inline+interest+budget is the shipped defaults on one core: on a machine
// whose cores come and go (a shared VM), the steadier way to compare two
// versions of the relay under the budget.
type tickMode struct {
	name     string
	parallel bool
	interest bool
	budget   bool // keep the default per-connection budget (one datagram a tick)
	workers  int  // 0: GOMAXPROCS
	// throttled turns adaptive throttling on with a budget no tick meets,
	// so that every cluster is at full pressure (BenchmarkThrottledTick).
	throttled bool
	// propSlack, when set, is props.slackUnits.
	propSlack float32
	// records and nearest, when set, are connection.maxRecordsPerTick
	// and connection.nearestSenders (budget modes).
	records, nearest *int
	// shards, when set, is parallelism.maxShardsPerCluster.
	shards int
	// digest keeps, per client, a checksum of everything it was sent
	// (mem.Options.Digest), for comparing runs byte for byte.
	digest bool
}

// tickModes returns the modes in the order the benchmarks run them.
func tickModes() []tickMode {
	return []tickMode{
		{name: "inline"},
		{name: "inline+interest", interest: true},
		{name: "parallel", parallel: true},
		{name: "parallel+interest", parallel: true, interest: true},
		{name: "parallel+interest+budget", parallel: true, interest: true, budget: true},
		{name: "inline+interest+budget", interest: true, budget: true},
	}
}

// modeNamed returns the mode of tickModes called name.
func modeNamed(name string) tickMode {
	i := slices.IndexFunc(tickModes(), func(m tickMode) bool { return m.name == name })
	return tickModes()[i]
}

// options returns the server options of mode m. Parallel modes offload from
// the first actor (MinActorsToOffload 0), so that every population size
// measures the pool; the break-even is read off the inline/parallel pairs.
// Adaptive throttling is off: it acts on measured time, which would make
// relays/tick depend on the machine and on the mode's speed. Admission
// control is off for the same reason (a crowd slower to tick than the
// period would be turned away as busy), and so is join pacing: the whole
// crowd joins in the first tick, outside the timer, where 10,000 in one
// square would take thousands of paced ticks. The per-connection budget is lifted, so that every due relay is sent and
// relays/tick counts the whole quadratic work, except in the budget mode,
// which runs the shipped default: one datagram per client per tick.
func (m tickMode) options() throng.Options {
	connection := throng.Connection{MaxRecordsPerTick: new(0)}
	if m.budget {
		connection = throng.Connection{MaxRecordsPerTick: m.records, NearestSenders: m.nearest}
	}
	var props throng.Props
	if m.propSlack > 0 {
		props.SlackUnits = new(m.propSlack)
	}
	return throng.Options{
		Transport: mem.New(mem.Options{CountOnly: true, Digest: m.digest}),
		Logger:    slog.New(slog.DiscardHandler),
		Parallelism: throng.Parallelism{
			Enabled:                new(m.parallel),
			InterestManagement:     new(m.interest),
			MinActorsToOffload:     new(0),
			WorkerThreads:          m.workers,
			MaxShardsPerCluster:    m.shards,
			AdaptiveThrottling:     new(m.throttled),
			TargetTickBudgetMicros: m.throttleBudget(),
			ThrottleWorkShare:      m.throttleWorkShare(),
		},
		Connection: connection,
		Props:      props,
		Admission:  throng.Admission{Enabled: new(false), JoinAppearsPerTick: new(0)},
	}
}

// throttleBudget is the parallel phase's target under full pressure: one
// microsecond, which no tick meets, so pressure rises a level a tick from
// the first to the highest, where it stays (the warm-up is longer than
// that); nil (the default) otherwise.
func (m tickMode) throttleBudget() *int {
	if !m.throttled {
		return nil
	}
	return new(1)
}

// throttleWorkShare lets full pressure act on ticks far shorter than the
// period (a millionth of it), as throttleBudget does; nil (the default)
// otherwise.
func (m tickMode) throttleWorkShare() *float64 {
	if !m.throttled {
		return nil
	}
	return new(1e-6)
}

// benchCrowd is a server on a count-only in-memory transport with one
// restless bot per actor: every bot moves and sends one update every tick.
type benchCrowd struct {
	srv     *throng.Server
	clients []*mem.Client
	bots    []*scenario.Bot
	period  time.Duration
	frame   []byte // one Move frame, reused by every bot
}

// warmUpTicks brings every buffer to its steady size: batch capacities,
// the pool's cost model, each interest window several times over.
const warmUpTicks = 24

// budgetWarmUpTicks is the warm-up under the per-connection budget: the
// crowd's clients settle on the spreads at which their due records fit
// and the records owed while they got there drain; until then most
// recipients take the backlog's slow path.
const budgetWarmUpTicks = 120

// warmUpFor is how many ticks a benchmark crowd in mode m is warmed up
// before it is measured.
func warmUpFor(m tickMode) int {
	if m.budget {
		return budgetWarmUpTicks
	}
	return warmUpTicks
}

// plazaWarmUpTicks is how many ticks every plaza crowd is warmed up, in
// every mode: its bots reach the props and push them about over the first
// hundred ticks or so, and the props' news, most of its tick, grow with
// that (a mode measured from tick 24 saw half the news a mode measured
// from tick 120 saw). Every mode is measured from the same tick, so that
// the modes compare the same ticks of the plaza.
const plazaWarmUpTicks = budgetWarmUpTicks

// newBenchCrowd builds scenario name with n actors, admits them all (Hello,
// then the tick that spawns them and sends their Welcome), and warms up.
// CountOnly clients keep no frames, so the Welcome is checked by count.
func newBenchCrowd(tb testing.TB, name string, n int, m tickMode) *benchCrowd {
	tb.Helper()
	pop, err := scenario.New(name, n, 1)
	require.NoError(tb, err)
	return newCrowdOf(tb, pop, m)
}

// newCrowdOf is newBenchCrowd for any population.
func newCrowdOf(tb testing.TB, pop scenario.Population, m tickMode) *benchCrowd {
	return newCrowdWith(tb, pop, m, nil)
}

// newCrowdWith is newCrowdOf with setup run on the server before its
// first tick (to add systems, say), unless nil; it returns how many actors
// it spawned.
func newCrowdWith(tb testing.TB, pop scenario.Population, m tickMode, setup func(*throng.Server) int) *benchCrowd {
	tb.Helper()
	n := len(pop.Spawns)
	opts := m.options()
	opts.Admit = pop.Admit
	srv, err := throng.New(opts)
	require.NoError(tb, err)
	tb.Cleanup(func() { srv.Close() })
	spawned := 0
	if setup != nil {
		spawned = setup(srv)
	}
	c := &benchCrowd{
		srv:    srv,
		bots:   pop.Bots(scenario.RestlessGait(), 1),
		period: srv.Settings().TickPeriod(),
	}
	mem := opts.Transport.(*mem.Transport)
	for i := range n {
		client := mem.Dial()
		hello, err := wire.AppendHello(c.frame[:0], wire.Hello{Token: scenario.Token(i)})
		require.NoError(tb, err)
		require.NoError(tb, client.Send(hello))
		c.clients = append(c.clients, client)
	}
	// Tick until the last player is in (with join pacing, which the
	// benchmark modes turn off, that takes many ticks).
	for range n + 1 {
		if srv.Tick(); srv.Stats().Waiting == 0 {
			break
		}
	}
	for i, client := range c.clients {
		require.NotZero(tb, client.Received().Frames, "bot %d got no Welcome", i)
	}
	for range warmUpFor(m) {
		c.tick()
	}
	require.Equal(tb, n+spawned, srv.World().Len(), "every bot is in the world")
	require.Zero(tb, srv.Stats().Corrections, "bots stay within the server's rules")
	return c
}

// send moves every bot one tick and sends its update. It allocates nothing.
func (c *benchCrowd) send() {
	for i, b := range c.bots {
		b.Advance(c.period)
		c.frame = b.AppendMove(c.frame[:0])
		if err := c.clients[i].Send(c.frame); err != nil {
			panic(err)
		}
	}
}

// tick is one benchmark op: every bot's update, then one server tick.
func (c *benchCrowd) tick() {
	c.send()
	c.srv.Tick()
}

// BenchmarkTick measures one full tick of the design's scenarios (square,
// town, world, world-life: the world with 10,000 NPCs walking and 100,000
// props standing, see newLifeCrowd, and plaza: seed 003's test world, see
// newPlazaCrowd): every player sends one Move
// through the in-memory transport, the server decodes
// them, runs Move and Relay (inline or on the pool) and hands every batch
// back to the transport. One op is one tick including the bots' sends;
// us/tick is the server's Tick alone; relays/tick and bytes/tick (movement
// datagram bytes) are averages over the run. The phase split, as the
// metrics line has it: parallel-us/tick is Move and Relay (from the end of
// Prepare to the start of Join, the relay's serial setup included),
// serial-us/tick the rest of the tick (ingest, prepare and join), and
// busy-us/tick the time summed inside Move and Relay units, which exceeds
// the inline figure by what running them on several cores costs (data
// written on one core and read on another, waits at the phases' ends).
// goroutine-us/tick is the tick goroutine's own part (each system's
// SystemTime.Serial: ingest's routing, Prepare, the relay's setup, the
// join with the passes it hands the pool), which serial-us/tick counts
// together with ingest's units: more cores shorten little of it, so the
// inline tick over it bounds the speedup they can give.
// Before each tick the benchmark wakes the pool's workers, as Server.Run
// does (Server.WakeWorkers): they poll through the bots' sends and the
// tick's serial start instead of sleeping, which they did between ticks
// without it (the sends and the ingest outlast the pool's spin window),
// and Move ran on the tick goroutine alone while they woke.
// BenchmarkPacedTick measures ticks with and without the wake-up. The
// split by system: <system>-us is each
// system's time a tick (Server.SystemTimes), on the tick goroutine plus in
// its units, summed over the cores that ran them. Setup and warm-up are
// outside the timer. allocs/op is what a tick allocates: nothing on the
// square (TestSteadyStateTickAllocatesNothing), nor for a crowd crossing chunk
// borders (TestRoamingTickAllocatesNothing). In town and world the bots
// keep reaching chunks nobody has visited yet for hundreds of ticks, and
// a chunk's first visit makes Ark build its table: those one-off
// allocations are what allocs/op counts there.
//
//	go test -run '^$' -bench 'BenchmarkTick/scenario=square' -benchtime=50x -benchmem .
func BenchmarkTick(b *testing.B) {
	scenarios := []struct {
		name    string
		players []int
	}{
		{"square", []int{25, 50, 100, 150, 250, 400, 1000, 2000, 5000, 10000}},
		{"town", []int{300, 1000}},
		{"world", []int{10000}},
		{"world-life", []int{10000}},
		{"plaza", []int{1000, 2000}},
	}
	for _, sc := range scenarios {
		b.Run("scenario="+sc.name, func(b *testing.B) {
			for _, n := range sc.players {
				b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
					for _, m := range tickModes() {
						if sc.name == "square" && n > 2000 && m.name != "parallel+interest+budget" {
							continue // without a budget, N^2 records: seconds a tick
						}
						b.Run("mode="+m.name, func(b *testing.B) { benchmarkTick(b, sc.name, n, m) })
					}
				})
			}
		})
	}
}

// BenchmarkTickRatios runs the square's crowd in five modes in one
// process, each on a server of its own, taking turns a block of
// ratioBlock ticks at a time, and reports each mode's us/tick and the
// ratios interest management is held to (docs/performance.md): interest
// over no interest, inline and in parallel, and the shipped defaults over
// parallel+interest. On a shared VM, whose speed wanders, runs of one mode
// after another (BenchmarkTick) compare ticks of different minutes; turns
// of fifty ticks keep each server's caches and the pool's cost model warm,
// and give every mode the same share of the host's good and bad minutes.
// One op is one tick of one mode; -benchtime should be a multiple of 250,
// so that each mode ticks a fifth of the ops.
//
//	go test -run '^$' -bench 'BenchmarkTickRatios/players=1000' -benchtime 3000x -count 6 . | tee ratios.txt
func BenchmarkTickRatios(b *testing.B) {
	modes := []string{"inline", "inline+interest", "parallel", "parallel+interest", "parallel+interest+budget"}
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
			crowds := make([]*benchCrowd, len(modes))
			for i, m := range modes {
				crowds[i] = newBenchCrowd(b, "square", n, modeNamed(m))
			}
			in := make([]time.Duration, len(modes))
			ticks := make([]int, len(modes))
			op := 0
			for b.Loop() {
				i := op / ratioBlock % len(modes)
				op++
				c := crowds[i]
				c.srv.WakeWorkers()
				c.send()
				start := time.Now()
				c.srv.Tick()
				in[i] += time.Since(start)
				ticks[i]++
			}
			us := make([]float64, len(modes))
			for i, m := range modes {
				if ticks[i] > 0 { // a -benchtime below ratioBlock*5 leaves the last modes out
					us[i] = float64(in[i]) / float64(time.Microsecond) / float64(ticks[i])
					b.ReportMetric(us[i], m+"-us/tick")
				}
			}
			for _, r := range []struct {
				over, under int
				name        string
			}{{1, 0, "inline+interest/inline"}, {3, 2, "parallel+interest/parallel"}, {4, 3, "defaults/parallel+interest"}} {
				if us[r.over] > 0 && us[r.under] > 0 {
					b.ReportMetric(us[r.over]/us[r.under], r.name)
				}
			}
		})
	}
}

// ratioBlock is how many ticks in a row BenchmarkTickRatios gives a mode.
const ratioBlock = 50

func benchmarkTick(b *testing.B, name string, n int, m tickMode) {
	switch name {
	case "world-life":
		measureTicks(b, newLifeCrowd(b, 10_000, 100_000, m))
	case "plaza":
		measureTicks(b, newPlazaCrowd(b, n, m))
	default:
		measureTicks(b, newBenchCrowd(b, name, n, m))
	}
}

// newPlazaCrowd is the plaza scenario with its world (plaza.Setup: 5,000
// props the players push about, 200 NPCs) and n players, warmed up
// plazaWarmUpTicks in every mode. Like every benchmark crowd its bots
// send an update every tick, where the crowd example's plaza bots send 10
// a second.
func newPlazaCrowd(tb testing.TB, n int, m tickMode) *benchCrowd {
	pop, err := scenario.New("plaza", n, 1)
	require.NoError(tb, err)
	c := newCrowdWith(tb, pop, m, func(srv *throng.Server) int {
		w, err := plaza.Setup(srv, plaza.Config{})
		require.NoError(tb, err)
		return w.Actors()
	})
	for range plazaWarmUpTicks - warmUpFor(m) {
		c.tick()
	}
	return c
}

// measureTicks times c's ticks and reports BenchmarkTick's metrics.
func measureTicks(b *testing.B, c *benchCrowd) {
	var (
		ticks                  int
		inTick, parallel, busy time.Duration
		own                    time.Duration // the tick goroutine's own steps (SystemTime.Serial)
		relays, out            int64
	)
	sched, err := c.srv.Schedule()
	require.NoError(b, err)
	times := sched.Times(nil)
	bySystem := make([]time.Duration, len(times))
	for b.Loop() {
		c.srv.WakeWorkers() // as Server.Run does: see BenchmarkTick
		c.send()
		start := time.Now()
		st := c.srv.Tick()
		inTick += time.Since(start)
		ticks++
		relays += st.Relays
		out += st.BytesOut
		parallel += st.Parallel
		busy += st.Busy
		times = sched.Times(times[:0])
		for i, t := range times {
			bySystem[i] += t.Serial + t.Units
			own += t.Serial
		}
	}
	perTick := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(ticks) }
	b.ReportMetric(perTick(inTick), "us/tick")
	b.ReportMetric(perTick(inTick-parallel), "serial-us/tick")
	b.ReportMetric(perTick(parallel), "parallel-us/tick")
	b.ReportMetric(perTick(busy), "busy-us/tick")
	b.ReportMetric(perTick(own), "goroutine-us/tick")
	b.ReportMetric(float64(relays)/float64(ticks), "relays/tick")
	b.ReportMetric(float64(out)/float64(ticks), "bytes/tick")
	for i, t := range times {
		b.ReportMetric(perTick(bySystem[i]), t.Name+"-us")
	}
}

// BenchmarkDormantProps is world/10,000 with the shipped defaults, alone
// and with 100,000 props that never change spread over its map: what
// actors that stand still cost a tick. A prop that has not changed is
// never due to anyone, so it adds no relay pairs; what it costs is the
// tick's per-actor passes over the world (the snapshot and the frame).
//
//	go test -run '^$' -bench 'BenchmarkDormantProps' -benchtime=50x -count 6 . | benchstat -col /props -
func BenchmarkDormantProps(b *testing.B) {
	for _, props := range []int{0, 100_000} {
		b.Run(fmt.Sprintf("props=%d", props), func(b *testing.B) {
			c := newBenchCrowd(b, "world", 10_000, modeNamed("parallel+interest+budget"))
			w := c.srv.World()
			rng := rand.New(rand.NewPCG(7, 7))
			side := float32(scenario.WorldChunks) * scenario.ChunkSize
			for range props {
				w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: rng.Float32() * side, Y: rng.Float32() * side}})
			}
			for range warmUpTicks { // the props' appears go out, then nothing more
				c.tick()
			}
			measureTicks(b, c)
		})
	}
}

// BenchmarkWorldLife is the world of 10,000 players with life in it: as
// many NPCs, which a system of the game's own walks a step every tick, and
// 100,000 props that never change, each part on and off, with the shipped
// defaults. It is the baseline for actors that cost nothing while they do
// nothing: props=100000 against props=0 is what idle props cost a tick.
//
//	go test -run '^$' -bench 'BenchmarkWorldLife' -benchtime 30x .
func BenchmarkWorldLife(b *testing.B) {
	for _, life := range []struct{ npcs, props int }{{0, 0}, {10_000, 0}, {0, 100_000}, {10_000, 100_000}} {
		b.Run(fmt.Sprintf("npcs=%d/props=%d", life.npcs, life.props), func(b *testing.B) {
			c := newLifeCrowd(b, life.npcs, life.props, modeNamed("parallel+interest+budget"))
			for range warmUpTicks {
				c.tick()
			}
			measureTicks(b, c)
		})
	}
}

// newLifeCrowd is the world of 10,000 players with npcs NPCs that a
// system walks (npcWalk) and props props that never change, spread over
// its map.
func newLifeCrowd(tb testing.TB, npcs, props int, m tickMode) *benchCrowd {
	pop, err := scenario.New("world", 10_000, 1)
	require.NoError(tb, err)
	walk := &npcWalk{}
	return newCrowdWith(tb, pop, m, func(srv *throng.Server) int {
		w := srv.World()
		rng := rand.New(rand.NewPCG(7, 7))
		side := float32(scenario.WorldChunks) * scenario.ChunkSize
		for range props {
			w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: rng.Float32() * side, Y: rng.Float32() * side}, Prop: true})
		}
		for range npcs {
			walk.ids = append(walk.ids, w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: rng.Float32() * side, Y: rng.Float32() * side}}))
		}
		walk.world, walk.side = w, side
		walk.transforms = ark.NewMap[components.Transform](w.Ark())
		require.NoError(tb, srv.AddSystem(walk))
		return npcs + props
	})
}

// npcWalk walks every NPC of its list a step a tick, each on its own
// heading, back and forth so that they stay on the map. It keeps each
// NPC's entity and the step of its heading, as a game's NPC system would,
// so that a tick costs a Transform write an NPC.
type npcWalk struct {
	world      *ecs.World
	transforms *ark.Map[components.Transform]
	ids        []components.ActorID
	entities   []ark.Entity
	steps      [][2]float32
	side       float32
	tick       int
}

func (n *npcWalk) Name() string { return "npc-walk" }

func (n *npcWalk) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform]())
}

func (n *npcWalk) RunSerial(*scheduler.Tick) {
	if n.entities == nil { // their spawns are applied by the first tick
		for i, id := range n.ids {
			e, ok := n.world.Entity(id)
			if !ok {
				return
			}
			heading := float64(i%360) * math.Pi / 180
			n.entities = append(n.entities, e)
			n.steps = append(n.steps, [2]float32{5 * float32(math.Cos(heading)), 5 * float32(math.Sin(heading))})
		}
	}
	n.tick++
	sign := float32(1)
	if (n.tick/300)%2 == 1 {
		sign = -1
	}
	for i, e := range n.entities {
		t := n.transforms.Get(e)
		t.X = min(max(t.X+sign*n.steps[i][0], 0), n.side-1)
		t.Y = min(max(t.Y+sign*n.steps[i][1], 0), n.side-1)
		t.Yaw = float32(i%360) * math.Pi / 180
	}
}

// BenchmarkThrottledTick is BenchmarkTick for a server that cannot keep
// up, beside the same server unpressed: throttle=full turns adaptive
// throttling on with a budget no tick meets, so that every cluster is at
// full pressure (see throttleBudget); throttle=off is BenchmarkTick's mode
// as it is. Without the per-connection budget, pressure spaces far pairs
// to the longest throttle period (maxThrottleSkipTicks, 8); with it (the
// shipped combination, mode ...+budget) pressure tightens each client's
// budget instead. Either way a throttled tick must cost less than the same
// tick unthrottled: overload control sheds work, never adds it.
//
//	go test -run '^$' -bench 'BenchmarkThrottledTick' -benchtime=100x -count 6 . | benchstat -col /throttle -
func BenchmarkThrottledTick(b *testing.B) {
	for _, name := range []string{"square", "town"} {
		for _, m := range []string{"inline+interest", "parallel+interest", "parallel+interest+budget"} {
			for _, throttled := range []bool{false, true} {
				mode := modeNamed(m)
				mode.throttled = throttled
				level := map[bool]string{false: "off", true: "full"}[throttled]
				b.Run(fmt.Sprintf("scenario=%s/players=1000/mode=%s/throttle=%s", name, m, level), func(b *testing.B) { benchmarkTick(b, name, 1000, mode) })
			}
		}
	}
}

// BenchmarkPacedTick measures a tick as a running server has it: ticks a
// few milliseconds apart, so that the pool's workers go to sleep between
// them, with and without waking them ahead of the tick as Server.Run does
// (parallelism.workerWakeAheadMicros, Server.WakeWorkers). BenchmarkTick
// runs ticks back to back and wakes the workers before each one.
// Where a sleeping thread is slow to wake (a virtual machine may take
// hundreds of microseconds), a paced tick without the wake-up
// runs its first parallel phase, or all of a short tick, on the tick
// goroutine alone.
//
//	go test -run '^$' -bench 'BenchmarkPacedTick' -benchtime=100x .
func BenchmarkPacedTick(b *testing.B) {
	const gap = 3 * time.Millisecond // between one tick's end and the next's start
	for _, sc := range []struct {
		name string
		n    int
	}{{"square", 400}, {"square", 1000}, {"world", 10000}} {
		for _, wake := range []bool{false, true} {
			b.Run(fmt.Sprintf("scenario=%s/players=%d/wake=%v", sc.name, sc.n, wake), func(b *testing.B) {
				c := newBenchCrowd(b, sc.name, sc.n, modeNamed("parallel+interest"))
				ahead := c.srv.Settings().Parallelism.WakeAhead()
				var t tickTimer
				for b.Loop() {
					c.send()
					if wake {
						time.Sleep(gap - ahead)
						c.srv.WakeWorkers()
						time.Sleep(ahead)
					} else {
						time.Sleep(gap)
					}
					t.tick(c)
				}
				t.report(b)
			})
		}
	}
}

// BenchmarkTickAtRate is BenchmarkTick's shipped-defaults crowds ticked at
// the server's rate (paced=true), as Server.RunTicks paces them: each tick
// on the next slot of the period's grid (30 Hz), the workers woken
// parallelism.workerWakeAheadMicros before it, the cores idle in between;
// and back to back (paced=false), as BenchmarkTick runs them. us/tick is
// the server's Tick alone, and paced, it is what the crowd example's
// work_ms reads live with the same crowd. On hosts that slow a core left
// idle for most of a period (a virtual machine's, or a power governor's),
// the same tick is slower paced, and the live server is too, for a reason
// that is not the server's: compare the live figure with the paced one.
//
//	go test -run '^$' -bench 'BenchmarkTickAtRate' -benchtime=300x .
func BenchmarkTickAtRate(b *testing.B) {
	for _, sc := range []struct {
		name string
		n    int
	}{{"square", 3000}, {"world", 10000}} {
		for _, paced := range []bool{false, true} {
			b.Run(fmt.Sprintf("scenario=%s/players=%d/paced=%v", sc.name, sc.n, paced), func(b *testing.B) {
				c := newBenchCrowd(b, sc.name, sc.n, modeNamed("parallel+interest+budget"))
				ahead := c.srv.Settings().Parallelism.WakeAhead()
				var t tickTimer
				next := time.Now()
				for b.Loop() {
					c.send()
					if !paced {
						c.srv.WakeWorkers()
						t.tick(c)
						continue
					}
					next = next.Add(c.period)
					if now := time.Now(); now.After(next) {
						next = now // a tick that overran: the next one at once
					}
					time.Sleep(time.Until(next.Add(-ahead)))
					c.srv.WakeWorkers()
					time.Sleep(time.Until(next))
					t.tick(c)
				}
				t.report(b)
			})
		}
	}
}

// tickTimer sums the time of the server's Tick alone over a benchmark's
// ticks, for benchmarks that wait between them.
type tickTimer struct {
	in    time.Duration
	ticks int
}

// tick runs and times one of c's server ticks.
func (t *tickTimer) tick(c *benchCrowd) {
	start := time.Now()
	c.srv.Tick()
	t.in += time.Since(start)
	t.ticks++
}

// report reports the mean as us/tick.
func (t *tickTimer) report(b *testing.B) {
	b.ReportMetric(float64(t.in)/float64(time.Microsecond)/float64(t.ticks), "us/tick")
}

// BenchmarkNearestSenders is BenchmarkTick's shipped defaults in a square
// with connection.nearestSenders off (0, the default) and at 20: what it
// costs to send every client its twenty nearest every tick, beside the
// rest its budget thins.
//
//	go test -run '^$' -bench 'BenchmarkNearestSenders' -benchtime 100x .
func BenchmarkNearestSenders(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000} {
		for _, k := range []int{0, 20} {
			b.Run(fmt.Sprintf("players=%d/nearest=%d", n, k), func(b *testing.B) {
				m := modeNamed("parallel+interest+budget")
				m.nearest = new(k)
				measureTicks(b, newBenchCrowd(b, "square", n, m))
			})
		}
	}
}

// TestSteadyStateTickAllocatesNothing pins the promise behind allocs/op: once
// warmed up, a crowded tick, the bots' sends included, allocates nothing.
// The pool has four workers whatever GOMAXPROCS is (AllocsPerRun sets it to
// 1).
//
// AllocsPerRun rounds the mean down, which would hide a buffer that still
// grows every few ticks, so the bytes allocated over further ticks are
// checked as well. They are allowed a few hundred: a fresh process's Go
// runtime still settles its cache of channel-wait records (sudogs, 112
// bytes each) as the tick goroutine and the workers block on different Ps,
// while a growing batch is kilobytes.
func TestSteadyStateTickAllocatesNothing(t *testing.T) {
	m := modeNamed("parallel+interest")
	m.workers = 4
	c := newBenchCrowd(t, "square", 100, m)
	const runs = 100
	assert.Zero(t, testing.AllocsPerRun(runs, c.tick), "allocations per tick of square/100, parallel+interest")

	// Like AllocsPerRun, measure on one P: with several, the runtime's own
	// per-P caches of channel-wait records refill now and then while the
	// machine is loaded, which is not the tick allocating.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		c.tick()
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1024),
		"bytes allocated in %d more ticks of square/100, parallel+interest (%d allocations)", runs, after.Mallocs-before.Mallocs)
}

// TestBudgetedCrowdTickAllocatesNothing pins it for the shipped default,
// the per-connection budget, on square/1000, whose spreads keep its
// recipients near the budget, and for the nearest senders sent ahead of a
// cut, which recipients run into. A backlog's working
// memory belongs to the relay unit and is reserved for the whole stencil
// at once, so it stops growing; with memory per recipient grown by
// doubling, a thousand recipients kept reaching new peaks for hundreds of
// ticks (145 allocations in these 320 ticks).
func TestBudgetedCrowdTickAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("a thousand players under the race detector take a minute a run; the plain build counts the allocations")
	}
	t.Run("defaults", func(t *testing.T) { checkBudgetedCrowdAllocs(t, nil, nil, false) })
	// The nearest twenty sent ahead of a cut of 24: the other four, at
	// the longest spread, thinned.
	t.Run("nearest", func(t *testing.T) { checkBudgetedCrowdAllocs(t, new(24), new(20), true) })
	// Eight records a tick: spreads past the cap (capped lists), and
	// clients reaching their first owed tick over hundreds of ticks.
	t.Run("capped", func(t *testing.T) { checkBudgetedCrowdAllocs(t, new(8), nil, true) })
}

func checkBudgetedCrowdAllocs(t *testing.T, records, nearest *int, owes bool) {
	m := modeNamed("parallel+interest+budget")
	m.workers = 4
	m.records, m.nearest = records, nearest
	c := newBenchCrowd(t, "square", 1000, m)
	owed := 0
	for range 40 {
		c.tick()
		owed += c.srv.Stats().Owed
	}
	if owes {
		require.Positive(t, owed, "the crowd must run into the budget")
	}

	// Counted over many ticks, not as AllocsPerRun's rounded-down mean:
	// the growth came in bursts, dozens of allocations every hundred ticks
	// or so. A client's owed list is made when it connects (not on its
	// first tick over the budget, which at eight records a tick comes for
	// one client or another for hundreds of ticks). The two or three left
	// are the runtime's: a heap profile of these ticks has none under a
	// Throng frame.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const ticks = 320
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range ticks {
		c.tick()
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.Mallocs-before.Mallocs, uint64(ticks/40),
		"allocations in %d ticks of square/1000, parallel+interest+budget", ticks)
}

// TestRoamingTickAllocatesNothing pins the same promise for a crowd that
// keeps crossing chunk borders, the town's and world's case: 240 bots pace
// across two borders, so every tick moves actors between chunk tables and
// sends appears and disappears. Once every chunk of their area has an
// entity (a chunk's first visit makes Ark build its table, a one-off per
// chunk) and the buffers have grown, a tick allocates nothing.
func TestRoamingTickAllocatesNothing(t *testing.T) {
	const chunk = scenario.ChunkSize
	pop := scenario.Population{Name: "borders"}
	for i := range 240 {
		border := float32(1+i%2) * chunk // the borders x = 1 and x = 2 chunks
		area := scenario.Area{MinX: border - 600, MaxX: border + 600, MinY: 100, MaxY: chunk - 100}
		x := area.MinX + float32(i*37%1200)
		y := area.MinY + float32(i*101%int(area.MaxY-area.MinY))
		pop.Spawns = append(pop.Spawns, scenario.Spawn{Transform: components.Transform{X: x, Y: y}, Area: area})
	}
	m := modeNamed("parallel+interest")
	m.workers = 4
	c := newCrowdOf(t, pop, m)
	for range 600 {
		c.tick()
	}
	require.Equal(t, 3, c.srv.World().Chunks(), "the area's three chunks have entities")

	var crossings int
	allocs := testing.AllocsPerRun(100, func() {
		c.tick()
		crossings += c.srv.Stats().Appears
	})
	assert.Zero(t, allocs, "allocations per tick of a crowd crossing chunk borders")
	assert.Greater(t, crossings, 100, "actors crossed borders (appears sent) while allocations were counted")
}

// TestATickAmongPropsAllocatesNothing pins the promise for props: 240
// players pace among 3,000 props, taking their sight again every few
// ticks (props.slackUnits 100), while ten props a tick are changed and
// told to those who see them. Once warmed up, a tick allocates nothing.
func TestATickAmongPropsAllocatesNothing(t *testing.T) {
	const chunk = scenario.ChunkSize
	pop := scenario.Population{Name: "props"}
	area := scenario.Area{MinX: 100, MaxX: 3*chunk - 100, MinY: 100, MaxY: chunk - 100}
	for i := range 240 {
		x := area.MinX + float32(i*37%int(area.MaxX-area.MinX))
		y := area.MinY + float32(i*101%int(area.MaxY-area.MinY))
		pop.Spawns = append(pop.Spawns, scenario.Spawn{Transform: components.Transform{X: x, Y: y}, Area: area})
	}
	m := modeNamed("parallel+interest")
	m.workers, m.propSlack = 4, 100
	var props []components.ActorID
	c := newCrowdWith(t, pop, m, func(srv *throng.Server) int {
		rng := rand.New(rand.NewPCG(5, 5))
		for range 3000 {
			props = append(props, srv.World().Spawn(ecs.ActorSpec{Prop: true, Transform: components.Transform{
				X: rng.Float32() * 3 * chunk, Y: rng.Float32() * chunk,
			}}))
		}
		return len(props)
	})
	w := c.srv.World()
	anims := ark.NewMap[components.Animation](w.Ark())
	next := 0
	tick := func() int {
		for range 10 {
			id := props[next%len(props)]
			next += 7
			e, ok := w.Entity(id)
			require.True(t, ok)
			anims.Get(e).Flags++
			w.Update(id)
		}
		c.tick()
		return c.srv.Stats().PropsSent
	}
	for range 300 {
		tick()
	}
	var told int
	allocs := testing.AllocsPerRun(100, func() { told += tick() })
	assert.Zero(t, allocs, "allocations per tick among props")
	assert.Greater(t, told, 1000, "props were told (changed, or come into sight) while allocations were counted")
}
