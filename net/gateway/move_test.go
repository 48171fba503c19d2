package gateway_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestASessionMovesBetweenZoneServersWithoutReconnecting: a client of a
// gateway plays on zone 1's server; zone 1 lets its actor go and moves the
// session to zone 2, whose server takes it to an actor of its own. The
// client keeps its one connection and keeps walking throughout: it is
// welcomed by zone 2 to that actor, zone 1 applies none of its moves after
// it let the session go, and zone 2's actor ends where the client's last
// move put it, having applied the moves sent during the switch once each.
func TestASessionMovesBetweenZoneServersWithoutReconnecting(t *testing.T) {
	nc := startNATS(t)
	servers := map[uint32]*throng.Server{}
	zones := map[uint32]*gateway.Transport{}
	for _, id := range []uint32{1, 2} {
		zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: id})
		require.NoError(t, err)
		srv, err := throng.New(throng.Options{Transport: zt, Logger: slog.New(slog.DiscardHandler),
			Admit: func(wire.Hello) (throng.Entry, error) {
				return throng.Entry{Spawn: components.Transform{X: 100, Y: 100}}, nil
			}})
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		servers[id], zones[id] = srv, zt
	}
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())

	c := front.Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("walker")})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))
	var welcomes []uint32
	read := func() {
		var f wire.Frame
		c.DrainReliable(func(b []byte) {
			require.NoError(t, wire.Decode(b, &f))
			if f.Type == wire.TypeWelcome {
				welcomes = append(welcomes, f.Welcome.Actor)
			}
		})
		c.DrainDatagrams(func([]byte) {})
	}
	// The zone 2 actor the session is to take: zone 2's own copy of the
	// walker (in a hand-off, the actor zone 2 took), with the last move
	// zone 1 applied.
	var taken components.ActorID
	var lastApplied uint32
	var resumed []gateway.Resumed
	round := func() {
		gw.Step()
		require.NoError(t, nc.Flush())
		time.Sleep(2 * time.Millisecond)
		servers[1].Tick()
		servers[2].Tick()
		resumed = zones[2].TakeResumed(resumed[:0])
		for _, r := range resumed {
			require.Equal(t, "walker", string(r.Payload))
			require.NoError(t, servers[2].Attach(r.Session, taken, ""))
			zones[2].Release(r.Session)
		}
		require.NoError(t, nc.Flush())
		time.Sleep(2 * time.Millisecond)
		read()
	}
	for deadline := time.Now().Add(2 * time.Second); len(welcomes) == 0; round() {
		require.True(t, time.Now().Before(deadline), "never welcomed by zone 1")
	}
	mine := components.ActorID{ID: welcomes[0]}
	seq := uint32(0)
	walk := func() {
		seq++
		require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: 100 + float32(seq), Y: 100})))
	}
	at := func(srv *throng.Server, id components.ActorID) (float32, uint32) {
		e, ok := srv.World().Entity(id)
		require.True(t, ok)
		return ark.NewMap[components.Transform](srv.World().Ark()).Get(e).X, ark.NewMap[components.MoveInput](srv.World().Ark()).Get(e).Seq
	}
	for range 5 {
		walk()
		round()
	}
	x1, applied := at(servers[1], mine)
	require.Positive(t, applied, "zone 1 applied the walk")

	// Zone 1 lets the actor go and moves the session; zone 2 holds the
	// actor as it stood, with the last move zone 1 applied.
	lastApplied = applied
	taken = servers[2].World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: x1, Y: 100},
		Init: func(w *ark.World, e ark.Entity) { ark.NewMap[components.MoveInput](w).Get(e).Seq = lastApplied }})
	servers[2].Tick()
	s, _, err := servers[1].Detach(mine)
	require.NoError(t, err)
	require.NoError(t, zones[1].Move(s, 2, []byte("walker")))
	// The client knows nothing and walks on: its next move reaches the
	// gateway before the gateway hears of the move (zone 1 tells it with
	// its tick's message), goes to zone 1, which drops it; then it
	// stands. Zone 2 gets it from the gateway's copy.
	for i := range 10 {
		if i == 0 {
			walk()
		}
		round()
	}
	require.Len(t, welcomes, 2, "welcomed again, by zone 2")
	assert.Equal(t, taken.ID, welcomes[1])
	x1after, seq1 := at(servers[1], mine)
	assert.Equal(t, applied, seq1, "zone 1 applied nothing after it let the session go")
	assert.Equal(t, x1, x1after)
	x2, seq2 := at(servers[2], taken)
	assert.Equal(t, seq, seq2, "zone 2 applied the walk up to the last move, those zone 1 dropped included")
	assert.Equal(t, 100+float32(seq), x2)
	_, closed := c.CloseReason()
	assert.False(t, closed, "one connection throughout")
}

// TestAGatewayRunningPassesAMovedSessionOnAtOnce: a gateway that steps
// once an hour still hands a session a zone server moved to its new
// server as soon as the move arrives: a player's switch waits for no
// interval.
func TestAGatewayRunningPassesAMovedSessionOnAtOnce(t *testing.T) {
	nc := startNATS(t)
	zones := map[uint32]*gateway.Transport{}
	for _, id := range []uint32{1, 2} {
		zt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: id})
		require.NoError(t, err)
		t.Cleanup(func() { zt.Close() })
		zones[id] = zt
	}
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())
	front.Dial()
	gw.Step() // the session opens on zone 1
	var opened wire.SessionID
	require.Eventually(t, func() bool {
		for _, in := range zones[1].Receive(nil) {
			if in.Kind == wire.SessionOpened {
				opened = in.Session
			}
		}
		return opened != 0
	}, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go gw.Run(ctx, time.Hour)
	require.NoError(t, zones[1].Move(opened, 2, []byte("payload")))
	zones[1].Flush()
	var resumed []gateway.Resumed
	require.Eventually(t, func() bool {
		zones[2].Receive(nil)
		resumed = zones[2].TakeResumed(resumed[:0])
		return len(resumed) == 1
	}, 5*time.Second, time.Millisecond, "zone 2 got the session before the gateway's next interval")
	assert.Equal(t, "payload", string(resumed[0].Payload))
}
