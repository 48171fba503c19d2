package net_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net"
)

// TestMultiKeepsEachSessionOnItsOwnTransport: two in-memory transports
// behind one Multi: every session gets an id of its own that names its
// transport, frames are told apart by it, sends reach the right client,
// and the counters add up.
func TestMultiKeepsEachSessionOnItsOwnTransport(t *testing.T) {
	a, b := net.NewMem(net.MemOptions{}), net.NewMem(net.MemOptions{})
	m := net.NewMulti(a, b)
	ca1, cb1, ca2 := a.Dial(), b.Dial(), a.Dial()
	require.NoError(t, ca1.Send(net.AppendMove(nil, net.Move{Seq: 1})))
	require.NoError(t, cb1.Send(net.AppendMove(nil, net.Move{Seq: 2})))
	require.NoError(t, ca2.Send(net.AppendMove(nil, net.Move{Seq: 3})))

	in := m.Receive(nil)
	sessionOf := map[uint32]net.SessionID{} // by the Move's seq
	var opened []net.SessionID
	for _, e := range in {
		switch e.Kind {
		case net.SessionOpened:
			opened = append(opened, e.Session)
		case net.FrameReceived:
			mv, err := net.DecodeMove(e.Frame)
			require.NoError(t, err)
			sessionOf[mv.Seq] = e.Session
		}
	}
	assert.Equal(t, []net.SessionID{m.Session(0, ca1.Session()), m.Session(0, ca2.Session()), m.Session(1, cb1.Session())}, opened,
		"transport 0's events, then transport 1's")
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(opened))), 3, "three ids, none shared")
	assert.NotContains(t, opened, net.SessionID(0))
	assert.Equal(t, m.Session(0, ca2.Session()), sessionOf[3])
	assert.Equal(t, m.Session(1, cb1.Session()), sessionOf[2])

	m.SendReliable(sessionOf[2], net.AppendDisappear(nil, net.Disappear{Actor: 9}))
	m.SendUnreliableBatch(sessionOf[3], batch(4, 1), 0)
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
// WebSocket client of one Multi both get through the handshake and their
// batches.
func TestMultiServesQUICAndWebSocketClientsAtOnce(t *testing.T) {
	tlsConf, err := net.DevelopmentTLS()
	require.NoError(t, err)
	q, err := net.ListenQUIC("127.0.0.1:0", net.QUICConfig{TLS: tlsConf})
	require.NoError(t, err)
	ws, err := net.ListenWebSocket("127.0.0.1:0", net.WebSocketConfig{})
	require.NoError(t, err)
	m := net.NewMulti(q, ws)
	p := startPump(t, &pump{tr: m})

	type dialed struct {
		c   *net.Client
		err error
	}
	quicDone, wsDone := make(chan dialed, 1), make(chan dialed, 1)
	go func() {
		c, err := net.Dial(context.Background(), q.Addr().String(), net.ClientConfig{Token: "native", InsecureSkipVerify: true})
		quicDone <- dialed{c, err}
	}()
	go func() {
		c, err := net.DialWebSocket(context.Background(), ws.URL(), net.ClientConfig{Token: "browser"})
		wsDone <- dialed{c, err}
	}()
	native, browser := p.helloFrom(t, "native"), p.helloFrom(t, "browser")
	assert.NotEqual(t, native, browser)
	m.SendReliable(native, net.AppendWelcome(nil, net.Welcome{Actor: 1}))
	m.SendReliable(browser, net.AppendWelcome(nil, net.Welcome{Actor: 2}))
	for _, ch := range []chan dialed{quicDone, wsDone} {
		d := <-ch
		require.NoError(t, d.err)
		t.Cleanup(func() { d.c.Close() })
		actor := d.c.Welcome().Actor
		s := native
		if actor == 2 {
			s = browser
		}
		m.SendUnreliable(s, batch(7, actor+10))
		assert.Equal(t, []string{"batch 7: " + []string{"", "11", "12"}[actor]}, pollUntil(t, d.c, 1))
	}
}
