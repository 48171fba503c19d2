package scenario

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/wire"
)

// TestPlazaPlayersSpawnWithinThreeHundredMetresAroundThePlaza: every
// spawn lies in the 300 x 300 m square (21,000 units at 70 to the metre)
// whose middle 240 x 240 m (16,800 units) is the plaza, the spawns fill
// all of it, and the plaza's part holds its share of them.
func TestPlazaPlayersSpawnWithinThreeHundredMetresAroundThePlaza(t *testing.T) {
	spawn, plaza := PlazaSpawnArea(), PlazaArea()
	assert.Equal(t, float32(21000), spawn.MaxX-spawn.MinX)
	assert.Equal(t, float32(21000), spawn.MaxY-spawn.MinY)
	assert.Equal(t, float32(16800), plaza.MaxX-plaza.MinX)
	assert.Equal(t, float32(16800), plaza.MaxY-plaza.MinY)
	assert.Equal(t, (spawn.MinX+spawn.MaxX)/2, (plaza.MinX+plaza.MaxX)/2, "the plaza is in the middle")
	assert.Equal(t, (spawn.MinY+spawn.MaxY)/2, (plaza.MinY+plaza.MaxY)/2)

	p, err := New("plaza", 2000, 1)
	require.NoError(t, err)
	require.Len(t, p.Spawns, 2000)
	onPlaza := 0
	var lo, hi [2]float32 = [2]float32{math.MaxFloat32, math.MaxFloat32}, [2]float32{}
	for _, s := range p.Spawns {
		tr := s.Transform
		require.True(t, spawn.contains(tr.X, tr.Y), "spawn %+v outside the 300 m square", tr)
		require.Zero(t, tr.WorldOrCell)
		assert.Equal(t, spawn, s.Area, "each bot wanders the whole square")
		if plaza.contains(tr.X, tr.Y) {
			onPlaza++
		}
		lo = [2]float32{min(lo[0], tr.X), min(lo[1], tr.Y)}
		hi = [2]float32{max(hi[0], tr.X), max(hi[1], tr.Y)}
	}
	for axis := range 2 {
		assert.Less(t, lo[axis], float32(300), "spawns reach the square's low edge")
		assert.Greater(t, hi[axis], float32(21000-300), "and its high edge")
	}
	share := float64(onPlaza) / 2000
	assert.InDelta(t, 16800.0*16800/(21000*21000), share, 0.04, "64%% of the spawns on the plaza itself, by area")
	assert.Equal(t, PlazaGait(), p.BotGait())
}

// TestPlazaBotsJumpAndLandWhereTheyLeftTheGround: a plaza bot jumps every
// few seconds: while in the air its updates rise to JumpHeight and fall
// back, flagged FlagJumping, and it lands at exactly the height it left.
func TestPlazaBotsJumpAndLandWhereTheyLeftTheGround(t *testing.T) {
	p := Plaza(1, 3)
	b := p.Bot(0, p.BotGait(), 3)
	ground := b.Position().Z
	var jumps, airborneUpdates int
	var highest float32
	was := false
	for range 30 * 60 { // a minute at 30 Hz
		b.Advance(time.Second / 30)
		m := b.Move()
		jumping := m.Flags&FlagJumping != 0
		require.Equal(t, b.Jumping(), jumping)
		if jumping {
			airborneUpdates++
			highest = max(highest, m.Z)
			require.GreaterOrEqual(t, m.Z, ground)
			require.LessOrEqual(t, m.Z, ground+JumpHeight)
		} else {
			require.Equal(t, ground, m.Z, "on the ground between jumps")
		}
		if jumping && !was {
			jumps++
		}
		was = jumping
	}
	assert.InDelta(t, 15, jumps, 6, "a jump every 4 s or so")
	assert.InDelta(t, JumpHeight, highest, 2, "up to the jump's height")
	assert.InDelta(t, float64(jumps)*JumpTime.Seconds()*30, airborneUpdates, float64(jumps)*2, "each jump lasts JumpTime")
}

// TestPlazaBotsSendTenUpdatesASecond: walking or standing, a plaza bot's
// limiter lets at most 10 updates out in any second, and about 10.
func TestPlazaBotsSendTenUpdatesASecond(t *testing.T) {
	p := Plaza(20, 8)
	moving, standing := p.BotGait().Rates()
	assert.Equal(t, 10, moving)
	assert.Equal(t, 10, standing)
	for i := range p.Spawns {
		b := p.Bot(i, p.BotGait(), 8)
		var frame []byte
		sent := 0
		for range 30 * 20 { // 20 s at 30 Hz
			b.Advance(time.Second / 30)
			var due bool
			if frame, due = b.AppendDueMove(frame[:0]); due {
				f, err := wire.DecodeMove(frame)
				require.NoError(t, err)
				require.True(t, PlazaSpawnArea().contains(f.X, f.Y), "bot %d stays in the square", i)
				sent++
			}
		}
		assert.InDelta(t, 200, sent, 2, "bot %d: 10 a second for 20 s", i)
	}
	w, s := WanderGait().Rates()
	assert.Equal(t, [2]int{MovingUpdatesPerSecond, StandingUpdatesPerSecond}, [2]int{w, s}, "other gaits keep the server's limits")
}
