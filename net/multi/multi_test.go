package multi_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/multi"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

// TestMultiKeepsEachSessionOnItsOwnTransport: two in-memory transports
// behind one Multi: every session gets an id of its own that names its
// transport, frames are told apart by it, sends reach the right client,
// and the counters add up.
func TestMultiKeepsEachSessionOnItsOwnTransport(t *testing.T) {
	a, b := mem.New(mem.Options{}), mem.New(mem.Options{})
	m := multi.New(a, b)
	ca1, cb1, ca2 := a.Dial(), b.Dial(), a.Dial()
	require.NoError(t, ca1.Send(wire.AppendMove(nil, wire.Move{Seq: 1})))
	require.NoError(t, cb1.Send(wire.AppendMove(nil, wire.Move{Seq: 2})))
	require.NoError(t, ca2.Send(wire.AppendMove(nil, wire.Move{Seq: 3})))

	in := m.Receive(nil)
	sessionOf := map[uint32]wire.SessionID{} // by the Move's seq
	var opened []wire.SessionID
	for _, e := range in {
		switch e.Kind {
		case wire.SessionOpened:
			opened = append(opened, e.Session)
		case wire.FrameReceived:
			mv, err := wire.DecodeMove(e.Frame)
			require.NoError(t, err)
			sessionOf[mv.Seq] = e.Session
		}
	}
	assert.Equal(t, []wire.SessionID{m.Session(0, ca1.Session()), m.Session(0, ca2.Session()), m.Session(1, cb1.Session())}, opened,
		"transport 0's events, then transport 1's")
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(opened))), 3, "three ids, none shared")
	assert.NotContains(t, opened, wire.SessionID(0))
	assert.Equal(t, m.Session(0, ca2.Session()), sessionOf[3])
	assert.Equal(t, m.Session(1, cb1.Session()), sessionOf[2])

	m.SendReliable(sessionOf[2], wire.AppendDisappear(nil, wire.Disappear{Actor: 9}))
	m.SendUnreliableBatch(sessionOf[3], nettest.Batch(4, 1), 0)
	assert.Equal(t, 1, cb1.DrainReliable(func([]byte) {}), "b's client got the reliable frame")
	assert.Zero(t, ca1.DrainReliable(func([]byte) {}))
	assert.Equal(t, 1, ca2.DrainDatagrams(func([]byte) {}), "a's second client got the batch")
	assert.Equal(t, uint64(3), m.Stats().Opened)
	assert.Equal(t, uint64(1), m.Stats().ReliableOut)

	m.Disconnect(sessionOf[1], "bye")
	reason, closed := ca1.CloseReason()
	assert.True(t, closed)
	assert.Equal(t, "bye", reason)
	require.NoError(t, m.Close())
	_, closed = cb1.CloseReason()
	assert.True(t, closed, "Close closes every transport")
}

// TestMultiServesQUICAndWebSocketClientsAtOnce: a QUIC client and a
// WebSocket client of one Multi both get through the handshake, their
// batches and their reliable batches.
func TestMultiServesQUICAndWebSocketClientsAtOnce(t *testing.T) {
	tlsConf, err := quic.DevelopmentTLS()
	require.NoError(t, err)
	q, err := quic.Listen("127.0.0.1:0", quic.Config{TLS: tlsConf})
	require.NoError(t, err)
	ws, err := websocket.Listen("127.0.0.1:0", websocket.Config{})
	require.NoError(t, err)
	m := multi.New(q, ws)
	p := nettest.StartPump(t, &nettest.Pump{TR: m})

	type dialed struct {
		c   *client.Client
		err error
	}
	quicDone, wsDone := make(chan dialed, 1), make(chan dialed, 1)
	go func() {
		c, err := client.Dial(context.Background(), q.Addr().String(), client.Config{Token: "native", InsecureSkipVerify: true})
		quicDone <- dialed{c, err}
	}()
	go func() {
		c, err := client.DialWebSocket(context.Background(), ws.URL(), client.Config{Token: "browser"})
		wsDone <- dialed{c, err}
	}()
	native, browser := p.HelloFrom(t, "native"), p.HelloFrom(t, "browser")
	assert.NotEqual(t, native, browser)
	m.SendReliable(native, wire.AppendWelcome(nil, wire.Welcome{Actor: 1}))
	m.SendReliable(browser, wire.AppendWelcome(nil, wire.Welcome{Actor: 2}))
	for _, ch := range []chan dialed{quicDone, wsDone} {
		d := <-ch
		require.NoError(t, d.err)
		t.Cleanup(func() { d.c.Close() })
		actor := d.c.Welcome().Actor
		s := native
		if actor == 2 {
			s = browser
		}
		m.SendUnreliable(s, nettest.Batch(7, actor+10))
		assert.Equal(t, []string{"batch 7: " + []string{"", "11", "12"}[actor]}, nettest.PollUntil(t, d.c, 1))
		m.SendReliableBatch(s, nettest.Stream(
			wire.AppendAppear(nil, wire.Appear{Actor: actor + 20}), wire.AppendProp(nil, wire.Prop{Actor: actor + 30})))
		assert.Equal(t, []string{fmt.Sprintf("appear %d", actor+20), fmt.Sprintf("prop %d", actor+30)}, nettest.PollUntil(t, d.c, 2))
	}
}

// counting passes a transport's calls on and counts the reliable ones.
type counting struct {
	wire.Transport
	singles, batches int
}

func (c *counting) SendReliable(s wire.SessionID, frame []byte) {
	c.singles++
	c.Transport.SendReliable(s, frame)
}

// batching is a counting transport that takes reliable batches too.
type batching struct{ counting }

func (b *batching) SendReliableBatch(s wire.SessionID, frames []byte) {
	b.batches++
	b.Transport.(wire.ReliableBatchSender).SendReliableBatch(s, frames)
}

// TestMultiSendsAReliableBatchToItsSessionsTransport: a batch goes to the
// session's own transport, in one call where that transport takes
// batches and frame by frame where it does not; the client gets the same
// frames either way, and the frames dropped (under a header, a cut-short
// tail) are counted where the batch went.
func TestMultiSendsAReliableBatchToItsSessionsTransport(t *testing.T) {
	memA, memB := mem.New(mem.Options{}), mem.New(mem.Options{})
	a, b := &batching{counting{Transport: memA}}, &counting{Transport: memB}
	m := multi.New(a, b)
	ca, other, cb := memA.Dial(), memA.Dial(), memB.Dial()
	appear := func(actor uint32) []byte { return wire.AppendAppear(nil, wire.Appear{Actor: actor}) }
	frames := nettest.Stream(appear(1), []byte{wire.Version}, appear(2), appear(3))
	frames = frames[:len(frames)-1] // the last cut short

	m.SendReliableBatch(m.Session(0, ca.Session()), frames)
	m.SendReliableBatch(m.Session(1, cb.Session()), frames)

	assert.Equal(t, 1, a.batches, "a takes the batch in one call")
	assert.Zero(t, a.singles)
	assert.Equal(t, 4, b.singles, "b takes each frame, and the tail as an empty frame")
	want := []string{string(appear(1)), string(appear(2))}
	for _, c := range []*mem.Client{ca, cb} {
		var got []string
		c.DrainReliable(func(f []byte) { got = append(got, string(f)) })
		assert.Equal(t, want, got, "session %d", c.Session())
	}
	assert.Zero(t, other.DrainReliable(func([]byte) {}), "nothing reaches the other session")
	for _, tr := range []*mem.Transport{memA, memB} {
		st := tr.Stats()
		assert.Equal(t, uint64(2), st.ReliableOut)
		assert.Equal(t, uint64(2), st.DroppedReliable, "the short frame and the cut-short tail")
	}
	assert.Equal(t, uint64(4), m.Stats().ReliableOut)
}

// flushing counts the Flushes a transport gets.
type flushing struct {
	wire.Transport
	flushes int
}

func (f *flushing) Flush() { f.flushes++ }

// TestMultiFlushesTheTransportsThatHoldATick: a server's Flush reaches
// every transport that holds a tick's sends for it, and no other.
func TestMultiFlushesTheTransportsThatHoldATick(t *testing.T) {
	a, c := &flushing{Transport: mem.New(mem.Options{})}, &flushing{Transport: mem.New(mem.Options{})}
	m := multi.New(a, &counting{Transport: mem.New(mem.Options{})}, c)
	m.Flush()
	m.Flush()
	assert.Equal(t, 2, a.flushes)
	assert.Equal(t, 2, c.flushes)
}
