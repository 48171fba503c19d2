package net_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net"
)

// seen is one Inbound with its frame copied, as a test's server saw it.
type seen struct {
	Kind    net.InboundKind
	Session net.SessionID
	Frame   []byte
	Reason  string
}

// pump plays the tick for a QUIC transport under test: it calls Receive
// every couple of milliseconds on one goroutine and logs what arrived.
type pump struct {
	q    *net.QUIC     // QUIC tests' transport
	tr   net.Transport // the transport Receive is called on
	mu   sync.Mutex
	log  []seen
	stop chan struct{}
	done chan struct{}
}

// startQUIC listens on loopback in development mode with cfg and starts
// its pump; cleanup closes the transport.
func startQUIC(t *testing.T, cfg net.QUICConfig) *pump {
	t.Helper()
	if cfg.TLS == nil && cfg.CertFile == "" {
		cfg.Development = true
	}
	q, err := net.ListenQUIC("127.0.0.1:0", cfg)
	require.NoError(t, err)
	return startPump(t, &pump{q: q, tr: q})
}

// startPump starts p's Receive loop; cleanup closes its transport.
func startPump(t *testing.T, p *pump) *pump {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.run()
	t.Cleanup(func() {
		p.tr.Close()
		close(p.stop)
		<-p.done
	})
	return p
}

func (p *pump) run() {
	defer close(p.done)
	var inbox []net.Inbound
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		inbox = p.tr.Receive(inbox[:0])
		p.mu.Lock()
		for _, in := range inbox {
			p.log = append(p.log, seen{in.Kind, in.Session, slices.Clone(in.Frame), in.Reason})
		}
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

func (p *pump) addr() string { return p.q.Addr().String() }

// events returns a copy of everything seen so far.
func (p *pump) events() []seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// await returns the first event that matches, failing after five seconds.
func (p *pump) await(t *testing.T, what string, match func(seen) bool) seen {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range p.events() {
			if match(e) {
				return e
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %s within 5s; saw %d events", what, len(p.events()))
	return seen{}
}

// closedOf awaits the session's SessionClosed.
func (p *pump) closedOf(t *testing.T, s net.SessionID) seen {
	t.Helper()
	return p.await(t, fmt.Sprintf("SessionClosed of %d", s), func(e seen) bool {
		return e.Kind == net.SessionClosed && e.Session == s
	})
}

// helloFrom awaits the Hello carrying token and returns its session.
func (p *pump) helloFrom(t *testing.T, token string) net.SessionID {
	t.Helper()
	return p.await(t, "Hello from "+token, func(e seen) bool {
		h, err := net.DecodeHello(e.Frame)
		return e.Kind == net.FrameReceived && err == nil && string(h.Token) == token
	}).Session
}

// dial connects a client with token and welcomes it as actor; it returns
// the client and its session.
func dial(t *testing.T, p *pump, token string, actor uint32, cfg net.ClientConfig) (*net.Client, net.SessionID) {
	t.Helper()
	cfg.Token, cfg.InsecureSkipVerify = token, true
	type result struct {
		c   *net.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := net.Dial(context.Background(), p.addr(), cfg)
		ch <- result{c, err}
	}()
	s := p.helloFrom(t, token)
	p.q.SendReliable(s, net.AppendWelcome(nil, net.Welcome{Actor: actor, TickRate: 30}))
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { r.c.Close() })
	return r.c, s
}

// polled collects every frame a client has received so far, re-encoded
// where a test wants to compare bytes: "appear 7", "batch 12: 3 4".
func polled(c *net.Client) []string {
	var out []string
	c.Poll(func(f *net.Frame) {
		switch f.Type {
		case net.TypeAppear:
			out = append(out, fmt.Sprintf("appear %d", f.Appear.Actor))
		case net.TypeDisappear:
			out = append(out, fmt.Sprintf("disappear %d", f.Disappear.Actor))
		case net.TypeBatch:
			s := fmt.Sprintf("batch %d:", f.Batch.Tick)
			for i := range f.Batch.Len() {
				s += fmt.Sprintf(" %d", f.Batch.At(i).Actor)
			}
			out = append(out, s)
		default:
			out = append(out, f.Type.String())
		}
	})
	return out
}

// pollUntil polls c until want frames arrived or five seconds passed.
func pollUntil(t *testing.T, c *net.Client, want int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		got = append(got, polled(c)...)
		time.Sleep(2 * time.Millisecond)
	}
	return got
}

// batch builds a movement batch for tick with one record per actor.
func batch(tick uint32, actors ...uint32) []byte {
	b := net.AppendBatchHeader(nil, tick, uint16(len(actors)))
	for _, a := range actors {
		b = net.AppendRecord(b, net.Record{Actor: a, X: float32(a)})
	}
	return b
}

func TestQUICHandshakeMovesAndBatchesCrossTheNetwork(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "ada", 7, net.ClientConfig{Protocol: 3})

	hello := p.await(t, "Hello", func(e seen) bool { return e.Kind == net.FrameReceived && e.Session == s })
	h, err := net.DecodeHello(hello.Frame)
	require.NoError(t, err)
	assert.Equal(t, net.Hello{Protocol: 3, Token: []byte("ada")}, h)
	assert.Equal(t, uint32(7), c.Welcome().Actor, "Dial returns after the Welcome")
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

	p.q.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 8}))
	p.q.SendUnreliable(s, batch(1, 8))
	got := pollUntil(t, c, 2)
	assert.ElementsMatch(t, []string{"appear 8", "batch 1: 8"}, got)

	full := batch(2, make([]uint32, net.MaxRecordsPerBatch)...)
	require.Len(t, full, 1148, "the largest batch the server sends")
	p.q.SendUnreliable(s, full)
	p.q.SendUnreliable(s, append(batch(3, make([]uint32, net.MaxRecordsPerBatch)...), 0, 0, 0))
	got = pollUntil(t, c, 1)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "batch 2:", "a full batch fits the path")
	assert.Equal(t, uint64(1), p.q.Stats().DroppedDatagrams, "the oversize datagram is dropped and counted")

	counters := p.q.Counters()
	assert.Equal(t, uint64(1), counters.ValidatedAddresses, "Retry validated the client's address")
	assert.Zero(t, counters.UnvalidatedAddresses)
	stats := c.Stats()
	assert.Equal(t, uint64(1+net.MaxRecordsPerBatch), stats.Records)
	assert.Equal(t, uint64(1), stats.MovesSent)
}

// TestQUICBatchSendDeliversEveryDatagramOfTheTick: the relay hands a
// session all its datagrams of a tick in one call; each reaches the
// client; one too short to be a batch, and those to a session that does
// not exist, are dropped and counted one by one.
func TestQUICBatchSendDeliversEveryDatagramOfTheTick(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "ada", 7, net.ClientConfig{})

	first, second, last := batch(5, 1, 2), batch(5, 3, 4), batch(5, 6)
	p.q.SendUnreliableBatch(s, slices.Concat(first, second, last), len(first))
	got := pollUntil(t, c, 3)
	assert.ElementsMatch(t, []string{"batch 5: 1 2", "batch 5: 3 4", "batch 5: 6"}, got)
	assert.Zero(t, p.q.Stats().DroppedDatagrams)

	p.q.SendUnreliableBatch(s+100, slices.Concat(first, second), len(first))
	p.q.SendUnreliableBatch(s, append(batch(6, 8), 1, 2, 3), len(batch(6, 8)))
	assert.Equal(t, []string{"batch 6: 8"}, pollUntil(t, c, 1))
	assert.Equal(t, uint64(2+1), p.q.Stats().DroppedDatagrams, "two for no session, one too short")
	p.q.SendUnreliableBatch(s, batch(7, 9), 0)
	assert.Equal(t, []string{"batch 7: 9"}, pollUntil(t, c, 1), "size 0: the whole run is one datagram")
}

func TestQUICDisconnectReasonReachesTheClientAfterItsFrames(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "bo", 1, net.ClientConfig{})

	for a := uint32(10); a < 13; a++ {
		p.q.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: a}))
	}
	p.q.Disconnect(s, "kicked for testing")
	p.q.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 99}))

	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection did not close")
	}
	var gone *net.DisconnectedError
	require.ErrorAs(t, c.Err(), &gone)
	assert.Equal(t, "kicked for testing", gone.Reason)
	assert.Equal(t, []string{"appear 10", "appear 11", "appear 12"}, polled(c),
		"every frame queued before the disconnect arrives, none after")
	assert.Equal(t, "kicked for testing", p.closedOf(t, s).Reason)
	_, err := c.SendMove(net.Move{Seq: 1})
	assert.ErrorAs(t, err, &gone, "a closed client cannot send")
}

func TestQUICEveryOpenedSessionClosesExactlyOnce(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	leaver, sLeaver := dial(t, p, "leaver", 1, net.ClientConfig{})
	_, sKicked := dial(t, p, "kicked", 2, net.ClientConfig{})
	stayer, sStayer := dial(t, p, "stayer", 3, net.ClientConfig{})

	require.NoError(t, leaver.Close())
	assert.Equal(t, net.ReasonClientClosed, p.closedOf(t, sLeaver).Reason)
	p.q.Disconnect(sKicked, "kicked")
	p.q.Disconnect(sKicked, "kicked twice") // already closing: nothing
	assert.Equal(t, "kicked", p.closedOf(t, sKicked).Reason)

	require.NoError(t, p.q.Close())
	require.NoError(t, p.q.Close(), "closing again is fine")
	assert.Equal(t, net.ReasonTransportClosed, p.closedOf(t, sStayer).Reason)
	select {
	case <-stayer.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not close the client's connection")
	}
	var gone *net.DisconnectedError
	require.ErrorAs(t, stayer.Err(), &gone)
	assert.Equal(t, net.ReasonTransportClosed, gone.Reason)

	time.Sleep(20 * time.Millisecond) // let anything late show up
	opened, closed := map[net.SessionID]int{}, map[net.SessionID]int{}
	for _, e := range p.events() {
		require.Zero(t, closed[e.Session], "nothing follows a session's SessionClosed: %+v", e)
		switch e.Kind {
		case net.SessionOpened:
			opened[e.Session]++
		case net.SessionClosed:
			closed[e.Session]++
		}
	}
	want := map[net.SessionID]int{sLeaver: 1, sKicked: 1, sStayer: 1}
	assert.Equal(t, want, opened)
	assert.Equal(t, want, closed)
	stats := p.q.Stats()
	assert.Equal(t, uint64(3), stats.Opened)
	assert.Equal(t, uint64(3), stats.Closed)
}

// filler is a reliable frame of n bytes that no client decodes.
func filler(n int) []byte {
	f := make([]byte, n)
	f[0], f[1] = net.Version, byte(net.TypeAppear)
	return f
}

func TestQUICClientThatStopsReadingIsDisconnectedWhileAnotherKeepsReceiving(t *testing.T) {
	// Only the queue can find the stalled client out: the stall timeout is
	// far beyond the test.
	const queue = 1024
	p := startQUIC(t, net.QUICConfig{ReliableQueue: queue, StallTimeout: time.Minute})
	// The stalled client takes one frame and never polls: its stream
	// fills QUIC's flow-control window (512 KiB), then its queue on the
	// server.
	stalled, sStalled := dial(t, p, "stalled", 1, net.ClientConfig{ReliableQueue: 1})
	reader, sReader := dial(t, p, "reader", 2, net.ClientConfig{})

	frame := filler(1000)
	// 800 frames, within the queue however late the writer runs, and 800 KB:
	// its stream write blocks on flow control with some 280 KB to go.
	for range 800 {
		p.q.SendReliable(sStalled, frame)
	}

	// Meanwhile the reader is sent 2 MB, a burst at a time whenever it has
	// caught up to within a burst of the queue: however slow the machine,
	// only a reader held up by the stalled client can overflow its queue.
	received := func() int { return int(reader.Stats().Reliable) - 1 } // less the Welcome
	const burst, total = 20, 2000
	sent := 0
	deadline := time.Now().Add(30 * time.Second)
	for received() < total && time.Now().Before(deadline) {
		if sent < total && sent-received() <= queue-burst {
			for range burst {
				p.q.SendReliable(sReader, frame)
			}
			sent += burst
		}
		reader.Poll(func(*net.Frame) {})
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, total, received(), "the reader was held up by the stalled client's blocked stream")
	require.NoError(t, stalled.Err(), "a stalled client within its queue and stall timeout stays")

	// The stalled client's writer is still blocked: the queue overflows.
	for i := 0; i <= queue; i++ {
		p.q.SendReliable(sStalled, frame)
	}
	assert.Equal(t, net.ReasonSlowClient, p.closedOf(t, sStalled).Reason)
	select {
	case <-stalled.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled client's connection did not close")
	}
	var gone *net.DisconnectedError
	require.ErrorAs(t, stalled.Err(), &gone)
	assert.Equal(t, net.ReasonSlowClient, gone.Reason)
	assert.Equal(t, uint64(1), p.q.Counters().SlowClients)

	// The reader is untouched: it gets what it is sent after the other's
	// disconnect too.
	p.q.SendReliable(sReader, frame)
	deadline = time.Now().Add(10 * time.Second)
	for received() < total+1 && time.Now().Before(deadline) {
		reader.Poll(func(*net.Frame) {})
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, total+1, received())
	assert.NoError(t, reader.Err())
}

func TestQUICStreamBlockedPastTheStallTimeoutIsDisconnected(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{StallTimeout: 200 * time.Millisecond})
	stalled, s := dial(t, p, "stalled", 1, net.ClientConfig{ReliableQueue: 1})

	// More than QUIC's flow-control window, well within the queue: only
	// the blocked write can tell that the client stopped reading.
	start := time.Now()
	for range 1000 {
		p.q.SendReliable(s, filler(1000))
	}
	closed := p.closedOf(t, s)
	assert.Equal(t, net.ReasonSlowClient, closed.Reason)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	<-stalled.Done()
	var gone *net.DisconnectedError
	require.ErrorAs(t, stalled.Err(), &gone)
	assert.Equal(t, net.ReasonSlowClient, gone.Reason)
}

func TestQUICConnectionWithoutAStreamNeverBecomesASession(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{HandshakeTimeout: 100 * time.Millisecond})
	conn, err := quic.DialAddr(context.Background(), p.addr(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{net.ALPN}},
		&quic.Config{EnableDatagrams: true})
	require.NoError(t, err)
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server kept a connection that opened no stream")
	}
	var app *quic.ApplicationError
	require.ErrorAs(t, context.Cause(conn.Context()), &app)
	assert.Equal(t, "no reliable stream opened", app.ErrorMessage)
	assert.Equal(t, uint64(1), p.q.Counters().FailedHandshakes)
	assert.Empty(t, p.events(), "no session, no events")
}

func TestQUICDropsDatagramsBeyondTheInboundLimit(t *testing.T) {
	// No pump: nothing calls Receive while the client floods.
	q, err := net.ListenQUIC("127.0.0.1:0", net.QUICConfig{Development: true, InboundLimit: 10})
	require.NoError(t, err)
	defer q.Close()
	conn, err := quic.DialAddr(context.Background(), q.Addr().String(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{net.ALPN}},
		&quic.Config{EnableDatagrams: true})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStream()
	require.NoError(t, err)
	hello, err := net.AppendHello(nil, net.Hello{Token: []byte("flood")})
	require.NoError(t, err)
	_, err = stream.Write(net.AppendStreamFrame(nil, hello))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return q.Stats().FramesIn == 1 }, 5*time.Second, time.Millisecond)

	for i := range 50 {
		require.NoError(t, conn.SendDatagram(net.AppendMove(nil, net.Move{Seq: uint32(i + 1)})))
		time.Sleep(100 * time.Microsecond) // stay within quic-go's own receive queue
	}
	require.Eventually(t, func() bool { return q.Stats().FramesIn+q.Counters().DroppedInbound == 51 },
		5*time.Second, time.Millisecond, "every datagram arrives or is counted")
	assert.Equal(t, uint64(10), q.Stats().FramesIn, "the Hello and 9 moves fit the limit")
	in := q.Receive(nil)
	require.Len(t, in, 11)
	m, err := net.DecodeMove(in[10].Frame)
	require.NoError(t, err)
	assert.Equal(t, uint32(9), m.Seq, "the first moves are kept, the flood's tail is dropped")

	require.NoError(t, conn.SendDatagram(net.AppendMove(nil, net.Move{Seq: 100})))
	require.Eventually(t, func() bool { return q.Stats().FramesIn == 11 }, 5*time.Second, time.Millisecond,
		"after a Receive the client may send again")
}

func TestListenQUICNeedsACertificate(t *testing.T) {
	_, err := net.ListenQUIC("127.0.0.1:0", net.QUICConfig{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "net: QUICConfig has no certificate")
	_, err = net.ListenQUIC("127.0.0.1:0", net.QUICConfig{CertFile: "cert.pem"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "both CertFile and KeyFile")
	_, err = net.ListenQUIC("127.0.0.1:0", net.QUICConfig{CertFile: "missing.pem", KeyFile: "missing.key"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "net: loading the TLS certificate")
}

func TestQUICClientThatResetsItsStreamLosesItsSession(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	conn, err := quic.DialAddr(context.Background(), p.addr(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{net.ALPN}},
		&quic.Config{EnableDatagrams: true})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStream()
	require.NoError(t, err)
	hello, err := net.AppendHello(nil, net.Hello{Token: []byte("resetter")})
	require.NoError(t, err)
	_, err = stream.Write(net.AppendStreamFrame(nil, hello))
	require.NoError(t, err)
	s := p.helloFrom(t, "resetter")

	stream.CancelWrite(7)
	assert.Equal(t, net.ReasonStreamClosed, p.closedOf(t, s).Reason)
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server kept the connection of a session it closed")
	}
}
