package mem

import (
	"hash/crc32"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// Options configures a [Transport]. The zero value is ready to use.
type Options struct {
	// CountOnly makes clients keep only their [ClientStats]: no frames
	// and no bytes, so a long benchmark neither grows memory nor allocates,
	// and a server's send is a stand-in for a network that does nothing but
	// count: it takes no lock and writes only its session's counters, one
	// cache line. The Drain methods then see nothing and
	// [Client.LastDatagram] appends nothing.
	CountOnly bool
	// Digest makes each client keep, in place of what it was sent, a
	// running CRC-32C of it: of its datagrams' bytes and of its reliable
	// frames', each in the order sent ([ClientStats] DatagramSum and
	// FrameSum). It keeps no frames, as CountOnly does, but a send takes
	// the session's lock to add to the sums. It is for comparing long runs
	// byte for byte (a crowd ticked on one core and on several) without
	// holding their bytes.
	Digest bool
	// MaxDatagram is the largest datagram SendUnreliable delivers, in bytes;
	// larger ones are dropped and counted, like a datagram over a path's
	// limit. 0 (or less) means MaxBatchPayload.
	MaxDatagram int
	// MaxFrame is the largest frame either side may send, in bytes: larger
	// SendReliable frames are dropped and counted, larger Client.Send
	// frames are refused with ErrStreamLength. 0 (or less) means
	// DefaultMaxStreamFrame; above MaxStreamFrame means MaxStreamFrame.
	MaxFrame int
}

// Transport is an in-process [wire.Transport] for unit tests and benchmarks only: no
// network, no goroutines, no timing. [Transport.Dial] opens a session and returns
// its [Client], which sends frames to the server and collects what the
// server sent it.
//
// Receive is deterministic: the frames of one client come in the order it
// sent them, and events of different clients in the order their calls
// returned; a single goroutine driving clients and server always sees the
// same sequence. All methods are safe for concurrent use, except that calls
// to Receive must not overlap. The server's sends never take the Transport's
// lock (so the relay's workers can send to different clients at once): a
// send finds its session by index and bumps the session's counters, which
// sit alone on one cache line; only outside CountOnly mode does it also
// take one lock of the session's, to queue a copy. In steady state (buffers
// grown, clients drained or CountOnly) Receive, SendUnreliable,
// SendReliable, the batch sends and Client.Send allocate nothing; in
// CountOnly mode the server's sends never allocate.
//
// A server send to a session whose close (Disconnect, Close or
// Client.Close) has returned is dropped and counted as dropped. A send
// that overlaps the close is either delivered or dropped, and counted once
// either way. Outside CountOnly mode the client's lock decides, exactly as
// the session closes: nothing is queued behind the close reason. In
// CountOnly mode a send decides when it looks its session up: if the
// session was open then, the send counts as delivered even if the close
// completes before the counters are bumped, so the client's Received may
// still grow just after a close that overlapped sends.
//
// Lock order: a Client's drain lock, then the Transport's lock, then a
// session slot's datagram lock, then a Client's lock (never both of
// the last two at once on a send). The server's datagram sends take only
// the slot's lock, its reliable sends only the client's, and none in
// CountOnly mode.
type Transport struct {
	// Read by every server send and written only by New and Dial, so
	// they stay cached on every core; the padding keeps the fields that
	// clients and Receive write (mu and what it guards) off their line.
	maxDatagram int
	maxFrame    int
	countOnly   bool
	digest      bool
	// slots holds each session's send-side state, indexed by session id
	// (Transport numbers sessions 1, 2, 3, ...), in chunks that never move: a
	// send loads three pointers, takes no lock and writes only its own
	// session's cache line, so relay workers on several cores never
	// contend, and no counter bumped during a Dial is lost to a copy. Dial
	// appends chunks, copying the list on write.
	slots atomic.Pointer[[]*memChunk]
	_     [cacheline.Size]byte

	mu      sync.Mutex
	closed  bool
	last    wire.SessionID
	clients map[wire.SessionID]*Client
	inbox   link.Inbox // filled by clients, handed out by the next Receive
	// stats counts sessions and inbound traffic; the outbound traffic is
	// in the slots, closed sessions' included (Stats sums them).
	stats wire.Stats

	droppedDatagrams, droppedReliable atomic.Uint64

	given link.Inbox // what the last Receive handed out; owned by the Receive caller
}

// memSlot is one session's send-side state, alone on a pair of cache
// lines: a CountOnly send reads client and bumps two counters here and
// touches no other memory of the session (not even the Client), and
// sends to different sessions on different cores never write the same
// line. A pair, not one line: the L2's adjacent-line prefetcher fetches
// lines in 128-byte pairs, so with one line a slot the core sending to
// session s would keep taking session s^1's line from the core sending to
// that one (the relay's shards hold sessions in cell order, not by
// number).
// A session keeps its slot after it closes, so that Stats still counts
// what it was sent.
type memSlot struct {
	// client is the session's client while it is open; nil before Dial
	// and once it closes, which is how a send knows to drop.
	client                   atomic.Pointer[Client]
	datagrams, datagramBytes atomic.Uint64
	frames, frameBytes       atomic.Uint64
	// The datagrams sent and not yet drained, outside CountOnly mode,
	// under dmu: beside the counters, so that handing a recipient its
	// tick touches this pair of lines and the queue's bytes, and not the
	// Client. closed is set, under dmu, as the session closes: a send
	// that finds it set drops.
	dmu    sync.Mutex
	closed bool
	queue  link.Queue
	// The running CRC-32C of the datagrams and of the reliable frames
	// sent, with Options.Digest: added to under dmu.
	datagramSum, frameSum atomic.Uint32
	_                     [slotSize - 112]byte
}

// counts returns what the slot's session was sent.
func (s *memSlot) counts() ClientStats {
	return ClientStats{
		Datagrams:     s.datagrams.Load(),
		DatagramBytes: s.datagramBytes.Load(),
		Frames:        s.frames.Load(),
		FrameBytes:    s.frameBytes.Load(),
		DatagramSum:   s.datagramSum.Load(),
		FrameSum:      s.frameSum.Load(),
	}
}

// castagnoli is the CRC-32C table of the digests.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// add adds b to sum, one of the slot's digests.
func (s *memSlot) add(sum *atomic.Uint32, b []byte) {
	s.dmu.Lock()
	sum.Store(crc32.Update(sum.Load(), castagnoli, b))
	s.dmu.Unlock()
}

// slotSize is a memSlot's size: two cache lines.
const slotSize = 2 * cacheline.Size

// memChunkSlots is the number of slots in a memChunk. A chunk is then
// 128 KiB, which Go allocates as a large object, page aligned, so every
// slot starts a pair of cache lines.
const memChunkSlots = 1024

// memChunk holds the slots of sessions k*memChunkSlots to
// (k+1)*memChunkSlots-1, for the chunk's index k.
type memChunk [memChunkSlots]memSlot

// slotOf returns session s's slot, or nil for a session past the last
// Dial's chunk. A slot is never freed, so it may be read at any time.
func (m *Transport) slotOf(s wire.SessionID) *memSlot {
	chunks := *m.slots.Load()
	if k := s / memChunkSlots; k < wire.SessionID(len(chunks)) {
		return &chunks[k][s%memChunkSlots]
	}
	return nil
}

// open returns session s's slot and client, or nils unless s is open.
func (m *Transport) open(s wire.SessionID) (*memSlot, *Client) {
	if slot := m.slotOf(s); slot != nil {
		if c := slot.client.Load(); c != nil {
			return slot, c
		}
	}
	return nil, nil
}

// slotFor returns session s's slot, adding a chunk when s is past the
// last one; m.mu is held. Sessions are numbered in order, so one chunk at
// a time is enough.
func (m *Transport) slotFor(s wire.SessionID) *memSlot {
	chunks := *m.slots.Load()
	if k := s / memChunkSlots; k >= wire.SessionID(len(chunks)) {
		chunks = append(chunks[:len(chunks):len(chunks)], new(memChunk))
		m.slots.Store(&chunks)
	}
	return &chunks[s/memChunkSlots][s%memChunkSlots]
}

// New returns an in-memory transport with no sessions.
func New(opts Options) *Transport {
	m := &Transport{
		maxDatagram: opts.MaxDatagram,
		maxFrame:    opts.MaxFrame,
		countOnly:   opts.CountOnly || opts.Digest,
		digest:      opts.Digest,
		clients:     make(map[wire.SessionID]*Client),
	}
	m.slots.Store(new([]*memChunk))
	if m.maxDatagram <= 0 {
		m.maxDatagram = wire.MaxBatchPayload
	}
	if m.maxFrame <= 0 {
		m.maxFrame = wire.DefaultMaxStreamFrame
	}
	m.maxFrame = min(m.maxFrame, wire.MaxStreamFrame)
	return m
}

// Dial opens a new session; the server sees it as SessionOpened on its next
// Receive. After Close, Dial returns a client that is already closed (with
// ReasonTransportClosed and session 0) and the server sees nothing.
func (m *Transport) Dial() *Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		// A slot of its own, never published: its counts stay zero.
		return &Client{mem: m, slot: &memSlot{closed: true}, closed: true, reason: wire.ReasonTransportClosed}
	}
	m.last++
	c := &Client{mem: m, session: m.last, slot: m.slotFor(m.last)}
	m.clients[c.session] = c
	c.slot.client.Store(c) // visible to sends from here on
	m.inbox.Push(wire.SessionOpened, c.session, nil, "")
	m.stats.Opened++
	return c
}

// Receive implements [wire.Transport]. Frames alias the Transport's buffers and stay
// valid until the next Receive.
func (m *Transport) Receive(dst []wire.Inbound) []wire.Inbound {
	m.mu.Lock()
	m.inbox, m.given = m.given, m.inbox
	m.inbox.Reset()
	m.mu.Unlock()
	return m.given.AppendTo(dst)
}

// SendUnreliable implements [wire.Transport]. A datagram that is empty, longer
// than MaxDatagram, or for an unknown or closed session is dropped and
// counted; Transport never drops for any other reason. See [Transport] for a send that
// overlaps the session's close.
func (m *Transport) SendUnreliable(s wire.SessionID, datagram []byte) {
	slot, c := m.open(s)
	if c == nil || len(datagram) == 0 || len(datagram) > m.maxDatagram {
		m.droppedDatagrams.Add(1)
		return
	}
	m.deliverDatagrams(slot, datagram, len(datagram))
}

// SendUnreliableBatch implements [wire.BatchSender]. A batch of datagrams that
// are all deliverable is queued under one lock and counted once: a relay
// hands over each recipient's tick in one call, touching the session's
// slot and the queue's bytes, not a lock and a count per datagram. A batch
// with one to drop is SendUnreliable on each datagram.
func (m *Transport) SendUnreliableBatch(s wire.SessionID, datagrams []byte, size int) {
	if size < 1 || size > len(datagrams) {
		size = len(datagrams)
	}
	if size > 0 && size <= m.maxDatagram {
		if slot, c := m.open(s); c != nil {
			m.deliverDatagrams(slot, datagrams, size)
			return
		}
	}
	link.EachDatagram(datagrams, size, func(d []byte) { m.SendUnreliable(s, d) })
}

// WillSend implements [wire.SendAhead]: it asks for the session's slot,
// in exclusive state: a send bumps its counters (and outside CountOnly
// mode locks it), and the last core to touch it, its client's drain or
// the relay unit that sent to it last tick, may be another.
func (m *Transport) WillSend(s wire.SessionID) {
	if !cacheline.Claiming {
		return
	}
	if slot := m.slotOf(s); slot != nil {
		cacheline.ClaimOne(slot)
	}
}

// deliverDatagrams counts datagrams (cut every size bytes) to the session
// of slot and, outside CountOnly mode, queues them under the slot's lock;
// to a session closed since the lookup they are counted as dropped
// instead.
func (m *Transport) deliverDatagrams(slot *memSlot, datagrams []byte, size int) {
	n := uint64((len(datagrams) + size - 1) / size)
	if !m.countOnly {
		slot.dmu.Lock()
		defer slot.dmu.Unlock()
		if slot.closed { // closed since the lookup
			m.droppedDatagrams.Add(n)
			return
		}
		for off := 0; off < len(datagrams); off += size {
			slot.queue.Push(datagrams[off:min(off+size, len(datagrams))])
		}
	}
	if m.digest {
		slot.add(&slot.datagramSum, datagrams)
	}
	slot.datagrams.Add(n)
	slot.datagramBytes.Add(uint64(len(datagrams)))
}

// SendReliable implements [wire.Transport]. A frame shorter than HeaderSize,
// longer than MaxFrame, or for an unknown or closed session is dropped and
// counted. See [Transport] for a send that overlaps the session's close.
func (m *Transport) SendReliable(s wire.SessionID, frame []byte) {
	slot, c := m.open(s)
	if c == nil || len(frame) < wire.HeaderSize || len(frame) > m.maxFrame {
		m.droppedReliable.Add(1)
		return
	}
	if m.digest {
		slot.add(&slot.frameSum, frame)
	}
	m.deliver(c, &slot.frames, &slot.frameBytes, &m.droppedReliable, len(frame), func() { c.reliable.Push(frame) })
}

// SendReliableBatch implements [wire.ReliableBatchSender]: each frame is
// kept, dropped and counted as SendReliable would, after one lookup of
// the session and, outside CountOnly mode, under one lock of the client's.
// A cut-short tail counts as one frame dropped. See [Transport] for a send
// that overlaps the session's close.
func (m *Transport) SendReliableBatch(s wire.SessionID, frames []byte) {
	slot, c := m.open(s)
	if c == nil {
		m.dropReliable(link.BatchLen(frames))
		return
	}
	if !m.countOnly {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed { // closed since the lookup
			m.dropReliable(link.BatchLen(frames))
			return
		}
	}
	var sent, bytes uint64
	dropped := 0
	if wire.EachStreamFrame(frames, func(frame []byte) {
		if len(frame) < wire.HeaderSize || len(frame) > m.maxFrame {
			dropped++
			return
		}
		if !m.countOnly {
			c.reliable.Push(frame)
		}
		if m.digest {
			slot.add(&slot.frameSum, frame)
		}
		sent++
		bytes += uint64(len(frame))
	}) > 0 {
		dropped++
	}
	if sent > 0 {
		slot.frames.Add(sent)
		slot.frameBytes.Add(bytes)
	}
	m.dropReliable(dropped)
}

// dropReliable counts n reliable frames dropped, touching the shared
// counter only when there are some.
func (m *Transport) dropReliable(n int) {
	if n > 0 {
		m.droppedReliable.Add(uint64(n))
	}
}

// deliver counts a server send of size bytes to open client c in count
// and bytes and, outside CountOnly mode, queues it with queue under the
// client's lock; a send to a client closed since the lookup is counted in
// dropped instead.
func (m *Transport) deliver(c *Client, count, bytes, dropped *atomic.Uint64, size int, queue func()) {
	if m.countOnly {
		count.Add(1)
		bytes.Add(uint64(size))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed { // closed since the lookup
		dropped.Add(1)
		return
	}
	count.Add(1)
	bytes.Add(uint64(size))
	queue()
}

// Disconnect implements [wire.Transport]. The client keeps every frame sent
// before it and reads reason from [Client.CloseReason].
func (m *Transport) Disconnect(s wire.SessionID, reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.clients[s]; c != nil {
		m.closeLocked(c, reason)
	}
}

// Stats implements [wire.Transport]. The outbound counts are summed over the
// slot of every session ever dialled, closed ones included, so Stats takes
// time in proportion to the sessions dialled (64 bytes each, read in
// order). Like [Client.Received], the sums are exact once the sends
// have returned.
func (m *Transport) Stats() wire.Stats {
	m.mu.Lock()
	st := m.stats
	m.mu.Unlock()
	for _, chunk := range *m.slots.Load() {
		for i := range chunk {
			addOut(&st, chunk[i].counts())
		}
	}
	st.DroppedDatagrams = m.droppedDatagrams.Load()
	st.DroppedReliable = m.droppedReliable.Load()
	return st
}

// addOut adds what one client was sent to the transport's counters.
func addOut(st *wire.Stats, c ClientStats) {
	st.DatagramsOut += c.Datagrams
	st.DatagramBytesOut += c.DatagramBytes
	st.ReliableOut += c.Frames
	st.ReliableBytesOut += c.FrameBytes
}

// Close implements [wire.Transport]: open sessions close in session order with
// ReasonTransportClosed. It always returns nil.
func (m *Transport) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	ids := make([]wire.SessionID, 0, len(m.clients))
	for id := range m.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m.closeLocked(m.clients[id], wire.ReasonTransportClosed)
	}
	return nil
}

// closeLocked closes c's session once; m.mu is held. Sends that look the
// session up from here on drop; its slot keeps the counts.
func (m *Transport) closeLocked(c *Client, reason string) {
	delete(m.clients, c.session)
	c.slot.client.Store(nil)
	c.slot.dmu.Lock()
	c.slot.closed = true
	c.slot.dmu.Unlock()
	c.mu.Lock()
	c.closed = true
	c.reason = reason
	c.mu.Unlock()
	m.inbox.Push(wire.SessionClosed, c.session, nil, reason)
	m.stats.Closed++
}

var (
	_ wire.Transport           = (*Transport)(nil)
	_ wire.BatchSender         = (*Transport)(nil)
	_ wire.ReliableBatchSender = (*Transport)(nil)
)
