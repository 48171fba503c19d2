package link

import (
	"maps"
	"slices"
	"sync"

	"github.com/throng-go/throng/net/wire"
)

// Member is what a [Table] keeps in each session it holds, guarded by the
// table's lock.
type Member struct {
	ID      wire.SessionID
	gone    bool // SessionClosed reported; nothing more is delivered
	inEpoch uint64
	inCount int
}

// Session is a session a [Table] holds: a pointer to a transport's
// per-connection state, with its Member.
type Session interface {
	comparable
	Membership() *Member
}

// Table is a network transport's open sessions and what happened to them
// since the tick last asked: sessions opened, frames received, sessions
// closed, in order, behind one lock that the tick's Receive takes only to
// swap the inbox for the one it handed out last time. Every session opened
// is closed exactly once (End or Close), and nothing is delivered for it
// after.
type Table[C Session] struct {
	mu     sync.Mutex
	closed bool
	last   wire.SessionID
	open   map[wire.SessionID]C
	inbox  Inbox
	given  Inbox  // what the last Receive handed out; owned by its caller
	epoch  uint64 // Receive calls, for the inbound limit
	limit  int
	n      *Counts
}

// Init readies t for sessions that may each deliver limit frames between
// two Receives, counting into n.
func (t *Table[C]) Init(limit int, n *Counts) {
	t.open = make(map[wire.SessionID]C)
	t.limit, t.n = limit, n
}

// Get returns session s, if it is open.
func (t *Table[C]) Get(s wire.SessionID) (C, bool) {
	t.mu.Lock()
	c, ok := t.open[s]
	t.mu.Unlock()
	return c, ok
}

// Open numbers c, reports it opened and runs start under the table's lock
// (so that a Close cannot slip between them), unless the transport has
// closed: then it returns false and c is not a session.
func (t *Table[C]) Open(c C, start func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.last++
	m := c.Membership()
	m.ID = t.last
	t.open[m.ID] = c
	t.inbox.Push(wire.SessionOpened, m.ID, nil, "")
	t.n.Opened.Add(1)
	start()
	return true
}

// End reports c's SessionClosed with reason and forgets c; it returns
// false when c had already ended, so that only the first ending closes the
// connection. An ending for wire.ReasonSlowClient is counted (Counts.Slow)
// before the SessionClosed can be received, so that whoever sees the
// close sees the count.
func (t *Table[C]) End(c C, reason string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := c.Membership()
	if m.gone {
		return false
	}
	m.gone = true
	delete(t.open, m.ID)
	if reason == wire.ReasonSlowClient {
		t.n.Slow.Add(1)
	}
	t.inbox.Push(wire.SessionClosed, m.ID, nil, reason)
	t.n.Closed.Add(1)
	return true
}

// Deliver hands the tick a frame c received (see DeliverLocked).
func (t *Table[C]) Deliver(c C, frame []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.DeliverLocked(c, frame)
}

// Lock and Unlock hold the table for a run of DeliverLocked.
func (t *Table[C]) Lock()   { t.mu.Lock() }
func (t *Table[C]) Unlock() { t.mu.Unlock() }

// DeliverLocked hands the tick a frame c received, the table locked. It
// returns false, delivering nothing, when c already delivered the inbound
// limit since the last Receive; a frame of a session that has ended is
// ignored.
func (t *Table[C]) DeliverLocked(c C, frame []byte) bool {
	m := c.Membership()
	if m.gone {
		return true
	}
	if m.inEpoch != t.epoch {
		m.inEpoch, m.inCount = t.epoch, 0
	}
	if m.inCount >= t.limit {
		return false
	}
	m.inCount++
	t.inbox.Push(wire.FrameReceived, m.ID, frame, "")
	t.n.FramesIn.Add(1)
	t.n.BytesIn.Add(uint64(len(frame)))
	return true
}

// Receive appends what happened since the last call to dst (see
// wire.Transport.Receive). Frames alias the table's memory until the
// next Receive.
func (t *Table[C]) Receive(dst []wire.Inbound) []wire.Inbound {
	t.mu.Lock()
	t.inbox, t.given = t.given, t.inbox
	t.inbox.Reset()
	t.epoch++
	t.mu.Unlock()
	return t.given.AppendTo(dst)
}

// AppendOpen appends the open sessions to dst, in no order.
func (t *Table[C]) AppendOpen(dst []C) []C {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.open {
		dst = append(dst, c)
	}
	return dst
}

// Close ends every open session with wire.ReasonTransportClosed, in
// session order, and returns them in that order, for the transport to
// close their connections; no session opens after it. It returns false
// when the table was closed already.
func (t *Table[C]) Close() ([]C, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, false
	}
	t.closed = true
	ids := slices.Sorted(maps.Keys(t.open))
	open := make([]C, 0, len(ids))
	for _, id := range ids {
		c := t.open[id]
		c.Membership().gone = true
		t.inbox.Push(wire.SessionClosed, id, nil, wire.ReasonTransportClosed)
		t.n.Closed.Add(1)
		open = append(open, c)
	}
	clear(t.open)
	return open, true
}
