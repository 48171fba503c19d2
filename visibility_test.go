package throng_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestPlayersWhoWalkApartInOneTickAreToldTheOtherIsGone: two players in
// sight of each other cross chunk borders in the same tick, each out of
// the other's 3x3 stencil (one east, one north). Each is told the other
// is gone in that tick's join, as if only one had moved; and told again
// when they come back into sight the same way.
func TestPlayersWhoWalkApartInOneTickAreToldTheOtherIsGone(t *testing.T) {
	var spawn components.Transform
	srv, err := throng.New(throng.Options{Parallelism: throng.Parallelism{Enabled: new(false)}, Logger: slog.New(slog.DiscardHandler),
		Admit: func(wire.Hello) (throng.Entry, error) { return throng.Entry{Spawn: spawn}, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
	require.NoError(t, err)
	join := func(x, y float32) *mem.Client {
		spawn = components.Transform{X: x, Y: y}
		c := srv.Mem().Dial()
		require.NoError(t, c.Send(hello))
		srv.Tick()
		return c
	}
	// Chunks of 4096: a in (1, 0), b in (0, 1); in sight.
	a, b := join(8050, 3010), join(2525, 8050)
	srv.Tick()
	told := func(c *mem.Client) []string {
		var got []string
		var f wire.Frame
		c.DrainReliable(func(fr []byte) {
			require.NoError(t, wire.Decode(fr, &f))
			switch f.Type {
			case wire.TypeAppear:
				got = append(got, "appear")
			case wire.TypeDisappear:
				got = append(got, "disappear")
			}
		})
		c.DrainDatagrams(func([]byte) {})
		return got
	}
	assert.Equal(t, []string{"appear"}, told(a))
	assert.Equal(t, []string{"appear"}, told(b))
	move := func(seq uint32, ax, by float32) {
		require.NoError(t, a.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: ax, Y: 3010})))
		require.NoError(t, b.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: 2525, Y: by})))
		srv.Tick()
	}
	move(1, 8200, 8200) // a to (2, 0), b to (0, 2): two chunks apart both ways
	assert.Equal(t, []string{"disappear"}, told(a))
	assert.Equal(t, []string{"disappear"}, told(b))
	move(2, 8050, 8050) // both back
	assert.Equal(t, []string{"appear"}, told(a))
	assert.Equal(t, []string{"appear"}, told(b))
}
