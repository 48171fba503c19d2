package net

import (
	"maps"
	"slices"
	"sync/atomic"
)

// networkCounts are the counters the network transports share: those of
// [Stats], and of sessions ended as slow, datagrams replaced in a
// mailbox and client frames dropped.
type networkCounts struct {
	opened, closed                 atomic.Uint64
	framesIn, bytesIn              atomic.Uint64
	datagramsOut, datagramBytesOut atomic.Uint64
	reliableOut, reliableBytesOut  atomic.Uint64
	droppedDatagrams, droppedRel   atomic.Uint64
	slow, replaced, droppedInbound atomic.Uint64
}

// endAll reports a SessionClosed with ReasonTransportClosed for every
// session of sessions, in session order, marking each gone, empties the
// map and returns the sessions in that order; the caller holds the
// transport's mutex.
func endAll[C any](sessions map[SessionID]C, inbox *memInbox, closed *atomic.Uint64, gone func(C)) []C {
	ids := slices.Sorted(maps.Keys(sessions))
	open := make([]C, 0, len(ids))
	for _, id := range ids {
		c := sessions[id]
		gone(c)
		inbox.push(SessionClosed, id, nil, ReasonTransportClosed)
		closed.Add(1)
		open = append(open, c)
	}
	clear(sessions)
	return open
}

// stats returns the counters of [Stats].
func (n *networkCounts) stats() Stats {
	return Stats{
		Opened:           n.opened.Load(),
		Closed:           n.closed.Load(),
		FramesIn:         n.framesIn.Load(),
		BytesIn:          n.bytesIn.Load(),
		DatagramsOut:     n.datagramsOut.Load(),
		DatagramBytesOut: n.datagramBytesOut.Load(),
		ReliableOut:      n.reliableOut.Load(),
		ReliableBytesOut: n.reliableBytesOut.Load(),
		DroppedDatagrams: n.droppedDatagrams.Load(),
		DroppedReliable:  n.droppedRel.Load(),
	}
}
