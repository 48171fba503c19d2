package zone_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// TestAWebSocketPlayerWalksAcrossZonesInRealTime: two zone servers tick
// at their rate behind a gateway, over a real NATS server; a real
// WebSocket client on loopback walks from zone 1 into zone 2 at 30 moves
// a second. It is welcomed again by zone 2 on its one connection, and a
// player of zone 2 watching it gets its records up to the last place it
// walked to.
func TestAWebSocketPlayerWalksAcrossZonesInRealTime(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	url := startNATS(t)
	_, js := connect(t, url)
	_, err := zone.PublishMap(testContext(t), js, "", twoZones)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var servers []*zone.Server
	var done []chan struct{}
	for _, zn := range twoZones.Zones {
		nc, _ := connect(t, url)
		gt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: uint32(zn.ID)})
		require.NoError(t, err)
		spawn := components.Transform{X: 8000, Y: 100}
		if zn.ID == 2 {
			spawn.X = 9000
		}
		srv, err := throng.New(throng.Options{Transport: gt, Logger: slog.New(slog.DiscardHandler),
			Admit: func(wire.Hello) (throng.Entry, error) { return throng.Entry{Spawn: spawn}, nil }})
		require.NoError(t, err)
		z, err := zone.New(ctx, srv, nc, zone.Options{Zone: zn.ID, Name: zn.Owner, Gateway: gt})
		require.NoError(t, err)
		t.Cleanup(z.Close)
		servers = append(servers, z)
		ran := make(chan struct{})
		done = append(done, ran)
		go func() {
			defer close(ran)
			srv.Run(ctx)
		}()
	}
	front, err := websocket.Listen("127.0.0.1:0", websocket.Config{})
	require.NoError(t, err)
	nc, _ := connect(t, url)
	var entry atomic.Uint32 // the zone of the next player
	entry.Store(1)
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "edge", Front: front, Zone: func(wire.SessionID) uint32 { return entry.Load() }})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	go gw.Run(ctx, 2*time.Millisecond)
	defer func() {
		cancel()
		for _, ran := range done {
			<-ran
		}
		gw.Close()
	}()

	cfg := client.Config{Token: "p", MovingUpdatesPerSecond: 60}
	walker, err := client.DialWebSocket(ctx, front.URL(), cfg)
	require.NoError(t, err)
	defer walker.Close()
	entry.Store(2)
	watcher, err := client.DialWebSocket(ctx, front.URL(), cfg)
	require.NoError(t, err)
	defer watcher.Close()

	// The watcher knows the walker by zone 2's id for it, which it learns
	// from the one Appear it gets (the walker's ghost, then its actor).
	var walkerID uint32
	var lastX float32
	appears := 0
	watch := func() {
		watcher.Poll(func(f *wire.Frame) {
			switch f.Type {
			case wire.TypeAppear:
				walkerID = f.Appear.Actor
				appears++
			case wire.TypeDisappear:
				t.Errorf("the watcher was told %d disappeared", f.Disappear.Actor)
			case wire.TypeBatch:
				for i := range f.Batch.Len() {
					if r := f.Batch.At(i); r.Actor == walkerID {
						lastX = r.X
					}
				}
			}
		})
	}
	seq := uint32(0)
	x := float32(8000)
	tick := time.NewTicker(time.Second / 30)
	defer tick.Stop()
	for x < 8600 {
		<-tick.C
		seq++
		x += 20
		_, err := walker.SendMove(wire.Move{Seq: seq, X: x, Y: 100})
		require.NoError(t, err)
		walker.Poll(func(*wire.Frame) {})
		watch()
	}
	require.Eventually(t, func() bool {
		watch()
		return lastX == x && walker.Stats().Welcomes == 1
	}, 5*time.Second, 10*time.Millisecond, "the watcher saw the walker at %v, not %v; the walker was welcomed again %d times",
		lastX, x, walker.Stats().Welcomes)
	assert.Equal(t, 1, appears, "one Appear of the walker for the watcher")
	assert.Equal(t, walkerID, walker.Welcome().Actor, "welcomed by zone 2 to the actor its player watched")
	assert.NoError(t, walker.Err(), "one connection throughout")
	h1, h2 := servers[0].Stats().Handoffs, servers[1].Stats().Handoffs
	assert.Equal(t, uint64(1), h1.SessionsMoved)
	assert.Equal(t, uint64(1), h2.SessionsTaken)
	assert.Zero(t, h1.SessionsLost+h2.SessionsLost+h2.InputsMissed, "%+v %+v", h1, h2)
	assert.Zero(t, walker.Stats().Corrections)
	switches := 0
	for _, n := range h2.SwitchTicks {
		switches += int(n)
	}
	assert.Equal(t, 1, switches, "one switch timed: %v", h2.SwitchTicks)
	t.Logf("switch in tick periods: %v", h2.SwitchTicks)
}
