package systems

import (
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// fanOut is the tick's visibility news on their way out of the join:
// deriveVisibility (and attach, for a resumed player's view) queues every
// Appear and Disappear with the session it goes to, and flush hands them
// to the transport, on the pool when there are many. A player who joins a crowd of 6,000 makes 12,000 frames (it
// is told of each, and each of it), every one for a different client but
// its own, and a send is a lock and cache lines the client's reader last
// held on another core: one after another on the tick goroutine, they
// were most of such a tick.
//
// Unit u of a flush sends the frames of the sessions of part u (partOf),
// in the order they were queued, a session's consecutive frames as one
// batch (sendFrames). A session's frames come from one unit in one order,
// so no client gets a different byte whatever the units; only sends to
// different clients, which no client can tell apart, change their order.
//
// The queue is flushed whenever it holds fanFlushBytes, so that ten
// thousand joining one square (10^8 frames in one tick) never hold more.
type fanOut struct {
	frames []byte   // the frames, back to back, each behind its stream length prefix
	to     []fanned // per frame, in the order queued: its session and where it ends
	parts  int      // the units of the running flush
	units  []scheduler.Unit
	bufs   []fanBuf // per unit: a session's frames gathered into one batch
	p      *Pipeline
	t      *scheduler.Tick // the join's, for flushes on the pool; nil: none
}

type fanned struct {
	session wire.SessionID
	end     int32
}

// fanBuf is one unit's batch buffer, off its neighbours' cache lines.
type fanBuf struct {
	out []byte
	_   [40]byte
}

// minFannedToOffload is the fewest queued frames whose flush runs on the
// pool: a send costs about a microsecond where the client's lines are on
// the other core, a pass of the pool tens.
const minFannedToOffload = 512

// maxFanParts bounds the units of a flush: each reads every queued entry
// to find its own.
const maxFanParts = 8

// fanKeySalt keeps the flush's units apart from the join's other keys in
// the pool's cost table.
const fanKeySalt = 0x2f9e1c54a7d3b86b

// fanFlushBytes is how many bytes of frames the queue holds at most.
const fanFlushBytes = 1 << 20

// begin readies the queue for the frames of p's join, whose tick is t.
func (o *fanOut) begin(p *Pipeline, t *scheduler.Tick) {
	o.p, o.t = p, t
}

// queue adds frame for session s (0: an actor without a client, nothing),
// flushing first when the queue is full.
func (o *fanOut) queue(s uint64, frame []byte) {
	if s == 0 {
		return
	}
	if len(o.frames)+wire.StreamPrefixSize+len(frame) > fanFlushBytes {
		o.flush()
	}
	o.frames = wire.AppendStreamFrame(o.frames, frame)
	o.to = append(o.to, fanned{session: wire.SessionID(s), end: int32(len(o.frames))})
}

// flush sends every queued frame and empties the queue: on the pool
// through the join's tick when there are at least p.minFanned and the
// tick is not inline, else on the calling goroutine.
func (o *fanOut) flush() {
	n := len(o.to)
	if n == 0 {
		return
	}
	p, t := o.p, o.t
	o.parts = 1
	if t != nil && !p.inline && n >= p.minFanned {
		o.parts = max(min(len(p.units), maxFanParts, n/max(p.minFanned/2, 1)), 1)
	}
	if len(o.bufs) < o.parts {
		o.bufs = append(o.bufs, make([]fanBuf, o.parts-len(o.bufs))...)
	}
	if o.parts == 1 {
		o.RunUnit(0)
	} else {
		o.units = o.units[:0]
		for u := range o.parts {
			o.units = append(o.units, scheduler.Unit{Key: fanKeySalt ^ uint64(u), Cost: float64(n / o.parts)})
		}
		t.Parallel(o, o.units)
	}
	o.frames, o.to = o.frames[:0], o.to[:0]
}

// partOf returns the part of the flush's units session s belongs to.
func (o *fanOut) partOf(s wire.SessionID) int {
	return int((uint64(s) * 0x9e3779b97f4a7c15 >> 32) % uint64(o.parts))
}

// RunUnit sends the queued frames of part u's sessions (every session
// when the flush has one part), a session's frames that follow one
// another among them gathered into the unit's buffer and sent as one
// batch.
func (o *fanOut) RunUnit(u int) {
	tr := o.p.transport
	buf := o.bufs[u].out[:0]
	var cur wire.SessionID
	begin := int32(0)
	for _, e := range o.to {
		frame := o.frames[begin:e.end]
		begin = e.end
		if o.parts > 1 && o.partOf(e.session) != u {
			continue
		}
		if e.session != cur && len(buf) > 0 {
			sendFrames(tr, cur, buf)
			buf = buf[:0]
		}
		cur = e.session
		buf = append(buf, frame...)
	}
	if len(buf) > 0 {
		sendFrames(tr, cur, buf)
	}
	o.bufs[u].out = buf[:0]
}
