package link

import (
	"sync/atomic"

	"github.com/throng-go/throng/net/wire"
)

// Counts are the counters the network transports share: those of
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

// Stats returns the counters of [wire.Stats].
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
