package systems

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// TestFannedOutVisibilityGivesEveryClientTheSameBytes: 300 players join
// at once and then stride back and forth across chunk borders, so that
// every tick's join tells thousands of Appears and Disappears. Flushed
// in parts (fanOut: each part's sessions, as the pool's units take them)
// rather than all on the tick goroutine, every client is sent the same
// frames in the same order, and the tick counts the same.
func TestFannedOutVisibilityGivesEveryClientTheSameBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var spawns []components.Transform
	for range 300 {
		spawns = append(spawns, components.Transform{X: 100 + rng.Float32()*12000, Y: 100 + rng.Float32()*3800})
	}
	cfg := Config{Parallel: true}
	serial := newRig(t, cfg, spawns)
	fanned := newRig(t, cfg, spawns)
	fanned.p.minFanned = 2
	fanned.joinTick = true
	var got [2][][]byte // per rig, per client: everything received
	got[0], got[1] = make([][]byte, len(spawns)), make([][]byte, len(spawns))
	var appears, disappears, parts int
	for tick := range 40 {
		for i, s := range spawns {
			x := s.X + float32((tick*37+i*11)%9000) // crossing a chunk border every few ticks
			for _, r := range []*rig{serial, fanned} {
				r.seq[i]++
				require.NoError(t, r.clients[i].Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: x, Y: s.Y})))
			}
		}
		for k, r := range []*rig{serial, fanned} {
			r.step()
			for i, c := range r.clients {
				c.DrainDatagrams(func(d []byte) { got[k][i] = append(got[k][i], d...) })
				c.DrainReliable(func(f []byte) { got[k][i] = append(got[k][i], f...) })
			}
		}
		require.Equal(t, serial.p.stats.Appears, fanned.p.stats.Appears, "tick %d", tick)
		require.Equal(t, serial.p.stats.Disappears, fanned.p.stats.Disappears, "tick %d", tick)
		appears += serial.p.stats.Appears
		disappears += serial.p.stats.Disappears
		parts = max(parts, fanned.p.fan.parts)
		assert.Equal(t, 1, serial.p.fan.parts, "without a tick the join flushes in one part")
		for i := range spawns {
			require.True(t, bytes.Equal(got[0][i], got[1][i]), "tick %d: client %d got different bytes (%d vs %d)", tick, i, len(got[0][i]), len(got[1][i]))
		}
	}
	t.Logf("%d appears, %d disappears, flushed in up to %d parts", appears, disappears, parts)
	assert.Greater(t, appears, 10_000, "the joins and the walk told thousands of appears")
	assert.Greater(t, disappears, 10_000, "walkers left each other's sight")
	assert.Greater(t, parts, 1, "the fanned rig flushed in parts")
}
