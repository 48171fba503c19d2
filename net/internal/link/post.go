package link

import (
	"sync"

	"github.com/throng-go/throng/net/wire"
)

// PostBatch puts a session's datagrams of one tick, laid out as
// [wire.BatchSender.SendUnreliableBatch] describes, into its mailbox m
// under the session's lock mu, and wakes its writer once if it kept any.
// A datagram is dropped when the session is closing (*closing, read under
// mu), when it is shorter than a batch header or longer than maxDatagram,
// or when it is older than the mailbox's tick (see [Mailbox.Put]); the
// datagrams a newer tick replaced are dropped too. Drops and replacements
// are counted into n after the lock is released, and only when there are
// some, so the relay's sends touch no shared counter. It returns how many
// datagrams it kept.
func (m *Mailbox) PostBatch(mu *sync.Mutex, closing *bool, wake chan struct{}, datagrams []byte, size, maxDatagram int, n *Counts) int {
	if size < 1 {
		size = len(datagrams)
	}
	kept, dropped, replaced := 0, 0, 0
	mu.Lock()
	for off := 0; off < len(datagrams); off += size {
		d := datagrams[off:min(off+size, len(datagrams))]
		if *closing || len(d) < wire.BatchHeaderSize || len(d) > maxDatagram {
			dropped++
			continue
		}
		ok, r := m.Put(d)
		replaced += r
		if ok {
			kept++
		} else {
			dropped++
		}
	}
	mu.Unlock()
	if kept > 0 {
		Wake(wake)
	}
	if replaced > 0 {
		n.Replaced.Add(uint64(replaced))
	}
	if dropped+replaced > 0 {
		n.DroppedDatagrams.Add(uint64(dropped + replaced))
	}
	return kept
}

// DropBatch counts the datagrams of a batch (see PostBatch) as dropped:
// their session is unknown or gone.
func DropBatch(datagrams []byte, size int, n *Counts) {
	count := 0
	EachDatagram(datagrams, size, func([]byte) { count++ })
	n.DroppedDatagrams.Add(uint64(count))
}

// EachDatagram calls send with each datagram of a batch laid out as
// [wire.BatchSender.SendUnreliableBatch] describes.
func EachDatagram(datagrams []byte, size int, send func([]byte)) {
	if size < 1 {
		size = len(datagrams)
	}
	for off := 0; off < len(datagrams); off += size {
		send(datagrams[off:min(off+size, len(datagrams))])
	}
}
