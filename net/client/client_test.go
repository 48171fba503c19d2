package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// dialAsync starts Dial with token and returns where its result lands.
func dialAsync(ctx context.Context, p *nettest.Pump, cfg client.Config) <-chan error {
	done := make(chan error, 1)
	cfg.InsecureSkipVerify = true
	go func() {
		c, err := client.Dial(ctx, p.Addr(), cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	return done
}

func TestDialReturnsTheServersRefusalWithItsReason(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	done := dialAsync(context.Background(), p, client.Config{Token: "old", Protocol: 1})
	s := p.HelloFrom(t, "old")
	const reason = "protocol mismatch: this server speaks a different game protocol version"
	p.Q.SendReliable(s, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseProtocol, Reason: []byte(reason)}))
	// A tick slowed down between the two calls: the client has the Refuse
	// long before the Disconnect, and must leave the closing to the server.
	time.Sleep(100 * time.Millisecond)
	p.Q.Disconnect(s, reason)

	var refused *client.RefusedError
	require.ErrorAs(t, <-done, &refused)
	assert.Equal(t, wire.RefuseProtocol, refused.Code)
	assert.Equal(t, reason, refused.Reason)
	assert.Equal(t, reason, p.ClosedOf(t, s).Reason, "the server records its own reason, not the client leaving")
}

func TestDialReturnsTheRefusalWhenTheServerNeverCloses(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := dialAsync(ctx, p, client.Config{Token: "banned"})
	s := p.HelloFrom(t, "banned")
	p.Q.SendReliable(s, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseToken, Reason: []byte("banned")}))
	// A second later the client has long had the Refuse, and waits for a
	// close that never comes: the caller gives up.
	time.AfterFunc(time.Second, cancel)

	var refused *client.RefusedError
	require.ErrorAs(t, <-done, &refused, "a refusal in hand is what Dial reports, not the context")
	assert.Equal(t, client.RefusedError{Code: wire.RefuseToken, Reason: "banned"}, *refused)
	assert.Equal(t, wire.ReasonClientClosed, p.ClosedOf(t, s).Reason, "the client closes once it stops waiting")
}

func TestDialReportsTheServersReasonWhenClosedBeforeTheWelcome(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	done := dialAsync(context.Background(), p, client.Config{Token: "early"})
	p.Q.Disconnect(p.HelloFrom(t, "early"), "maintenance")

	var gone *client.DisconnectedError
	require.ErrorAs(t, <-done, &gone)
	assert.Equal(t, "maintenance", gone.Reason)
}

func TestDialGivesUpWhenTheContextEnds(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := dialAsync(ctx, p, client.Config{Token: "ignored"})
	s := p.HelloFrom(t, "ignored") // the server never answers
	cancel()
	err := <-done
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Equal(t, wire.ReasonClientClosed, p.ClosedOf(t, s).Reason,
		"the server learns that the client gave up")
}

func TestClientSkipsMovesOverTheRateLimit(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "eager", 1, client.Config{})
	for i := range 50 {
		_, err := c.SendMove(wire.Move{Seq: uint32(i + 1), X: float32(i)})
		require.NoError(t, err)
	}
	stats := c.Stats()
	assert.Equal(t, uint64(1), stats.MovesSent, "50 moves at once: one goes out")
	assert.Equal(t, uint64(49), stats.MovesSkipped)

	time.Sleep(50 * time.Millisecond)
	sent, err := c.SendMove(wire.Move{Seq: 100, X: 100})
	require.NoError(t, err)
	assert.True(t, sent, "a move one interval later goes out")
	p.Await(t, "the second move", func(e nettest.Seen) bool {
		m, err := wire.DecodeMove(e.Frame)
		return err == nil && m.Seq == 100
	})
	moves := 0
	for _, e := range p.Events() {
		if _, err := wire.DecodeMove(e.Frame); err == nil && e.Session == s {
			moves++
		}
	}
	assert.Equal(t, 2, moves, "the server got only what was sent")
}

func TestClientKeepsBoundedQueuesAndPollsReliableFramesFirst(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "slowpoke", 1, client.Config{DatagramQueue: 4})
	for range 10 {
		p.Q.SendUnreliable(s, nettest.Batch(1, 5)) // one tick's datagrams: the mailbox keeps all
	}
	p.Q.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 5}))
	require.Eventually(t, func() bool {
		st := c.Stats()
		return st.Datagrams+st.DroppedDatagrams == 10 && st.Reliable == 2
	}, 5*time.Second, time.Millisecond)
	stats := c.Stats()
	assert.Equal(t, uint64(4), stats.Datagrams)
	assert.Equal(t, uint64(6), stats.DroppedDatagrams)
	assert.Equal(t, uint64(4), stats.Records)
	assert.Equal(t,
		[]string{"appear 5", "batch 1: 5", "batch 1: 5", "batch 1: 5", "batch 1: 5"},
		nettest.Polled(c), "reliable frames come first, then the kept datagrams")
	assert.Empty(t, nettest.Polled(c))
}

func TestClientMeasuresRecordsPerSecond(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "counter", 1, client.Config{})
	start := time.Now()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	sent := 0
	for tick := uint32(1); time.Since(start) < 1300*time.Millisecond; tick++ {
		<-ticker.C
		p.Q.SendUnreliable(s, nettest.Batch(tick, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))
		sent += 10
		c.Poll(func(*wire.Frame) {})
	}
	want := float64(sent) / time.Since(start).Seconds()
	assert.InEpsilon(t, want, c.Stats().RecordsPerSecond, 0.3, "sent %d records", sent)
}

// TestAWebSocketClientWhoseServerStopsReadingIsClosed: a server that
// welcomes the client and then never reads again (so it never answers a
// ping, and its socket fills) does not leave the client's sends hanging:
// the connection closes (within about four thirds of the idle timeout; the
// test allows far more, for a loaded machine), and sends return its error.
func TestAWebSocketClientWhoseServerStopsReadingIsClosed(t *testing.T) {
	stalled := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := cws.Accept(w, r, &cws.AcceptOptions{Subprotocols: []string{websocket.Subprotocol}})
		if err != nil {
			return
		}
		defer conn.CloseNow()
		ctx := r.Context()
		_, _, err = conn.Read(ctx) // the Hello
		if err != nil {
			return
		}
		if conn.Write(ctx, cws.MessageBinary, wire.AppendWelcome(nil, wire.Welcome{Actor: 1, TickRate: 30})) != nil {
			return
		}
		<-stalled // and never reads again
	}))
	defer srv.Close()
	defer close(stalled)
	url := "ws" + strings.TrimPrefix(srv.URL, "http") + "/throng"
	const idle = 300 * time.Millisecond
	c, err := client.DialWebSocket(context.Background(), url, client.Config{Token: "t", IdleTimeout: idle})
	require.NoError(t, err)
	defer c.Close()

	payload := make([]byte, 900)
	sending := make(chan int, 1)
	go func() { // until a send fails; one blocked for good would hang here
		sent := 0
		for c.SendCommand(payload) == nil {
			sent++
		}
		sending <- sent
	}()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client is still open 5 s after its server stopped reading; it should close within 0.4 s")
	}
	select {
	case <-sending:
	case <-time.After(5 * time.Second):
		t.Fatal("a send is still blocked after the connection closed")
	}
	assert.Error(t, c.SendCommand(payload), "a send after the close fails")
}
