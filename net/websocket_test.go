package net_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net"
)

// startWebSocket listens on loopback with cfg and starts a pump on it;
// cleanup closes the transport.
func startWebSocket(t *testing.T, cfg net.WebSocketConfig) (*pump, *net.WebSocket) {
	t.Helper()
	ws, err := net.ListenWebSocket("127.0.0.1:0", cfg)
	require.NoError(t, err)
	return startPump(t, &pump{tr: ws}), ws
}

// dialWS connects a client with token over the WebSocket and welcomes it
// as actor; it returns the client and its session.
func dialWS(t *testing.T, p *pump, ws *net.WebSocket, token string, actor uint32, cfg net.ClientConfig) (*net.Client, net.SessionID) {
	t.Helper()
	cfg.Token = token
	type result struct {
		c   *net.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := net.DialWebSocket(context.Background(), ws.URL(), cfg)
		ch <- result{c, err}
	}()
	s := p.helloFrom(t, token)
	ws.SendReliable(s, net.AppendWelcome(nil, net.Welcome{Actor: actor, TickRate: 30}))
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { r.c.Close() })
	return r.c, s
}

// rawWS opens a WebSocket to ws that is no Throng client: it speaks the
// subprotocol, and does whatever the test makes it do.
func rawWS(t *testing.T, ws *net.WebSocket, opts *websocket.DialOptions) *websocket.Conn {
	t.Helper()
	if opts == nil {
		opts = &websocket.DialOptions{Subprotocols: []string{net.WebSocketSubprotocol}}
	}
	conn, _, err := websocket.Dial(context.Background(), ws.URL(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func TestWebSocketHandshakeMovesAndBatchesCrossTheNetwork(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	require.True(t, strings.HasPrefix(ws.URL(), "ws://127.0.0.1:"), ws.URL())
	c, s := dialWS(t, p, ws, "ada", 7, net.ClientConfig{Protocol: 3})

	hello := p.await(t, "Hello", func(e seen) bool { return e.Kind == net.FrameReceived && e.Session == s })
	h, err := net.DecodeHello(hello.Frame)
	require.NoError(t, err)
	assert.Equal(t, net.Hello{Protocol: 3, Token: []byte("ada")}, h)
	assert.Equal(t, uint32(7), c.Welcome().Actor, "DialWebSocket returns after the Welcome")
	assert.Equal(t, net.SessionOpened, p.events()[0].Kind, "the session opens before its first frame")

	sent, err := c.SendMove(net.Move{Seq: 1, X: 5, Y: 6})
	require.NoError(t, err)
	require.True(t, sent)
	move := p.await(t, "Move", func(e seen) bool {
		typ, _ := net.PeekType(e.Frame)
		return e.Kind == net.FrameReceived && typ == net.TypeMove
	})
	m, err := net.DecodeMove(move.Frame)
	require.NoError(t, err)
	assert.Equal(t, net.Move{Seq: 1, X: 5, Y: 6}, m)

	ws.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 8}))
	ws.SendUnreliable(s, batch(1, 8))
	assert.Equal(t, []string{"appear 8", "batch 1: 8"}, pollUntil(t, c, 2))

	first, second, last := batch(5, 1, 2), batch(5, 3, 4), batch(5, 6)
	ws.SendUnreliableBatch(s, slices.Concat(first, second, last), len(first))
	assert.Equal(t, []string{"batch 5: 1 2", "batch 5: 3 4", "batch 5: 6"}, pollUntil(t, c, 3))

	full := batch(6, make([]uint32, net.MaxRecordsPerBatch)...)
	ws.SendUnreliable(s, append(slices.Clone(full), 0, 0, 0)) // over MaxDatagram
	ws.SendUnreliable(s, batch(6, 1)[:net.BatchHeaderSize-1]) // not a batch
	ws.SendUnreliable(s+100, full)                            // no such session
	ws.SendUnreliable(s, full)
	got := pollUntil(t, c, 1)
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "batch 6:"), "the largest batch the server sends arrives")
	assert.Equal(t, uint64(3), ws.Stats().DroppedDatagrams, "oversize, short, unknown session")
	assert.Equal(t, uint64(5), ws.Stats().DatagramsOut)

	stats := c.Stats()
	assert.Equal(t, uint64(1+5+net.MaxRecordsPerBatch), stats.Records)
	assert.Equal(t, uint64(5), stats.Datagrams)
	assert.Equal(t, uint64(1), stats.MovesSent)
}

func TestWebSocketDisconnectReasonReachesTheClientAfterItsFrames(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	c, s := dialWS(t, p, ws, "bo", 1, net.ClientConfig{})

	for a := uint32(10); a < 13; a++ {
		ws.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: a}))
	}
	ws.Disconnect(s, "kicked for testing")
	ws.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 99}))

	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection did not close")
	}
	assert.Equal(t, []string{"appear 10", "appear 11", "appear 12"}, polled(c), "frames queued before the disconnect arrive, none after")
	var disc *net.DisconnectedError
	require.ErrorAs(t, c.Err(), &disc)
	assert.Equal(t, "kicked for testing", disc.Reason)
	assert.Equal(t, "kicked for testing", p.closedOf(t, s).Reason)
	assert.Equal(t, uint64(1), ws.Stats().DroppedReliable, "the frame after the disconnect")
	_, err := c.SendMove(net.Move{Seq: 1})
	assert.ErrorAs(t, err, &disc, "SendMove after the close says why")
}

func TestDialWebSocketReturnsTheServersRefusalWithItsReason(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	errs := make(chan error, 1)
	go func() {
		_, err := net.DialWebSocket(context.Background(), ws.URL(), net.ClientConfig{Token: "late"})
		errs <- err
	}()
	s := p.helloFrom(t, "late")
	ws.SendReliable(s, net.AppendRefuse(nil, net.Refuse{Code: net.RefuseBusy, Reason: []byte("server busy, try again shortly")}))
	ws.Disconnect(s, "refused")

	var refused *net.RefusedError
	require.ErrorAs(t, <-errs, &refused)
	assert.Equal(t, net.RefuseBusy, refused.Code)
	assert.Equal(t, "server busy, try again shortly", refused.Reason)
	assert.Equal(t, "refused", p.closedOf(t, s).Reason, "the server records its own reason")
}

func TestWebSocketClientCloseEndsTheSession(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	c, s := dialWS(t, p, ws, "cy", 1, net.ClientConfig{})
	require.NoError(t, c.Close())
	assert.Equal(t, net.ReasonClientClosed, p.closedOf(t, s).Reason)
	assert.ErrorIs(t, c.Err(), net.ErrClosed)
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
}

// TestWebSocketEveryOpenedSessionClosesExactlyOnce: closing the transport
// ends every session once, with ReasonTransportClosed, and the clients
// read that reason.
func TestWebSocketEveryOpenedSessionClosesExactlyOnce(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	var clients []*net.Client
	for _, token := range []string{"a", "b", "c"} {
		c, _ := dialWS(t, p, ws, token, 1, net.ClientConfig{})
		clients = append(clients, c)
	}
	require.NoError(t, ws.Close())
	require.NoError(t, ws.Close(), "closing again")
	for _, c := range clients {
		<-c.Done()
		var disc *net.DisconnectedError
		require.ErrorAs(t, c.Err(), &disc)
		assert.Equal(t, net.ReasonTransportClosed, disc.Reason)
	}
	time.Sleep(20 * time.Millisecond) // one more Receive
	opened, closed := map[net.SessionID]int{}, map[net.SessionID]int{}
	for _, e := range p.events() {
		switch e.Kind {
		case net.SessionOpened:
			opened[e.Session]++
		case net.SessionClosed:
			closed[e.Session]++
			assert.Equal(t, net.ReasonTransportClosed, e.Reason)
		}
	}
	assert.Len(t, opened, 3)
	assert.Equal(t, opened, closed)
	assert.Equal(t, ws.Stats().Opened, ws.Stats().Closed)
}

// TestWebSocketClientThatStopsReadingIsDisconnected: a client that reads
// nothing fills its socket; the write that then blocks past the stall
// timeout ends its session as too slow, while another client keeps
// receiving.
func TestWebSocketClientThatStopsReadingIsDisconnected(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{StallTimeout: 200 * time.Millisecond})
	good, gs := dialWS(t, p, ws, "good", 1, net.ClientConfig{})

	deaf := rawWS(t, ws, nil)
	hello, err := net.AppendHello(nil, net.Hello{Token: []byte("deaf")})
	require.NoError(t, err)
	require.NoError(t, deaf.Write(context.Background(), websocket.MessageBinary, hello))
	ds := p.helloFrom(t, "deaf")

	appear := net.AppendAppear(nil, net.Appear{Actor: 5})
	big := slices.Concat(appear, make([]byte, 1000-len(appear))) // a kilobyte a frame
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(p.events(), func(e seen) bool { return e.Kind == net.SessionClosed && e.Session == ds }) {
		require.True(t, time.Now().Before(deadline), "the deaf client was never disconnected")
		for range 100 {
			ws.SendReliable(ds, big)
		}
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, net.ReasonSlowClient, p.closedOf(t, ds).Reason)
	assert.Equal(t, uint64(1), ws.Counters().SlowClients)

	ws.SendUnreliable(gs, batch(9, 4))
	assert.Equal(t, []string{"batch 9: 4"}, pollUntil(t, good, 1), "the other client still receives")
}

func TestWebSocketReliableQueueOverflowDisconnects(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{ReliableQueue: 4})
	_, s := dialWS(t, p, ws, "q", 1, net.ClientConfig{})
	// Queued faster than the writer can take them, some Send call finds
	// the queue full.
	for range 10_000 {
		ws.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 2}))
		if ws.Counters().SlowClients > 0 {
			break
		}
	}
	assert.Equal(t, net.ReasonSlowClient, p.closedOf(t, s).Reason)
}

// TestWebSocketRefusesForeignPagesAndOtherProtocols: a browser page from
// another origin is refused unless OriginPatterns lets it in; a client
// that does not ask for the Throng subprotocol is closed before it becomes
// a session.
func TestWebSocketRefusesForeignPagesAndOtherProtocols(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	foreign := http.Header{"Origin": []string{"https://evil.example"}}
	_, _, err := websocket.Dial(context.Background(), ws.URL(), &websocket.DialOptions{
		Subprotocols: []string{net.WebSocketSubprotocol}, HTTPHeader: foreign,
	})
	require.Error(t, err, "a page of another origin")

	other, _, err := websocket.Dial(context.Background(), ws.URL(), nil)
	require.NoError(t, err, "the upgrade itself succeeds")
	_, _, err = other.Read(context.Background())
	assert.Equal(t, websocket.StatusPolicyViolation, websocket.CloseStatus(err), "then it is closed: %v", err)
	assert.Equal(t, uint64(2), ws.Counters().RefusedUpgrades)

	_, allowed := startWebSocket(t, net.WebSocketConfig{OriginPatterns: []string{"game.example"}})
	conn := rawWS(t, allowed, &websocket.DialOptions{
		Subprotocols: []string{net.WebSocketSubprotocol}, HTTPHeader: http.Header{"Origin": []string{"https://game.example"}},
	})
	assert.Equal(t, net.WebSocketSubprotocol, conn.Subprotocol())
	assert.Zero(t, ws.Stats().Opened, "no session was opened on the first transport")
	assert.Empty(t, p.events())
}

// TestWebSocketMalformedMessagesEndOnlyTheirSession: a text message, or a
// message over MaxFrame, ends the sender's session with a reason that
// says so; frames within the inbound limit are delivered and the rest
// dropped and counted.
func TestWebSocketMalformedMessagesEndOnlyTheirSession(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{MaxFrame: 64, InboundLimit: 3})
	good, gs := dialWS(t, p, ws, "good", 1, net.ClientConfig{})

	send := func(token string, typ websocket.MessageType, msg []byte) net.SessionID {
		conn := rawWS(t, ws, nil)
		hello, err := net.AppendHello(nil, net.Hello{Token: []byte(token)})
		require.NoError(t, err)
		require.NoError(t, conn.Write(context.Background(), websocket.MessageBinary, hello))
		s := p.helloFrom(t, token)
		require.NoError(t, conn.Write(context.Background(), typ, msg))
		return s
	}
	text := send("text", websocket.MessageText, []byte("hello"))
	assert.Equal(t, net.ReasonNotBinary, p.closedOf(t, text).Reason)
	huge := send("huge", websocket.MessageBinary, make([]byte, 65))
	assert.Equal(t, net.ReasonFrameTooLarge, p.closedOf(t, huge).Reason)

	// A flood between two ticks: the pump's Receive comes every 2 ms, so
	// a burst of 500 written at once cannot all land three to an epoch.
	flood := rawWS(t, ws, nil)
	move := net.AppendMove(nil, net.Move{Seq: 1})
	for range 500 {
		require.NoError(t, flood.Write(context.Background(), websocket.MessageBinary, move))
	}
	require.Eventually(t, func() bool { return ws.Counters().DroppedInbound > 0 }, 5*time.Second, 2*time.Millisecond,
		"frames over the inbound limit are dropped and counted")

	ws.SendUnreliable(gs, batch(3, 2))
	assert.Equal(t, []string{"batch 3: 2"}, pollUntil(t, good, 1), "the well-behaved client is untouched")
	require.NoError(t, good.Err())
}

// TestWebSocketSilentClientTimesOutWhileAPingingOneStays: a connection
// that sends nothing, not even pings, is ended after the idle timeout; a
// DialWebSocket client that sends nothing but its pings stays.
func TestWebSocketSilentClientTimesOutWhileAPingingOneStays(t *testing.T) {
	// The quiet client pings every 100 ms, ten times within the server's
	// idle timeout: a loaded machine's scheduling delays do not reach it.
	p, ws := startWebSocket(t, net.WebSocketConfig{IdleTimeout: time.Second})
	quiet, qs := dialWS(t, p, ws, "quiet", 1, net.ClientConfig{IdleTimeout: 300 * time.Millisecond})

	silent := rawWS(t, ws, nil)
	hello, err := net.AppendHello(nil, net.Hello{Token: []byte("silent")})
	require.NoError(t, err)
	require.NoError(t, silent.Write(context.Background(), websocket.MessageBinary, hello))
	ss := p.helloFrom(t, "silent")
	assert.Equal(t, net.ReasonClientTimedOut, p.closedOf(t, ss).Reason)

	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, quiet.Err(), "pings keep the quiet client connected")
	assert.False(t, slices.ContainsFunc(p.events(), func(e seen) bool { return e.Kind == net.SessionClosed && e.Session == qs }))
}

func TestDialWebSocketGivesUpWhenTheContextEnds(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := net.DialWebSocket(ctx, ws.URL(), net.ClientConfig{Token: "never"})
		errs <- err
	}()
	p.helloFrom(t, "never") // no Welcome comes
	cancel()
	err := <-errs
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

// TestWebSocketCloseDoesNotWaitForAClientThatNeverAnswers: a client that
// reads nothing never answers the close frame; Close cuts its connection
// at the flush deadline instead of waiting out the close handshake's own
// timeouts (ten seconds).
func TestWebSocketCloseDoesNotWaitForAClientThatNeverAnswers(t *testing.T) {
	p, ws := startWebSocket(t, net.WebSocketConfig{FlushTimeout: 100 * time.Millisecond})
	deaf := rawWS(t, ws, nil)
	hello, err := net.AppendHello(nil, net.Hello{Token: []byte("deaf")})
	require.NoError(t, err)
	require.NoError(t, deaf.Write(context.Background(), websocket.MessageBinary, hello))
	s := p.helloFrom(t, "deaf")

	start := time.Now()
	require.NoError(t, ws.Close())
	// Cut at the flush deadline (0.1 s), not at Close's own backstop (2.1
	// s), nor after the close handshake's timeouts.
	assert.Less(t, time.Since(start), 1500*time.Millisecond, "Close waited for the client")
	assert.Equal(t, net.ReasonTransportClosed, p.closedOf(t, s).Reason)
}

// TestWebSocketOverTLS: with a certificate ListenWebSocket serves wss://,
// and a client that accepts the development certificate gets through.
func TestWebSocketOverTLS(t *testing.T) {
	tlsConf, err := net.DevelopmentTLS()
	require.NoError(t, err)
	p, ws := startWebSocket(t, net.WebSocketConfig{TLS: tlsConf})
	require.True(t, strings.HasPrefix(ws.URL(), "wss://"), ws.URL())
	c, s := dialWS(t, p, ws, "tls", 3, net.ClientConfig{InsecureSkipVerify: true})
	assert.Equal(t, uint32(3), c.Welcome().Actor)
	ws.SendUnreliable(s, batch(1, 2))
	assert.Equal(t, []string{"batch 1: 2"}, pollUntil(t, c, 1))

	_, err = net.DialWebSocket(context.Background(), ws.URL(), net.ClientConfig{Token: "strict"})
	assert.ErrorContains(t, err, "certificate", "a client that verifies the certificate refuses a self-signed one")
}

// TestListenWebSocketServesPagesBesideTheSocket: the Pages handler gets
// every path but the WebSocket's, so a game's page shares its origin.
func TestListenWebSocketServesPagesBesideTheSocket(t *testing.T) {
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) })
	p, ws := startWebSocket(t, net.WebSocketConfig{Pages: pages})
	base := strings.TrimSuffix(strings.Replace(ws.URL(), "ws://", "http://", 1), net.DefaultWebSocketPath)
	res, err := http.Get(base + "/game/index.html")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "page /game/index.html", string(body))
	c, _ := dialWS(t, p, ws, "page-player", 2, net.ClientConfig{})
	assert.Equal(t, uint32(2), c.Welcome().Actor, "the WebSocket is still at its path")
}

// TestCommandsAndEventsCrossEitherTransport: a client's command reaches
// the server whole, on the reliable channel, and an event the server sends
// reaches the client's Poll, over QUIC and over a WebSocket alike.
func TestCommandsAndEventsCrossEitherTransport(t *testing.T) {
	for _, transport := range []string{"quic", "ws"} {
		t.Run(transport, func(t *testing.T) {
			var (
				p *pump
				c *net.Client
				s net.SessionID
			)
			if transport == "quic" {
				p = startQUIC(t, net.QUICConfig{})
				c, s = dial(t, p, "cmd", 1, net.ClientConfig{})
			} else {
				var ws *net.WebSocket
				p, ws = startWebSocket(t, net.WebSocketConfig{})
				c, s = dialWS(t, p, ws, "cmd", 1, net.ClientConfig{})
			}
			require.NoError(t, c.SendCommand([]byte("jump")))
			require.NoError(t, c.SendCommand(nil), "an empty command is a command")
			commands := func() [][]byte {
				var got [][]byte
				for _, e := range p.events() {
					if typ, _ := net.PeekType(e.Frame); e.Kind == net.FrameReceived && e.Session == s && typ == net.TypeCommand {
						if payload, err := net.DecodeCommand(e.Frame); err == nil {
							got = append(got, payload)
						}
					}
				}
				return got
			}
			require.Eventually(t, func() bool { return len(commands()) == 2 }, 5*time.Second, 2*time.Millisecond)
			assert.Equal(t, [][]byte{[]byte("jump"), {}}, commands())
			assert.ErrorContains(t, c.SendCommand(make([]byte, 2000)), "over the frame limit")

			p.tr.SendReliable(s, net.AppendEvent(nil, []byte("you jumped")))
			var events []string
			deadline := time.Now().Add(5 * time.Second)
			for len(events) == 0 && time.Now().Before(deadline) {
				c.Poll(func(f *net.Frame) {
					if f.Type == net.TypeEvent {
						events = append(events, string(f.Payload))
					}
				})
				time.Sleep(2 * time.Millisecond)
			}
			assert.Equal(t, []string{"you jumped"}, events)
			st := c.Stats()
			assert.Equal(t, uint64(2), st.CommandsSent)
			assert.Equal(t, uint64(1), st.Events)
		})
	}
}
