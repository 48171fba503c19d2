package mem

import (
	"fmt"
	"hash/crc32"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/throng-go/throng/net/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// event is an Inbound with its frame copied, for comparing sequences.
type event struct {
	Kind    wire.InboundKind
	Session wire.SessionID
	Frame   string
	Reason  string
}

func receiveAll(m *Transport) []event {
	var out []event
	for _, in := range m.Receive(nil) {
		out = append(out, event{in.Kind, in.Session, string(in.Frame), in.Reason})
	}
	return out
}

func moveFrame(seq uint32) []byte { return wire.AppendMove(nil, wire.Move{Seq: seq}) }

func drainedDatagrams(c *Client) []string {
	var out []string
	c.DrainDatagrams(func(d []byte) { out = append(out, string(d)) })
	return out
}

func drainedReliable(c *Client) []string {
	var out []string
	c.DrainReliable(func(f []byte) { out = append(out, string(f)) })
	return out
}

func TestMemDeliversClientFramesInSendOrderAcrossSessions(t *testing.T) {
	m := New(Options{})
	a, b := m.Dial(), m.Dial()
	require.NotEqual(t, a.Session(), b.Session())
	require.NotZero(t, a.Session())
	require.NoError(t, a.Send(moveFrame(1)))
	require.NoError(t, b.Send(moveFrame(1)))
	require.NoError(t, a.Send(moveFrame(2)))
	require.NoError(t, a.Send(moveFrame(3)))
	require.NoError(t, b.Send(moveFrame(2)))

	assert.Equal(t, []event{
		{wire.SessionOpened, a.Session(), "", ""},
		{wire.SessionOpened, b.Session(), "", ""},
		{wire.FrameReceived, a.Session(), string(moveFrame(1)), ""},
		{wire.FrameReceived, b.Session(), string(moveFrame(1)), ""},
		{wire.FrameReceived, a.Session(), string(moveFrame(2)), ""},
		{wire.FrameReceived, a.Session(), string(moveFrame(3)), ""},
		{wire.FrameReceived, b.Session(), string(moveFrame(2)), ""},
	}, receiveAll(m))
	assert.Empty(t, receiveAll(m), "each event is delivered once")
}

func TestMemServerFramesReachOnlyTheirClientInOrder(t *testing.T) {
	m := New(Options{})
	a, b := m.Dial(), m.Dial()
	m.SendReliable(a.Session(), wire.AppendDisappear(nil, wire.Disappear{Actor: 1}))
	m.SendUnreliable(b.Session(), wire.AppendBatchHeader(nil, 1, 0))
	m.SendReliable(a.Session(), wire.AppendDisappear(nil, wire.Disappear{Actor: 2}))
	m.SendUnreliable(a.Session(), wire.AppendBatchHeader(nil, 2, 0))
	m.SendUnreliable(a.Session(), wire.AppendBatchHeader(nil, 3, 0))

	assert.Equal(t, []string{
		string(wire.AppendDisappear(nil, wire.Disappear{Actor: 1})),
		string(wire.AppendDisappear(nil, wire.Disappear{Actor: 2})),
	}, drainedReliable(a))
	assert.Equal(t, []string{
		string(wire.AppendBatchHeader(nil, 2, 0)),
		string(wire.AppendBatchHeader(nil, 3, 0)),
	}, drainedDatagrams(a))
	assert.Empty(t, drainedReliable(b))
	assert.Equal(t, []string{string(wire.AppendBatchHeader(nil, 1, 0))}, drainedDatagrams(b))
	assert.Empty(t, drainedDatagrams(a), "a drain empties the queue")
	assert.Equal(t, string(wire.AppendBatchHeader(nil, 3, 0)), string(a.LastDatagram(nil)))
}

func TestMemSendsCopiesSoCallersMayReuseBuffers(t *testing.T) {
	m := New(Options{})
	c := m.Dial()
	buf := moveFrame(1)
	require.NoError(t, c.Send(buf))
	copy(buf, moveFrame(9))
	out := wire.AppendBatchHeader(nil, 5, 0)
	m.SendUnreliable(c.Session(), out)
	out[2] = 0xee
	assert.Equal(t, string(moveFrame(1)), receiveAll(m)[1].Frame)
	assert.Equal(t, []string{string(wire.AppendBatchHeader(nil, 5, 0))}, drainedDatagrams(c))
}

func TestMemReceivedFramesStayIntactUntilTheNextReceive(t *testing.T) {
	m := New(Options{})
	c := m.Dial()
	require.NoError(t, c.Send(moveFrame(1)))
	got := m.Receive(nil)
	require.Len(t, got, 2)
	// The client keeps sending (and the inbox grows) before the server has
	// decoded what it received.
	for i := range 100 {
		require.NoError(t, c.Send(moveFrame(uint32(100+i))))
	}
	mv, err := wire.DecodeMove(got[1].Frame)
	require.NoError(t, err)
	assert.Equal(t, uint32(1), mv.Seq)
	assert.Len(t, m.Receive(nil), 100)
}

func TestMemDisconnectReasonReachesTheClientAfterItsFrames(t *testing.T) {
	m := New(Options{})
	c := m.Dial()
	refuse := wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("server busy")})
	m.SendReliable(c.Session(), refuse)
	m.Disconnect(c.Session(), "server busy")

	reason, closed := c.CloseReason()
	assert.True(t, closed)
	assert.Equal(t, "server busy", reason)
	frames := drainedReliable(c)
	require.Len(t, frames, 1)
	r, err := wire.DecodeRefuse([]byte(frames[0]))
	require.NoError(t, err)
	assert.Equal(t, wire.RefuseBusy, r.Code)
	assert.Equal(t, "server busy", string(r.Reason))

	assert.Equal(t, wire.ErrClosed, c.Send(moveFrame(1)), "a disconnected client cannot send")
	assert.Equal(t, []event{
		{wire.SessionOpened, c.Session(), "", ""},
		{wire.SessionClosed, c.Session(), "", "server busy"},
	}, receiveAll(m))
}

func TestMemEveryOpenedSessionClosesExactlyOnce(t *testing.T) {
	m := New(Options{})
	byClient, byServer, both, byTransport := m.Dial(), m.Dial(), m.Dial(), m.Dial()
	byClient.Close()
	byClient.Close()
	m.Disconnect(byServer.Session(), "kicked")
	m.Disconnect(byServer.Session(), "kicked again")
	m.Disconnect(both.Session(), "first")
	both.Close()
	m.Disconnect(wire.SessionID(999), "unknown")
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())

	var closes []event
	for _, e := range receiveAll(m) {
		if e.Kind == wire.SessionClosed {
			closes = append(closes, e)
		}
	}
	assert.Equal(t, []event{
		{wire.SessionClosed, byClient.Session(), "", wire.ReasonClientClosed},
		{wire.SessionClosed, byServer.Session(), "", "kicked"},
		{wire.SessionClosed, both.Session(), "", "first"},
		{wire.SessionClosed, byTransport.Session(), "", wire.ReasonTransportClosed},
	}, closes)
	reason, _ := byTransport.CloseReason()
	assert.Equal(t, wire.ReasonTransportClosed, reason)
	reason, _ = both.CloseReason()
	assert.Equal(t, "first", reason)
	st := m.Stats()
	assert.Equal(t, uint64(4), st.Opened)
	assert.Equal(t, uint64(4), st.Closed)

	late := m.Dial()
	reason, closed := late.CloseReason()
	assert.True(t, closed)
	assert.Equal(t, wire.ReasonTransportClosed, reason)
	assert.Zero(t, late.Session())
	assert.Empty(t, receiveAll(m), "a dial after Close opens nothing")
}

func TestMemDropsAndCountsWhatItCannotSend(t *testing.T) {
	for _, countOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{MaxDatagram: 100, MaxFrame: 50, CountOnly: countOnly})
			c, gone, kicked := m.Dial(), m.Dial(), m.Dial()
			gone.Close()
			m.Disconnect(kicked.Session(), "kicked")
			m.SendUnreliable(c.Session(), make([]byte, 101)) // oversize
			m.SendUnreliable(c.Session(), nil)               // empty
			m.SendUnreliable(gone.Session(), make([]byte, 10))
			m.SendUnreliable(kicked.Session(), make([]byte, 10))
			m.SendUnreliable(0, make([]byte, 10))
			m.SendUnreliable(kicked.Session()+1, make([]byte, 10)) // never dialled
			m.SendUnreliable(100000, make([]byte, 10))             // nor this, past every chunk
			m.SendReliable(c.Session(), make([]byte, 51))          // oversize
			m.SendReliable(c.Session(), []byte{wire.Version})      // shorter than a header
			m.SendReliable(gone.Session(), make([]byte, 10))
			m.SendReliable(kicked.Session(), make([]byte, 10))
			m.SendUnreliable(c.Session(), make([]byte, 100)) // exactly the limit
			m.SendReliable(c.Session(), make([]byte, 50))

			st := m.Stats()
			assert.Equal(t, uint64(7), st.DroppedDatagrams)
			assert.Equal(t, uint64(4), st.DroppedReliable)
			assert.Equal(t, uint64(1), st.DatagramsOut)
			assert.Equal(t, uint64(1), st.ReliableOut)
			assert.Equal(t, ClientStats{Datagrams: 1, DatagramBytes: 100, Frames: 1, FrameBytes: 50}, c.Received())
			assert.Zero(t, gone.Received())
			assert.Zero(t, kicked.Received())
			if !countOnly {
				assert.Equal(t, 1, c.DrainDatagrams(func([]byte) {}))
				assert.Equal(t, 1, c.DrainReliable(func([]byte) {}))
			}

			assert.Equal(t, wire.ErrStreamLength, c.Send(make([]byte, 51)))
			assert.Equal(t, wire.ErrStreamLength, c.Send([]byte{wire.Version}))
			assert.Equal(t, uint64(0), m.Stats().FramesIn)
		})
	}
}

func TestMemCountsEveryByteBothWays(t *testing.T) {
	m := New(Options{})
	a, b := m.Dial(), m.Dial()
	require.NoError(t, a.Send(moveFrame(1)))
	require.NoError(t, b.Send(wire.AppendDisappear(nil, wire.Disappear{})))
	batch := wire.AppendRecord(wire.AppendBatchHeader(nil, 1, 1), wire.Record{Actor: 1})
	m.SendUnreliable(a.Session(), batch)
	m.SendUnreliable(a.Session(), batch)
	m.SendUnreliable(b.Session(), batch)
	m.SendReliable(b.Session(), wire.AppendWelcome(nil, wire.Welcome{}))

	assert.Equal(t, wire.Stats{
		Opened: 2, FramesIn: 2, BytesIn: wire.MoveSize + wire.DisappearSize,
		DatagramsOut: 3, DatagramBytesOut: 3 * uint64(len(batch)),
		ReliableOut: 1, ReliableBytesOut: wire.WelcomeSize,
	}, m.Stats())
	assert.Equal(t, ClientStats{Datagrams: 2, DatagramBytes: 2 * uint64(len(batch))}, a.Received())
	assert.Equal(t, ClientStats{Datagrams: 1, DatagramBytes: uint64(len(batch)), Frames: 1, FrameBytes: wire.WelcomeSize}, b.Received())

	// A closed session's traffic still counts, on both sides.
	want := m.Stats()
	want.Closed = 2
	a.Close()
	m.Disconnect(b.Session(), "bye")
	assert.Equal(t, want, m.Stats())
	assert.Equal(t, ClientStats{Datagrams: 2, DatagramBytes: 2 * uint64(len(batch))}, a.Received())
	assert.Equal(t, ClientStats{Datagrams: 1, DatagramBytes: uint64(len(batch)), Frames: 1, FrameBytes: wire.WelcomeSize}, b.Received())
}

func TestMemCountsSessionsBeyondTheFirstChunk(t *testing.T) {
	m := New(Options{CountOnly: true})
	clients := make([]*Client, 2*memChunkSlots+1)
	for i := range clients {
		clients[i] = m.Dial()
	}
	for i, c := range clients {
		for range i % 3 {
			m.SendUnreliable(c.Session(), make([]byte, 10))
		}
	}
	for i, c := range clients {
		assert.Equal(t, uint64(i%3), c.Received().Datagrams, "session %d", c.Session())
	}
	st := m.Stats()
	assert.Equal(t, uint64(len(clients)), st.DatagramsOut) // 0+1+2 per 3 clients
	assert.Zero(t, st.DroppedDatagrams)
}

// TestMemSlotsOwnWholeCacheLines checks the layout the lock-free sends rely
// on to keep cores apart: each session's counters fill exactly one pair of
// cache lines and start at its beginning.
func TestMemSlotsOwnWholeCacheLines(t *testing.T) {
	assert.Equal(t, uintptr(slotSize), unsafe.Sizeof(memSlot{}))
	m := New(Options{CountOnly: true})
	for range memChunkSlots + 1 {
		c := m.Dial()
		require.Zero(t, uintptr(unsafe.Pointer(c.slot))%slotSize, "session %d", c.Session())
	}
}

func TestMemCountOnlyKeepsCountsButNoBytes(t *testing.T) {
	m := New(Options{CountOnly: true})
	clients := make([]*Client, 64)
	for i := range clients {
		clients[i] = m.Dial()
	}
	// Each round sends every client a datagram longer than any before, so
	// a send that kept bytes would have to grow a buffer.
	datagram := make([]byte, wire.MaxBatchPayload)
	frame := wire.AppendDisappear(nil, wire.Disappear{Actor: 1})
	size := 0
	round := func() {
		size += 100
		for _, c := range clients {
			m.SendUnreliable(c.Session(), datagram[:size])
			m.SendReliable(c.Session(), frame)
		}
	}
	assert.Zero(t, testing.AllocsPerRun(10, round), "a CountOnly send allocates nothing")
	for _, c := range clients {
		// AllocsPerRun ran one round more than it measured.
		require.Equal(t, ClientStats{
			Datagrams: 11, DatagramBytes: 100 * (11 * 12 / 2),
			Frames: 11, FrameBytes: 11 * wire.DisappearSize,
		}, c.Received())
		require.Zero(t, c.DrainDatagrams(func([]byte) { t.Error("CountOnly kept a datagram") }))
		require.Zero(t, c.DrainReliable(func([]byte) { t.Error("CountOnly kept a frame") }))
		require.Equal(t, "kept", string(c.LastDatagram([]byte("kept"))), "CountOnly keeps no datagram")
	}
}

// TestMemCountsEverySendOnceWhileSessionsClose sends from several
// goroutines, each to its own sessions as the relay's workers do, while
// another closes sessions: every send must be counted exactly once, as
// delivered (in the client's and the transport's counts alike) or as
// dropped, and every send after a close has returned must be dropped.
func TestMemCountsEverySendOnceWhileSessionsClose(t *testing.T) {
	const workers, perWorker, rounds = 4, 8, 100
	for _, countOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{CountOnly: countOnly})
			clients := make([]*Client, workers*perWorker)
			for i := range clients {
				clients[i] = m.Dial()
			}
			datagram := make([]byte, 100)
			frame := wire.AppendDisappear(nil, wire.Disappear{Actor: 1})
			pair := frameStream(frame, frame) // a batch: two more frames a send
			var wg, started sync.WaitGroup
			var closing atomic.Bool
			var sends atomic.Uint64
			started.Add(workers)
			for w := range workers {
				wg.Go(func() {
					// Send until every close has returned, so that the
					// closes overlap the sends.
					for r := 0; r < rounds || !closing.Load(); r++ {
						for _, c := range clients[w*perWorker : (w+1)*perWorker] {
							m.SendUnreliable(c.Session(), datagram)
							m.SendReliable(c.Session(), frame)
							m.SendReliableBatch(c.Session(), pair)
						}
						sends.Add(perWorker)
						if r == 0 {
							started.Done()
						}
					}
				})
			}
			wg.Go(func() {
				started.Wait()
				for i := 0; i < len(clients); i += 3 {
					if i%2 == 0 {
						clients[i].Close()
					} else {
						m.Disconnect(clients[i].Session(), "kicked")
					}
				}
				closing.Store(true)
			})
			wg.Wait()

			st := m.Stats()
			var got ClientStats
			for _, c := range clients {
				r := c.Received()
				assert.Equal(t, r.Datagrams*uint64(len(datagram)), r.DatagramBytes)
				assert.Equal(t, r.Frames*wire.DisappearSize, r.FrameBytes)
				got.Datagrams += r.Datagrams
				got.Frames += r.Frames
			}
			assert.Equal(t, got.Datagrams, st.DatagramsOut)
			assert.Equal(t, got.Frames, st.ReliableOut)
			assert.Equal(t, sends.Load(), st.DatagramsOut+st.DroppedDatagrams)
			assert.Equal(t, 3*sends.Load(), st.ReliableOut+st.DroppedReliable)

			for i := 0; i < len(clients); i += 3 {
				s := clients[i].Session()
				m.SendUnreliable(s, datagram)
				m.SendReliable(s, frame)
				m.SendReliableBatch(s, pair)
			}
			closed := uint64((len(clients) + 2) / 3)
			late := m.Stats()
			assert.Equal(t, st.DatagramsOut, late.DatagramsOut, "a send after the close is dropped")
			assert.Equal(t, st.ReliableOut, late.ReliableOut, "a send after the close is dropped")
			assert.Equal(t, st.DroppedDatagrams+closed, late.DroppedDatagrams)
			assert.Equal(t, st.DroppedReliable+3*closed, late.DroppedReliable)
		})
	}
}

// steadyTick is one server tick against a Transport: every client sends a move,
// the server receives, and sends each client a batch and a reliable frame.
func steadyTick(m *Transport, clients []*Client, frame, batch []byte, inbox []wire.Inbound) []wire.Inbound {
	for _, c := range clients {
		if err := c.Send(frame); err != nil {
			panic(err)
		}
	}
	inbox = m.Receive(inbox[:0])
	for _, in := range inbox {
		if in.Kind == wire.FrameReceived {
			if _, err := wire.DecodeMove(in.Frame); err != nil {
				panic(err)
			}
		}
	}
	for _, c := range clients {
		m.SendUnreliable(c.Session(), batch)
		m.SendReliable(c.Session(), frame)
	}
	return inbox
}

func TestMemSteadyStateAllocatesNothing(t *testing.T) {
	for _, countOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{CountOnly: countOnly})
			clients := make([]*Client, 16)
			for i := range clients {
				clients[i] = m.Dial()
			}
			frame := moveFrame(1)
			batch := wire.AppendBatchHeader(nil, 1, 0)
			for range wire.MaxRecordsPerBatch {
				batch = wire.AppendRecord(batch, wire.Record{Actor: 1})
			}
			inbox := make([]wire.Inbound, 0, 64)
			var bytes int
			drain := func(d []byte) { bytes += len(d) }
			tick := func() {
				inbox = steadyTick(m, clients, frame, batch, inbox)
				for _, c := range clients {
					c.DrainDatagrams(drain)
					c.DrainReliable(drain)
				}
			}
			tick()
			tick()
			assert.Zero(t, testing.AllocsPerRun(100, tick))
			assert.Equal(t, uint64(16*103), m.Stats().DatagramsOut)
		})
	}
}

// TestMemKeepsEachClientsOrderUnderConcurrentSenders runs clients on their
// own goroutines while the server receives and replies; per-session order
// must hold and nothing may be lost.
func TestMemKeepsEachClientsOrderUnderConcurrentSenders(t *testing.T) {
	const clients, moves = 4, 300
	m := New(Options{})
	cs := make([]*Client, clients)
	for i := range cs {
		cs[i] = m.Dial()
	}
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for seq := range uint32(moves) {
				if err := c.Send(moveFrame(seq)); err != nil {
					t.Error(err)
				}
				c.DrainDatagrams(func([]byte) {})
			}
			c.Close()
		})
	}
	next := map[wire.SessionID]uint32{}
	closed := 0
	var inbox []wire.Inbound
	for closed < clients {
		inbox = m.Receive(inbox[:0])
		if len(inbox) == 0 {
			runtime.Gosched()
		}
		for _, in := range inbox {
			switch in.Kind {
			case wire.FrameReceived:
				mv, err := wire.DecodeMove(in.Frame)
				require.NoError(t, err)
				require.Equal(t, next[in.Session], mv.Seq, "session %d", in.Session)
				next[in.Session]++
				m.SendUnreliable(in.Session, wire.AppendBatchHeader(nil, mv.Seq, 0))
			case wire.SessionClosed:
				closed++
			}
		}
	}
	wg.Wait()
	for _, c := range cs {
		assert.Equal(t, uint32(moves), next[c.Session()])
	}
}

// TestMemBatchSendIsEachDatagramSentInTurn: a batch reaches the client as
// the same datagrams, in order, with the same counts, as sending them one
// by one would; what one by one would drop, the batch drops and counts.
func TestMemBatchSendIsEachDatagramSentInTurn(t *testing.T) {
	for _, countOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{MaxDatagram: 100, CountOnly: countOnly})
			c, gone := m.Dial(), m.Dial()
			gone.Close()
			run := make([]byte, 250) // datagrams of 100, 100 and 50 bytes
			for i := range run {
				run[i] = byte(i)
			}
			m.SendUnreliableBatch(c.Session(), run, 100)
			m.SendUnreliableBatch(c.Session(), run[:30], 0)    // size below 1: one datagram
			m.SendUnreliableBatch(c.Session(), run, 125)       // two of 125: over the limit
			m.SendUnreliableBatch(gone.Session(), run, 100)    // three to a closed session
			m.SendUnreliableBatch(c.Session(), run[:0], 100)   // nothing
			m.SendUnreliableBatch(c.Session(), run[:200], 400) // one of 200: over the limit

			assert.Equal(t, ClientStats{Datagrams: 4, DatagramBytes: 280}, c.Received())
			st := m.Stats()
			assert.Equal(t, uint64(4), st.DatagramsOut)
			assert.Equal(t, uint64(2+3+1), st.DroppedDatagrams)
			if !countOnly {
				assert.Equal(t, []string{string(run[:100]), string(run[100:200]), string(run[200:]), string(run[:30])},
					drainedDatagrams(c))
			}
		})
	}
}

// TestMemWillSendChangesNothingASendOrClientSees: WillSend is a hint. Told
// of an open, a closed, an unknown or a never-dialled session, the
// transport delivers, drops and counts exactly as it would untold, and the
// hint allocates nothing.
func TestMemWillSendChangesNothingASendOrClientSees(t *testing.T) {
	for _, countOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{CountOnly: countOnly})
			var _ wire.SendAhead = m
			c, gone := m.Dial(), m.Dial()
			gone.Close()
			for _, s := range []wire.SessionID{c.Session(), gone.Session(), 0, 999, 5 * memChunkSlots} {
				m.WillSend(s)
			}
			d := []byte("datagram")
			m.WillSend(c.Session())
			m.SendUnreliableBatch(c.Session(), d, 0)
			m.WillSend(gone.Session())
			m.SendUnreliableBatch(gone.Session(), d, 0)

			assert.Equal(t, ClientStats{Datagrams: 1, DatagramBytes: uint64(len(d))}, c.Received())
			assert.Equal(t, uint64(1), m.Stats().DroppedDatagrams)
			if !countOnly {
				assert.Equal(t, []string{"datagram"}, drainedDatagrams(c))
			}
			assert.Zero(t, testing.AllocsPerRun(100, func() { m.WillSend(c.Session()) }))
		})
	}
}

func TestMemBatchSendAllocatesNothingInCountOnlyMode(t *testing.T) {
	m := New(Options{CountOnly: true})
	c := m.Dial()
	run := make([]byte, 3*wire.MaxBatchPayload)
	assert.Zero(t, testing.AllocsPerRun(100, func() { m.SendUnreliableBatch(c.Session(), run, wire.MaxBatchPayload) }))
	assert.Equal(t, ClientStats{Datagrams: 3 * 101, DatagramBytes: 3 * wire.MaxBatchPayload * 101}, c.Received())
}

// frameStream lays frames back to back behind their length prefixes, as
// SendReliableBatch takes them; a frame may be of any length a prefix can
// say.
func frameStream(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = append(b, byte(len(f)), byte(len(f)>>8))
		b = append(b, f...)
	}
	return b
}

// TestMemReliableBatchIsEachFrameSentInTurn: a client sent a batch gets
// what a client sent the same frames one by one gets, in the same place
// among the frames sent before and after, with the same counts; what one
// by one would drop (over MaxFrame, under a header, a cut-short tail, a
// closed or unknown session), the batch drops and counts.
func TestMemReliableBatchIsEachFrameSentInTurn(t *testing.T) {
	for _, countOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{MaxFrame: 50, CountOnly: countOnly})
			each, batched, gone := m.Dial(), m.Dial(), m.Dial()
			gone.Close()
			appear := func(a uint32) []byte { return wire.AppendAppear(nil, wire.Appear{Actor: a}) }
			frames := [][]byte{appear(10), wire.AppendProp(nil, wire.Prop{Actor: 11}), make([]byte, 51), appear(12), {wire.Version}, nil, appear(13)}

			m.SendReliable(each.Session(), appear(1))
			for _, f := range frames {
				m.SendReliable(each.Session(), f)
			}
			m.SendReliable(each.Session(), appear(2))
			afterEach := m.Stats()
			m.SendReliable(batched.Session(), appear(1))
			m.SendReliableBatch(batched.Session(), frameStream(frames...))
			m.SendReliable(batched.Session(), appear(2))

			want := ClientStats{Frames: 6, FrameBytes: 6 * wire.AppearSize}
			assert.Equal(t, want, each.Received())
			assert.Equal(t, want, batched.Received())
			assert.Equal(t, uint64(3), afterEach.DroppedReliable)
			assert.Equal(t, uint64(6), m.Stats().DroppedReliable)
			if !countOnly {
				sent := []string{string(appear(1)), string(frames[0]), string(frames[1]), string(frames[3]), string(frames[6]), string(appear(2))}
				assert.Equal(t, sent, drainedReliable(each))
				assert.Equal(t, sent, drainedReliable(batched))
			}

			cut := frameStream(appear(14), appear(15))
			m.SendReliableBatch(batched.Session(), cut[:len(cut)-1])
			m.SendReliableBatch(gone.Session(), frameStream(frames...))
			m.SendReliableBatch(100000, cut)
			m.SendReliableBatch(batched.Session(), nil)
			assert.Equal(t, uint64(6+1+7+2), m.Stats().DroppedReliable,
				"the cut-short tail, every frame for a closed session and for no session")
			assert.Equal(t, uint64(1), batched.Received().Frames-want.Frames, "sent up to the last whole frame")
			assert.Equal(t, uint64(6+7), m.Stats().ReliableOut)
			if !countOnly {
				assert.Equal(t, []string{string(appear(14))}, drainedReliable(batched))
			}
		})
	}
}

func TestMemReliableBatchAllocatesNothingInSteadyState(t *testing.T) {
	for _, countOnly := range []bool{true, false} {
		t.Run(fmt.Sprintf("countOnly=%v", countOnly), func(t *testing.T) {
			m := New(Options{CountOnly: countOnly})
			c := m.Dial()
			props := propBatch(100)
			var bytes int
			drain := func(f []byte) { bytes += len(f) }
			tick := func() {
				m.SendReliableBatch(c.Session(), props)
				c.DrainReliable(drain)
			}
			tick()
			tick()
			assert.Zero(t, testing.AllocsPerRun(100, tick))
			assert.Equal(t, ClientStats{Frames: 100 * 103, FrameBytes: 100 * 103 * wire.PropSize}, c.Received())
		})
	}
}

// TestMemDigestSumsWhatEachClientWasSentInOrder: with Digest a client
// keeps a CRC-32C of its datagrams and of its reliable frames, in the
// order sent, and no bytes; the same sends give the same sums, a byte
// changed or two sends swapped give others.
func TestMemDigestSumsWhatEachClientWasSentInOrder(t *testing.T) {
	type send struct {
		reliable bool
		b        []byte
	}
	welcome := wire.AppendWelcome(nil, wire.Welcome{Actor: 7})
	sends := []send{{false, []byte("first datagram")}, {true, welcome}, {false, []byte("second")}, {true, moveFrame(3)}}
	run := func(sends []send) ClientStats {
		m := New(Options{Digest: true})
		c, other := m.Dial(), m.Dial()
		m.SendReliable(other.Session(), moveFrame(9))
		for _, s := range sends {
			if s.reliable {
				m.SendReliable(c.Session(), s.b)
			} else {
				m.SendUnreliableBatch(c.Session(), s.b, 0)
			}
		}
		assert.Empty(t, drainedDatagrams(c), "a digesting client keeps no bytes")
		assert.Empty(t, drainedReliable(c))
		return c.Received()
	}
	got := run(sends)
	assert.Equal(t, ClientStats{Datagrams: 2, DatagramBytes: 20, Frames: 2, FrameBytes: uint64(len(welcome) + len(moveFrame(3)))}, ClientStats{Datagrams: got.Datagrams, DatagramBytes: got.DatagramBytes, Frames: got.Frames, FrameBytes: got.FrameBytes})
	assert.Equal(t, crc32.Checksum([]byte("first datagramsecond"), crc32.MakeTable(crc32.Castagnoli)), got.DatagramSum)
	assert.Equal(t, got, run(sends), "the same sends, the same sums")

	changed := slices.Clone(sends)
	changed[2] = send{false, []byte("secone")}
	assert.NotEqual(t, got.DatagramSum, run(changed).DatagramSum)
	assert.Equal(t, got.FrameSum, run(changed).FrameSum)
	swapped := []send{sends[0], sends[3], sends[2], sends[1]}
	assert.NotEqual(t, got.FrameSum, run(swapped).FrameSum)
}
