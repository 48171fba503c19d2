package throng_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestANamedPlayerHearsFarPlayersOnTheSameTicksOnAnyServer: the ticks on
// which a far pair is sent follow a phase hashed from the two actors, and
// a named player's actor hashes its name (components.Client.Phase), not
// its id. Two servers whose players joined in another order, after other
// actors, so that every actor id differs, send each player the others'
// records on the same ticks: what lets zones of one world, or a server
// restarted, keep a crowd's rotation.
func TestANamedPlayerHearsFarPlayersOnTheSameTicksOnAnyServer(t *testing.T) {
	// Three players on lines of their own: ann and bob 5,000 units apart
	// (a period of 3 with the default tiers), cy 2,500 from ann (2) and
	// 5,590 from bob (3).
	home := map[string]components.Transform{
		"ann": {X: 1000, Y: 1000},
		"bob": {X: 6000, Y: 1000},
		"cy":  {X: 1000, Y: 3500},
	}
	const ticks = 36
	// heard runs a server on which the players join in order, after npcs
	// actors far from them, all walk east one unit a tick, and returns, per
	// listener and speaker, the ticks on which the listener got a record of
	// the speaker.
	heard := func(order []string, npcs int) map[[2]string][]uint64 {
		srv, err := throng.New(throng.Options{
			Logger:    slog.New(slog.DiscardHandler),
			Admission: throng.Admission{JoinAppearsPerTick: new(0)},
			Admit: func(h wire.Hello) (throng.Entry, error) {
				return throng.Entry{Player: string(h.Token), Spawn: home[string(h.Token)]}, nil
			},
		})
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		for i := range npcs {
			srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: 900_000 + float32(i)*10, Y: 900_000}})
		}
		clients := map[string]*mem.Client{}
		for _, name := range order {
			c := srv.Mem().Dial()
			hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(name)})
			require.NoError(t, err)
			require.NoError(t, c.Send(hello))
			clients[name] = c
		}
		got := map[[2]string][]uint64{}
		for n := range uint32(ticks) {
			for _, name := range order {
				h := home[name]
				require.NoError(t, clients[name].Send(wire.AppendMove(nil, wire.Move{Seq: n + 1, X: h.X + float32(n), Y: h.Y})))
			}
			tick := srv.Tick().Tick
			for _, listener := range order {
				clients[listener].DrainReliable(func([]byte) {})
				clients[listener].DrainDatagrams(func(b []byte) {
					batch, err := wire.DecodeBatch(b)
					require.NoError(t, err)
					for i := range batch.Len() {
						for speaker, h := range home {
							if batch.At(i).Y == h.Y && batch.At(i).X >= h.X && batch.At(i).X < h.X+ticks {
								got[[2]string{listener, speaker}] = append(got[[2]string{listener, speaker}], tick)
							}
						}
					}
				})
			}
		}
		return got
	}
	first := heard([]string{"ann", "bob", "cy"}, 0)
	again := heard([]string{"cy", "bob", "ann"}, 5)
	assert.Equal(t, first, again, "the ticks each player heard each other player on")

	// And the far pairs did go at their periods: a record in every third
	// tick at 5,000 units, every second at 2,500, once the crowd is in.
	count := func(listener, speaker string) int { return len(first[[2]string{listener, speaker}]) }
	assert.InDelta(t, ticks/3, count("ann", "bob"), 2, "ann hears bob every third tick")
	assert.InDelta(t, ticks/3, count("bob", "ann"), 2)
	assert.InDelta(t, ticks/2, count("ann", "cy"), 2, "and cy every second")
	assert.InDelta(t, ticks/3, count("cy", "bob"), 2)
}
