package gateway_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// twoZones returns a NATS connection, the transports of zone servers 1
// and 2 on it, and a gateway with an in-memory front, all closed at the
// test's end.
func twoZones(t *testing.T) (*nats.Conn, *gateway.Transport, *gateway.Transport, *mem.Transport, *gateway.Gateway) {
	t.Helper()
	nc := startNATS(t)
	z1, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 1})
	require.NoError(t, err)
	t.Cleanup(func() { z1.Close() })
	z2, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 2})
	require.NoError(t, err)
	t.Cleanup(func() { z2.Close() })
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())
	return nc, z1, z2, front, gw
}

// TestAMovedSessionGoesAtOnceAfterWhatWasSentBeforeIt: a zone server
// that moves a session mid-tick does not hold it until its tick ends
// (Flush). The frame it sent the client before the move reaches the
// client, and the session reaches the new zone server, before the old one
// flushes; a frame it sends the client's neighbour after the move still
// waits for its Flush.
func TestAMovedSessionGoesAtOnceAfterWhatWasSentBeforeIt(t *testing.T) {
	nc, z1, z2, front, gw := twoZones(t)

	mover, stayer := front.Dial(), front.Dial()
	var opened []wire.SessionID
	var in []wire.Inbound
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		in = z1.Receive(in[:0])
		for _, m := range in {
			if m.Kind == wire.SessionOpened {
				opened = append(opened, m.Session)
			}
		}
		return len(opened) == 2
	}, 5*time.Second, time.Millisecond, "both clients open on zone 1")

	reliable := func(c *mem.Client) (got []string) {
		c.DrainReliable(func(b []byte) { got = append(got, string(b)) })
		return got
	}
	z1.SendReliable(opened[0], []byte("before the move"))
	require.NoError(t, z1.Move(opened[0], 2, []byte("hand-off 7")))
	z1.SendReliable(opened[1], []byte("after the move"))

	var received []string
	var resumed []gateway.Resumed
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		received = append(received, reliable(mover)...)
		in = z2.Receive(in[:0])
		resumed = z2.TakeResumed(resumed)
		return len(received) > 0 && len(resumed) > 0
	}, 5*time.Second, time.Millisecond, "zone 1 never flushed: the move and what came before it went by themselves")
	assert.Equal(t, []string{"before the move"}, received)
	require.Len(t, resumed, 1)
	assert.Equal(t, "hand-off 7", string(resumed[0].Payload))
	assert.Empty(t, reliable(stayer), "a frame sent after the move waits for the tick's Flush")

	z1.Flush()
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool {
		received = reliable(stayer)
		return len(received) > 0
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"after the move"}, received)
}

// TestAMovedSessionReachesItsNewServerWithoutAStep: the gateway sends a
// session a zone server moved on to its new server as it hears of the
// move, with the client's kept moves, without waiting for its next step;
// the client's frames after that go to the new server.
func TestAMovedSessionReachesItsNewServerWithoutAStep(t *testing.T) {
	nc, z1, z2, front, gw := twoZones(t)

	c := front.Dial()
	move := func(seq uint32) []byte { return wire.AppendMove(nil, wire.Move{Seq: seq}) }
	require.NoError(t, c.Send(move(1)))
	var s wire.SessionID
	var in []wire.Inbound
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		for _, m := range z1.Receive(in[:0]) {
			if m.Kind == wire.SessionOpened {
				s = m.Session
			}
		}
		return s != 0
	}, 5*time.Second, time.Millisecond, "the client opens on zone 1")

	require.NoError(t, z1.Move(s, 2, []byte("hand-off 9")))
	var resumed []gateway.Resumed
	require.Eventually(t, func() bool {
		in = z2.Receive(in[:0])
		resumed = z2.TakeResumed(resumed)
		return len(resumed) > 0
	}, 5*time.Second, time.Millisecond, "the session waited for a step")
	assert.Equal(t, "hand-off 9", string(resumed[0].Payload))
	var held []uint32
	z2.HeldMoves(resumed[0].Session, func(seq uint32) { held = append(held, seq) })
	assert.Equal(t, []uint32{1}, held, "the client's kept move came with it")

	z2.Release(resumed[0].Session)
	z2.Flush()
	require.NoError(t, c.Send(move(2)))
	var frames []string
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		for _, m := range z2.Receive(in[:0]) {
			if m.Kind == wire.FrameReceived {
				frames = append(frames, string(m.Frame))
			}
		}
		return len(frames) >= 2
	}, 5*time.Second, time.Millisecond, "the client's next move reaches zone 2")
	assert.Equal(t, []string{string(move(1)), string(move(2))}, frames, "the kept move, released, then the next")
	for _, m := range z1.Receive(in[:0]) {
		assert.NotEqual(t, wire.FrameReceived, m.Kind, "no frame for zone 1 after the move")
	}
}
