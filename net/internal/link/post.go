package link

import "github.com/throng-go/throng/net/wire"

// PostAll offers each datagram of a batch, laid out as
// [wire.BatchSender.SendUnreliableBatch] describes, to post (a session's
// mailbox, under its lock), and returns how many it kept and how many were
// dropped: refused by post, shorter than a batch header, longer than
// maxDatagram, or all of them when post is nil (no such session).
func PostAll(datagrams []byte, size, maxDatagram int, post func([]byte) bool) (kept, dropped uint64) {
	EachDatagram(datagrams, size, func(d []byte) {
		if post != nil && len(d) >= wire.BatchHeaderSize && len(d) <= maxDatagram && post(d) {
			kept++
		} else {
			dropped++
		}
	})
	return kept, dropped
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
