package systems

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// TestBudgetedRecipientsGetExactlyTheirDuePairs checks the relay's block
// copies for clients over their per-connection budget, whose periods are
// stretched by their spread, against visit, the pair-by-pair reading of
// the rule: each recipient that owed nothing (the fast path) and whose due
// records fitted its budget gets exactly the senders visit calls due, at
// every spread the crowd reaches.
func TestBudgetedRecipientsGetExactlyTheirDuePairs(t *testing.T) {
	t.Run("crowd", func(t *testing.T) {
		checkBudgetedRecipients(t, oneChunkCrowd(rand.New(rand.NewPCG(5, 6)), 160), nil, nil, 24, 0, true)
	})
	// Four chunks of 60: cells that straddle two bands between chunks,
	// small enough for bit sets, at spreads whose lists are stretched.
	t.Run("town", func(t *testing.T) {
		rng := rand.New(rand.NewPCG(7, 8))
		var spawns []components.Transform
		for k := range 4 {
			for _, s := range oneChunkCrowd(rng, 60) {
				s.X += float32(k%2) * 4096
				s.Y += float32(k/2) * 4096
				spawns = append(spawns, s)
			}
		}
		checkBudgetedRecipients(t, spawns, nil, nil, 60, 0, true) // spreads of 2 to 4: lists stretched, not base lists
		// The same crowd with the lists as the relay plans them: spreads 2
		// and 3 take the dense walk by their keys (spreadKeys), 4 its lists;
		// a third of the players quiet each tick, so that a sender's key
		// keeps the periods it changed within and drops the others.
		checkBudgetedRecipients(t, spawns, nil, nil, 60, 0, false, func(r *rig) {
			r.quiet = func(i int) bool { return (int(r.tick)+i)%3 == 0 }
		})
	})
}

// TestCappedSpreadsGetExactlyTheirDuePairs: 600 players in one chunk at
// a budget of 12 records a tick take spreads of 40 to 255, most of them
// from 64 to 254, which stretch the far bands' periods past the cap of
// 255: their recipients read the base lists for the bands below it and
// the capped lists for those at it, and each that owed nothing and
// fitted its budget gets exactly what visit calls due. A quarter of the
// players move once in 120 ticks, so that senders' ages reach past the
// shorter stretched periods.
func TestCappedSpreadsGetExactlyTheirDuePairs(t *testing.T) {
	c := checkBudgetedTicks(t, oneChunkCrowd(rand.New(rand.NewPCG(43, 44)), 600), nil, nil, 12, 0, true, func(r *rig) {
		r.quiet = func(i int) bool { return i%4 == 0 && (int(r.tick)+i)%120 != 0 }
	})
	require.Greater(t, c.capped, 10000, "recipient-ticks checked at spreads with capped lists")
}

// TestUnlistedSpreadsAreDecidedPairByPairAlike: when the lists may not
// grow for a spread (here: no room for any), its recipients are decided
// pair by pair, with the same result.
func TestUnlistedSpreadsAreDecidedPairByPairAlike(t *testing.T) {
	checkBudgetedRecipients(t, oneChunkCrowd(rand.New(rand.NewPCG(5, 6)), 160), nil, nil, 24, 1, false)
}

// TestBudgetedClassesGetExactlyTheirDuePairs: a crowd of several classes,
// some with tier tables of their own, under the budget, listed and not:
// every fast-path recipient gets exactly what visit calls due by each
// sender's class.
func TestBudgetedClassesGetExactlyTheirDuePairs(t *testing.T) {
	near, err := interest.NewTiers([]interest.Step{{BeyondUnits: 600, Period: 2}, {BeyondUnits: 1500, Period: 6}}, 8)
	require.NoError(t, err)
	classes := []Class{components.ClassNPC: {OwnTiers: true, Tiers: near, Rank: 1}, 3: {OwnTiers: true, Radius: 1200}}
	// Sparse chunks (one cell each) share a cell between kinds of one
	// table (cell.mixed), decided one by one under a spread.
	ranked := []Class{components.ClassNPC: {Rank: 1}, 3: {Rank: 2, Radius: 3000}, 4: {OwnTiers: true, Tiers: near}}
	// Kinds of one table alone: a sparse chunk is one cell, unsorted,
	// whose kinds differ in rank only (cell.mixed while any is ranked).
	oneTable := []Class{components.ClassNPC: {Rank: 1}, 3: {Rank: 2}}
	// Ranks 0 and 1 alone, every table of at most four bands: recipients
	// whose stencils are mostly cells of one sparse chunk each take the due
	// bytes (relay_bytes.go, a sender's rank its own), those in a crowd
	// the due keys of bits or the lists, as the relay plans them.
	crowdBytes := []Class{components.ClassNPC: {OwnTiers: true, Tiers: near, Rank: 1}, 3: {Radius: 1200}}
	sparseBytes := []Class{components.ClassNPC: {Rank: 1}, 3: {Rank: 1, Radius: 3000}, 4: {OwnTiers: true, Tiers: near}}
	for _, tc := range []struct {
		name    string
		layout  string // crowd: one chunk of 160; sparse, apart: 4 x 4 chunks of 12; both: the crowd and the chunks beside it
		classes []Class
		budget  int
		planned bool // not listed: at the default slot budget (else at 1: lists for nothing but the tier periods)
	}{
		{"crowd", "crowd", classes, 24, false}, {"sparse", "sparse", ranked, 6, false}, {"sparse, one table", "sparse", oneTable, 6, false},
		// Spreads that stretch the longest period (the NPCs' 6) past the
		// cap: base lists and capped lists, the NPCs' cells ranked.
		{"crowd, capped", "crowd", classes, 3, false},
		{"crowd, ranks 0 and 1", "crowd", crowdBytes, 24, true}, {"sparse, ranks 0 and 1", "sparse", sparseBytes, 6, true},
		{"both, ranks 0 and 1", "both", sparseBytes, 12, true},
		// At a budget of one record, past the longest spread: it keeps its lists.
		{"sparse, ranks 0 and 1, thinning", "sparse", sparseBytes, 1, true},
		// A sparse chunk of NPCs alone: its one cell is of the players'
		// table and kind, and mixed, so that its senders keep their rank.
		{"sparse, NPCs apart", "apart", ranked, 6, false},
	} {
		for _, listed := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/listed=%v", tc.name, listed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(9, 10))
				spawns := oneChunkCrowd(rng, 160)
				if tc.layout == "sparse" || tc.layout == "apart" {
					spawns = spawns[:0]
				}
				if tc.layout != "crowd" {
					for k := range 16 { // 4 x 4 chunks of 12, the crowd's among them
						for range 12 {
							spawns = append(spawns, components.Transform{X: float32(k%4)*4096 + rng.Float32()*4096, Y: float32(k/4)*4096 + rng.Float32()*4096})
						}
					}
				}
				of := make([]uint8, len(spawns))
				for i := range of {
					of[i] = []uint8{components.ClassPlayer, components.ClassNPC, 3, 4}[rng.IntN(4)]
					if tc.layout == "apart" { // players in every other chunk, NPCs in the rest
						of[i] = []uint8{components.ClassPlayer, components.ClassNPC}[i/12%2]
					}
				}
				slotBudget := 0
				if !listed && !tc.planned {
					slotBudget = 1
				}
				byted := checkBudgetedTicks(t, spawns, tc.classes, of, tc.budget, slotBudget, listed).byted
				if !listed && tc.layout != "crowd" && useAVX2 && slices.Equal(tc.classes, sparseBytes) {
					require.Positive(t, byted, "recipients checked at spreads with due bytes")
				}
			})
		}
	}
}

// checkBudgetedRecipients runs the crowd, of classes (see newClassRig),
// with the given slot budget for the due lists (0: the default) and checks
// every fast-path recipient; at spreads above 1 their lists exist as
// listed says. Not listed at the default slot budget, the lists are as the
// relay plans them: a keyed spread (spreadKeys) has none, and some
// recipients must be checked at one where the CPU has the dense walk.
func checkBudgetedRecipients(t *testing.T, spawns []components.Transform, classes []Class, of []uint8, budget, slotBudget int, listed bool, setup ...func(*rig)) (thinned int) {
	return checkBudgetedTicks(t, spawns, classes, of, budget, slotBudget, listed, setup...).thinned
}

// budgetCheck is what checkBudgetedTicks counted: recipient-ticks checked
// while thinning, at a spread with due bytes, and at a spread with base
// lists that stretches a band's period past the cap (capped lists), and
// ticks without any lists (dueLists.idle).
type budgetCheck struct{ thinned, byted, capped, idle int }

// checkBudgetedTicks is checkBudgetedRecipients, which it runs, and
// returns what it counted. Each of setup changes the rig before the first
// tick.
func checkBudgetedTicks(t *testing.T, spawns []components.Transform, classes []Class, of []uint8, budget, slotBudget int, listed bool, setup ...func(*rig)) (c budgetCheck) {
	cfg := Config{MaxRecordsPerTick: budget, NearestSenders: budget / 3, Tiers: defaultTiers(t), Classes: classes}
	var thinned, idle, byted int
	r := newClassRig(t, cfg, spawns, of)
	for _, s := range setup {
		s(r)
	}
	p := r.p
	p.frame.due.slotBudget = slotBudget
	// With lists at spreads above 1 they are what is checked, small
	// stencils or not; without, small stencils go without any lists.
	p.alwaysList = listed
	spreads := map[uint8]int{}
	checked, keyed := 0, 0
	planned := !listed && slotBudget == 0
	for range 150 {
		// The reference, taken as the relay sees the frame.
		want := map[uint32]map[uint32]bool{} // recipient id -> due sender ids
		before := map[*session]uint8{}       // their spreads before the relay
		r.beforeRelay = func() {
			f := &p.frame
			idle += b2i(f.due.idle)
			for a := range int32(f.Len()) {
				s := f.sess[a]
				if s == nil || s.backlog.Owed() > 0 {
					continue
				}
				spread := max(s.spread, 1)
				// Spread 1 has lists where the dense walk does not take it.
				wantListed := (listed || spread == 1 && !p.dense.ok) && !p.frame.due.idle
				if planned {
					wantListed = !p.frame.due.idle && (spread == 1 && !p.dense.ok || spread > 1 && p.keyed[spread] == 0 && p.byted[spread] == 0)
				}
				require.Equal(t, wantListed, p.frame.due.listed(spread), "spread %d", spread)
				if s.thin > 0 {
					thinned++
				}
				due := map[uint32]bool{}
				p.visit(a, 0, spread, s.thin, func(b int32, _, _ uint8, isDue, _ bool) {
					if isDue {
						due[f.id[b]] = true
					}
				})
				if len(due) <= cfg.MaxRecordsPerTick {
					want[f.id[a]] = due
					before[s] = spread
					spreads[spread]++
					keyed += b2i(spread > 1 && p.keyed[spread] > 0)
					byted += b2i(spread > 1 && p.byted[spread] > 0)
					tps := f.due.tierPeriods
					c.capped += b2i(f.due.based[spread] && int(spread)*int(tps[len(tps)-1]) > 255)
				}
			}
		}
		r.afterRelay = func() {
			for s, spread := range before {
				// The fast path found no more due than the budget (had it
				// found more, the backlog would have fixed the batch, and
				// raised the spread).
				require.LessOrEqual(t, max(s.spread, 1), spread, "tick %d: a recipient's spread rose though its due records fitted", r.tick)
			}
		}
		heard := r.stand()
		for i := range r.clients {
			if due, ok := want[r.actors[i]]; ok {
				got := map[uint32]bool{}
				for id, n := range heard[i] {
					require.Equal(t, 1, n, "tick %d, recipient %d: records of sender %d", r.tick, i, id)
					got[id] = true
				}
				require.Equal(t, due, got, "tick %d, recipient %d", r.tick, i)
				checked++
			}
		}
	}
	stretched := 0
	for s, n := range spreads {
		if s > 1 {
			stretched += n
		}
	}
	require.Greater(t, stretched, 1000, "recipients checked at a spread above 1: %v", spreads)
	if planned && idle < 150 && len(p.spreadKeys) > 0 {
		require.Positive(t, keyed+byted, "recipients checked at a keyed spread, or one with due bytes")
	}
	t.Logf("%d recipient-ticks checked; by spread: %v; %d at keyed spreads, %d at spreads with due bytes, %d with capped lists; %d thinning; %d ticks without lists", checked, spreads, keyed, byted, c.capped, thinned, idle)
	c.thinned, c.idle, c.byted = thinned, idle, byted
	return c
}

// TestSmallStencilsGoWithoutListsAlike: a sparse world, 6 x 6 chunks of 8
// players, every stencil small (maxSmallStencil), so the relay builds no
// lists (listsIdle): its recipients at spread 1 are decided by the tier
// table (gatherSmall), and those a budget of 4 records stretches decide
// their cells without lists; each gets exactly what visit calls due.
func TestSmallStencilsGoWithoutListsAlike(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	var spawns []components.Transform
	for k := range 36 {
		for range 8 {
			spawns = append(spawns, components.Transform{X: float32(k%6)*4096 + rng.Float32()*4096, Y: float32(k/6)*4096 + rng.Float32()*4096})
		}
	}
	idle := checkBudgetedTicks(t, spawns, nil, nil, 4, 0, false).idle
	require.Equal(t, 150, idle, "no tick built lists")
}

// TestThinnedRecipientsGetExactlyTheirDuePairs: 600 players in one chunk
// at a budget of 2 records a tick (and of 3 with the nearest sender): at
// the longest spread more than two are due a tick, so recipients thin
// (relay_thin.go), and each that owed nothing and fitted its budget gets
// exactly what visit calls due.
func TestThinnedRecipientsGetExactlyTheirDuePairs(t *testing.T) {
	budgets := []int{2, 3} // 3: and one nearest (checkBudgetedRecipients)
	if raceEnabled {
		budgets = budgets[:1]
	}
	for _, budget := range budgets {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			thinned := checkBudgetedRecipients(t, oneChunkCrowd(rand.New(rand.NewPCG(41, 42)), 600), nil, nil, budget, 0, true)
			require.Greater(t, thinned, 10000, "recipient-ticks checked while thinning")
		})
	}
}

// TestDueListsStaySmallWhateverTheSpreads: with every spread from 2 to 63
// in use, a big world keeps its lists within the limits (the tier periods
// always listed, the most used spreads first), and a small crowd, whose
// lists are small, lists many more of them.
func TestDueListsStaySmallWhateverTheSpreads(t *testing.T) {
	tiers := defaultTiers(t)
	var d dueLists
	d.setPeriods([]interest.Tiers{tiers})
	uses := func() *[256]int32 {
		var spreads [256]int32
		for s := 2; s < 64; s++ {
			spreads[s] = int32(100 - s) // spread 2 the most used
		}
		return &spreads
	}
	d.plan(7, uses(), 4096, 10000, false)
	require.LessOrEqual(t, int(d.nslots)*4096, maxListCells)
	require.LessOrEqual(t, len(d.sets)*10000, maxListPicks)
	require.True(t, d.listed(1))
	require.True(t, d.listed(2), "the most used spread has room")
	require.False(t, d.listed(63), "the least used does not")
	d.plan(7, uses(), 64, 400, false)
	require.LessOrEqual(t, int(d.nslots)*64, maxListCells)
	for s := uint8(1); s <= 16; s++ {
		require.True(t, d.listed(s), "spread %d in a small crowd", s)
	}
}

// BenchmarkBeginRelay measures the relay's setup (BeginRelay: cell bounds
// and the due lists) for a crowd in one chunk: 1,000 players with the
// default tiers (four periods), and 2,000 held to one datagram a tick, who
// settle on a few spreads and get lists for each (base lists, or the tier
// periods stretched by it; sets counts them and the tier periods).
// mode=inline builds them on the calling goroutine, mode=pool from the
// relay system's Plan on a pool of GOMAXPROCS goroutines (a unit a set;
// both are past minParallelDueWork).
//
//	go test -run '^$' -bench BenchmarkBeginRelay ./systems
func BenchmarkBeginRelay(b *testing.B) {
	for _, crowd := range []struct {
		name    string
		players int
		budget  int
	}{{"1000", 1000, 0}, {"2000-budget", 2000, wire.MaxRecordsPerBatch}} {
		spawns := oneChunkCrowd(rand.New(rand.NewPCG(7, 8)), crowd.players)
		cfg := Config{MaxRecordsPerTick: crowd.budget, Tiers: defaultTiers(b)}
		r := newRig(b, cfg, spawns)
		for range 40 {
			r.stand()
		}
		p := r.p
		// BeginRelay takes the spreads the relay units counted in the last
		// tick (and clears them): each iteration gets them back, as a tick
		// would.
		census := make([][256]int32, len(p.scratch))
		for i := range p.scratch {
			census[i] = p.scratch[i].spreads
		}
		setup := &beginRelayOnly{p: p, census: census}
		for _, mode := range []string{"inline", "pool"} {
			b.Run("crowd="+crowd.name+"/mode="+mode, func(b *testing.B) {
				sched, err := scheduler.NewBuilder().Add(setup).Build()
				require.NoError(b, err)
				var pool *scheduler.Pool
				if mode == "pool" {
					pool = scheduler.NewPool(0)
					defer pool.Close()
				}
				setup.inline = mode == "inline"
				tick := &scheduler.Tick{}
				b.ReportAllocs()
				for b.Loop() {
					sched.Run(pool, tick)
				}
				b.ReportMetric(float64(len(p.frame.due.sets)), "sets")
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
			})
		}
	}
}

// beginRelayOnly is the relay system's Plan alone, each time with the
// same spreads.
type beginRelayOnly struct {
	p      *Pipeline
	census [][256]int32
	inline bool
}

func (s *beginRelayOnly) Name() string             { return RelayName }
func (s *beginRelayOnly) Access() scheduler.Access { return scheduler.Uses() }
func (s *beginRelayOnly) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	for i := range s.census {
		s.p.scratch[i].spreads = s.census[i]
	}
	s.p.inline = s.inline
	s.p.beginRelay(t)
	return units
}
func (s *beginRelayOnly) RunUnit(int) {}

// TestOwingRecipientsPickAsTheWalkWould: recipients over their budget pick
// from the due senders and the senders they owe (pickOwed, with the
// frame's index) exactly what the walk over every sender in view
// (gatherOwed) picks: two pipelines fed the same crowd, walking about,
// one of them made to walk, send every client the same bytes, tick after
// tick; with and without the nearest sender sent ahead of the budget.
func TestOwingRecipientsPickAsTheWalkWould(t *testing.T) {
	for _, nearest := range []int{0, 1} {
		t.Run(fmt.Sprintf("nearest=%d", nearest), func(t *testing.T) { checkOwingPicks(t, nearest) })
	}
}

func checkOwingPicks(t *testing.T, nearest int) {
	spawns := oneChunkCrowd(rand.New(rand.NewPCG(11, 12)), 600)
	cfg := Config{MaxRecordsPerTick: 2, NearestSenders: nearest, Tiers: defaultTiers(t)}
	picking, walking := newRig(t, cfg, spawns), newRig(t, cfg, spawns)
	walking.beforeRelay = func() { walking.p.frame.indexed = false }
	picked := 0
	picking.beforeRelay = func() {
		if picking.p.frame.indexed {
			picked++
		}
	}
	rng := rand.New(rand.NewPCG(13, 14))
	pos := append([]components.Transform(nil), spawns...)
	owed := 0
	for tick := range 120 {
		for i := range pos {
			if rng.IntN(3) == 0 { // a third of the crowd moves a step
				pos[i].X += rng.Float32()*4 - 2
				pos[i].Y += rng.Float32()*4 - 2
			}
		}
		for _, r := range []*rig{picking, walking} {
			for i, c := range r.clients {
				r.seq[i]++
				require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: pos[i].X, Y: pos[i].Y})))
			}
			r.step()
		}
		owed += picking.p.stats.Owed
		for i := range spawns {
			var got, want [][]byte
			picking.clients[i].DrainDatagrams(func(d []byte) { got = append(got, bytes.Clone(d)) })
			walking.clients[i].DrainDatagrams(func(d []byte) { want = append(want, bytes.Clone(d)) })
			require.Equal(t, want, got, "tick %d, client %d", tick, i)
			picking.clients[i].DrainReliable(func([]byte) {})
			walking.clients[i].DrainReliable(func([]byte) {})
		}
	}
	require.Greater(t, picked, 60, "ticks on which owing recipients picked through the index")
	require.Greater(t, owed, 100, "records owed over the run")
	t.Logf("%d ticks picked through the index; %d records owed", picked, owed)
}

// TestMergeAscendingKeepsCanonicalOrder: the senders chosen from the base
// lists and from the capped lists, each ascending and none in both, come
// out as one ascending list holding them all, whichever is empty or
// wholly before the other, by either merge (mergeAscending, mergeTwoEnds:
// odd and even counts, one list spent long before the other).
func TestMergeAscendingKeepsCanonicalOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	var out []int32
	for it := range 4000 {
		a, b, want := twoChoices(rng, rng.IntN(80), 200, it%10 == 0)
		out = grownSel(out, len(want))
		out[len(want)] = -7 // past the merge: left alone
		got := mergeTwoEnds(out, a, b)
		require.Equal(t, want, out[:got], "case %d, merged from both ends", it)
		require.Equal(t, int32(-7), out[got], "case %d: written past the merge", it)
		m := len(a)
		a = a[:cap(a)]
		got = mergeAscending(a, m, b)
		require.Equal(t, want, a[:got], "case %d", it)
	}
}

// twoChoices returns two ascending lists of distinct senders below
// universe (b's moved past them all when after), n in all, split at
// random, each with room for sixteen more, and the two merged.
func twoChoices(rng *rand.Rand, n, universe int, after bool) (a, b, want []int32) {
	perm := rng.Perm(universe)[:n]
	split := rng.IntN(n + 1)
	a, b = make([]int32, 0, n+16), make([]int32, 0, n+16)
	for i, v := range perm {
		switch {
		case i < split:
			a = append(a, int32(v))
		case after:
			b = append(b, int32(v+universe))
		default:
			b = append(b, int32(v))
		}
	}
	slices.Sort(a)
	slices.Sort(b)
	want = append(slices.Clone(a), b...)
	slices.Sort(want)
	return a, b, want
}

// BenchmarkMergeChoices merges a base and a capped choice (as gatherBase
// does a run's two) of the sizes named, 1,024 different pairs taken in
// turn so that no branch predictor learns them: by binary searches
// (mergeAscending, from a copy of the base choice, which it merges into in
// place), from both ends (mergeTwoEnds), and with AVX-512 by counting
// (mergeSorted16, up to 64 senders in all). gatherBase's twoEndsRatio
// comes from where the first two cross.
func BenchmarkMergeChoices(b *testing.B) {
	for _, size := range [][2]int{{21, 17}, {27, 6}, {40, 10}, {48, 4}, {64, 6}, {90, 9}, {160, 12}, {300, 10}} {
		m, m2 := size[0], size[1]
		rng := rand.New(rand.NewPCG(uint64(m), uint64(m2)))
		const pairs = 1024
		as, bs := make([][]int32, pairs), make([][]int32, pairs)
		for p := range pairs {
			as[p], bs[p] = make([]int32, 0, m+16), make([]int32, 0, m2+16)
			for i, v := range rng.Perm(4000)[:m+m2] {
				if i < m {
					as[p] = append(as[p], int32(v))
				} else {
					bs[p] = append(bs[p], int32(v))
				}
			}
			slices.Sort(as[p])
			slices.Sort(bs[p])
		}
		out := make([]int32, m+m2+80)
		name := fmt.Sprintf("base=%d/capped=%d", m, m2)
		b.Run(name+"/searches", func(b *testing.B) {
			p := 0
			for b.Loop() {
				a, c := as[p%pairs], bs[p%pairs]
				p++
				copy(out, a)
				mergeAscending(out, m, c)
			}
		})
		b.Run(name+"/both-ends", func(b *testing.B) {
			p := 0
			for b.Loop() {
				a, c := as[p%pairs], bs[p%pairs]
				p++
				mergeTwoEnds(out, a, c)
			}
		})
		if useAVX512 && m+m2 <= 64 {
			b.Run(name+"/count16", func(b *testing.B) {
				p := 0
				for b.Loop() {
					a, c := as[p%pairs], bs[p%pairs]
					p++
					mergeSorted16(&out[0], &a[:1][0], m, &c[:1][0], m2)
				}
			})
		}
	}
}
