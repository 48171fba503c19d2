package websocket_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	cws "github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

// startWebSocket listens on loopback with cfg and starts a pump on it;
// cleanup closes the transport.
func startWebSocket(t *testing.T, cfg websocket.Config) (*nettest.Pump, *websocket.Transport) {
	t.Helper()
	ws, err := websocket.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	return nettest.StartPump(t, &nettest.Pump{TR: ws}), ws
}

// dialWS connects a client with token over the WebSocket and welcomes it
// as actor; it returns the client and its session.
func dialWS(t *testing.T, p *nettest.Pump, ws *websocket.Transport, token string, actor uint32, cfg client.Config) (*client.Client, wire.SessionID) {
	t.Helper()
	cfg.Token = token
	type result struct {
		c   *client.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := client.DialWebSocket(context.Background(), ws.URL(), cfg)
		ch <- result{c, err}
	}()
	s := p.HelloFrom(t, token)
	ws.SendReliable(s, wire.AppendWelcome(nil, wire.Welcome{Actor: actor, TickRate: 30}))
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { r.c.Close() })
	return r.c, s
}

// rawWS opens a WebSocket to ws that is no Throng client: it speaks the
// subprotocol, and does whatever the test makes it do.
func rawWS(t *testing.T, ws *websocket.Transport, opts *cws.DialOptions) *cws.Conn {
	t.Helper()
	if opts == nil {
		opts = &cws.DialOptions{Subprotocols: []string{websocket.Subprotocol}}
	}
	conn, _, err := cws.Dial(context.Background(), ws.URL(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { conn.CloseNow() })
	return conn
}

func TestWebSocketHandshakeMovesAndBatchesCrossTheNetwork(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	require.True(t, strings.HasPrefix(ws.URL(), "ws://127.0.0.1:"), ws.URL())
	c, s := dialWS(t, p, ws, "ada", 7, client.Config{Protocol: 3})

	hello := p.Await(t, "Hello", func(e nettest.Seen) bool { return e.Kind == wire.FrameReceived && e.Session == s })
	h, err := wire.DecodeHello(hello.Frame)
	require.NoError(t, err)
	assert.Equal(t, wire.Hello{Protocol: 3, Token: []byte("ada")}, h)
	assert.Equal(t, uint32(7), c.Welcome().Actor, "DialWebSocket returns after the Welcome")
	assert.Equal(t, wire.SessionOpened, p.Events()[0].Kind, "the session opens before its first frame")

	sent, err := c.SendMove(wire.Move{Seq: 1, X: 5, Y: 6})
	require.NoError(t, err)
	require.True(t, sent)
	move := p.Await(t, "Move", func(e nettest.Seen) bool {
		typ, _ := wire.PeekType(e.Frame)
		return e.Kind == wire.FrameReceived && typ == wire.TypeMove
	})
	m, err := wire.DecodeMove(move.Frame)
	require.NoError(t, err)
	assert.Equal(t, wire.Move{Seq: 1, X: 5, Y: 6}, m)

	ws.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 8}))
	ws.SendUnreliable(s, nettest.Batch(1, 8))
	assert.Equal(t, []string{"appear 8", "batch 1: 8"}, nettest.PollUntil(t, c, 2))

	first, second, last := nettest.Batch(5, 1, 2), nettest.Batch(5, 3, 4), nettest.Batch(5, 6)
	ws.SendUnreliableBatch(s, slices.Concat(first, second, last), len(first))
	assert.Equal(t, []string{"batch 5: 1 2", "batch 5: 3 4", "batch 5: 6"}, nettest.PollUntil(t, c, 3))

	full := nettest.Batch(6, make([]uint32, wire.MaxRecordsPerBatch)...)
	ws.SendUnreliable(s, append(slices.Clone(full), 0, 0, 0))          // over MaxDatagram
	ws.SendUnreliable(s, nettest.Batch(6, 1)[:wire.BatchHeaderSize-1]) // not a batch
	ws.SendUnreliable(s+100, full)                                     // no such session
	ws.SendUnreliable(s, full)
	got := nettest.PollUntil(t, c, 1)
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "batch 6:"), "the largest batch the server sends arrives")
	assert.Equal(t, uint64(3), ws.Stats().DroppedDatagrams, "oversize, short, unknown session")
	assert.Equal(t, uint64(5), ws.Stats().DatagramsOut)

	stats := c.Stats()
	assert.Equal(t, uint64(1+5+wire.MaxRecordsPerBatch), stats.Records)
	assert.Equal(t, uint64(5), stats.Datagrams)
	assert.Equal(t, uint64(1), stats.MovesSent)
}

func TestWebSocketDisconnectReasonReachesTheClientAfterItsFrames(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	c, s := dialWS(t, p, ws, "bo", 1, client.Config{})

	for a := uint32(10); a < 13; a++ {
		ws.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: a}))
	}
	ws.Disconnect(s, "kicked for testing")
	ws.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 99}))

	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection did not close")
	}
	assert.Equal(t, []string{"appear 10", "appear 11", "appear 12"}, nettest.Polled(c), "frames queued before the disconnect arrive, none after")
	var disc *client.DisconnectedError
	require.ErrorAs(t, c.Err(), &disc)
	assert.Equal(t, "kicked for testing", disc.Reason)
	assert.Equal(t, "kicked for testing", p.ClosedOf(t, s).Reason)
	assert.Equal(t, uint64(1), ws.Stats().DroppedReliable, "the frame after the disconnect")
	_, err := c.SendMove(wire.Move{Seq: 1})
	assert.ErrorAs(t, err, &disc, "SendMove after the close says why")
}

func TestDialWebSocketReturnsTheServersRefusalWithItsReason(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	errs := make(chan error, 1)
	go func() {
		_, err := client.DialWebSocket(context.Background(), ws.URL(), client.Config{Token: "late"})
		errs <- err
	}()
	s := p.HelloFrom(t, "late")
	ws.SendReliable(s, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("server busy, try again shortly")}))
	ws.Disconnect(s, "refused")

	var refused *client.RefusedError
	require.ErrorAs(t, <-errs, &refused)
	assert.Equal(t, wire.RefuseBusy, refused.Code)
	assert.Equal(t, "server busy, try again shortly", refused.Reason)
	assert.Equal(t, "refused", p.ClosedOf(t, s).Reason, "the server records its own reason")
}

func TestWebSocketClientCloseEndsTheSession(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	c, s := dialWS(t, p, ws, "cy", 1, client.Config{})
	require.NoError(t, c.Close())
	assert.Equal(t, wire.ReasonClientClosed, p.ClosedOf(t, s).Reason)
	assert.ErrorIs(t, c.Err(), wire.ErrClosed)
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
	p, ws := startWebSocket(t, websocket.Config{})
	var clients []*client.Client
	for _, token := range []string{"a", "b", "c"} {
		c, _ := dialWS(t, p, ws, token, 1, client.Config{})
		clients = append(clients, c)
	}
	require.NoError(t, ws.Close())
	require.NoError(t, ws.Close(), "closing again")
	for _, c := range clients {
		<-c.Done()
		var disc *client.DisconnectedError
		require.ErrorAs(t, c.Err(), &disc)
		assert.Equal(t, wire.ReasonTransportClosed, disc.Reason)
	}
	time.Sleep(20 * time.Millisecond) // one more Receive
	opened, closed := map[wire.SessionID]int{}, map[wire.SessionID]int{}
	for _, e := range p.Events() {
		switch e.Kind {
		case wire.SessionOpened:
			opened[e.Session]++
		case wire.SessionClosed:
			closed[e.Session]++
			assert.Equal(t, wire.ReasonTransportClosed, e.Reason)
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
	p, ws := startWebSocket(t, websocket.Config{StallTimeout: 200 * time.Millisecond})
	good, gs := dialWS(t, p, ws, "good", 1, client.Config{})

	deaf := rawWS(t, ws, nil)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("deaf")})
	require.NoError(t, err)
	require.NoError(t, deaf.Write(context.Background(), cws.MessageBinary, hello))
	ds := p.HelloFrom(t, "deaf")

	appear := wire.AppendAppear(nil, wire.Appear{Actor: 5})
	big := slices.Concat(appear, make([]byte, 1000-len(appear))) // a kilobyte a frame
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(p.Events(), func(e nettest.Seen) bool { return e.Kind == wire.SessionClosed && e.Session == ds }) {
		require.True(t, time.Now().Before(deadline), "the deaf client was never disconnected")
		for range 100 {
			ws.SendReliable(ds, big)
		}
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, wire.ReasonSlowClient, p.ClosedOf(t, ds).Reason)
	assert.Equal(t, uint64(1), ws.Counters().SlowClients)

	ws.SendUnreliable(gs, nettest.Batch(9, 4))
	assert.Equal(t, []string{"batch 9: 4"}, nettest.PollUntil(t, good, 1), "the other client still receives")
}

func TestWebSocketReliableQueueOverflowDisconnects(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{ReliableQueue: 4})
	_, s := dialWS(t, p, ws, "q", 1, client.Config{})
	// Queued faster than the writer can take them, some Send call finds
	// the queue full.
	for range 10_000 {
		ws.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 2}))
		if ws.Counters().SlowClients > 0 {
			break
		}
	}
	assert.Equal(t, wire.ReasonSlowClient, p.ClosedOf(t, s).Reason)
}

// TestWebSocketRefusesForeignPagesAndOtherProtocols: a browser page from
// another origin is refused unless OriginPatterns lets it in; a client
// that does not ask for the Throng subprotocol is closed before it becomes
// a session.
func TestWebSocketRefusesForeignPagesAndOtherProtocols(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	foreign := http.Header{"Origin": []string{"https://evil.example"}}
	_, _, err := cws.Dial(context.Background(), ws.URL(), &cws.DialOptions{
		Subprotocols: []string{websocket.Subprotocol}, HTTPHeader: foreign,
	})
	require.Error(t, err, "a page of another origin")

	other, _, err := cws.Dial(context.Background(), ws.URL(), nil)
	require.NoError(t, err, "the upgrade itself succeeds")
	_, _, err = other.Read(context.Background())
	assert.Equal(t, cws.StatusPolicyViolation, cws.CloseStatus(err), "then it is closed: %v", err)
	assert.Equal(t, uint64(2), ws.Counters().RefusedUpgrades)

	_, allowed := startWebSocket(t, websocket.Config{OriginPatterns: []string{"game.example"}})
	conn := rawWS(t, allowed, &cws.DialOptions{
		Subprotocols: []string{websocket.Subprotocol}, HTTPHeader: http.Header{"Origin": []string{"https://game.example"}},
	})
	assert.Equal(t, websocket.Subprotocol, conn.Subprotocol())
	assert.Zero(t, ws.Stats().Opened, "no session was opened on the first transport")
	assert.Empty(t, p.Events())
}

// TestWebSocketMalformedMessagesEndOnlyTheirSession: a text message, or a
// message over MaxFrame, ends the sender's session with a reason that
// says so; frames within the inbound limit are delivered and the rest
// dropped and counted.
func TestWebSocketMalformedMessagesEndOnlyTheirSession(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{MaxFrame: 64, InboundLimit: 3})
	good, gs := dialWS(t, p, ws, "good", 1, client.Config{})

	send := func(token string, typ cws.MessageType, msg []byte) wire.SessionID {
		conn := rawWS(t, ws, nil)
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
		require.NoError(t, err)
		require.NoError(t, conn.Write(context.Background(), cws.MessageBinary, hello))
		s := p.HelloFrom(t, token)
		require.NoError(t, conn.Write(context.Background(), typ, msg))
		return s
	}
	text := send("text", cws.MessageText, []byte("hello"))
	assert.Equal(t, websocket.ReasonNotBinary, p.ClosedOf(t, text).Reason)
	huge := send("huge", cws.MessageBinary, make([]byte, 65))
	assert.Equal(t, websocket.ReasonFrameTooLarge, p.ClosedOf(t, huge).Reason)

	// A flood between two ticks: the pump's Receive comes every 2 ms, so
	// a burst of 500 written at once cannot all land three to an epoch.
	flood := rawWS(t, ws, nil)
	move := wire.AppendMove(nil, wire.Move{Seq: 1})
	for range 500 {
		require.NoError(t, flood.Write(context.Background(), cws.MessageBinary, move))
	}
	require.Eventually(t, func() bool { return ws.Counters().DroppedInbound > 0 }, 5*time.Second, 2*time.Millisecond,
		"frames over the inbound limit are dropped and counted")

	ws.SendUnreliable(gs, nettest.Batch(3, 2))
	assert.Equal(t, []string{"batch 3: 2"}, nettest.PollUntil(t, good, 1), "the well-behaved client is untouched")
	require.NoError(t, good.Err())
}

// TestWebSocketSilentClientTimesOutWhileAPingingOneStays: a connection
// that sends nothing, not even pings, is ended after the idle timeout; a
// DialWebSocket client that sends nothing but its pings stays.
func TestWebSocketSilentClientTimesOutWhileAPingingOneStays(t *testing.T) {
	// The quiet client pings every 100 ms, ten times within the server's
	// idle timeout: a loaded machine's scheduling delays do not reach it.
	p, ws := startWebSocket(t, websocket.Config{IdleTimeout: time.Second})
	quiet, qs := dialWS(t, p, ws, "quiet", 1, client.Config{IdleTimeout: 300 * time.Millisecond})

	silent := rawWS(t, ws, nil)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("silent")})
	require.NoError(t, err)
	require.NoError(t, silent.Write(context.Background(), cws.MessageBinary, hello))
	ss := p.HelloFrom(t, "silent")
	assert.Equal(t, wire.ReasonClientTimedOut, p.ClosedOf(t, ss).Reason)

	time.Sleep(1500 * time.Millisecond)
	require.NoError(t, quiet.Err(), "pings keep the quiet client connected")
	assert.False(t, slices.ContainsFunc(p.Events(), func(e nettest.Seen) bool { return e.Kind == wire.SessionClosed && e.Session == qs }))
}

func TestDialWebSocketGivesUpWhenTheContextEnds(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := client.DialWebSocket(ctx, ws.URL(), client.Config{Token: "never"})
		errs <- err
	}()
	p.HelloFrom(t, "never") // no Welcome comes
	cancel()
	err := <-errs
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}

// TestWebSocketCloseDoesNotWaitForAClientThatNeverAnswers: a client that
// reads nothing never answers the close frame; Close cuts its connection
// at the flush deadline instead of waiting out the close handshake's own
// timeouts (ten seconds).
func TestWebSocketCloseDoesNotWaitForAClientThatNeverAnswers(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{FlushTimeout: 100 * time.Millisecond})
	deaf := rawWS(t, ws, nil)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("deaf")})
	require.NoError(t, err)
	require.NoError(t, deaf.Write(context.Background(), cws.MessageBinary, hello))
	s := p.HelloFrom(t, "deaf")

	start := time.Now()
	require.NoError(t, ws.Close())
	// Cut at the flush deadline (0.1 s), not at Close's own backstop (2.1
	// s), nor after the close handshake's timeouts.
	assert.Less(t, time.Since(start), 1500*time.Millisecond, "Close waited for the client")
	assert.Equal(t, wire.ReasonTransportClosed, p.ClosedOf(t, s).Reason)
}

// TestWebSocketOverTLS: with a certificate Listen serves wss://,
// and a client that accepts the development certificate gets through.
func TestWebSocketOverTLS(t *testing.T) {
	tlsConf, err := quic.DevelopmentTLS()
	require.NoError(t, err)
	p, ws := startWebSocket(t, websocket.Config{TLS: tlsConf})
	require.True(t, strings.HasPrefix(ws.URL(), "wss://"), ws.URL())
	c, s := dialWS(t, p, ws, "tls", 3, client.Config{InsecureSkipVerify: true})
	assert.Equal(t, uint32(3), c.Welcome().Actor)
	ws.SendUnreliable(s, nettest.Batch(1, 2))
	assert.Equal(t, []string{"batch 1: 2"}, nettest.PollUntil(t, c, 1))

	_, err = client.DialWebSocket(context.Background(), ws.URL(), client.Config{Token: "strict"})
	assert.ErrorContains(t, err, "certificate", "a client that verifies the certificate refuses a self-signed one")
}

// TestListenWebSocketServesPagesBesideTheSocket: the Pages handler gets
// every path but the WebSocket's, so a game's page shares its origin.
func TestListenWebSocketServesPagesBesideTheSocket(t *testing.T) {
	pages := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page "+r.URL.Path) })
	p, ws := startWebSocket(t, websocket.Config{Pages: pages})
	base := strings.TrimSuffix(strings.Replace(ws.URL(), "ws://", "http://", 1), websocket.DefaultPath)
	res, err := http.Get(base + "/game/index.html")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "page /game/index.html", string(body))
	c, _ := dialWS(t, p, ws, "page-player", 2, client.Config{})
	assert.Equal(t, uint32(2), c.Welcome().Actor, "the WebSocket is still at its path")
}

// TestCommandsAndEventsCrossEitherTransport: a client's command reaches
// the server whole, on the reliable channel, and an event the server sends
// reaches the client's Poll, over QUIC and over a WebSocket alike.
func TestCommandsAndEventsCrossEitherTransport(t *testing.T) {
	for _, transport := range []string{"quic", "ws"} {
		t.Run(transport, func(t *testing.T) {
			var (
				p *nettest.Pump
				c *client.Client
				s wire.SessionID
			)
			if transport == "quic" {
				p = nettest.StartQUIC(t, quic.Config{})
				c, s = nettest.DialQUIC(t, p, "cmd", 1, client.Config{})
			} else {
				var ws *websocket.Transport
				p, ws = startWebSocket(t, websocket.Config{})
				c, s = dialWS(t, p, ws, "cmd", 1, client.Config{})
			}
			require.NoError(t, c.SendCommand([]byte("jump")))
			require.NoError(t, c.SendCommand(nil), "an empty command is a command")
			commands := func() [][]byte {
				var got [][]byte
				for _, e := range p.Events() {
					if typ, _ := wire.PeekType(e.Frame); e.Kind == wire.FrameReceived && e.Session == s && typ == wire.TypeCommand {
						if payload, err := wire.DecodeCommand(e.Frame); err == nil {
							got = append(got, payload)
						}
					}
				}
				return got
			}
			require.Eventually(t, func() bool { return len(commands()) == 2 }, 5*time.Second, 2*time.Millisecond)
			assert.Equal(t, [][]byte{[]byte("jump"), {}}, commands())
			assert.ErrorContains(t, c.SendCommand(make([]byte, 2000)), "over the frame limit")

			p.TR.SendReliable(s, wire.AppendEvent(nil, []byte("you jumped")))
			var events []string
			deadline := time.Now().Add(5 * time.Second)
			for len(events) == 0 && time.Now().Before(deadline) {
				c.Poll(func(f *wire.Frame) {
					if f.Type == wire.TypeEvent {
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

// TestWebSocketReliableBatchIsEachFrameSentInTurn: a client sent a batch
// gets what a client sent the same frames one by one gets, one message a
// frame, in the same place among the frames sent before and after; the
// counters grow alike, and the frames one by one would drop (over
// MaxFrame, under a header, a cut-short tail, no session) are dropped and
// counted.
func TestWebSocketReliableBatchIsEachFrameSentInTurn(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{MaxFrame: 100})
	each, sEach := dialWS(t, p, ws, "each", 1, client.Config{})
	batched, sBatched := dialWS(t, p, ws, "batched", 2, client.Config{})
	appear := func(a uint32) []byte { return wire.AppendAppear(nil, wire.Appear{Actor: a}) }
	frames := [][]byte{
		appear(10), wire.AppendProp(nil, wire.Prop{Actor: 11}), slices.Concat(appear(99), make([]byte, 101-wire.AppearSize)),
		appear(12), {wire.Version}, appear(13),
	}

	start := nettest.ReliableOf(ws)
	ws.SendReliable(sEach, appear(1))
	for _, f := range frames {
		ws.SendReliable(sEach, f)
	}
	ws.SendReliable(sEach, appear(2))
	mid := nettest.ReliableOf(ws)
	ws.SendReliable(sBatched, appear(1))
	ws.SendReliableBatch(sBatched, nettest.Stream(frames...))
	ws.SendReliable(sBatched, appear(2))
	end := nettest.ReliableOf(ws)

	want := []string{"appear 1", "appear 10", "prop 11", "appear 12", "appear 13", "appear 2"}
	assert.Equal(t, want, nettest.PollUntil(t, each, len(want)))
	assert.Equal(t, want, nettest.PollUntil(t, batched, len(want)))
	assert.Equal(t, nettest.Reliable{Out: 6, Bytes: 6 * wire.AppearSize, Dropped: 2}, mid.Minus(start))
	assert.Equal(t, mid.Minus(start), end.Minus(mid))

	cut := nettest.Stream(appear(14), appear(15))
	ws.SendReliableBatch(sBatched, cut[:len(cut)-1])
	assert.Equal(t, []string{"appear 14"}, nettest.PollUntil(t, batched, 1), "sent up to the last whole frame")
	ws.SendReliableBatch(sBatched+100, nettest.Stream(frames...))
	assert.Equal(t, nettest.Reliable{Out: 1, Bytes: wire.AppearSize, Dropped: 1 + 6}, nettest.ReliableOf(ws).Minus(end),
		"the cut-short tail, and every frame for no session")
	require.NoError(t, batched.Err())
}

// TestWebSocketReliableBatchThatOverflowsTheQueueDisconnects: a batch
// longer than the room left in the queue keeps what fits, drops the rest,
// and ends the session as too slow, as the SendReliable that found the
// queue full would.
func TestWebSocketReliableBatchThatOverflowsTheQueueDisconnects(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{ReliableQueue: 4})
	c, s := dialWS(t, p, ws, "burst", 1, client.Config{})
	start := nettest.ReliableOf(ws)
	frames := make([][]byte, 10)
	for i := range frames {
		frames[i] = wire.AppendAppear(nil, wire.Appear{Actor: uint32(i)})
	}
	// The queue is empty (the Welcome was written), and the batch joins it
	// under one lock: four fit, whatever the writer does meanwhile.
	ws.SendReliableBatch(s, nettest.Stream(frames...))

	assert.Equal(t, wire.ReasonSlowClient, p.ClosedOf(t, s).Reason)
	assert.Equal(t, nettest.Reliable{Out: 4, Bytes: 4 * wire.AppearSize, Dropped: 6}, nettest.ReliableOf(ws).Minus(start))
	assert.Equal(t, uint64(1), ws.Counters().SlowClients)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection did not close")
	}
	var disc *client.DisconnectedError
	require.ErrorAs(t, c.Err(), &disc)
	assert.Equal(t, wire.ReasonSlowClient, disc.Reason)
}

func TestWebSocketBatchesWaitForTheServersFlush(t *testing.T) {
	p, ws := startWebSocket(t, websocket.Config{})
	c, s := dialWS(t, p, ws, "ada", 7, client.Config{})

	ws.SendUnreliable(s, nettest.Batch(1, 8))
	assert.Equal(t, []string{"batch 1: 8"}, nettest.PollUntil(t, c, 1), "until a server flushes, a batch goes at once")

	ws.Flush() // a server that flushes after every tick
	ws.SendUnreliable(s, nettest.Batch(2, 9))
	time.Sleep(150 * time.Millisecond)
	assert.Empty(t, nettest.Polled(c), "the tick's batches wait for its flush")
	ws.Flush()
	assert.Equal(t, []string{"batch 2: 9"}, nettest.PollUntil(t, c, 1))

	ws.SendUnreliable(s, nettest.Batch(3, 10))
	ws.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 11}))
	assert.Equal(t, []string{"appear 11", "batch 3: 10"}, nettest.PollUntil(t, c, 2),
		"a reliable frame never waits, and takes the batch queued before it along")
	assert.Equal(t, uint64(3), ws.Stats().DatagramsOut)
}
