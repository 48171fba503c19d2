package gateway_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestATicksTrafficPastNATSLargestMessageArrivesWhole: over a NATS server
// that takes messages of at most 4 KB, a zone server sends one client 60
// Events of 200 bytes in one tick (12 KB) and one of 5,000 bytes: the
// client gets the 60 in order, cut over several messages; the one no
// message can hold is dropped and counted.
func TestATicksTrafficPastNATSLargestMessageArrivesWhole(t *testing.T) {
	nc, err := nats.Connect(nettest.StartNATSWith(t, 4096))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 1})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())

	c := front.Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))
	var actor uint32
	var events [][]byte
	read := func() {
		c.DrainReliable(func(b []byte) {
			if w, err := wire.DecodeWelcome(b); err == nil {
				actor = w.Actor
			}
			if p, err := wire.DecodeEvent(b); err == nil {
				events = append(events, p)
			}
		})
	}
	round := func() {
		gw.Step()
		require.NoError(t, nc.Flush())
		time.Sleep(5 * time.Millisecond)
		srv.Tick()
		require.NoError(t, nc.Flush())
		time.Sleep(5 * time.Millisecond)
		read()
	}
	for deadline := time.Now().Add(2 * time.Second); actor == 0; round() {
		require.True(t, time.Now().Before(deadline), "never welcomed")
	}
	id := components.ActorID{ID: actor}
	for i := range 60 {
		payload := make([]byte, 200)
		payload[0] = byte(i)
		require.True(t, srv.SendEvent(id, payload))
	}
	require.True(t, srv.SendEvent(id, make([]byte, 5000)))
	published := gw.Stats().Replies
	round()
	require.Eventually(t, func() bool { read(); return len(events) >= 60 }, 2*time.Second, time.Millisecond)
	for i, p := range events {
		assert.Equal(t, byte(i), p[0], "event %d in order", i)
	}
	assert.Len(t, events, 60, "the oversize one is not among them")
	_, sent := zt.Messages()
	assert.Greater(t, gw.Stats().Replies-published, uint64(2), "cut over several messages (%d sent in all)", sent)
	assert.Equal(t, uint64(1), zt.Oversize())
}
