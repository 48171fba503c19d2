package link

import (
	"maps"
	"slices"
	"sync/atomic"

	"github.com/throng-go/throng/net/wire"
)

// networkCounts are the counters the network transports share: those of
// [wire.Stats], and of sessions ended as slow, datagrams replaced in a
// mailbox and client frames dropped.
type Counts struct {
	Opened, Closed                 atomic.Uint64
	FramesIn, BytesIn              atomic.Uint64
	DatagramsOut, DatagramBytesOut atomic.Uint64
	ReliableOut, ReliableBytesOut  atomic.Uint64
	DroppedDatagrams, DroppedRel   atomic.Uint64
	Slow, Replaced, DroppedInbound atomic.Uint64
}

// endAll reports a SessionClosed with ReasonTransportClosed for every
// session of sessions, in session order, marking each gone, empties the
// map and returns the sessions in that order; the caller holds the
// transport's mutex.
func EndAll[C any](sessions map[wire.SessionID]C, inbox *Inbox, closed *atomic.Uint64, gone func(C)) []C {
	ids := slices.Sorted(maps.Keys(sessions))
	open := make([]C, 0, len(ids))
	for _, id := range ids {
		c := sessions[id]
		gone(c)
		inbox.Push(wire.SessionClosed, id, nil, wire.ReasonTransportClosed)
		closed.Add(1)
		open = append(open, c)
	}
	clear(sessions)
	return open
}

// stats returns the counters of [wire.Stats].
func (n *Counts) Stats() wire.Stats {
	return wire.Stats{
		Opened:           n.Opened.Load(),
		Closed:           n.Closed.Load(),
		FramesIn:         n.FramesIn.Load(),
		BytesIn:          n.BytesIn.Load(),
		DatagramsOut:     n.DatagramsOut.Load(),
		DatagramBytesOut: n.DatagramBytesOut.Load(),
		ReliableOut:      n.ReliableOut.Load(),
		ReliableBytesOut: n.ReliableBytesOut.Load(),
		DroppedDatagrams: n.DroppedDatagrams.Load(),
		DroppedReliable:  n.DroppedRel.Load(),
	}
}
