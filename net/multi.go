package net

import (
	"errors"
	"fmt"
)

// Multi serves several transports as one [Transport]: a server behind it
// takes native clients over [QUIC] and browsers over a [WebSocket] in the
// same world. Session s of transport k (of n) is session s*n + k to the
// server, so ids stay unique, never 0, and name their transport. Receive
// hands over the transports' events in transport order, each one's in the
// order it reported them. Sends go to the session's own transport; Stats
// adds the transports' counters up; Close closes them all.
type Multi struct {
	ts      []Transport
	batch   []BatchSender // per transport, nil where it has none
	scratch []Inbound
}

// NewMulti returns a Multi over ts, which it owns from then on (its Close
// closes them). It panics without a transport: that is a programming error.
func NewMulti(ts ...Transport) *Multi {
	if len(ts) == 0 {
		panic("net: NewMulti needs at least one transport")
	}
	m := &Multi{ts: ts, batch: make([]BatchSender, len(ts))}
	for k, t := range ts {
		m.batch[k], _ = t.(BatchSender)
	}
	return m
}

// Transports returns the transports, in the order given to NewMulti.
func (m *Multi) Transports() []Transport { return m.ts }

// Session returns the server's id for session s of transport k.
func (m *Multi) Session(k int, s SessionID) SessionID {
	return s*SessionID(len(m.ts)) + SessionID(k)
}

// split returns the transport of session s and its own id there.
func (m *Multi) split(s SessionID) (Transport, int, SessionID) {
	n := SessionID(len(m.ts))
	k := int(s % n)
	return m.ts[k], k, s / n
}

// Receive implements [Transport]. Frames stay valid until the next Receive.
func (m *Multi) Receive(dst []Inbound) []Inbound {
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

// SendUnreliable implements [Transport].
func (m *Multi) SendUnreliable(s SessionID, datagram []byte) {
	t, _, local := m.split(s)
	t.SendUnreliable(local, datagram)
}

// SendUnreliableBatch implements [BatchSender]: the session's transport
// takes the batch in one call where it can, datagram by datagram where it
// cannot.
func (m *Multi) SendUnreliableBatch(s SessionID, datagrams []byte, size int) {
	t, k, local := m.split(s)
	if b := m.batch[k]; b != nil {
		b.SendUnreliableBatch(local, datagrams, size)
		return
	}
	eachDatagram(datagrams, size, func(d []byte) { t.SendUnreliable(local, d) })
}

// SendReliable implements [Transport].
func (m *Multi) SendReliable(s SessionID, frame []byte) {
	t, _, local := m.split(s)
	t.SendReliable(local, frame)
}

// Disconnect implements [Transport].
func (m *Multi) Disconnect(s SessionID, reason string) {
	t, _, local := m.split(s)
	t.Disconnect(local, reason)
}

// Stats implements [Transport]: the sum of the transports' counters.
func (m *Multi) Stats() Stats {
	var sum Stats
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

// Close implements [Transport]: it closes every transport and returns
// their errors joined.
func (m *Multi) Close() error {
	var errs []error
	for k, t := range m.ts {
		if err := t.Close(); err != nil {
			errs = append(errs, fmt.Errorf("transport %d: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

var (
	_ Transport   = (*Multi)(nil)
	_ BatchSender = (*Multi)(nil)
)
