package gateway

import (
	"slices"
	"sync"

	"github.com/throng-go/throng/net/wire"
)

// The relay's lanes: units of the relay running at once on several cores
// each send through a lane of their own (wire.LaneSender), a message per
// gateway under the lane's lock, published at the tick's Flush (or before
// a Move) after what the tick sent each gateway before the relay and
// ahead of what it sent after.

// lane is one lane of the relay's sending (Transport.lanes).
type lane struct {
	mu sync.Mutex
	ms []*message // per outbox (by idx): this tick's datagrams to that gateway
	// datagrams, bytes and dropped are counted here, not in the shared
	// counters, and summed by Stats.
	datagrams, bytes, dropped uint64
	_                         [64]byte // locked from other cores than its neighbours
}

// lockLanes locks every lane, so that the send table may change; t.mu is
// held.
func (t *Transport) lockLanes() {
	if ls := t.lanes.Load(); ls != nil {
		for _, l := range *ls {
			l.mu.Lock()
		}
	}
}

// unlockLanes undoes lockLanes.
func (t *Transport) unlockLanes() {
	if ls := t.lanes.Load(); ls != nil {
		for _, l := range *ls {
			l.mu.Unlock()
		}
	}
}

// lane returns lane i, made (with those before it) on first use.
func (t *Transport) lane(i int) *lane {
	if ls := t.lanes.Load(); ls != nil && i < len(*ls) {
		return (*ls)[i]
	}
	t.mu.Lock() // no send table change meanwhile: see lockLanes
	defer t.mu.Unlock()
	var ls []*lane
	if old := t.lanes.Load(); old != nil {
		ls = *old
	}
	if i < len(ls) {
		return ls[i]
	}
	grown := slices.Clone(ls)
	for len(grown) <= i {
		grown = append(grown, new(lane))
	}
	t.lanes.Store(&grown)
	return grown[i]
}

// SendUnreliableBatchLane implements [wire.LaneSender]: the datagrams go
// into lane's message to the session's gateway, under that lane's lock
// alone, and reach the gateway at the tick's Flush, after what was sent it
// before the first lane's datagrams of the tick (beginLanes).
func (t *Transport) SendUnreliableBatchLane(lane int, s wire.SessionID, datagrams []byte, size int) {
	if size < 1 || size > len(datagrams) {
		size = len(datagrams)
	}
	l := t.lane(lane)
	l.mu.Lock()
	defer l.mu.Unlock()
	r := t.open.Get(s) // the send table does not change while a lane is locked
	var m *message
	if r.out != nil {
		m = t.laneMessage(l, r.out)
	}
	for off := 0; off < len(datagrams); off += size {
		d := datagrams[off:min(off+size, len(datagrams))]
		if m == nil || len(d) < wire.BatchHeaderSize {
			l.dropped++
			continue
		}
		m.addDatagram(r.id, d)
		l.datagrams++
		l.bytes += uint64(len(d))
	}
}

// laneMessage returns lane l's message to out's gateway, after seeing
// that out's traffic before the lanes went (beginLanes); l.mu is held.
func (t *Transport) laneMessage(l *lane, out *outbox) *message {
	if !out.laned.Load() {
		t.beginLanes(out)
	}
	for len(l.ms) <= out.idx {
		l.ms = append(l.ms, nil)
	}
	m := l.ms[out.idx]
	if m == nil {
		m = new(message)
		m.reset(out.name)
		l.ms[out.idx] = m
	}
	m.limit = int(t.limit.Load()) // NATS' may change with the server it reconnects to
	return m
}

// beginLanes sets aside what out holds, sent before the tick's first
// datagrams in a lane, so that it reaches the gateway ahead of them
// (publishLanes): it goes with them, not as a publish of its own in the
// middle of the relay.
func (t *Transport) beginLanes(out *outbox) {
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.laned.Load() {
		return
	}
	if !out.m.empty() || len(out.m.sealed) > 0 {
		out.m, out.early = out.early, out.m // early was published and cleared: m starts empty
	}
	out.laned.Store(true)
}

// publishLanes publishes what out held before the lanes (early), then
// the lanes' messages to out's gateway, lane by lane, ahead of what out
// holds; t.mu is held and out.mu is not.
func (t *Transport) publishLanes(out *outbox) {
	if !out.laned.Load() {
		return
	}
	limit := int(t.limit.Load())
	out.mu.Lock()
	if !out.early.empty() || len(out.early.sealed) > 0 {
		out.scratch = t.sendMessage(&out.early, out.subject, limit, out.scratch)
	}
	out.mu.Unlock()
	if ls := t.lanes.Load(); ls != nil {
		for _, l := range *ls {
			l.mu.Lock()
			if out.idx < len(l.ms) {
				if m := l.ms[out.idx]; m != nil && (!m.empty() || len(m.sealed) > 0) {
					t.scratch = t.sendMessage(m, out.subject, limit, t.scratch)
				}
			}
			l.mu.Unlock()
		}
	}
	out.laned.Store(false)
}
