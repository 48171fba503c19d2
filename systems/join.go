package systems

import (
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// join is the serial end of the tick: it queues the chunk moves Move found,
// applies every queued structural change (ecs.World.Apply), then tells
// clients who appeared and disappeared from their view and the props in
// their sight (on the pool through t, when there are many to look at; t
// may be nil), and sums up the tick. Runs on the tick goroutine, after
// the world's guard is released.
//
// Movement datagrams are not handed over here: each Relay unit hands its
// own recipients' datagrams to the transport as soon as they are built
// (transports are safe for concurrent use). A recipient's datagrams come
// from one unit, in order, so every client's stream is the same on any
// worker count, and the serial join never carries the N^2 volume, which
// would make it the tick's ceiling however many cores relay.
func (p *Pipeline) join(t *scheduler.Tick) {
	start := time.Now()
	f := &p.frame
	st := &p.stats
	st.Parallel = start.Sub(p.parallelAt)
	st.DatagramsOut, st.BytesOut, st.Owed = 0, 0, 0
	st.Relays, st.Throttled, st.Busy = 0, 0, 0
	for i := range p.shardRelays {
		st.Relays += p.shardRelays[i]
		st.Throttled += p.shardThrottled[i]
		st.Busy += p.shardMoveTime[i] + p.shardRelayTime[i]
		st.DatagramsOut += int(p.shardDatagrams[i])
		st.BytesOut += p.shardBytes[i]
		st.Owed += int(p.shardOwed[i])
	}
	st.Pressure = p.observeLoads(st.Parallel, st.Busy)
	st.Waiting = p.Waiting()
	defer func() { st.JoinTime = time.Since(start) }()
	for i := range p.units {
		p.owedRoom = max(p.owedRoom, p.scratch[i].owedRoom)
	}
	for a := range f.crossed {
		if f.crossed[a] {
			p.world.Relocate(components.ActorID{ID: f.id[a]})
		}
	}
	p.world.Apply(&p.report)
	st.NonFinite += uint64(p.report.NonFinite)
	for _, slot := range p.closedSlots { // their actors are gone now
		p.slots[slot] = nil
		p.freeSlots = append(p.freeSlots, slot)
	}
	p.closedSlots = p.closedSlots[:0]
	p.fan.begin(p, t)
	p.deriveVisibility()
	p.attach()
	p.tellProps(t)
}

// sendCorrections tells every client whose update was rejected this tick
// (by Ingest, then by Move in canonical order) where the server has its
// actor. Each session gets at most one correction per tick. It counts the
// client-less actors Move put back from a Transform that was not finite.
func (p *Pipeline) sendCorrections() {
	f := &p.frame
	for a, v := range f.verdict {
		if v < RejectNotFinite {
			continue
		}
		if f.session[a] == 0 {
			p.stats.NonFinite++ // RejectNotFinite is the only verdict Move gives them
			continue
		}
		p.stats.Rejected++
		if s := p.sessions.Get(wire.SessionID(f.session[a])); s != nil && !s.correct {
			s.correct = true
			p.corrections = append(p.corrections, s)
		}
	}
	for i, s := range p.corrections {
		s.correct = false
		p.corrections[i] = nil
		p.sendCorrection(s.actor)
	}
	p.corrections = p.corrections[:0]
}

// sendCorrection sends the client driving actor its authoritative state.
func (p *Pipeline) sendCorrection(actor components.ActorID) {
	e, ok := p.world.Entity(actor)
	if !ok {
		return
	}
	session := p.clients.Get(e).Session
	if session == 0 {
		return
	}
	t := p.transforms.Get(e)
	p.out = wire.AppendCorrection(p.out[:0], wire.Correction{
		Seq: p.inputs.Get(e).Seq, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell,
	})
	p.transport.SendReliable(wire.SessionID(session), p.out)
	p.stats.Corrections++
	p.stats.CorrectionsSent++
}
