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

// openOn dials a client whose first move is seq 1 and returns it with its
// session on zone server z.
func openOn(t *testing.T, nc *nats.Conn, gw *gateway.Gateway, front *mem.Transport, z *gateway.Transport) (*mem.Client, wire.SessionID) {
	t.Helper()
	c := front.Dial()
	require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: 1})))
	var s wire.SessionID
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		for _, m := range z.Receive(nil) {
			if m.Kind == wire.SessionOpened {
				s = m.Session
			}
		}
		return s != 0
	}, 5*time.Second, time.Millisecond, "the client opens")
	return c, s
}

// resumedOn waits for zone server z to be sent one session ahead of (or
// with) its move, and returns it.
func resumedOn(t *testing.T, z *gateway.Transport) gateway.Resumed {
	t.Helper()
	var resumed []gateway.Resumed
	require.Eventually(t, func() bool {
		z.Receive(nil)
		resumed = z.TakeResumed(resumed)
		return len(resumed) > 0
	}, 5*time.Second, time.Millisecond, "the session reaches the zone server")
	require.Len(t, resumed, 1)
	return resumed[0]
}

// moveSeqs returns the sequence numbers of the Move frames among in for
// session s.
func moveSeqs(in []wire.Inbound, s wire.SessionID) (seqs []uint32) {
	for _, m := range in {
		if m.Kind == wire.FrameReceived && m.Session == s {
			if mv, err := wire.DecodeMove(m.Frame); err == nil {
				seqs = append(seqs, mv.Seq)
			}
		}
	}
	return seqs
}

// movesOn steps the gateway until zone server z is handed Move frames of
// session s, and returns their sequence numbers.
func movesOn(t *testing.T, nc *nats.Conn, gw *gateway.Gateway, z *gateway.Transport, s wire.SessionID, what string) []uint32 {
	t.Helper()
	var seqs []uint32
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		seqs = append(seqs, moveSeqs(z.Receive(nil), s)...)
		return len(seqs) > 0
	}, 5*time.Second, time.Millisecond, what)
	return seqs
}

// TestASessionOpenedAheadOfItsMoveSwitchesWithoutBeingSentAgain: zone 1
// opens its client's session at zone 2 ahead of the move (Shadow). Zone 2
// has it with the client's kept move at once and every move the client
// sends from then on, while zone 1 goes on getting them too. What zone 2
// sends the client before zone 1 lets the session go waits at the
// gateway: the client gets zone 1's last frame first. Zone 1's Move then
// switches the route without sending zone 2 the session again, and the
// client's later moves reach zone 2 only.
func TestASessionOpenedAheadOfItsMoveSwitchesWithoutBeingSentAgain(t *testing.T) {
	nc, z1, z2, front, gw := twoZones(t)
	c, s1 := openOn(t, nc, gw, front, z1)

	require.NoError(t, z1.Shadow(s1, 2, []byte("hand-off 4")))
	r := resumedOn(t, z2)
	assert.Equal(t, "hand-off 4", string(r.Payload))
	var held []uint32
	z2.HeldMoves(r.Session, func(seq uint32) { held = append(held, seq) })
	assert.Equal(t, []uint32{1}, held, "the client's kept move came with the opening")

	require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: 2})))
	assert.Equal(t, []uint32{2}, movesOn(t, nc, gw, z1, s1, "zone 1's move"), "zone 1 still serves the session")
	require.Eventually(t, func() bool {
		z2.Receive(nil)
		held = held[:0]
		z2.HeldMoves(r.Session, func(seq uint32) { held = append(held, seq) })
		return len(held) == 2
	}, 5*time.Second, time.Millisecond, "zone 2 gets the move too")
	assert.Equal(t, []uint32{1, 2}, held)

	// Zone 2 takes the session to its actor and welcomes it before zone 1
	// has let it go: the gateway holds the welcome.
	replies := gw.Stats().Replies
	z2.Release(r.Session)
	z2.SendReliable(r.Session, []byte("welcome from zone 2"))
	z2.Flush()
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool { return gw.Stats().Replies > replies }, 5*time.Second, time.Millisecond)
	reliable := func() (got []string) {
		c.DrainReliable(func(b []byte) { got = append(got, string(b)) })
		return got
	}
	assert.Empty(t, reliable(), "zone 2's welcome waits for zone 1 to let the session go")

	z1.SendReliable(s1, []byte("last from zone 1"))
	require.NoError(t, z1.Move(s1, 2, []byte("hand-off 4")))
	var got []string
	require.Eventually(t, func() bool {
		got = append(got, reliable()...)
		return len(got) == 2
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, []string{"last from zone 1", "welcome from zone 2"}, got, "the old server's frames first")
	st := gw.Stats()
	assert.Equal(t, uint64(1), st.Shadows)
	assert.Equal(t, uint64(1), st.ShadowMoves)
	assert.Zero(t, st.ShadowsEnded)

	require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: 3})))
	var on2 []uint32
	require.Eventually(t, func() bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		in := z2.Receive(nil)
		assert.Empty(t, z2.TakeResumed(nil), "the session was not sent to zone 2 again")
		on2 = append(on2, moveSeqs(in, r.Session)...)
		return len(on2) == 3
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, []uint32{1, 2, 3}, on2, "the held moves, released, then the next")
	assert.Empty(t, moveSeqs(z1.Receive(nil), s1), "no move for zone 1 after it let the session go")
	assert.Zero(t, z1.Strays()+z2.Strays())
	_, closed := c.CloseReason()
	assert.False(t, closed)
}

// TestAShadowEndsWithoutItsMoveAndTheSessionStays: a session opened at
// zone 2 ahead of a move that does not come ends there three ways, and
// each time the client plays on with zone 1, its frames going to zone 1
// alone: zone 1 withdraws it (zone 2 sees the session closed, with the
// reason); zone 2 sends it back (a Move, as a zone server that gave up
// waiting for its Commit does); zone 2 disconnects it, which ends the
// shadow and not the client's connection.
func TestAShadowEndsWithoutItsMoveAndTheSessionStays(t *testing.T) {
	nc, z1, z2, front, gw := twoZones(t)
	c, s1 := openOn(t, nc, gw, front, z1)
	seq := uint32(1)
	// playsOnZone1 sends a move and checks that zone 1, and zone 1 only,
	// gets it.
	playsOnZone1 := func(what string) {
		t.Helper()
		seq++
		require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: seq})))
		assert.Equal(t, []uint32{seq}, movesOn(t, nc, gw, z1, s1, what), what)
		for _, m := range z2.Receive(nil) {
			assert.NotEqual(t, wire.FrameReceived, m.Kind, "%s: zone 2 got a frame", what)
		}
		_, closed := c.CloseReason()
		assert.False(t, closed, what)
	}

	require.NoError(t, z1.Shadow(s1, 2, []byte("hand-off 4")))
	r := resumedOn(t, z2)
	require.NoError(t, z1.Unshadow(s1))
	var reason string
	require.Eventually(t, func() bool {
		for _, m := range z2.Receive(nil) {
			if m.Kind == wire.SessionClosed && m.Session == r.Session {
				reason = m.Reason
			}
		}
		return reason != ""
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, gateway.ReasonWithdrawn, reason)
	playsOnZone1("withdrawn")

	require.NoError(t, z1.Shadow(s1, 2, []byte("hand-off 5")))
	r = resumedOn(t, z2)
	require.NoError(t, z2.Move(r.Session, 1, []byte("hand-off 5")))
	z2.Flush()
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool { return gw.Stats().ShadowsEnded == 2 }, 5*time.Second, time.Millisecond)
	playsOnZone1("sent back")
	assert.Empty(t, z1.TakeResumed(nil), "zone 1 was not sent its own session")

	require.NoError(t, z1.Shadow(s1, 2, []byte("hand-off 6")))
	r = resumedOn(t, z2)
	z2.Disconnect(r.Session, "no hand-off 6 here")
	z2.Flush()
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool { return gw.Stats().ShadowsEnded == 3 }, 5*time.Second, time.Millisecond)
	playsOnZone1("disconnected by zone 2")

	st := gw.Stats()
	assert.Equal(t, uint64(3), st.Shadows)
	assert.Zero(t, st.ShadowMoves)
	assert.Zero(t, st.SessionsDropped)
	assert.Zero(t, z2.Strays(), "no frame went to zone 2 after a shadow ended")
}

// TestANewServerThatPlaysASessionBeforeItsMoveIsStopped: a zone server
// that sends a session opened there ahead of its move more than the
// gateway holds for it (it plays a session its old server never let go)
// gets the client disconnected with a reason, and both zone servers see
// the session closed.
func TestANewServerThatPlaysASessionBeforeItsMoveIsStopped(t *testing.T) {
	nc, z1, z2, front, gw := twoZones(t)
	c, s1 := openOn(t, nc, gw, front, z1)
	require.NoError(t, z1.Shadow(s1, 2, []byte("hand-off 4")))
	r := resumedOn(t, z2)
	z2.Release(r.Session)
	frame := wire.AppendMove(nil, wire.Move{Seq: 9}) // any frame the gateway carries
	for range 1<<14 + 1 {
		z2.SendReliable(r.Session, frame)
	}
	z2.Flush()
	require.NoError(t, nc.Flush())
	var reason string
	require.Eventually(t, func() bool {
		reason, _ = c.CloseReason()
		return reason != ""
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, gateway.ShadowOverrun(2), reason)
	var got []string
	c.DrainReliable(func(b []byte) { got = append(got, string(b)) })
	assert.Empty(t, got, "none of zone 2's frames reached the client")

	closedOn := func(z *gateway.Transport, s wire.SessionID) bool {
		gw.Step()
		require.NoError(t, nc.Flush())
		for _, m := range z.Receive(nil) {
			if m.Kind == wire.SessionClosed && m.Session == s {
				return true
			}
		}
		return false
	}
	require.Eventually(t, func() bool { return closedOn(z1, s1) }, 5*time.Second, time.Millisecond, "zone 1 sees it closed")
	require.Eventually(t, func() bool { return closedOn(z2, r.Session) }, 5*time.Second, time.Millisecond, "zone 2 sees it closed")
	assert.Equal(t, uint64(1), gw.Stats().SessionsDropped)
}
