package throng_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// TestSpeedLimitCorrectsOnlyClientsThatOutrunIt: with a speed limit of 90
// units a second at 30 Hz (3 a tick), a client walking at 2.5 a tick is
// never corrected, even when two of its updates land in one tick and one
// tick has none, and may dash 20 units in one tick on what it saved; a jump of 200 units (under a chunk, but over a second's
// travel) is corrected at once; and a client running at 6 a tick is let
// through while its allowance lasts, then corrected.
func TestSpeedLimitCorrectsOnlyClientsThatOutrunIt(t *testing.T) {
	srv, err := throng.New(throng.Options{
		TickRate:     new(30),
		ClientLimits: throng.ClientLimits{MaxSpeedUnitsPerSecond: new(float32(90))},
		Admit: func(wire.Hello) (throng.Entry, error) {
			return throng.Entry{Spawn: components.Transform{X: 100, Y: 100}}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	c := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("runner")})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))
	srv.Tick()
	seq := uint32(0)
	x := float32(100)
	send := func(step float32) {
		seq++
		x += step
		require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: 100})))
	}
	corrections := func() int {
		n := 0
		c.DrainReliable(func(f []byte) {
			if typ, _ := wire.PeekType(f); typ == wire.TypeCorrection {
				n++
			}
		})
		return n
	}
	corrections()

	for i := range 90 {
		switch i % 10 {
		case 4: // nothing arrives this tick
		case 5: // the late update and this tick's arrive together
			send(2.5)
			send(2.5)
		default:
			send(2.5)
		}
		srv.Tick()
	}
	assert.Zero(t, corrections(), "walking under the limit, jitter and all")
	send(20)
	srv.Tick()
	assert.Zero(t, corrections(), "a dash of 20 in one tick, paid from the allowance saved walking")

	send(200)
	srv.Tick()
	assert.Equal(t, 1, corrections(), "a jump over a second's travel")
	x -= 200 // the client takes the correction

	ticks, first := 0, 0
	for ticks < 60 && first == 0 {
		send(6)
		srv.Tick()
		ticks++
		if corrections() > 0 {
			first = ticks
		}
	}
	require.NotZero(t, first, "running at twice the limit is corrected")
	// The allowance (up to 90) shrinks by 6 - 3 a tick: it lasts about 30.
	assert.Greater(t, first, 15, "but not before the allowance is spent")
}
