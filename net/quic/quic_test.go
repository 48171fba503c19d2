package quic_test

import (
	"context"
	"crypto/tls"
	"slices"
	"testing"
	"time"

	"github.com/throng-go/throng/net/internal/nettest"

	quicgo "github.com/quic-go/quic-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/wire"
)

func TestQUICHandshakeMovesAndBatchesCrossTheNetwork(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "ada", 7, client.Config{Protocol: 3})

	hello := p.Await(t, "Hello", func(e nettest.Seen) bool { return e.Kind == wire.FrameReceived && e.Session == s })
	h, err := wire.DecodeHello(hello.Frame)
	require.NoError(t, err)
	assert.Equal(t, wire.Hello{Protocol: 3, Token: []byte("ada")}, h)
	assert.Equal(t, uint32(7), c.Welcome().Actor, "Dial returns after the Welcome")
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

	p.Q.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 8}))
	p.Q.SendUnreliable(s, nettest.Batch(1, 8))
	got := nettest.PollUntil(t, c, 2)
	assert.ElementsMatch(t, []string{"appear 8", "batch 1: 8"}, got)

	full := nettest.Batch(2, make([]uint32, wire.MaxRecordsPerBatch)...)
	require.Len(t, full, 1148, "the largest batch the server sends")
	p.Q.SendUnreliable(s, full)
	p.Q.SendUnreliable(s, append(nettest.Batch(3, make([]uint32, wire.MaxRecordsPerBatch)...), 0, 0, 0))
	got = nettest.PollUntil(t, c, 1)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "batch 2:", "a full batch fits the path")
	assert.Equal(t, uint64(1), p.Q.Stats().DroppedDatagrams, "the oversize datagram is dropped and counted")

	counters := p.Q.Counters()
	assert.Equal(t, uint64(1), counters.ValidatedAddresses, "Retry validated the client's address")
	assert.Zero(t, counters.UnvalidatedAddresses)
	stats := c.Stats()
	assert.Equal(t, uint64(1+wire.MaxRecordsPerBatch), stats.Records)
	assert.Equal(t, uint64(1), stats.MovesSent)
}

// TestQUICBatchSendDeliversEveryDatagramOfTheTick: the relay hands a
// session all its datagrams of a tick in one call; each reaches the
// client; one too short to be a batch, and those to a session that does
// not exist, are dropped and counted one by one.
func TestQUICBatchSendDeliversEveryDatagramOfTheTick(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "ada", 7, client.Config{})

	first, second, last := nettest.Batch(5, 1, 2), nettest.Batch(5, 3, 4), nettest.Batch(5, 6)
	p.Q.SendUnreliableBatch(s, slices.Concat(first, second, last), len(first))
	got := nettest.PollUntil(t, c, 3)
	assert.ElementsMatch(t, []string{"batch 5: 1 2", "batch 5: 3 4", "batch 5: 6"}, got)
	assert.Zero(t, p.Q.Stats().DroppedDatagrams)

	p.Q.SendUnreliableBatch(s+100, slices.Concat(first, second), len(first))
	p.Q.SendUnreliableBatch(s, append(nettest.Batch(6, 8), 1, 2, 3), len(nettest.Batch(6, 8)))
	assert.Equal(t, []string{"batch 6: 8"}, nettest.PollUntil(t, c, 1))
	assert.Equal(t, uint64(2+1), p.Q.Stats().DroppedDatagrams, "two for no session, one too short")
	p.Q.SendUnreliableBatch(s, nettest.Batch(7, 9), 0)
	assert.Equal(t, []string{"batch 7: 9"}, nettest.PollUntil(t, c, 1), "size 0: the whole run is one datagram")
}

func TestQUICDisconnectReasonReachesTheClientAfterItsFrames(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "bo", 1, client.Config{})

	for a := uint32(10); a < 13; a++ {
		p.Q.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: a}))
	}
	p.Q.Disconnect(s, "kicked for testing")
	p.Q.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 99}))

	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection did not close")
	}
	var gone *client.DisconnectedError
	require.ErrorAs(t, c.Err(), &gone)
	assert.Equal(t, "kicked for testing", gone.Reason)
	assert.Equal(t, []string{"appear 10", "appear 11", "appear 12"}, nettest.Polled(c),
		"every frame queued before the disconnect arrives, none after")
	assert.Equal(t, "kicked for testing", p.ClosedOf(t, s).Reason)
	_, err := c.SendMove(wire.Move{Seq: 1})
	assert.ErrorAs(t, err, &gone, "a closed client cannot send")
}

func TestQUICEveryOpenedSessionClosesExactlyOnce(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	leaver, sLeaver := nettest.DialQUIC(t, p, "leaver", 1, client.Config{})
	_, sKicked := nettest.DialQUIC(t, p, "kicked", 2, client.Config{})
	stayer, sStayer := nettest.DialQUIC(t, p, "stayer", 3, client.Config{})

	require.NoError(t, leaver.Close())
	assert.Equal(t, wire.ReasonClientClosed, p.ClosedOf(t, sLeaver).Reason)
	p.Q.Disconnect(sKicked, "kicked")
	p.Q.Disconnect(sKicked, "kicked twice") // already closing: nothing
	assert.Equal(t, "kicked", p.ClosedOf(t, sKicked).Reason)

	require.NoError(t, p.Q.Close())
	require.NoError(t, p.Q.Close(), "closing again is fine")
	assert.Equal(t, wire.ReasonTransportClosed, p.ClosedOf(t, sStayer).Reason)
	select {
	case <-stayer.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not close the client's connection")
	}
	var gone *client.DisconnectedError
	require.ErrorAs(t, stayer.Err(), &gone)
	assert.Equal(t, wire.ReasonTransportClosed, gone.Reason)

	time.Sleep(20 * time.Millisecond) // let anything late show up
	opened, closed := map[wire.SessionID]int{}, map[wire.SessionID]int{}
	for _, e := range p.Events() {
		require.Zero(t, closed[e.Session], "nothing follows a session's SessionClosed: %+v", e)
		switch e.Kind {
		case wire.SessionOpened:
			opened[e.Session]++
		case wire.SessionClosed:
			closed[e.Session]++
		}
	}
	want := map[wire.SessionID]int{sLeaver: 1, sKicked: 1, sStayer: 1}
	assert.Equal(t, want, opened)
	assert.Equal(t, want, closed)
	stats := p.Q.Stats()
	assert.Equal(t, uint64(3), stats.Opened)
	assert.Equal(t, uint64(3), stats.Closed)
}

// filler is a reliable frame of n bytes that no client decodes.
func filler(n int) []byte {
	f := make([]byte, n)
	f[0], f[1] = wire.Version, byte(wire.TypeAppear)
	return f
}

func TestQUICClientThatStopsReadingIsDisconnectedWhileAnotherKeepsReceiving(t *testing.T) {
	// Only the queue can find the stalled client out: the stall timeout is
	// far beyond the test.
	const queue = 1024
	p := nettest.StartQUIC(t, quic.Config{ReliableQueue: queue, StallTimeout: time.Minute})
	// The stalled client takes one frame and never polls: its stream
	// fills QUIC's flow-control window (512 KiB), then its queue on the
	// server.
	stalled, sStalled := nettest.DialQUIC(t, p, "stalled", 1, client.Config{ReliableQueue: 1})
	reader, sReader := nettest.DialQUIC(t, p, "reader", 2, client.Config{})

	frame := filler(1000)
	// 800 frames, within the queue however late the writer runs, and 800 KB:
	// its stream write blocks on flow control with some 280 KB to go.
	for range 800 {
		p.Q.SendReliable(sStalled, frame)
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
				p.Q.SendReliable(sReader, frame)
			}
			sent += burst
		}
		reader.Poll(func(*wire.Frame) {})
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, total, received(), "the reader was held up by the stalled client's blocked stream")
	require.NoError(t, stalled.Err(), "a stalled client within its queue and stall timeout stays")

	// The stalled client's writer is still blocked: the queue overflows.
	for i := 0; i <= queue; i++ {
		p.Q.SendReliable(sStalled, frame)
	}
	assert.Equal(t, wire.ReasonSlowClient, p.ClosedOf(t, sStalled).Reason)
	select {
	case <-stalled.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled client's connection did not close")
	}
	var gone *client.DisconnectedError
	require.ErrorAs(t, stalled.Err(), &gone)
	assert.Equal(t, wire.ReasonSlowClient, gone.Reason)
	assert.Equal(t, uint64(1), p.Q.Counters().SlowClients)

	// The reader is untouched: it gets what it is sent after the other's
	// disconnect too.
	p.Q.SendReliable(sReader, frame)
	deadline = time.Now().Add(10 * time.Second)
	for received() < total+1 && time.Now().Before(deadline) {
		reader.Poll(func(*wire.Frame) {})
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, total+1, received())
	assert.NoError(t, reader.Err())
}

func TestQUICStreamBlockedPastTheStallTimeoutIsDisconnected(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{StallTimeout: 200 * time.Millisecond})
	stalled, s := nettest.DialQUIC(t, p, "stalled", 1, client.Config{ReliableQueue: 1})

	// More than QUIC's flow-control window, well within the queue: only
	// the blocked write can tell that the client stopped reading.
	start := time.Now()
	for range 1000 {
		p.Q.SendReliable(s, filler(1000))
	}
	closed := p.ClosedOf(t, s)
	assert.Equal(t, wire.ReasonSlowClient, closed.Reason)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	<-stalled.Done()
	var gone *client.DisconnectedError
	require.ErrorAs(t, stalled.Err(), &gone)
	assert.Equal(t, wire.ReasonSlowClient, gone.Reason)
}

func TestQUICConnectionWithoutAStreamNeverBecomesASession(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{HandshakeTimeout: 100 * time.Millisecond})
	conn, err := quicgo.DialAddr(context.Background(), p.Addr(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{quic.ALPN}},
		&quicgo.Config{EnableDatagrams: true})
	require.NoError(t, err)
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server kept a connection that opened no stream")
	}
	var app *quicgo.ApplicationError
	require.ErrorAs(t, context.Cause(conn.Context()), &app)
	assert.Equal(t, "no reliable stream opened", app.ErrorMessage)
	assert.Equal(t, uint64(1), p.Q.Counters().FailedHandshakes)
	assert.Empty(t, p.Events(), "no session, no events")
}

func TestQUICDropsDatagramsBeyondTheInboundLimit(t *testing.T) {
	// No pump: nothing calls Receive while the client floods.
	q, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true, InboundLimit: 10})
	require.NoError(t, err)
	defer q.Close()
	conn, err := quicgo.DialAddr(context.Background(), q.Addr().String(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{quic.ALPN}},
		&quicgo.Config{EnableDatagrams: true})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStream()
	require.NoError(t, err)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("flood")})
	require.NoError(t, err)
	_, err = stream.Write(wire.AppendStreamFrame(nil, hello))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return q.Stats().FramesIn == 1 }, 5*time.Second, time.Millisecond)

	for i := range 50 {
		require.NoError(t, conn.SendDatagram(wire.AppendMove(nil, wire.Move{Seq: uint32(i + 1)})))
		time.Sleep(100 * time.Microsecond) // stay within quic-go's own receive queue
	}
	require.Eventually(t, func() bool { return q.Stats().FramesIn+q.Counters().DroppedInbound == 51 },
		5*time.Second, time.Millisecond, "every datagram arrives or is counted")
	assert.Equal(t, uint64(10), q.Stats().FramesIn, "the Hello and 9 moves fit the limit")
	in := q.Receive(nil)
	require.Len(t, in, 11)
	m, err := wire.DecodeMove(in[10].Frame)
	require.NoError(t, err)
	assert.Equal(t, uint32(9), m.Seq, "the first moves are kept, the flood's tail is dropped")

	require.NoError(t, conn.SendDatagram(wire.AppendMove(nil, wire.Move{Seq: 100})))
	require.Eventually(t, func() bool { return q.Stats().FramesIn == 11 }, 5*time.Second, time.Millisecond,
		"after a Receive the client may send again")
}

func TestListenQUICNeedsACertificate(t *testing.T) {
	_, err := quic.Listen("127.0.0.1:0", quic.Config{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quic: Config has no certificate")
	_, err = quic.Listen("127.0.0.1:0", quic.Config{CertFile: "cert.pem"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "both CertFile and KeyFile")
	_, err = quic.Listen("127.0.0.1:0", quic.Config{CertFile: "missing.pem", KeyFile: "missing.key"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "quic: loading the TLS certificate")
}

func TestQUICClientThatResetsItsStreamLosesItsSession(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	conn, err := quicgo.DialAddr(context.Background(), p.Addr(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{quic.ALPN}},
		&quicgo.Config{EnableDatagrams: true})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStream()
	require.NoError(t, err)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("resetter")})
	require.NoError(t, err)
	_, err = stream.Write(wire.AppendStreamFrame(nil, hello))
	require.NoError(t, err)
	s := p.HelloFrom(t, "resetter")

	stream.CancelWrite(7)
	assert.Equal(t, quic.ReasonStreamClosed, p.ClosedOf(t, s).Reason)
	select {
	case <-conn.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the server kept the connection of a session it closed")
	}
}

// TestQUICReliableBatchIsEachFrameSentInTurn: a client sent a batch gets
// what a client sent the same frames one by one gets, in the same place
// among the frames sent before and after; the counters grow alike, and
// the frames one by one would drop (over MaxFrame, under a header, a
// cut-short tail, no session) are dropped and counted.
func TestQUICReliableBatchIsEachFrameSentInTurn(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{MaxFrame: 100})
	each, sEach := nettest.DialQUIC(t, p, "each", 1, client.Config{})
	batched, sBatched := nettest.DialQUIC(t, p, "batched", 2, client.Config{})
	appear := func(a uint32) []byte { return wire.AppendAppear(nil, wire.Appear{Actor: a}) }
	frames := [][]byte{
		appear(10), wire.AppendProp(nil, wire.Prop{Actor: 11}), filler(101),
		appear(12), {wire.Version}, appear(13),
	}

	start := nettest.ReliableOf(p.Q)
	p.Q.SendReliable(sEach, appear(1))
	for _, f := range frames {
		p.Q.SendReliable(sEach, f)
	}
	p.Q.SendReliable(sEach, appear(2))
	mid := nettest.ReliableOf(p.Q)
	p.Q.SendReliable(sBatched, appear(1))
	p.Q.SendReliableBatch(sBatched, nettest.Stream(frames...))
	p.Q.SendReliable(sBatched, appear(2))
	end := nettest.ReliableOf(p.Q)

	want := []string{"appear 1", "appear 10", "prop 11", "appear 12", "appear 13", "appear 2"}
	assert.Equal(t, want, nettest.PollUntil(t, each, len(want)))
	assert.Equal(t, want, nettest.PollUntil(t, batched, len(want)))
	assert.Equal(t, nettest.Reliable{Out: 6, Bytes: 6 * wire.AppearSize, Dropped: 2}, mid.Minus(start))
	assert.Equal(t, mid.Minus(start), end.Minus(mid))

	cut := nettest.Stream(appear(14), appear(15))
	p.Q.SendReliableBatch(sBatched, cut[:len(cut)-1])
	assert.Equal(t, []string{"appear 14"}, nettest.PollUntil(t, batched, 1), "sent up to the last whole frame")
	p.Q.SendReliableBatch(sBatched+100, nettest.Stream(frames...))
	assert.Equal(t, nettest.Reliable{Out: 1, Bytes: wire.AppearSize, Dropped: 1 + 6}, nettest.ReliableOf(p.Q).Minus(end),
		"the cut-short tail, and every frame for no session")
}

// TestQUICReliableBatchThatOverflowsTheQueueDisconnects: a batch longer
// than the room left in the queue keeps what fits, drops the rest, and
// ends the session as too slow, as the SendReliable that found the queue
// full would.
func TestQUICReliableBatchThatOverflowsTheQueueDisconnects(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{ReliableQueue: 4})
	c, s := nettest.DialQUIC(t, p, "burst", 1, client.Config{})
	start := nettest.ReliableOf(p.Q)
	frames := make([][]byte, 10)
	for i := range frames {
		frames[i] = wire.AppendAppear(nil, wire.Appear{Actor: uint32(i)})
	}
	// The queue is empty (the Welcome was written), and the batch joins it
	// under one lock: four fit, whatever the writer does meanwhile.
	p.Q.SendReliableBatch(s, nettest.Stream(frames...))

	assert.Equal(t, wire.ReasonSlowClient, p.ClosedOf(t, s).Reason)
	assert.Equal(t, nettest.Reliable{Out: 4, Bytes: 4 * wire.AppearSize, Dropped: 6}, nettest.ReliableOf(p.Q).Minus(start))
	assert.Equal(t, uint64(1), p.Q.Counters().SlowClients)
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client's connection did not close")
	}
	var gone *client.DisconnectedError
	require.ErrorAs(t, c.Err(), &gone)
	assert.Equal(t, wire.ReasonSlowClient, gone.Reason)
}

func TestQUICBatchesWaitForTheServersFlush(t *testing.T) {
	p := nettest.StartQUIC(t, quic.Config{})
	c, s := nettest.DialQUIC(t, p, "ada", 7, client.Config{})

	p.Q.SendUnreliable(s, nettest.Batch(1, 8))
	assert.Equal(t, []string{"batch 1: 8"}, nettest.PollUntil(t, c, 1), "until a server flushes, a batch goes at once")

	p.Q.Flush() // a server that flushes after every tick
	p.Q.SendUnreliable(s, nettest.Batch(2, 9))
	p.Q.SendReliable(s, wire.AppendAppear(nil, wire.Appear{Actor: 11}))
	assert.Equal(t, []string{"appear 11"}, nettest.PollUntil(t, c, 1), "a reliable frame never waits")
	time.Sleep(150 * time.Millisecond)
	assert.Empty(t, nettest.Polled(c), "the tick's batches wait for its flush")
	p.Q.Flush()
	assert.Equal(t, []string{"batch 2: 9"}, nettest.PollUntil(t, c, 1))
}
