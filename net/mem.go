package net

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by [MemClient.Send] once the session is closed.
var ErrClosed = errors.New("net: session closed")

// MemOptions configures a [Mem] transport. The zero value is ready to use.
type MemOptions struct {
	// CountOnly makes clients keep only their [MemClientStats] and the last
	// datagram, not every frame, so a long benchmark neither grows memory
	// nor allocates. The Drain methods then see nothing.
	CountOnly bool
	// MaxDatagram is the largest datagram SendUnreliable delivers, in bytes;
	// larger ones are dropped and counted, like a datagram over a path's
	// limit. 0 (or less) means MaxBatchPayload.
	MaxDatagram int
	// MaxFrame is the largest frame either side may send, in bytes: larger
	// SendReliable frames are dropped and counted, larger MemClient.Send
	// frames are refused with ErrStreamLength. 0 (or less) means
	// DefaultMaxStreamFrame; above MaxStreamFrame means MaxStreamFrame.
	MaxFrame int
}

// Mem is an in-process [Transport] for unit tests and benchmarks only: no
// network, no goroutines, no timing. [Mem.Dial] opens a session and returns
// its [MemClient], which sends frames to the server and collects what the
// server sent it.
//
// Receive is deterministic: the frames of one client come in the order it
// sent them, and events of different clients in the order their calls
// returned; a single goroutine driving clients and server always sees the
// same sequence. All methods are safe for concurrent use, except that calls
// to Receive must not overlap. The server's sends do not take the Mem's
// lock at all (so the relay's workers can send to different clients at
// once), only the one client's lock. In steady state (buffers grown, clients
// drained or CountOnly) Receive, SendUnreliable, SendReliable and
// MemClient.Send allocate nothing.
//
// Lock order: a MemClient's drain lock, then the Mem's lock, then a
// MemClient's lock. The server's sends take only the client's lock.
type Mem struct {
	maxDatagram int
	maxFrame    int
	countOnly   bool

	mu      sync.Mutex
	closed  bool
	last    SessionID
	clients map[SessionID]*MemClient
	inbox   memInbox // filled by clients, handed out by the next Receive
	// stats counts sessions, inbound traffic, and the outbound traffic of
	// sessions already closed; open clients count their own (Stats sums).
	stats Stats

	// open mirrors clients for the server's sends, indexed by session id
	// (Mem numbers sessions 1, 2, 3, ...): a send loads two pointers, takes
	// no lock and writes nothing shared, so relay workers on several cores
	// never contend on one cache line. Dial grows it copy-on-write.
	open                              atomic.Pointer[[]atomic.Pointer[MemClient]]
	droppedDatagrams, droppedReliable atomic.Uint64

	given memInbox // what the last Receive handed out; owned by the Receive caller
}

// client returns the open session s, or nil.
func (m *Mem) client(s SessionID) *MemClient {
	open := m.open.Load()
	if open == nil || s >= SessionID(len(*open)) {
		return nil
	}
	return (*open)[s].Load()
}

// publish makes session c visible to sends; m.mu is held.
func (m *Mem) publish(c *MemClient) {
	open := m.open.Load()
	if open == nil || c.session >= SessionID(len(*open)) {
		n := 64
		if open != nil {
			n = 2 * len(*open)
		}
		grown := make([]atomic.Pointer[MemClient], max(n, int(c.session)+1))
		if open != nil {
			for i := range *open {
				grown[i].Store((*open)[i].Load())
			}
		}
		open = &grown
		m.open.Store(open)
	}
	(*open)[c.session].Store(c)
}

// memInbox is a run of events whose frames are packed into one byte slice,
// so that steady-state traffic reuses the same two arrays.
type memInbox struct {
	events []memEvent
	data   []byte
}

type memEvent struct {
	kind       InboundKind
	session    SessionID
	start, end int // the frame is data[start:end]
	reason     string
}

func (q *memInbox) push(kind InboundKind, s SessionID, frame []byte, reason string) {
	start := len(q.data)
	q.data = append(q.data, frame...)
	q.events = append(q.events, memEvent{kind: kind, session: s, start: start, end: len(q.data), reason: reason})
}

func (q *memInbox) reset() {
	q.events = q.events[:0]
	q.data = q.data[:0]
}

// NewMem returns an in-memory transport with no sessions.
func NewMem(opts MemOptions) *Mem {
	m := &Mem{
		maxDatagram: opts.MaxDatagram,
		maxFrame:    opts.MaxFrame,
		countOnly:   opts.CountOnly,
		clients:     make(map[SessionID]*MemClient),
	}
	if m.maxDatagram <= 0 {
		m.maxDatagram = MaxBatchPayload
	}
	if m.maxFrame <= 0 {
		m.maxFrame = DefaultMaxStreamFrame
	}
	m.maxFrame = min(m.maxFrame, MaxStreamFrame)
	return m
}

// Dial opens a new session; the server sees it as SessionOpened on its next
// Receive. After Close, Dial returns a client that is already closed (with
// ReasonTransportClosed and session 0) and the server sees nothing.
func (m *Mem) Dial() *MemClient {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return &MemClient{mem: m, closed: true, reason: ReasonTransportClosed}
	}
	m.last++
	c := &MemClient{mem: m, session: m.last}
	m.clients[c.session] = c
	m.publish(c)
	m.inbox.push(SessionOpened, c.session, nil, "")
	m.stats.Opened++
	return c
}

// Receive implements [Transport]. Frames alias the Mem's buffers and stay
// valid until the next Receive.
func (m *Mem) Receive(dst []Inbound) []Inbound {
	m.mu.Lock()
	m.inbox, m.given = m.given, m.inbox
	m.inbox.reset()
	m.mu.Unlock()
	for _, e := range m.given.events {
		in := Inbound{Kind: e.kind, Session: e.session, Reason: e.reason}
		if e.kind == FrameReceived {
			in.Frame = m.given.data[e.start:e.end:e.end]
		}
		dst = append(dst, in)
	}
	return dst
}

// SendUnreliable implements [Transport]. A datagram that is empty, longer
// than MaxDatagram, or for an unknown or closed session is dropped and
// counted; Mem never drops for any other reason.
func (m *Mem) SendUnreliable(s SessionID, datagram []byte) {
	c := m.client(s)
	if c == nil || len(datagram) == 0 || len(datagram) > m.maxDatagram {
		m.droppedDatagrams.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed { // closed since the lookup
		m.droppedDatagrams.Add(1)
		return
	}
	c.counts.Datagrams++
	c.counts.DatagramBytes += uint64(len(datagram))
	c.last = append(c.last[:0], datagram...)
	if !m.countOnly {
		c.datagrams.push(datagram)
	}
}

// SendReliable implements [Transport]. A frame shorter than HeaderSize,
// longer than MaxFrame, or for an unknown or closed session is dropped and
// counted.
func (m *Mem) SendReliable(s SessionID, frame []byte) {
	c := m.client(s)
	if c == nil || len(frame) < HeaderSize || len(frame) > m.maxFrame {
		m.droppedReliable.Add(1)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		m.droppedReliable.Add(1)
		return
	}
	c.counts.Frames++
	c.counts.FrameBytes += uint64(len(frame))
	if !m.countOnly {
		c.reliable.push(frame)
	}
}

// Disconnect implements [Transport]. The client keeps every frame sent
// before it and reads reason from [MemClient.CloseReason].
func (m *Mem) Disconnect(s SessionID, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clients[s]; c != nil {
		m.closeLocked(c, reason)
	}
}

// Stats implements [Transport].
func (m *Mem) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stats
	for _, c := range m.clients {
		c.mu.Lock()
		addOut(&st, c.counts)
		c.mu.Unlock()
	}
	st.DroppedDatagrams = m.droppedDatagrams.Load()
	st.DroppedReliable = m.droppedReliable.Load()
	return st
}

// addOut adds what one client was sent to the transport's counters.
func addOut(st *Stats, c MemClientStats) {
	st.DatagramsOut += c.Datagrams
	st.DatagramBytesOut += c.DatagramBytes
	st.ReliableOut += c.Frames
	st.ReliableBytesOut += c.FrameBytes
}

// Close implements [Transport]: open sessions close in session order with
// ReasonTransportClosed. It always returns nil.
func (m *Mem) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	ids := make([]SessionID, 0, len(m.clients))
	for id := range m.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m.closeLocked(m.clients[id], ReasonTransportClosed)
	}
	return nil
}

// closeLocked closes c's session once; m.mu is held.
func (m *Mem) closeLocked(c *MemClient, reason string) {
	delete(m.clients, c.session)
	(*m.open.Load())[c.session].Store(nil)
	c.mu.Lock()
	c.closed = true
	c.reason = reason
	addOut(&m.stats, c.counts)
	c.mu.Unlock()
	m.inbox.push(SessionClosed, c.session, nil, reason)
	m.stats.Closed++
}

// MemClientStats counts what a [MemClient] received.
type MemClientStats struct {
	Datagrams, DatagramBytes uint64
	Frames, FrameBytes       uint64 // reliable frames
}

// MemClient is the client end of one [Mem] session. Its methods are safe
// for concurrent use.
type MemClient struct {
	mem     *Mem
	session SessionID

	// Guarded by mu; closed and reason change only with mem.mu held too.
	mu        sync.Mutex
	closed    bool
	reason    string
	datagrams memQueue
	reliable  memQueue
	counts    MemClientStats
	last      []byte

	// drainMu serializes the Drain methods and guards the queues they
	// hand to the callback.
	drainMu      sync.Mutex
	drainingDgrm memQueue
	drainingRel  memQueue
}

// memQueue is a run of byte strings packed into one slice.
type memQueue struct {
	data []byte
	ends []int
}

func (q *memQueue) push(p []byte) {
	q.data = append(q.data, p...)
	q.ends = append(q.ends, len(q.data))
}

func (q *memQueue) reset() {
	q.data = q.data[:0]
	q.ends = q.ends[:0]
}

func (q *memQueue) each(fn func([]byte)) int {
	start := 0
	for _, end := range q.ends {
		fn(q.data[start:end:end])
		start = end
	}
	return len(q.ends)
}

// Session returns the client's session id (0 if it was dialled after the
// transport closed).
func (c *MemClient) Session() SessionID { return c.session }

// Send sends one frame to the server, which receives a copy as
// FrameReceived. It returns ErrClosed once the session is closed, and
// ErrStreamLength for a frame shorter than HeaderSize or longer than the
// transport's MaxFrame. The transport does not decode the frame.
func (c *MemClient) Send(frame []byte) error {
	m := c.mem
	if len(frame) < HeaderSize || len(frame) > m.maxFrame {
		return ErrStreamLength
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	m.inbox.push(FrameReceived, c.session, frame, "")
	m.stats.FramesIn++
	m.stats.BytesIn += uint64(len(frame))
	return nil
}

// Close ends the session from the client side: the server sees
// SessionClosed with ReasonClientClosed. Closing twice, or after the server
// disconnected, does nothing.
func (c *MemClient) Close() {
	m := c.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	if !c.closed {
		m.closeLocked(c, ReasonClientClosed)
	}
}

// CloseReason returns why the session closed and true, or "" and false
// while it is open.
func (c *MemClient) CloseReason() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reason, c.closed
}

// DrainDatagrams calls fn with each datagram received since the last
// drain, oldest first, and returns how many there were. A datagram is valid
// only during its call. fn must not call the client's Drain methods.
func (c *MemClient) DrainDatagrams(fn func(datagram []byte)) int {
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	c.mu.Lock()
	c.datagrams, c.drainingDgrm = c.drainingDgrm, c.datagrams
	c.datagrams.reset()
	c.mu.Unlock()
	return c.drainingDgrm.each(fn)
}

// DrainReliable calls fn with each reliable frame received since the last
// drain, in the order the server sent them, and returns how many there
// were. A frame is valid only during its call. fn must not call the
// client's Drain methods.
func (c *MemClient) DrainReliable(fn func(frame []byte)) int {
	c.drainMu.Lock()
	defer c.drainMu.Unlock()
	c.mu.Lock()
	c.reliable, c.drainingRel = c.drainingRel, c.reliable
	c.reliable.reset()
	c.mu.Unlock()
	return c.drainingRel.each(fn)
}

// Received returns the counts of everything the client received, drained
// or not (kept in CountOnly mode too).
func (c *MemClient) Received() MemClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts
}

// LastDatagram appends a copy of the latest datagram the client received
// (kept in CountOnly mode too) to dst; it appends nothing before the first.
func (c *MemClient) LastDatagram(dst []byte) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append(dst, c.last...)
}

var _ Transport = (*Mem)(nil)
