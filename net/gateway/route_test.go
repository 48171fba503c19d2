package gateway_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestAGatewayRoutesANewSessionByItsHello: with Config.Route, each new
// session goes to the zone its Hello picks: a player whose token says
// "east" is welcomed by zone 2's server, the others by zone 1's; a
// session that leaves before its Hello reaches no server.
func TestAGatewayRoutesANewSessionByItsHello(t *testing.T) {
	nc := startNATS(t)
	servers := map[uint32]*throng.Server{}
	for _, id := range []uint32{1, 2} {
		zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: id})
		require.NoError(t, err)
		x := float32(100 * id) // each zone's server spawns at a place of its own
		srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler),
			Admit: func(wire.Hello) (throng.Entry, error) {
				return throng.Entry{Spawn: components.Transform{X: x, Y: 100}}, nil
			}})
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		servers[id] = srv
	}
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front,
		Route: func(_ wire.SessionID, h wire.Hello) uint32 {
			if strings.HasPrefix(string(h.Token), "east") {
				return 2
			}
			return 1
		}})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())

	dial := func(token string) *mem.Client {
		c := front.Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		return c
	}
	leaver := front.Dial() // never says Hello
	west, east := dial("west-1"), dial("east-1")
	leaver.Close()
	welcomedAt := map[*mem.Client]float32{}
	for deadline := time.Now().Add(2 * time.Second); len(welcomedAt) < 2; {
		require.True(t, time.Now().Before(deadline), "welcomed: %v", welcomedAt)
		gw.Step()
		require.NoError(t, nc.Flush())
		time.Sleep(2 * time.Millisecond)
		for _, srv := range servers {
			srv.Tick()
		}
		require.NoError(t, nc.Flush())
		time.Sleep(2 * time.Millisecond)
		for _, c := range []*mem.Client{west, east} {
			c.DrainReliable(func(b []byte) {
				if w, err := wire.DecodeWelcome(b); err == nil {
					welcomedAt[c] = w.X
				}
			})
		}
	}
	assert.Equal(t, float32(100), welcomedAt[west], "welcomed by zone 1's server")
	assert.Equal(t, float32(200), welcomedAt[east], "welcomed by zone 2's server")
	for id, srv := range servers {
		assert.Equal(t, uint64(1), srv.Transport().Stats().Opened, "zone %d's server saw one session", id)
	}
}
