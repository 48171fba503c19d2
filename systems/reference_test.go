package systems

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// The relay's fast paths are held to its plain rule in every mode: without
// a budget by TestRelayMatchesBruteForce (the root package) and
// TestWideStencilsFollowThePlainRule (the dense walk, where the CPU has
// AVX2; its kernels pair by pair by TestDenseWritesLikeThePairs, a
// stencil of short runs as one run by TestStencilColumnsWriteLikeTheirRuns), under
// the per-connection budget by
// TestBudgetedRecipientsGetExactlyTheirDuePairs,
// TestCappedSpreadsGetExactlyTheirDuePairs (spreads that stretch a band
// past the cap, and their merge by TestMergeAscendingKeepsCanonicalOrder
// and TestMergeSorted16MergesAsTheGoLoop),
// TestUnlistedSpreadsAreDecidedPairByPairAlike,
// TestBigCellsUnderASpreadFollowThePlainRule, with classes and ranks by
// TestBudgetedClassesGetExactlyTheirDuePairs (the due bytes among them,
// whose kernel TestDueBytesWriteLikeThePairs holds pair by pair) and, for
// a tick without lists, TestSmallStencilsGoWithoutListsAlike, under the
// budget and pressure
// by TestPressedTicksFollowThePlainRule, past the longest spread by
// TestThinnedRecipientsGetExactlyTheirDuePairs (and every way of writing
// records thinned alike by TestEveryWriterThinsAlike), and under
// throttling without a budget by TestThrottledTicksFollowThePlainRule.
// The digest tests
// (TestOutboundBytesAreUnchanged, TestCrowdOutboundBytesAreUnchanged) hold
// the bytes.

// TestThrottledTicksFollowThePlainRule drives a world through rising
// pressure, and on after the load has gone, without the per-connection
// budget, and checks every recipient of every tick against visit at its
// cluster's level: it gets
// exactly the senders visit calls due, and the relay counts as many pairs
// held back by throttling alone as visit does. Two crowded chunks side by
// side and a few walkers around them give every kind of cell: one band and
// two, cells the throttle distance reaches, cells too small to classify.
// Some players skip an update now and then, so that not every sender
// changed this tick. The throttles cover periods the tables decide
// (throttledRun) and periods too long for them (pairByPair), with and
// without interest management.
func TestThrottledTicksFollowThePlainRule(t *testing.T) {
	for _, tc := range []struct {
		maxSkip    int
		interestOn bool
	}{{8, true}, {8, false}, {20, true}} {
		t.Run(fmt.Sprintf("maxSkip=%d/interest=%v", tc.maxSkip, tc.interestOn), func(t *testing.T) {
			thr, err := interest.NewThrottle(3000, tc.maxSkip)
			require.NoError(t, err)
			cfg := Config{Throttle: thr, BudgetMicros: 8000}
			if tc.interestOn {
				cfg.Tiers = defaultTiers(t)
			}
			rng := rand.New(rand.NewPCG(31, 32))
			spawns := append(oneChunkCrowd(rng, 150), oneChunkCrowd(rng, 150)...)
			for i := range spawns[150:] {
				spawns[150+i].X += 4096 // the second chunk, to the east
			}
			for range 30 { // walkers in the chunks around the crowd
				spawns = append(spawns, components.Transform{X: rng.Float32()*4*4096 - 4096, Y: rng.Float32()*3*4096 - 4096})
			}
			checkAgainstVisit(t, cfg, spawns, nil, 30, 60)
		})
	}
}

// TestWideStencilsFollowThePlainRule: nine chunks of a hundred players, a
// stencil of more cells than pointBands covers at once, are sent what
// visit calls due (the positions past the boxes decided by pointPeriod).
func TestWideStencilsFollowThePlainRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	var spawns []components.Transform
	for k := range 9 {
		for _, s := range oneChunkCrowd(rng, 100) {
			s.X += float32(k%3) * 4096
			s.Y += float32(k/3) * 4096
			spawns = append(spawns, s)
		}
	}
	checkAgainstVisit(t, Config{Tiers: defaultTiers(t)}, spawns, nil, 0, 8)
}

// checkAgainstVisit runs spawns, of classes (see newClassRig), under cfg
// for ticks ticks, the first overloaded of them under pressure, and checks
// every recipient of every tick against visit at its cluster's level.
func checkAgainstVisit(t *testing.T, cfg Config, spawns []components.Transform, classes []uint8, overloaded, ticks int) {
	rng := rand.New(rand.NewPCG(uint64(len(spawns)), 33))
	r := newClassRig(t, cfg, spawns, classes)
	p := r.p
	pos := make([][2]float32, len(spawns))
	for i, s := range spawns {
		pos[i] = [2]float32{s.X, s.Y}
	}
	levels := map[uint8]int{}
	held, checked := int64(0), 0
	for tick := range ticks {
		overload(r, tick < overloaded)
		// The reference, as the relay sees the frame: due senders by
		// recipient id, and the pairs throttling alone holds back.
		want := map[uint32]map[uint32]bool{}
		var wantHeld int64
		r.beforeRelay = func() {
			f := &p.frame
			for _, sh := range f.shards {
				for a := sh.Lo; a < sh.Hi; a++ {
					if f.session[a] == 0 {
						continue
					}
					due := map[uint32]bool{}
					p.visit(a, sh.Level, 1, 0, func(b int32, _, _ uint8, isDue, thr bool) {
						if isDue {
							due[f.id[b]] = true
						}
						if thr {
							wantHeld++
						}
					})
					want[f.id[a]] = due
					levels[sh.Level]++
				}
			}
		}
		for i, c := range r.clients {
			if rng.IntN(6) == 0 {
				continue // no update this tick
			}
			pos[i][0] += float32(rng.NormFloat64() * 40)
			pos[i][1] += float32(rng.NormFloat64() * 40)
			r.seq[i]++
			require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: pos[i][0], Y: pos[i][1]})))
		}
		r.step()
		for i, c := range r.clients {
			got := map[uint32]bool{}
			c.DrainDatagrams(func(d []byte) {
				b, err := wire.DecodeBatch(d)
				require.NoError(t, err)
				for k := range b.Len() {
					id := b.At(k).Actor
					require.False(t, got[id], "tick %d, recipient %d: sender %d twice", r.tick, i, id)
					got[id] = true
				}
			})
			c.DrainReliable(func([]byte) {})
			due, ok := want[r.actors[i]]
			require.True(t, ok, "tick %d: recipient %d not in the frame", r.tick, i)
			require.Equal(t, due, got, "tick %d, recipient %d", r.tick, i)
			checked++
		}
		require.Equal(t, wantHeld, p.Stats().Throttled, "tick %d: pairs held back", r.tick)
		held += wantHeld
	}
	if overloaded > 0 {
		assert.Positive(t, held, "throttling held pairs back")
		assert.Greater(t, len(levels), 3, "pressure passed through several levels: %v", levels)
	}
	t.Logf("%d recipient ticks checked, %d pairs held back; recipient ticks by level: %v", checked, held, levels)
}

// TestBigCellsUnderASpreadFollowThePlainRule: a chunk whose players stand
// mostly in one corner, a cell of more than maskActors, for budgeted
// clients whose spreads have lists: the big cell's two bands are merged
// from its lists (writeTwoBands) and sent as visit says.
func TestBigCellsUnderASpreadFollowThePlainRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	spawns := oneChunkCrowd(rng, 20)
	for range 70 {
		spawns = append(spawns, components.Transform{X: 2048 + rng.Float32()*1900, Y: 2048 + rng.Float32()*1900})
	}
	checkBudgetedRecipients(t, spawns, nil, nil, 30, 0, true)
}

// TestClassesFollowTheirOwnTiers: players admitted in several classes, some
// with tier tables of their own (one shared by two classes, one that sends
// every update), some with a radius, crowded in two chunks with walkers
// around, are each sent exactly what visit calls due by their senders'
// classes, with and without throttling: the relay splits cells by table
// (bucketBySet) and decides each by its own, none past its radius.
func TestClassesFollowTheirOwnTiers(t *testing.T) {
	near, err := interest.NewTiers([]interest.Step{{BeyondUnits: 800, Period: 2}, {BeyondUnits: 1600, Period: 5}, {BeyondUnits: 4000, Period: 8}}, 8)
	require.NoError(t, err)
	far, err := interest.NewTiers([]interest.Step{{BeyondUnits: 5000, Period: 3}}, 8)
	require.NoError(t, err)
	classes := []Class{
		components.ClassPlayer: {},
		components.ClassNPC:    {OwnTiers: true, Tiers: near},
		components.ClassProp:   {},
		3:                      {OwnTiers: true, Tiers: far},
		4:                      {OwnTiers: true, Tiers: near}, // the same table as NPCs: one set
		5:                      {OwnTiers: true},              // every update, at every distance
		6:                      {Radius: 2500},                // the players' table, to 2,500 units
		7:                      {OwnTiers: true, Tiers: near, Radius: 1800},
	}
	for _, throttled := range []bool{false, true} {
		t.Run(fmt.Sprintf("throttled=%v", throttled), func(t *testing.T) {
			cfg := Config{Tiers: defaultTiers(t), Classes: classes}
			overloaded := 0
			if throttled {
				thr, err := interest.NewThrottle(3000, 8)
				require.NoError(t, err)
				cfg.Throttle, cfg.BudgetMicros, overloaded = thr, 8000, 30
			}
			rng := rand.New(rand.NewPCG(51, 52))
			spawns := append(oneChunkCrowd(rng, 150), oneChunkCrowd(rng, 150)...)
			for i := range spawns[150:] {
				spawns[150+i].X += 4096
			}
			for range 30 {
				spawns = append(spawns, components.Transform{X: rng.Float32()*4*4096 - 4096, Y: rng.Float32()*3*4096 - 4096})
			}
			kinds := []uint8{components.ClassPlayer, components.ClassNPC, 3, 4, 5, 6, 7}
			of := make([]uint8, len(spawns))
			for i := range of {
				of[i] = kinds[rng.IntN(len(kinds))]
			}
			checkAgainstVisit(t, cfg, spawns, of, overloaded, 45)
		})
	}
}

// TestClassTablesAreSharedAndCellsSplitByThem: classes with equal tables
// share one set, and every cell of the frame holds the senders of one set.
func TestClassTablesAreSharedAndCellsSplitByThem(t *testing.T) {
	near, err := interest.NewTiers([]interest.Step{{BeyondUnits: 800, Period: 2}}, 8)
	require.NoError(t, err)
	cfg := Config{Tiers: defaultTiers(t), Classes: []Class{3: {OwnTiers: true, Tiers: near}, 4: {OwnTiers: true, Tiers: near}, 5: {Rank: 2}}}
	rng := rand.New(rand.NewPCG(61, 62))
	spawns := oneChunkCrowd(rng, 120)
	of := make([]uint8, len(spawns))
	for i := range of {
		of[i] = []uint8{0, 3, 4, 5}[i%4]
	}
	r := newClassRig(t, cfg, spawns, of)
	r.step()
	p := r.p
	require.Len(t, p.tierSets, 2, "the players' table and one shared by classes 3 and 4")
	f := &p.frame
	for ci, c := range f.cells {
		for a := c.actors.lo; a < c.actors.hi; a++ {
			require.Equal(t, f.classSet[f.class[a]], c.kind, "cell %d, actor %d of class %d", ci, a, f.class[a])
		}
	}
}
