package link

import (
	"sync"

	"github.com/throng-go/throng/net/wire"
)

// Reliable is a session's reliable frames waiting for its writer, laid
// back to back behind their length prefixes as [wire.AppendStreamFrame]
// writes them: the layout a QUIC stream carries, and the one a
// [wire.ReliableBatchSender] batch arrives in. It also follows the frames
// for the session's [Refusal]. The session's lock guards it; the zero
// value is an empty queue.
type Reliable struct {
	frames  []byte
	n       int // frames queued
	Refusal Refusal
}

// Post queues one frame, as [wire.Transport.SendReliable] describes, under
// the session's lock mu, and wakes the writer if it queued it. The frame
// is dropped when it is outside [wire.HeaderSize, maxFrame], when the
// session is closing (*closing, read under mu), or when limit frames are
// already queued: then Post returns true, and the transport must end the
// session as too slow. Counts go into n after the lock is released.
func (r *Reliable) Post(mu *sync.Mutex, closing *bool, wake chan struct{}, frame []byte, maxFrame, limit int, n *Counts) (overflow bool) {
	var t tally
	mu.Lock()
	r.add(&t, *closing, frame, maxFrame, limit)
	mu.Unlock()
	return t.settle(wake, n)
}

// PostBatch queues the frames of a batch laid out as
// [wire.ReliableBatchSender.SendReliableBatch] describes: each is kept or
// dropped as Post would, in order, under one lock, with one wake and one
// add to each counter it changes. A cut-short tail counts as one frame
// dropped. It returns true when the queue overflowed; the frames after
// the first that did not fit are dropped too, as they would be once the
// transport has ended the session.
func (r *Reliable) PostBatch(mu *sync.Mutex, closing *bool, wake chan struct{}, frames []byte, maxFrame, limit int, n *Counts) (overflow bool) {
	var t tally
	mu.Lock()
	rest := wire.EachStreamFrame(frames, func(frame []byte) { r.add(&t, *closing, frame, maxFrame, limit) })
	mu.Unlock()
	if rest > 0 {
		t.dropped++
	}
	return t.settle(wake, n)
}

// tally is what one post did, counted once the lock is released.
type tally struct {
	kept, bytes, dropped int
	overflow             bool
}

// add queues frame unless it is out of size, the session is closing or
// the queue is full; the session's lock is held.
func (r *Reliable) add(t *tally, closing bool, frame []byte, maxFrame, limit int) {
	switch {
	case closing || len(frame) < wire.HeaderSize || len(frame) > maxFrame:
		t.dropped++
	case r.n >= limit:
		t.dropped++
		t.overflow = true
	default:
		r.frames = wire.AppendStreamFrame(r.frames, frame)
		r.n++
		r.Refusal.Note(frame)
		t.kept++
		t.bytes += len(frame)
	}
}

// settle wakes the writer if frames were queued and counts the post into
// n, touching only the counters it changes; it returns whether the queue
// overflowed.
func (t *tally) settle(wake chan struct{}, n *Counts) bool {
	if t.kept > 0 {
		Wake(wake)
		n.ReliableOut.Add(uint64(t.kept))
		n.ReliableBytesOut.Add(uint64(t.bytes))
	}
	if t.dropped > 0 {
		n.DroppedRel.Add(uint64(t.dropped))
	}
	return t.overflow
}

// Take hands the writer the frames queued, back to back behind their
// prefixes, and leaves the queue empty on spare's memory: the writer and
// the senders trade two buffers, so a steady stream allocates nothing.
// The refusal stays. The session's lock is held.
func (r *Reliable) Take(spare []byte) []byte {
	out := r.frames
	r.frames, r.n = spare[:0], 0
	return out
}

// BatchLen returns how many frames a batch laid out as
// [wire.ReliableBatchSender.SendReliableBatch] describes counts as: its
// whole frames, and one more for a cut-short tail.
func BatchLen(frames []byte) int {
	count := 0
	if wire.EachStreamFrame(frames, func([]byte) { count++ }) > 0 {
		count++
	}
	return count
}

// DropReliable counts the frames of a batch (see BatchLen) as dropped:
// their session is unknown or gone.
func DropReliable(frames []byte, n *Counts) {
	if count := BatchLen(frames); count > 0 {
		n.DroppedRel.Add(uint64(count))
	}
}
