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

// TestAGatewayTellsTheClientsOfAZoneServerThatDied: two zone servers tick
// at their rate behind a gateway; zone 2's stops dead (no more ticks, its
// NATS connection gone, no goodbye). Within the gateway's zone timeout its
// client is disconnected with the reason, so that it can connect again;
// zone 1's client, quiet all along, stays: its server's heartbeats tell
// the gateway it lives.
func TestAGatewayTellsTheClientsOfAZoneServerThatDied(t *testing.T) {
	url := nettest.StartNATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	stops := map[uint32]func(){}
	for _, id := range []uint32{1, 2} {
		nc, err := nats.Connect(url)
		require.NoError(t, err)
		zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: id, Heartbeat: 50 * time.Millisecond})
		require.NoError(t, err)
		srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		zctx, stop := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			srv.Run(zctx)
		}()
		stops[id] = func() {
			nc.Close() // dead: the server says nothing more, not even goodbye
			stop()
			<-ran
		}
		t.Cleanup(func() {
			stops[id]()
			srv.Close()
		})
	}
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	front := mem.New(mem.Options{})
	const timeout = 300 * time.Millisecond
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front, ZoneTimeout: timeout,
		Route: func(_ wire.SessionID, h wire.Hello) uint32 {
			if string(h.Token) == "b" {
				return 2
			}
			return 1
		}})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())
	go gw.Run(ctx, 5*time.Millisecond)

	dial := func(token string) *mem.Client {
		c := front.Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		return c
	}
	a, b := dial("a"), dial("b")
	welcomed := func(c *mem.Client) func() bool {
		got := false
		return func() bool {
			c.DrainReliable(func(f []byte) {
				if _, err := wire.DecodeWelcome(f); err == nil {
					got = true
				}
			})
			return got
		}
	}
	require.Eventually(t, welcomed(a), 5*time.Second, time.Millisecond)
	require.Eventually(t, welcomed(b), 5*time.Second, time.Millisecond)

	stops[2]()
	require.Eventually(t, func() bool { _, closed := b.CloseReason(); return closed }, 5*time.Second, time.Millisecond)
	reason, _ := b.CloseReason()
	assert.Equal(t, gateway.ZoneGone(2), reason)
	time.Sleep(3 * timeout)
	_, closed := a.CloseReason()
	ra, _ := a.CloseReason()
	assert.False(t, closed, "zone 1's quiet client stays: %s", ra)
	st := gw.Stats()
	assert.Equal(t, uint64(1), st.ZonesLost)
	assert.Equal(t, uint64(1), st.SessionsDropped)
}

// TestAGatewayEndsTheSessionsAZoneServerForgotWhenItRestarted: zone 1's
// server restarts (a new process, the same zone) before the gateway takes
// it for dead. The next frame of a client the old process served is
// answered "unknown session", and the gateway ends that session with the
// reason, so that the client connects again; a new client is served by
// the new process.
func TestAGatewayEndsTheSessionsAZoneServerForgotWhenItRestarted(t *testing.T) {
	url := nettest.StartNATS(t)
	start := func() (*throng.Server, *nats.Conn) {
		nc, err := nats.Connect(url)
		require.NoError(t, err)
		zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 1})
		require.NoError(t, err)
		srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
		return srv, nc
	}
	srv, zoneNC := start()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())
	round := func() {
		gw.Step()
		require.NoError(t, nc.Flush())
		time.Sleep(5 * time.Millisecond)
		srv.Tick()
		time.Sleep(5 * time.Millisecond)
	}
	join := func() *mem.Client {
		c := front.Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		for deadline := time.Now().Add(2 * time.Second); ; round() {
			require.True(t, time.Now().Before(deadline), "never welcomed")
			welcomed := false
			c.DrainReliable(func(f []byte) {
				_, err := wire.DecodeWelcome(f)
				welcomed = welcomed || err == nil
			})
			if welcomed {
				return c
			}
		}
	}
	old := join()

	zoneNC.Close() // the process dies without a word
	srv, zoneNC = start()
	t.Cleanup(func() {
		srv.Close()
		zoneNC.Close()
	})
	require.NoError(t, old.Send(wire.AppendMove(nil, wire.Move{Seq: 1, X: 5})))
	for deadline := time.Now().Add(2 * time.Second); ; round() {
		require.True(t, time.Now().Before(deadline), "the old session was never ended")
		if reason, closed := old.CloseReason(); closed {
			assert.Equal(t, gateway.ZoneForgot(1), reason)
			break
		}
	}
	fresh := join()
	_, closed := fresh.CloseReason()
	assert.False(t, closed)
	assert.Equal(t, uint64(1), gw.Stats().SessionsDropped)
}
