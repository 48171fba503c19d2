package multi

import (
	"errors"
	"fmt"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// Transport serves several transports as one [wire.Transport]: a server behind it
// takes native clients over quic.Transport and browsers over a websocket.Transport in the
// same world. Session s of transport k (of n) is session s*n + k to the
// server, so ids stay unique, never 0, and name their transport. Receive
// hands over the transports' events in transport order, each one's in the
// order it reported them. Sends go to the session's own transport; Stats
// adds the transports' counters up; Close closes them all.
type Transport struct {
	ts       []wire.Transport
	batch    []wire.BatchSender         // per transport, nil where it has none
	reliable []wire.ReliableBatchSender // per transport, nil where it has none
	scratch  []wire.Inbound
}

// New returns a Transport over ts, which it owns from then on (its Close
// closes them). It panics without a transport: that is a programming error.
func New(ts ...wire.Transport) *Transport {
	if len(ts) == 0 {
		panic("multi: New needs at least one transport")
	}
	m := &Transport{
		ts:       ts,
		batch:    make([]wire.BatchSender, len(ts)),
		reliable: make([]wire.ReliableBatchSender, len(ts)),
	}
	for k, t := range ts {
		m.batch[k], _ = t.(wire.BatchSender)
		m.reliable[k], _ = t.(wire.ReliableBatchSender)
	}
	return m
}

// Transports returns the transports, in the order given to New.
func (m *Transport) Transports() []wire.Transport { return m.ts }

// Session returns the server's id for session s of transport k.
func (m *Transport) Session(k int, s wire.SessionID) wire.SessionID {
	return s*wire.SessionID(len(m.ts)) + wire.SessionID(k)
}

// split returns the transport of session s and its own id there.
func (m *Transport) split(s wire.SessionID) (wire.Transport, int, wire.SessionID) {
	n := wire.SessionID(len(m.ts))
	k := int(s % n)
	return m.ts[k], k, s / n
}

// Receive implements [wire.Transport]. Frames stay valid until the next Receive.
func (m *Transport) Receive(dst []wire.Inbound) []wire.Inbound {
	for k, t := range m.ts {
		m.scratch = t.Receive(m.scratch[:0])
		for _, in := range m.scratch {
			in.Session = m.Session(k, in.Session)
			dst = append(dst, in)
		}
	}
	clear(m.scratch) // the frames stay reachable from dst, not from here
	return dst
}

// SendUnreliable implements [wire.Transport].
func (m *Transport) SendUnreliable(s wire.SessionID, datagram []byte) {
	t, _, local := m.split(s)
	t.SendUnreliable(local, datagram)
}

// SendUnreliableBatch implements [wire.BatchSender]: the session's transport
// takes the batch in one call where it can, datagram by datagram where it
// cannot.
func (m *Transport) SendUnreliableBatch(s wire.SessionID, datagrams []byte, size int) {
	t, k, local := m.split(s)
	if b := m.batch[k]; b != nil {
		b.SendUnreliableBatch(local, datagrams, size)
		return
	}
	link.EachDatagram(datagrams, size, func(d []byte) { t.SendUnreliable(local, d) })
}

// SendReliable implements [wire.Transport].
func (m *Transport) SendReliable(s wire.SessionID, frame []byte) {
	t, _, local := m.split(s)
	t.SendReliable(local, frame)
}

// SendReliableBatch implements [wire.ReliableBatchSender]: the session's
// transport takes the batch in one call where it can, frame by frame
// where it cannot. There a cut-short tail is handed over as an empty
// frame, which every transport drops and counts, so that it is counted
// where the batch went.
func (m *Transport) SendReliableBatch(s wire.SessionID, frames []byte) {
	t, k, local := m.split(s)
	if b := m.reliable[k]; b != nil {
		b.SendReliableBatch(local, frames)
		return
	}
	if wire.EachStreamFrame(frames, func(f []byte) { t.SendReliable(local, f) }) > 0 {
		t.SendReliable(local, nil)
	}
}

// Disconnect implements [wire.Transport].
func (m *Transport) Disconnect(s wire.SessionID, reason string) {
	t, _, local := m.split(s)
	t.Disconnect(local, reason)
}

// Stats implements [wire.Transport]: the sum of the transports' counters.
func (m *Transport) Stats() wire.Stats {
	var sum wire.Stats
	for _, t := range m.ts {
		st := t.Stats()
		sum.Opened += st.Opened
		sum.Closed += st.Closed
		sum.FramesIn += st.FramesIn
		sum.BytesIn += st.BytesIn
		sum.DatagramsOut += st.DatagramsOut
		sum.DatagramBytesOut += st.DatagramBytesOut
		sum.ReliableOut += st.ReliableOut
		sum.ReliableBytesOut += st.ReliableBytesOut
		sum.DroppedDatagrams += st.DroppedDatagrams
		sum.DroppedReliable += st.DroppedReliable
	}
	return sum
}

// Flush implements [wire.Flusher]: it flushes every transport that holds
// what a tick sends until the tick ends.
func (m *Transport) Flush() {
	for _, t := range m.ts {
		if f, ok := t.(wire.Flusher); ok {
			f.Flush()
		}
	}
}

// Close implements [wire.Transport]: it closes every transport and returns
// their errors joined.
func (m *Transport) Close() error {
	var errs []error
	for k, t := range m.ts {
		if err := t.Close(); err != nil {
			errs = append(errs, fmt.Errorf("transport %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

var (
	_ wire.Transport           = (*Transport)(nil)
	_ wire.BatchSender         = (*Transport)(nil)
	_ wire.ReliableBatchSender = (*Transport)(nil)
	_ wire.Flusher             = (*Transport)(nil)
)
