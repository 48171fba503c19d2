package gateway_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

// TestWebSocketClientsPlayThroughAGateway: real WebSocket clients on
// loopback connect to a gateway, which carries them over a real NATS
// server to a zone server ticking at its rate: each is welcomed by the
// zone server and hears the other walk.
func TestWebSocketClientsPlayThroughAGateway(t *testing.T) {
	nc := startNATS(t)
	zone, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 7})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: zone, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	front, err := websocket.Listen("127.0.0.1:0", websocket.Config{})
	require.NoError(t, err)
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "edge", Front: front, Zone: func(wire.SessionID) uint32 { return 7 }})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	running := make(chan struct{})
	go func() {
		defer close(running)
		srv.Run(ctx)
	}()
	go gw.Run(ctx, 2*time.Millisecond)
	defer func() {
		cancel()
		<-running
		gw.Close()
	}()

	a, err := client.DialWebSocket(ctx, front.URL(), client.Config{Token: "a"})
	require.NoError(t, err)
	defer a.Close()
	b, err := client.DialWebSocket(ctx, front.URL(), client.Config{Token: "b"})
	require.NoError(t, err)
	defer b.Close()
	require.NotZero(t, a.Welcome().Actor)
	require.NotEqual(t, a.Welcome().Actor, b.Welcome().Actor)

	heard := 0
	for step := 1; heard < 5; step++ {
		require.Less(t, step, 500, "b never heard a walk")
		_, err := a.SendMove(wire.Move{Seq: uint32(step), X: 100 + float32(step), Y: 100})
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		b.Poll(func(f *wire.Frame) {
			if f.Type != wire.TypeBatch {
				return
			}
			for i := range f.Batch.Len() {
				if f.Batch.At(i).Actor == a.Welcome().Actor {
					heard++
				}
			}
		})
	}
	assert.Positive(t, zone.Stats().DatagramsOut)
}
