package systems

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// rig drives a Pipeline inline, phase by phase, over the in-memory
// transport: the systems-level twin of the server's schedule.
type rig struct {
	t       testing.TB
	p       *Pipeline
	clients []*mem.Client
	actors  []uint32
	spawns  []components.Transform
	seq     []uint32
	tick    uint64
	// Optional hooks around the Relay phase, for tests that read the frame
	// as the relay sees it.
	beforeRelay, afterRelay func()
	// routeInputs applies the Move frames as the ingest system does on the
	// pool: routed to buckets, the buckets on goroutines of their own.
	routeInputs bool
	routed      int // Move frames routed so far
	// joinTick gives the join a scheduler.Tick (without a pool: its
	// passes run one after another on the test's goroutine), as the
	// join system does, instead of nil.
	joinTick bool
	// quiet, when set, keeps client i from sending on the ticks it
	// reports: its actor has not changed since.
	quiet func(i int) bool
}

func newRig(t testing.TB, cfg Config, spawns []components.Transform) *rig {
	t.Helper()
	return newClassRig(t, cfg, spawns, nil)
}

// newClassRig is newRig whose player i is admitted with class classes[i]
// (ClassPlayer past the end of classes).
func newClassRig(t testing.TB, cfg Config, spawns []components.Transform, classes []uint8) *rig {
	t.Helper()
	mem := mem.New(mem.Options{})
	world := ecs.NewWorld(4096)
	cfg.ChunkSize, cfg.TickRate = 4096, 30
	cfg.Shards = ShardPlan{Separation: 4, MinShardActors: 1, ShardsPerCluster: 4}
	cfg.Admit = func(h wire.Hello) (Entry, error) {
		var i int
		_, err := fmt.Sscanf(string(h.Token), "p%d", &i)
		e := Entry{Spawn: spawns[i]}
		if i < len(classes) {
			e.Class = classes[i]
		}
		return e, err
	}
	p, err := New(cfg, world, mem)
	require.NoError(t, err)
	r := &rig{t: t, p: p, spawns: spawns, seq: make([]uint32, len(spawns)), actors: make([]uint32, len(spawns))}
	for i := range spawns {
		c := mem.Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p%d", i)})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		r.clients = append(r.clients, c)
	}
	r.step()
	for i, c := range r.clients {
		c.DrainReliable(func(f []byte) {
			if w, err := wire.DecodeWelcome(f); err == nil {
				r.actors[i] = w.Actor
			}
		})
		require.NotZero(t, r.actors[i])
	}
	return r
}

// step runs one tick; every player first sends an update in place.
func (r *rig) step() {
	r.tick++
	p := r.p
	if r.routeInputs {
		r.routed += p.routeInputs(r.tick)
		var wg sync.WaitGroup
		for b := range p.buckets {
			wg.Go(func() { p.applyInputs(b) })
		}
		wg.Wait()
	} else {
		p.ingest(r.tick)
	}
	p.prepare(&scheduler.Tick{Number: r.tick})
	p.world.Guard()
	p.parallelAt = time.Now()
	for i := range p.frame.shards {
		p.move.RunUnit(i)
	}
	p.beginRelay(&scheduler.Tick{Number: r.tick})
	if r.beforeRelay != nil {
		r.beforeRelay()
	}
	for i := range p.frame.shards {
		p.relay.RunUnit(i)
	}
	if r.afterRelay != nil {
		r.afterRelay()
	}
	p.world.Release()
	if r.joinTick {
		p.join(&scheduler.Tick{Number: r.tick})
		return
	}
	p.join(nil)
}

// standStep sends an update in place for every player and ticks.
func (r *rig) standStep() {
	for i, c := range r.clients {
		if r.quiet != nil && r.quiet(i) {
			continue
		}
		r.seq[i]++
		s := r.spawns[i]
		require.NoError(r.t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: s.X, Y: s.Y, WorldOrCell: s.WorldOrCell})))
	}
	r.step()
}

// stand sends an update in place for every player and ticks; it returns
// who heard whom: heard[recipient][sender] records this tick.
func (r *rig) stand() map[int]map[uint32]int {
	r.standStep()
	heard := map[int]map[uint32]int{}
	for i, c := range r.clients {
		heard[i] = map[uint32]int{}
		c.DrainDatagrams(func(d []byte) {
			b, err := wire.DecodeBatch(d)
			require.NoError(r.t, err)
			for k := range b.Len() {
				heard[i][b.At(k).Actor]++
			}
		})
		c.DrainReliable(func([]byte) {})
	}
	return heard
}

// oneChunkCrowd places n players at random in chunk (0, 0), all in view
// of each other, drawing from rng.
func oneChunkCrowd(rng *rand.Rand, n int) []components.Transform {
	spawns := make([]components.Transform, 0, n)
	for range n {
		spawns = append(spawns, components.Transform{X: 50 + rng.Float32()*3990, Y: 50 + rng.Float32()*3990})
	}
	return spawns
}

// defaultTiers returns the default interest table: full rate within half
// a chunk, periods 2 to 4 further out.
func defaultTiers(t testing.TB) interest.Tiers {
	t.Helper()
	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	require.NoError(t, err)
	return tiers
}

func throttleConfig(t *testing.T, interestOn bool) Config {
	thr, err := interest.NewThrottle(4096, 3)
	require.NoError(t, err)
	cfg := Config{Throttle: thr, BudgetMicros: 8000}
	if interestOn {
		cfg.Tiers = defaultTiers(t)
	}
	return cfg
}

// overload makes every cluster cost far more than the budget.
func overload(r *rig, on bool) {
	r.p.loads.extra = nil
	if on {
		r.p.loads.extra = func(grid.AreaKey) time.Duration { return 50 * time.Millisecond }
	}
}

func TestThrottlingSparesNearPairsAndSpacesFarOnesEvenly(t *testing.T) {
	// Listener at 100; a near speaker 1000 away, a far one 5000 away (past
	// throttleDistanceUnits 4096, in the next chunk).
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 1100, Y: 100}, {X: 5100, Y: 100}}
	r := newRig(t, throttleConfig(t, false), spawns)
	overload(r, true)
	for range 10 { // pressure rises one level per overloaded tick, to 2
		r.stand()
	}
	require.Equal(t, 2, r.p.Stats().Pressure)
	near, far := r.actors[1], r.actors[2]
	var farHeard []int
	for range 30 {
		heard := r.stand()
		require.Equal(t, 1, heard[0][near], "near pairs are never throttled")
		farHeard = append(farHeard, heard[0][far])
	}
	for w := 0; w+3 <= len(farHeard); w++ {
		require.Equal(t, 1, farHeard[w]+farHeard[w+1]+farHeard[w+2], "far pair: once in every window of 3: %v", farHeard)
	}
	assert.Positive(t, r.p.Stats().Throttled)

	overload(r, false)
	for range 3 * interest.DefaultReleaseTicks {
		r.stand()
	}
	assert.Zero(t, r.p.Stats().Pressure, "pressure decays once the load is gone")
	for range 5 {
		assert.Equal(t, 1, r.stand()[0][far], "and far pairs are heard every tick again")
	}
}

func TestThrottleAndInterestTakeTheLargerPeriod(t *testing.T) {
	// 7000 apart: interest period 4; throttle at full pressure: 3. Together 4, not 12.
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 7100, Y: 100}}
	r := newRig(t, throttleConfig(t, true), spawns)
	overload(r, true)
	for range 10 {
		r.stand()
	}
	require.Equal(t, 2, r.p.Stats().Pressure)
	var heard []int
	for range 24 {
		heard = append(heard, r.stand()[0][r.actors[1]])
	}
	for w := 0; w+4 <= len(heard); w++ {
		require.Equal(t, 1, heard[w]+heard[w+1]+heard[w+2]+heard[w+3], "once in every window of 4: %v", heard)
	}
}

func TestEveryOwedSenderArrivesWithinTheBoundAndNearOnesMoreOften(t *testing.T) {
	// One listener at the centre of a chunk and 400 senders around it, all
	// updating every tick; the listener may be sent 100 records a tick.
	const senders, budget = 400, 100
	spawns := []components.Transform{{X: 2048, Y: 2048}}
	for i := range senders {
		ring := float32(500 + 3000*(i%4)/3) // 500, 1500, 2500, 3500 units away
		angle := float64(i) * 0.7
		spawns = append(spawns, components.Transform{
			X: 2048 + ring*float32(math.Cos(angle)), Y: 2048 + ring*float32(math.Sin(angle)),
		})
	}
	cfg := Config{MaxRecordsPerTick: budget, Tiers: defaultTiers(t)}
	r := newRig(t, cfg, spawns)
	bound := interest.WaitBound(senders, budget, 1, 4)
	last := map[uint32]int{}
	count := map[uint32]int{}
	worst := 0
	const ticks = 120
	for k := 1; k <= ticks; k++ {
		heard := r.stand()
		require.LessOrEqual(t, len(heard[0]), budget)
		for id := range heard[0] {
			worst = max(worst, k-last[id])
			last[id] = k
			count[id]++
		}
	}
	for i := 1; i <= senders; i++ {
		id := r.actors[i]
		require.Positive(t, count[id], "sender %d never arrived", i)
		worst = max(worst, ticks+1-last[id])
	}
	assert.LessOrEqual(t, worst, bound+4, "longest wait (ticks) within the documented bound plus one period")
	var near, far int
	for i := 1; i <= senders; i++ {
		if (i-1)%4 == 0 {
			near += count[r.actors[i]]
		} else if (i-1)%4 == 3 {
			far += count[r.actors[i]]
		}
	}
	assert.Greater(t, near, far, "close senders are sent more often than far ones")
	t.Logf("bound %d ticks, worst wait %d; near sends %d, far sends %d", bound, worst, near, far)
}

// TestUnderTheBudgetNPCsWaitNoLongerThanPlayers: a listener among 200
// players and 200 NPCs on the same four rings, all moving every tick, with
// room for 100 records a tick: every sender, player or NPC, arrives within
// interest.WaitBound, and NPCs of the players' rank are sent as often as
// players at the same distance.
func TestUnderTheBudgetNPCsWaitNoLongerThanPlayers(t *testing.T) {
	players, npcs := budgetRings(t, 0)
	for ring := range 4 {
		assert.InDelta(t, players[ring], npcs[ring], float64(players[ring])/10, "ring %d: NPCs are sent as often as players", ring)
	}
}

// TestUnderTheBudgetPlayersComeBeforeNPCsOfALowerRank: the same rings with
// NPCs a rank below the players (Class.Rank 1, the server's default): at
// every distance players are sent more often than NPCs, and still no NPC
// waits past interest.WaitBound, whose weights ranks keep within 1..4.
func TestUnderTheBudgetPlayersComeBeforeNPCsOfALowerRank(t *testing.T) {
	players, npcs := budgetRings(t, 1)
	for ring := range 4 {
		assert.Greater(t, players[ring], npcs[ring], "ring %d: players before NPCs", ring)
	}
	assert.Greater(t, npcs[0], npcs[3], "near NPCs before far ones")
}

// budgetRings runs the rings of TestUnderTheBudgetNPCsWaitNoLongerThanPlayers
// with NPCs of rank rank, checks every wait against the bound and returns
// the sends of players and of NPCs, by ring.
func budgetRings(t *testing.T, rank uint8) (players, npcSends [4]int) {
	const pairs, budget = 200, 100
	at := func(i int, npc bool, jiggle float32) components.Transform {
		angle := float64(i) * 0.7
		if npc {
			angle += 0.35
		}
		ring := float32(500+1000*(i%4)) + jiggle
		return components.Transform{X: 2048 + ring*float32(math.Cos(angle)), Y: 2048 + ring*float32(math.Sin(angle))}
	}
	spawns := []components.Transform{{X: 2048, Y: 2048}}
	for i := range pairs {
		spawns = append(spawns, at(i, false, 0))
	}
	cfg := Config{MaxRecordsPerTick: budget, Tiers: defaultTiers(t), Classes: []Class{components.ClassNPC: {Rank: rank}}}
	r := newRig(t, cfg, spawns)
	npcs := make([]components.ActorID, pairs)
	for i := range npcs {
		npcs[i] = r.p.world.Spawn(ecs.ActorSpec{Transform: at(i, true, 0)})
	}
	r.stand()
	bound := interest.WaitBound(2*pairs, budget, 1, 4)
	last, count := map[uint32]int{}, map[uint32]int{}
	worst := 0
	const ticks = 120
	for k := 1; k <= ticks; k++ {
		for i, id := range npcs { // every NPC steps a little, every tick
			e, ok := r.p.world.Entity(id)
			require.True(t, ok)
			*r.p.transforms.Get(e) = at(i, true, float32(k%2))
		}
		heard := r.stand()
		require.LessOrEqual(t, len(heard[0]), budget)
		for id := range heard[0] {
			worst = max(worst, k-last[id])
			last[id] = k
			count[id]++
		}
	}
	for i := range pairs {
		p, n := r.actors[1+i], npcs[i].ID
		for _, id := range []uint32{p, n} {
			require.Positive(t, count[id], "sender %d never arrived", id)
			worst = max(worst, ticks+1-last[id])
		}
		players[i%4] += count[p]
		npcSends[i%4] += count[n]
	}
	assert.LessOrEqual(t, worst, bound+4, "longest wait (ticks) within the documented bound plus one period")
	assert.Less(t, players[3], players[0], "far senders are sent less often than near ones")
	t.Logf("rank %d: bound %d, worst wait %d; players %v, NPCs %v", rank, bound, worst, players, npcSends)
	return players, npcSends
}

// TestThrottleLeavesWhatItCannotLengthenToTheLists: under rising pressure,
// a crowd over two chunks gets the same bytes, tick by tick, and the same
// count of pairs held back, whether every cell pair the throttle distance
// reaches goes pair by pair at every level (as before) or the relay keeps
// its lists where the throttle lengthens no period: at levels whose
// throttle period no pair past the throttle distance is below
// (relayLevel), and for classes whose periods are all at least it. With
// Under the per-connection budget pressure holds no pair back (see
// TestPressureUnderTheBudgetSendsFewerRecordsAndStarvesNoOne).
func TestThrottleLeavesWhatItCannotLengthenToTheLists(t *testing.T) {
	for _, budget := range []int{0} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			spawns := append(oneChunkCrowd(rng, 150), oneChunkCrowd(rng, 150)...)
			for i := range spawns[150:] {
				spawns[150+i].X += 4096 // the second chunk, to the east
			}
			thr, err := interest.NewThrottle(3000, 8)
			require.NoError(t, err)
			cfg := Config{Throttle: thr, BudgetMicros: 8000, Tiers: defaultTiers(t), MaxRecordsPerTick: budget}
			lists, pairs := newRig(t, cfg, spawns), newRig(t, cfg, spawns)
			pairs.p.throttleEveryReach = true
			overload(lists, true)
			overload(pairs, true)
			levels := map[int]bool{}
			for tick := range 40 {
				for _, r := range []*rig{lists, pairs} {
					for i, c := range r.clients {
						r.seq[i]++
						s := spawns[i]
						step := float32((tick+i)%7) * 30
						require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: s.X + step, Y: s.Y + step})))
					}
					r.step()
				}
				for i := range spawns {
					var a, b []byte
					lists.clients[i].DrainDatagrams(func(d []byte) { a = append(a, d...) })
					pairs.clients[i].DrainDatagrams(func(d []byte) { b = append(b, d...) })
					require.True(t, bytes.Equal(a, b), "tick %d: client %d got different bytes", tick, i)
					lists.clients[i].DrainReliable(func([]byte) {})
					pairs.clients[i].DrainReliable(func([]byte) {})
				}
				require.Equal(t, pairs.p.Stats().Throttled, lists.p.Stats().Throttled, "tick %d: pairs held back", tick)
				levels[lists.p.Stats().Pressure] = true
			}
			assert.Positive(t, lists.p.Stats().Throttled, "throttling held pairs back")
			assert.GreaterOrEqual(t, len(levels), 4, "pressure rose through several levels: %v", levels)
		})
	}
}

// TestPressureUnderTheBudgetSendsFewerRecordsAndStarvesNoOne: one chunk of
// 300 players, each sent at most 40 records a tick. Overloaded, the relay
// sheds records (each client's spread aims below its budget, see aimFor)
// instead of holding far pairs back one by one: fewer records than the
// same crowd unpressed, every recipient still hears every sender within
// the wait bound of its spread, nobody is owed anything, and once the
// load is gone the pressure comes back down and the records come back.
// budgetedCrowd is a crowd of 300 in one chunk, each client sent at most
// 40 records a tick, with adaptive throttling as shipped (throttle
// distance one chunk, 8 levels): the spawns and the pipeline's Config.
func budgetedCrowd(t *testing.T, seed uint64) ([]components.Transform, Config) {
	t.Helper()
	thr, err := interest.NewThrottle(4096, 8)
	require.NoError(t, err)
	spawns := oneChunkCrowd(rand.New(rand.NewPCG(seed, seed+1)), 300)
	return spawns, Config{Throttle: thr, BudgetMicros: 8000, Tiers: defaultTiers(t), MaxRecordsPerTick: 40}
}

func TestPressureUnderTheBudgetSendsFewerRecordsAndStarvesNoOne(t *testing.T) {
	spawns, cfg := budgetedCrowd(t, 5)
	players, budget, thr := len(spawns), cfg.MaxRecordsPerTick, cfg.Throttle
	calm, pressed := newRig(t, cfg, spawns), newRig(t, cfg, spawns)
	overload(pressed, true)
	const warm, window = 60, 240
	records := func(r *rig, heard map[int]map[uint32]int) (n int) {
		for _, h := range heard {
			for _, c := range h {
				n += c
			}
		}
		return n
	}
	for range warm {
		calm.stand()
		pressed.stand()
	}
	require.Equal(t, int(thr.MaxLevel()), pressed.p.Stats().Pressure, "the overload pressed the cluster to the top")
	last := make([]map[uint32]int, players) // recipient -> sender -> tick last heard
	for i := range last {
		last[i] = map[uint32]int{}
	}
	worst, calmRecords, pressedRecords := 0, 0, 0
	for k := 1; k <= window; k++ {
		calmRecords += records(calm, calm.stand())
		heard := pressed.stand()
		pressedRecords += records(pressed, heard)
		for r, h := range heard {
			require.LessOrEqual(t, len(h), budget, "tick %d: recipient %d over its budget", k, r)
			for id := range h {
				worst = max(worst, k-last[r][id])
				last[r][id] = k
			}
		}
		require.Zero(t, pressed.p.Stats().Owed, "tick %d: pressure owes nothing, it sends less", k)
		require.Zero(t, pressed.p.Stats().Throttled, "tick %d: and holds no pair back one by one", k)
	}
	for r := range players {
		for i, id := range pressed.actors {
			if i == r {
				continue
			}
			require.Contains(t, last[r], id, "recipient %d never heard sender %d in %d ticks", r, i, window)
			worst = max(worst, window+1-last[r][id])
		}
	}
	assert.Less(t, pressedRecords, calmRecords*3/4, "pressure sheds records: %d pressed, %d calm", pressedRecords, calmRecords)
	// A pair's period is at most the longest tier period times the
	// longest spread pressure gives (pressedSpread), and it sends once in
	// every such window.
	tiers := defaultTiers(t)
	bound := int(tiers.Longest()) * pressedSpread(tiers.Longest())
	assert.LessOrEqual(t, worst, bound, "longest wait, ticks")
	t.Logf("records a tick: calm %d, pressed %d; longest wait %d ticks (bound %d)", calmRecords/window, pressedRecords/window, worst, bound)

	overload(pressed, false)
	for range 8 * (interest.DefaultReleaseTicks + 2) {
		pressed.stand()
	}
	assert.Zero(t, pressed.p.Stats().Pressure, "the load gone, the pressure comes down")
	for range len(spreadSteps) * (spreadReleaseTicks + 2) { // a step down each spreadReleaseTicks calm ticks
		pressed.stand()
	}
	after := records(pressed, pressed.stand())
	now := records(calm, calm.stand())
	// Spreads come down a step at a time while the step below would fit
	// three quarters of the budget, so a client that came down from a long
	// spread may rest a step above one that rose to its spread: within a
	// step (a quarter) of the calm crowd's records, and far above the
	// pressed ones.
	assert.Greater(t, after, now*2/3, "and the records come back: %d calm, %d after", now, after)
	assert.Greater(t, after, 3*pressedRecords/window, "far above the pressed records")
}

// TestPressedTicksFollowThePlainRule checks the relay under full pressure,
// with the per-connection budget on, against a plain reading of the rules:
// a recipient whose spread s held through the tick, and who is owed
// nothing, is sent exactly the senders of its stencil (one chunk here)
// whose pair phase is due at their tier period stretched by s. Pressure
// changes which spread a client has, never the rule its records follow.
func TestPressedTicksFollowThePlainRule(t *testing.T) {
	spawns, cfg := budgetedCrowd(t, 9)
	players, thr, tiers := len(spawns), cfg.Throttle, cfg.Tiers
	r := newRig(t, cfg, spawns)
	overload(r, true)
	for range 60 {
		r.stand()
	}
	require.Equal(t, int(thr.MaxLevel()), r.p.Stats().Pressure)
	sessions := make([]*session, players)
	for i, c := range r.clients {
		sessions[i] = r.p.sessions.Get(c.Session())
	}
	checked, spreads := 0, map[uint8]bool{}
	for range 40 {
		before := make([]uint8, players)
		for i, s := range sessions {
			before[i] = max(s.spread, 1)
		}
		heard := r.stand()
		tick := r.tick
		for i, s := range sessions {
			if max(s.spread, 1) != before[i] || s.backlog.Owed() > 0 {
				continue // the spread moved this tick: the records are those of one of the two
			}
			want := map[uint32]int{}
			for j := range spawns {
				if j == i {
					continue
				}
				dx, dy := spawns[j].X-spawns[i].X, spawns[j].Y-spawns[i].Y
				period := stretch(tiers.PeriodSq(dx*dx+dy*dy), before[i])
				if interest.Sends(interest.Phase(r.actors[j], r.actors[i]), tick, period) {
					want[r.actors[j]] = 1
				}
			}
			require.Equal(t, want, heard[i], "tick %d, recipient %d at spread %d", tick, i, before[i])
			checked++
			spreads[before[i]] = true
		}
	}
	assert.Greater(t, checked, players*30, "recipients checked")
	assert.NotContains(t, spreads, uint8(1), "every pressed recipient had a spread")
	t.Logf("%d recipient ticks checked at spreads %v", checked, spreads)
}
