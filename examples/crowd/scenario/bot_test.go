package scenario

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

func distance(a, b [3]float32) float64 {
	return math.Sqrt(float64((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2])))
}

func posOf(b *Bot) [3]float32 {
	p := b.Position()
	return [3]float32{p.X, p.Y, p.Z}
}

// TestBotsStayInTheirAreaWellUnderAChunkPerStep runs a whole town for two
// simulated minutes at 30 Hz, with a few stalled steps thrown in, and checks
// what the server would check: every step far under one chunk, the same
// worldOrCell, and the population's shape kept (nobody leaves their part).
func TestBotsStayInTheirAreaWellUnderAChunkPerStep(t *testing.T) {
	p := Town(300, 5)
	bots := p.Bots(WanderGait(), 5)
	period := time.Second / 30
	for k := range 3600 {
		dt := period
		if k%997 == 0 {
			dt = 5 * time.Second // a stalled driver: cut to MaxAdvance
		}
		for i, b := range bots {
			before := posOf(b)
			b.Advance(dt)
			// Plain ifs: testify's reflection would make this loop slow.
			if step := distance(before, posOf(b)); step > 300*MaxAdvance.Seconds()+0.01 {
				t.Fatalf("bot %d step %d: moved %.1f units, more than walking pace allows", i, k, step)
			}
			pos := b.Position()
			s := p.Spawns[i]
			if pos.WorldOrCell != s.Transform.WorldOrCell || !s.Area.contains(pos.X, pos.Y) {
				t.Fatalf("bot %d (%s) step %d left its area: %+v", i, s.Region, k, pos)
			}
		}
	}
	for i, b := range bots {
		if p.Spawns[i].Region == RegionHub {
			assert.Equal(t, grid.AreaKey{}, keyOf(b.Position()), "hub bots stay on the market square")
		}
	}
}

func TestWanderingBotsWalkStopAndTurn(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], WanderGait(), 11)
	var walking, standing, turns int
	lastYaw := b.Position().Yaw
	for range 30 * 120 {
		b.Advance(time.Second / 30)
		if b.Moving() {
			walking++
		} else {
			standing++
		}
		if y := b.Position().Yaw; y != lastYaw {
			turns++
			lastYaw = y
		}
	}
	assert.Greater(t, walking, standing, "mostly walking")
	assert.Greater(t, standing, 30*10, "but stopping for a while, again and again")
	assert.Greater(t, turns, 10)
}

func TestRestlessBotsNeverStop(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], RestlessGait(), 11)
	straight := 0
	for range 30 * 60 {
		before := posOf(b)
		b.Advance(time.Second / 30)
		require.True(t, b.Moving())
		d := distance(before, posOf(b))
		require.Greater(t, d, 0.0, "moving every tick")
		require.LessOrEqual(t, d, 10.01, "300 units a second at 30 Hz")
		if d > 9.99 {
			straight++ // not turning or bouncing off an edge
		}
	}
	assert.Greater(t, straight, 30*60*9/10)
}

// TestBotSendsAtMostThirtyUpdatesASecond drives a bot at 60 Hz for a minute
// and decodes what it sends: at most 30 updates in any second (10 while it
// stands), sequence numbers strictly increasing, positions its own.
func TestBotSendsAtMostThirtyUpdatesASecond(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], WanderGait(), 3)
	type sent struct {
		at     time.Duration
		moving bool
	}
	var sends []sent
	var now time.Duration
	var frame []byte
	var last uint32
	for k := range 60 * 60 {
		b.Advance(tickAt(k+1, 60) - now)
		now = tickAt(k+1, 60)
		var ok bool
		frame, ok = b.AppendDueMove(frame[:0])
		if !ok {
			continue
		}
		m, err := wire.DecodeMove(frame)
		require.NoError(t, err)
		require.Greater(t, m.Seq, last)
		last = m.Seq
		pos := b.Position()
		require.Equal(t, [3]float32{pos.X, pos.Y, pos.Z}, [3]float32{m.X, m.Y, m.Z})
		assert.Equal(t, b.Moving(), m.Flags == FlagWalking)
		sends = append(sends, sent{now, b.Moving()})
	}
	var moving, standing int
	for i, s := range sends {
		in := 0
		for j := i; j >= 0 && sends[j].at > s.at-time.Second; j-- {
			in++
		}
		if s.moving {
			moving++
			require.LessOrEqual(t, in, MovingUpdatesPerSecond)
		} else {
			standing++
			require.LessOrEqual(t, in, StandingUpdatesPerSecond)
		}
	}
	assert.Greater(t, moving, 30*20)
	assert.Greater(t, standing, 10*5)
}

func TestBotSnapsToTheServersCorrection(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], RestlessGait(), 3)
	frame := b.AppendMove(nil)
	frame = b.AppendMove(frame[:0])
	require.Equal(t, uint32(2), b.Seq())
	b.Correct(wire.Correction{Seq: 2, X: 100, Y: 200, Z: 5, Yaw: 1, WorldOrCell: 0})
	assert.Equal(t, [3]float32{100, 200, 5}, posOf(b))
	b.Advance(time.Second / 30)
	m, err := wire.DecodeMove(b.AppendMove(frame[:0]))
	require.NoError(t, err)
	assert.Equal(t, uint32(3), m.Seq, "sequence numbers go on")
	assert.InDelta(t, 10, distance([3]float32{100, 200, 5}, [3]float32{m.X, m.Y, m.Z}), 0.01, "it walks on from where the server put it")

	b.Correct(wire.Correction{Seq: 50, X: 100, Y: 200})
	m, err = wire.DecodeMove(b.AppendMove(frame[:0]))
	require.NoError(t, err)
	assert.Equal(t, uint32(51), m.Seq, "never behind the server's sequence number")
}

func TestBotMovedOutOfItsAreaWalksBack(t *testing.T) {
	s := Square(1, 1).Spawns[0]
	b := NewBot(s, RestlessGait(), 3)
	b.Correct(wire.Correction{X: -3000, Y: 2048})
	for range 30 * 20 {
		b.Advance(time.Second / 30)
	}
	pos := b.Position()
	assert.True(t, s.Area.contains(pos.X, pos.Y), "back home after 20 s: %+v", pos)
}

func TestWelcomePlacesTheBot(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], WanderGait(), 3)
	b.Welcome(wire.Welcome{X: 1, Y: 2, Z: 3, Yaw: 0.5, WorldOrCell: 7})
	assert.Equal(t, [3]float32{1, 2, 3}, posOf(b))
	assert.Equal(t, uint32(7), b.Position().WorldOrCell)
}

func TestBotsOfOneSeedMakeTheSameUpdates(t *testing.T) {
	run := func() []byte {
		var out []byte
		for _, b := range World(20, 1).Bots(WanderGait(), 9) {
			for range 200 {
				b.Advance(time.Second / 30)
				out, _ = b.AppendDueMove(out)
			}
		}
		return out
	}
	assert.Equal(t, run(), run())
}

// TestBotPastTheEndWrapsWithItsOwnSeed: bot i of a population starts at
// spawn i mod n, and bots sharing a spawn still walk their own ways.
func TestBotPastTheEndWrapsWithItsOwnSeed(t *testing.T) {
	p := Square(5, 2)
	bots := p.Bots(WanderGait(), 8)
	for i, b := range bots {
		assert.Equal(t, b.Position(), p.Bot(i, WanderGait(), 8).Position(), "Bots is Bot for every i")
	}
	wrapped := p.Bot(7, RestlessGait(), 8)
	twin := p.Bot(2, RestlessGait(), 8)
	assert.Equal(t, p.Spawns[2].Transform, wrapped.Position(), "bot 7 of 5 starts at spawn 2")
	for range 30 * 20 { // long enough for both to turn
		wrapped.Advance(time.Second / 30)
		twin.Advance(time.Second / 30)
	}
	assert.NotEqual(t, twin.Position(), wrapped.Position(), "but walks its own way")
	assert.Panics(t, func() { p.Bot(-1, WanderGait(), 8) })
	assert.Panics(t, func() { Population{}.Bot(0, WanderGait(), 8) })
}

func TestMoveIsTheNextUpdateAsAClientSendsIt(t *testing.T) {
	b := NewBot(Square(1, 1).Spawns[0], RestlessGait(), 3)
	b.Advance(time.Second / 30)
	m := b.Move()
	pos := b.Position()
	assert.Equal(t, wire.Move{Seq: 1, X: pos.X, Y: pos.Y, Z: pos.Z, Yaw: pos.Yaw, Flags: FlagWalking}, m)
	frame, err := wire.DecodeMove(b.AppendMove(nil))
	require.NoError(t, err)
	m.Seq = 2
	assert.Equal(t, m, frame, "AppendMove encodes the same update, numbered on")
}
