package systems

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/wire"
)

// TestTeleportedActorsReachEveryoneInRange teleports a prop that never
// moves by itself (no client: no MoveInput ever arrives for it) within
// the view of a player, who already knows it (its Appear came at spawn).
// The player must hear the prop's new position once, in the tick after the
// teleport, and nothing more while it stands there again.
func TestTeleportedActorsReachEveryoneInRange(t *testing.T) {
	for _, interestOn := range []bool{false, true} {
		r := newRig(t, throttleConfig(t, interestOn), []components.Transform{{X: 100, Y: 100}})
		prop := r.p.world.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 600, Y: 100}})
		var appeared bool
		positions := func() []float32 { // the prop's records this tick, by X
			var xs []float32
			r.standStep()
			c := r.clients[0]
			c.DrainDatagrams(func(d []byte) {
				b, err := wire.DecodeBatch(d)
				require.NoError(t, err)
				for k := range b.Len() {
					if rec := b.At(k); rec.Actor == prop.ID {
						xs = append(xs, rec.X)
					}
				}
			})
			c.DrainReliable(func(f []byte) {
				if a, err := wire.DecodeAppear(f); err == nil && a.Actor == prop.ID {
					appeared = true
				}
			})
			return xs
		}
		positions() // the spawn is applied in this tick's join
		require.True(t, appeared, "the prop appears to the player when it spawns")
		for range 3 {
			assert.Empty(t, positions(), "a prop standing still is not relayed")
		}
		r.p.world.Teleport(prop, components.Transform{X: 900, Y: 300})
		assert.Empty(t, positions(), "applied in this tick's join, after the relay")
		assert.Equal(t, []float32{900}, positions(), "interest %v: the new position, in the tick after the teleport", interestOn)
		for range 3 {
			assert.Empty(t, positions(), "standing still again")
		}
	}
}
