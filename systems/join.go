package systems

import (
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net"
)

// Join is the serial end of the tick: it sends corrections, hands every
// recipient's datagrams to the transport in canonical recipient order,
// queues the chunk moves Move found and applies every queued structural
// change (ecs.World.Apply), then tells clients who appeared and disappeared
// from their view. Runs on the tick goroutine, after the world's guard is
// released.
func (p *Pipeline) Join() {
	start := time.Now()
	f := &p.frame
	st := &p.stats
	st.Parallel = start.Sub(p.parallelAt)
	st.Corrections, st.DatagramsOut, st.BytesOut, st.Owed = 0, 0, 0, 0
	st.Relays, st.Throttled, st.Busy = 0, 0, 0
	for i := range p.shardRelays {
		st.Relays += p.shardRelays[i]
		st.Throttled += p.shardThrottled[i]
		st.Busy += p.shardMoveTime[i] + p.shardRelayTime[i]
	}
	st.Pressure = p.observeLoads(st.Parallel, st.Busy)
	defer func() { st.JoinTime = time.Since(start) }()
	p.sendCorrections()
	for a := range f.batches {
		if sess := f.sess[a]; sess != nil {
			st.Owed += sess.backlog.Owed()
		}
		if f.session[a] == 0 || f.relays[a] == 0 {
			continue
		}
		s := net.SessionID(f.session[a])
		buf := f.batches[a]
		for off := 0; off < len(buf); off += datagramSize {
			end := min(off+datagramSize, len(buf))
			p.transport.SendUnreliable(s, buf[off:end])
			p.stats.DatagramsOut++
			p.stats.BytesOut += int64(end - off)
		}
	}
	for a := range f.crossed {
		if f.crossed[a] {
			p.world.Relocate(components.ActorID{ID: f.id[a]})
		}
	}
	p.world.Apply(&p.report)
	p.deriveVisibility()
}

// sendCorrections tells every client whose update was rejected this tick
// (by Ingest, then by Move in canonical order) where the server has its
// actor. Each session gets at most one correction per tick.
func (p *Pipeline) sendCorrections() {
	f := &p.frame
	for a, v := range f.verdict {
		if v < RejectNotFinite || f.session[a] == 0 {
			continue
		}
		p.stats.Rejected++
		if s := p.sessions[net.SessionID(f.session[a])]; s != nil && !s.correct {
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
	p.out = net.AppendCorrection(p.out[:0], net.Correction{
		Seq: p.inputs.Get(e).Seq, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell,
	})
	p.transport.SendReliable(net.SessionID(session), p.out)
	p.stats.Corrections++
	p.stats.CorrectionsSent++
}
