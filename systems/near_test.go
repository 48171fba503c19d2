package systems

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// TestTheNearestAreHeardEveryTick: 1,200 players over two chunks, every
// one taking a step every tick, each client held to one datagram a tick
// (57 records) with 20 nearest senders. Everyone sees hundreds of
// senders, so the budget stretches every client's periods; still each
// client hears its 20 nearest (found by brute force from the positions
// the test sent, across the chunk border too) in every tick, and never
// more than its budget.
func TestTheNearestAreHeardEveryTick(t *testing.T) {
	const budget, nearest = 57, 20
	players, ticks := 1200, 40
	if raceEnabled { // the race detector's tenfold: fewer, for fewer ticks
		players, ticks = 500, 12
	}
	rng := rand.New(rand.NewPCG(71, 72))
	spawns := make([]components.Transform, players)
	for i := range spawns {
		spawns[i] = components.Transform{X: 50 + rng.Float32()*8090, Y: 50 + rng.Float32()*3990}
	}
	r := newRig(t, Config{MaxRecordsPerTick: budget, NearestSenders: nearest, Tiers: defaultTiers(t)}, spawns)
	id := map[uint32]int{} // actor id -> player
	for i, a := range r.actors {
		id[a] = i
	}
	pos := slices.Clone(spawns)
	checked, stretched := 0, 0
	r.afterRelay = func() {
		for _, s := range r.p.frame.sess[:r.p.frame.Len()] {
			if s != nil && s.spread > 1 {
				stretched++
			}
		}
	}
	for tick := range ticks {
		r.walkStep(pos, rng)
		for i, players := range r.heardPlayers(id) {
			heard := map[int]bool{}
			for _, j := range players {
				heard[j] = true
			}
			require.LessOrEqual(t, len(heard), budget, "tick %d, client %d", r.tick, i)
			if tick < 3 { // the crowd settles: spreads rise from 1
				continue
			}
			for _, j := range nearestTo(pos, i, nearest) {
				require.True(t, heard[j], "tick %d: client %d did not hear player %d, one of its %d nearest", r.tick, i, j, nearest)
			}
			checked++
		}
	}
	require.Greater(t, stretched, players*(ticks-10), "client ticks at a spread above 1")
	t.Logf("%d client ticks checked; %d at a spread above 1", checked, stretched)
}

// nearestTo returns the n players nearest to player i, by brute force,
// with the relay's arithmetic (float32 squares): every other player
// looked at, the n closest kept in order.
func nearestTo(pos []components.Transform, i, n int) []int {
	type cand struct {
		d float32
		j int
	}
	best := make([]cand, 0, n+1)
	for j, p := range pos {
		if j == i {
			continue
		}
		dx, dy, dz := p.X-pos[i].X, p.Y-pos[i].Y, p.Z-pos[i].Z
		c := cand{dx*dx + dy*dy + dz*dz, j}
		if len(best) == n && c.d >= best[n-1].d {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, c, func(a, b cand) int { return cmp.Compare(a.d, b.d) })
		best = slices.Insert(best, at, c)
		if len(best) > n {
			best = best[:n]
		}
	}
	out := make([]int, len(best))
	for k, c := range best {
		out[k] = c.j
	}
	return out
}

// TestEverySenderReachesEveryRecipientWithinTheBound: 300 players in one
// chunk, every one stepping every tick, each client held to 24 records a
// tick (with no nearest senders, and with 8): over 600 ticks every client
// hears every other player, and never waits longer between two of its
// records than the bound the budget documents: a stretched period is at
// most 255 ticks, and while records are owed a sender waits at most
// interest.WaitBound for the senders in view and the budget the nearest
// leave (weights 1 to 4), one tier period more.
func TestEverySenderReachesEveryRecipientWithinTheBound(t *testing.T) {
	cases := []int{0, 8}
	if raceEnabled { // the race detector's tenfold: one of them
		cases = cases[1:]
	}
	for _, nearest := range cases {
		t.Run(fmt.Sprintf("nearest=%d", nearest), func(t *testing.T) {
			const players, budget, ticks = 300, 24, 600
			rng := rand.New(rand.NewPCG(81, 82))
			spawns := oneChunkCrowd(rng, players)
			r := newRig(t, Config{MaxRecordsPerTick: budget, NearestSenders: nearest, Tiers: defaultTiers(t)}, spawns)
			id := map[uint32]int{}
			for i, a := range r.actors {
				id[a] = i
			}
			bound := max(255, interest.WaitBound(players-1, budget-nearest, 1, 4)) + 4
			last := make([][]int, players) // last[i][j]: the tick i last heard j
			for i := range last {
				last[i] = make([]int, players)
			}
			pos := slices.Clone(spawns)
			worst := 0
			for tick := 1; tick <= ticks; tick++ {
				r.walkStep(pos, rng)
				for i, heard := range r.heardPlayers(id) {
					for _, j := range heard {
						worst = max(worst, tick-last[i][j])
						last[i][j] = tick
					}
				}
			}
			for i := range last {
				for j, at := range last[i] {
					if i != j {
						require.Positive(t, at, "client %d never heard player %d", i, j)
						worst = max(worst, ticks+1-at)
					}
				}
			}
			require.LessOrEqual(t, worst, bound, "longest wait between two records of a pair (ticks)")
			t.Logf("bound %d ticks, longest wait %d", bound, worst)
		})
	}
}

// TestThinningKeepsEveryPairWithinItsRotation: for pairs of ids and every
// share a thinning recipient keeps, the due ticks of a pair at the
// longest period (255) that thinKept keeps are never more than
// ceil(256/keep) periods apart, and about keep/256 of them are kept.
func TestThinningKeepsEveryPairWithinItsRotation(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	for keep := thinStep; keep < 256; keep += thinStep {
		limit := (256 + keep - 1) / keep
		kept, dues := 0, 0
		for range 200 {
			sid, rid := rng.Uint32(), rng.Uint32()
			phase := uint64(interest.SenderHalf(sid)) + uint64(interest.RecipientHalf(rid))
			first := (255 - phase%255) % 255 // the pair's first due tick
			last := -1
			for k := range 64 { // 64 periods of the pair
				tick := first + uint64(k)*255
				dues++
				if thinKept(sid, rid, tick, keep) {
					kept++
					require.LessOrEqual(t, k-last, limit, "keep %d: pair %d->%d kept %d periods apart", keep, sid, rid, k-last)
					last = k
				}
			}
		}
		require.InDelta(t, float64(keep)/256, float64(kept)/float64(dues), 0.02, "keep %d", keep)
	}
}

// walkStep moves every player a random step of up to 3 units along each
// axis, sends the moves and ticks.
func (r *rig) walkStep(pos []components.Transform, rng *rand.Rand) {
	for i := range pos {
		pos[i].X += rng.Float32()*6 - 3
		pos[i].Y += rng.Float32()*6 - 3
		r.seq[i]++
		require.NoError(r.t, r.clients[i].Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: pos[i].X, Y: pos[i].Y})))
	}
	r.step()
}

// heardPlayers drains every client and returns, by client, the players
// (id: actor id to player) whose records it got this tick.
func (r *rig) heardPlayers(id map[uint32]int) [][]int {
	heard := make([][]int, len(r.clients))
	for i, c := range r.clients {
		c.DrainDatagrams(func(d []byte) {
			b, err := wire.DecodeBatch(d)
			require.NoError(r.t, err)
			for k := range b.Len() {
				heard[i] = append(heard[i], id[b.At(k).Actor])
			}
		})
		c.DrainReliable(func([]byte) {})
	}
	return heard
}

// BenchmarkNearestDue is a recipient's search for its nearest senders
// and which of them are due, alone: every recipient of a chunk crowded
// with 3,000 players (the search looks at about as many senders whatever
// the density), at the longest spread.
func BenchmarkNearestDue(b *testing.B) {
	const n = 3000
	b.Run(fmt.Sprintf("players=%d", n), func(b *testing.B) {
		spawns := oneChunkCrowd(rand.New(rand.NewPCG(9, 10)), n)
		r := newRig(b, Config{MaxRecordsPerTick: wire.MaxRecordsPerBatch, NearestSenders: 20, Tiers: defaultTiers(b)}, spawns)
		r.standStep()
		p := r.p
		sc := &p.scratch[0]
		for b.Loop() {
			for a := range int32(p.frame.Len()) {
				p.nearestDue(a, 255, sc)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/recipient")
	})
}
