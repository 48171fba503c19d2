package link

import (
	"encoding/binary"
	"iter"

	"github.com/throng-go/throng/net/wire"
)

// Inbox is a run of events whose frames are packed into one byte slice,
// so that steady-state traffic reuses the same two arrays.
type Inbox struct {
	events []event
	data   []byte
}

type event struct {
	kind       wire.InboundKind
	session    wire.SessionID
	start, end int // the frame is data[start:end]
	reason     string
}

// Push adds one event, copying its frame.
func (q *Inbox) Push(kind wire.InboundKind, s wire.SessionID, frame []byte, reason string) {
	start := len(q.data)
	q.data = append(q.data, frame...)
	q.events = append(q.events, event{kind: kind, session: s, start: start, end: len(q.data), reason: reason})
}

// Reset empties the inbox, keeping its memory.
func (q *Inbox) Reset() {
	q.events = q.events[:0]
	q.data = q.data[:0]
}

// AppendTo appends the inbox's events to dst as Inbounds whose frames
// alias the inbox, and returns the extended slice.
func (q *Inbox) AppendTo(dst []wire.Inbound) []wire.Inbound {
	for _, e := range q.events {
		in := wire.Inbound{Kind: e.kind, Session: e.session, Reason: e.reason}
		if e.kind == wire.FrameReceived {
			in.Frame = q.data[e.start:e.end:e.end]
		}
		dst = append(dst, in)
	}
	return dst
}

// Queue is a run of byte strings packed into one slice.
type Queue struct {
	data []byte
	ends []int
}

// Push adds a copy of p.
func (q *Queue) Push(p []byte) {
	q.data = append(q.data, p...)
	q.ends = append(q.ends, len(q.data))
}

// Reset empties the queue, keeping its memory.
func (q *Queue) Reset() {
	q.data = q.data[:0]
	q.ends = q.ends[:0]
}

// Latest returns the last string pushed, if any.
func (q *Queue) Latest() ([]byte, bool) {
	n := len(q.ends)
	if n == 0 {
		return nil, false
	}
	start := 0
	if n > 1 {
		start = q.ends[n-2]
	}
	return q.data[start:q.ends[n-1]], true
}

// Each calls fn with each string in order and returns how many there were.
func (q *Queue) Each(fn func([]byte)) int {
	start := 0
	for _, end := range q.ends {
		fn(q.data[start:end:end])
		start = end
	}
	return len(q.ends)
}

// Mailbox holds the datagrams of one tick, packed into one slice.
type Mailbox struct {
	tick uint32
	Queue
}

// Put adds d (a movement batch: its tick is bytes 2..5) to the mailbox: a
// newer tick's replaces what the mailbox holds, the same tick's joins it,
// an older one is refused. It reports whether d was kept and how many
// datagrams it replaced.
func (m *Mailbox) Put(d []byte) (kept bool, replaced int) {
	tick := BatchTick(d)
	if n := len(m.Queue.ends); n > 0 && tick != m.tick {
		if int32(tick-m.tick) < 0 { // wrap-safe "older"
			return false, 0
		}
		replaced = n
		m.Queue.Reset()
	}
	m.tick = tick
	m.Queue.Push(d)
	return true, replaced
}

// Wake signals a writer without blocking; one pending signal is enough.
func Wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// BatchTick reads the tick of a movement batch (bytes 2..5); the caller
// checked that d is at least BatchHeaderSize long.
func BatchTick(d []byte) uint32 { return binary.LittleEndian.Uint32(d[wire.HeaderSize:]) }

// Len returns how many strings the queue holds.
func (q *Queue) Len() int { return len(q.ends) }

// All yields the strings in the order they were pushed; each aliases the
// queue until its next Reset.
func (q *Queue) All() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		start := 0
		for _, end := range q.ends {
			if !yield(q.data[start:end:end]) {
				return
			}
			start = end
		}
	}
}
