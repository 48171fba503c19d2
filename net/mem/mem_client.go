package mem

import (
	"sync"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// ClientStats counts what a [Client] received.
type ClientStats struct {
	Datagrams, DatagramBytes uint64
	Frames, FrameBytes       uint64 // reliable frames
	// DatagramSum and FrameSum are the running CRC-32C of the datagrams'
	// and the reliable frames' bytes, in the order sent, with
	// Options.Digest; 0 without it.
	DatagramSum, FrameSum uint32
}

// Client is the client end of one [Transport] session. Its methods are safe
// for concurrent use.
type Client struct {
	mem     *Transport
	session wire.SessionID
	slot    *memSlot // the session's counters, bumped by the server's sends

	// Guarded by mu; closed and reason change only with mem.mu held too.
	// The datagrams wait in the slot (memSlot.queue).
	mu       sync.Mutex
	closed   bool
	reason   string
	reliable link.Queue

	// drainMu serializes the Drain methods and guards the queues they
	// hand to the callback. drainingDgrm holds the datagrams of the last
	// drain that found any until the next such drain: the latest of them
	// is LastDatagram's once the slot's queue is empty. It is swapped with
	// the slot's queue with the slot's dmu held too, so LastDatagram reads
	// it under dmu alone.
	drainMu      sync.Mutex
	drainingDgrm link.Queue
	drainingRel  link.Queue
}

// Session returns the client's session id (0 if it was dialled after the
// transport closed).
func (c *Client) Session() wire.SessionID { return c.session }

// Send sends one frame to the server, which receives a copy as
// FrameReceived. It returns ErrClosed once the session is closed, and
// ErrStreamLength for a frame shorter than HeaderSize or longer than the
// transport's MaxFrame. The transport does not decode the frame.
func (c *Client) Send(frame []byte) error {
	m := c.mem
	if len(frame) < wire.HeaderSize || len(frame) > m.maxFrame {
		return wire.ErrStreamLength
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.closed {
		return wire.ErrClosed
	}
	m.inbox.Push(wire.FrameReceived, c.session, frame, "")
	m.stats.FramesIn++
	m.stats.BytesIn += uint64(len(frame))
	return nil
}

// Close ends the session from the client side: the server sees
// SessionClosed with ReasonClientClosed. Closing twice, or after the server
// disconnected, does nothing.
func (c *Client) Close() {
	m := c.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.closed {
		m.closeLocked(c, wire.ReasonClientClosed)
	}
}

// CloseReason returns why the session closed and true, or "" and false
// while it is open.
func (c *Client) CloseReason() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason, c.closed
}

// DrainDatagrams calls fn with each datagram received since the last
// drain, oldest first, and returns how many there were. A datagram is valid
// only during its call. fn must not call the client's Drain methods.
func (c *Client) DrainDatagrams(fn func(datagram []byte)) int {
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	sl := c.slot
	sl.dmu.Lock()
	if sl.queue.Len() == 0 {
		// Nothing new: the last drain's datagrams stay where LastDatagram
		// finds the latest, which no drain copies.
		sl.dmu.Unlock()
		return 0
	}
	sl.queue, c.drainingDgrm = c.drainingDgrm, sl.queue
	sl.queue.Reset()
	sl.dmu.Unlock()
	return c.drainingDgrm.Each(fn)
}

// DrainReliable calls fn with each reliable frame received since the last
// drain, in the order the server sent them, and returns how many there
// were. A frame is valid only during its call. fn must not call the
// client's Drain methods.
func (c *Client) DrainReliable(fn func(frame []byte)) int {
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	c.mu.Lock()
	c.reliable, c.drainingRel = c.drainingRel, c.reliable
	c.reliable.Reset()
	c.mu.Unlock()
	return c.drainingRel.Each(fn)
}

// Received returns the counts of everything the client received, drained
// or not, in CountOnly mode too. The server's sends bump them without a
// lock: while sends to the client are in flight a count and its bytes may
// be a send apart; once the sends have returned, the counts are exact.
func (c *Client) Received() ClientStats {
	return c.slot.counts()
}

// LastDatagram appends a copy of the latest datagram the client received
// to dst; it appends nothing before the first. CountOnly mode keeps no
// bytes, so there it always returns dst unchanged.
func (c *Client) LastDatagram(dst []byte) []byte {
	c.slot.dmu.Lock()
	defer c.slot.dmu.Unlock()
	if d, ok := c.slot.queue.Latest(); ok {
		return append(dst, d...)
	}
	if d, ok := c.drainingDgrm.Latest(); ok {
		return append(dst, d...)
	}
	return dst
}
