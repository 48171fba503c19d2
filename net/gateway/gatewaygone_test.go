package gateway_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestAZoneServerLetsGoOfTheSessionsOfAGatewayThatDied: two gateways
// serve one zone server, each a named player; gateway a stops dead (no
// more steps, its NATS connection gone, no goodbye). Within the zone
// transport's gateway timeout its player's session is closed: the server
// keeps her actor for her return and takes it out of the world. Gateway
// b's player, quiet all along, stays: b's heartbeats tell the server it
// lives.
func TestAZoneServerLetsGoOfTheSessionsOfAGatewayThatDied(t *testing.T) {
	url := nettest.StartNATS(t)
	zoneNC, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(zoneNC.Close)
	const timeout = 300 * time.Millisecond
	zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: zoneNC, Zone: 1, GatewayTimeout: timeout})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler),
		Admit: func(h wire.Hello) (throng.Entry, error) { return throng.Entry{Player: string(h.Token)}, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	require.NoError(t, zoneNC.Flush())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	type gw struct {
		front *mem.Transport
		stop  func()
	}
	start := func(name string) gw {
		nc, err := nats.Connect(url)
		require.NoError(t, err)
		front := mem.New(mem.Options{})
		g, err := gateway.New(gateway.Config{Conn: nc, Name: name, Front: front, Heartbeat: 50 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
		gctx, stop := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			g.Run(gctx, 5*time.Millisecond)
		}()
		stopped := false
		halt := func() {
			if !stopped {
				stopped = true
				nc.Close() // dead: nothing more, not even goodbye
				stop()
				<-ran
			}
		}
		t.Cleanup(func() {
			halt()
			g.Close()
		})
		return gw{front: front, stop: halt}
	}
	a, b := start("gw-a"), start("gw-b")
	dial := func(g gw, token string) *mem.Client {
		c := g.front.Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		return c
	}
	dial(a, "ann")
	bo := dial(b, "bo")
	tick := func() {
		srv.Tick()
		time.Sleep(5 * time.Millisecond)
	}
	require.Eventually(t, func() bool { tick(); return srv.World().Len() == 2 }, 5*time.Second, time.Millisecond, "both players in")

	a.stop()
	require.Eventually(t, func() bool {
		tick()
		_, kept := srv.Kept("ann")
		return kept
	}, 5*time.Second, time.Millisecond, "ann's actor is never kept")
	assert.Equal(t, 1, srv.World().Len(), "her actor left the world")
	for range 3 * timeout / (5 * time.Millisecond) {
		tick()
	}
	_, kept := srv.Kept("bo")
	assert.False(t, kept, "bo, quiet behind a live gateway, plays on")
	assert.Equal(t, 1, srv.World().Len())
	_, closed := bo.CloseReason()
	assert.False(t, closed)
	gateways, sessions := zt.GatewaysLost()
	assert.Equal(t, uint64(1), gateways)
	assert.Equal(t, uint64(1), sessions)
}
