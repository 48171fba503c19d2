package systems

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
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
	const players, budget, nearest = 1200, 57, 20
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
	for tick := range 40 {
		for i := range pos {
			pos[i].X += rng.Float32()*6 - 3
			pos[i].Y += rng.Float32()*6 - 3
			r.seq[i]++
			require.NoError(t, r.clients[i].Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: pos[i].X, Y: pos[i].Y})))
		}
		r.step()
		for i, c := range r.clients {
			heard := map[int]bool{}
			c.DrainDatagrams(func(d []byte) {
				b, err := wire.DecodeBatch(d)
				require.NoError(t, err)
				for k := range b.Len() {
					heard[id[b.At(k).Actor]] = true
				}
			})
			c.DrainReliable(func([]byte) {})
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
	require.Greater(t, stretched, players*30, "client ticks at a spread above 1")
	t.Logf("%d client ticks checked; %d at a spread above 1", checked, stretched)
}

// nearestTo returns the n players nearest to player i, by brute force,
// with the relay's arithmetic (float32 squares).
func nearestTo(pos []components.Transform, i, n int) []int {
	type cand struct {
		d float32
		j int
	}
	all := make([]cand, 0, len(pos))
	for j, p := range pos {
		if j != i {
			dx, dy, dz := p.X-pos[i].X, p.Y-pos[i].Y, p.Z-pos[i].Z
			all = append(all, cand{dx*dx + dy*dy + dz*dz, j})
		}
	}
	slices.SortFunc(all, func(a, b cand) int { return cmp.Compare(a.d, b.d) })
	out := make([]int, n)
	for k := range out {
		out[k] = all[k].j
	}
	return out
}
