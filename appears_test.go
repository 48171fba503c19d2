package throng_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/wire"
)

// TestANewcomerToACrowdIsToldOfItNearestFirstAPortionATick: a player
// joining 1,200 actors is told of 512 in its first tick, the nearest, and
// of the rest in the next ticks, each actor once, nearer before farther;
// an actor that leaves (out of view, still in the world) while it waits
// is never told of, and the Disappear sent for it is the last word on it.
func TestANewcomerToACrowdIsToldOfItNearestFirstAPortionATick(t *testing.T) {
	srv, err := throng.New(throng.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	rng := rand.New(rand.NewPCG(3, 4))
	where := map[uint32]components.Transform{}
	var ids []components.ActorID
	for range 1200 {
		tr := components.Transform{X: rng.Float32() * 4000, Y: rng.Float32() * 4000}
		id := srv.World().Spawn(ecs.ActorSpec{Transform: tr})
		where[id.ID], ids = tr, append(ids, id)
	}
	srv.Tick()
	c := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p0")})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))

	var me components.Transform
	told := map[uint32]int{}  // actor -> the tick it was told of
	gone := map[uint32]bool{} // actors sent a Disappear
	var reach []float64       // per tick: the farthest actor told of
	var nearest []float64     // per tick: the nearest
	for tick := 0; tick < 6; tick++ {
		if tick == 1 {
			// The farthest actor leaves while it waits its turn.
			far := ids[0]
			for _, id := range ids {
				if dist(where[id.ID], me) > dist(where[far.ID], me) {
					far = id
				}
			}
			require.NotContains(t, told, far.ID, "the farthest was not told of in the first tick")
			away := components.Transform{X: 1e6, Y: 1e6}
			srv.World().Teleport(far, away)
			where[far.ID] = away
		}
		srv.Tick()
		lo, hi, n := math.Inf(1), 0.0, 0
		c.DrainReliable(func(f []byte) {
			if w, err := wire.DecodeWelcome(f); err == nil {
				me = components.Transform{X: w.X, Y: w.Y}
			}
			if d, err := wire.DecodeDisappear(f); err == nil {
				gone[d.Actor] = true
			}
			a, err := wire.DecodeAppear(f)
			if err != nil {
				return
			}
			require.NotContains(t, told, a.Actor, "actor %d told of twice", a.Actor)
			require.False(t, gone[a.Actor], "actor %d told of after its Disappear", a.Actor)
			told[a.Actor] = tick
			d := dist(where[a.Actor], me)
			lo, hi, n = math.Min(lo, d), math.Max(hi, d), n+1
		})
		assert.LessOrEqual(t, n, throng.DefaultAppearsPerTick, "tick %d", tick)
		if n > 0 {
			reach, nearest = append(reach, hi), append(nearest, lo)
		}
	}
	require.Len(t, told, 1199, "every actor but the one that left, once")
	require.Len(t, reach, 3, "512 + 512 + 175")
	for i := 1; i < len(reach); i++ {
		assert.LessOrEqual(t, reach[i-1], nearest[i], "tick %d's actors are no nearer than tick %d's", i, i-1)
	}
	t.Log(fmt.Sprintf("farthest told of, by tick: %.0f", reach))
}

func dist(a, b components.Transform) float64 {
	return math.Hypot(float64(a.X-b.X), float64(a.Y-b.Y))
}
