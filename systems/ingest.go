package systems

import (
	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
)

// sessionState is where a session is in its life.
type sessionState uint8

const (
	awaitingHello sessionState = iota // connected, no Hello yet
	joining                           // actor spawn queued, applied in the join
	playing                           // actor in the world
)

// session is the server's record of one client connection.
type session struct {
	state   sessionState
	actor   components.ActorID
	entity  ark.Entity // the actor's entity, once playing (stable for its life)
	correct bool       // send a correction in this tick's join
	kicked  bool       // disconnected by the server; its close is on the way
	slot    uint32     // index in Pipeline.slots, carried by the actor's Client
	limiter limiter
	backlog interest.Backlog // records owed under the per-connection budget
	spread  uint8            // period multiplier that keeps its due records near the budget
	calm    int              // ticks in a row its spread could have been lower
}

// Ingest drains the transport: opens and closes sessions, admits Hello
// frames (queuing the actor's spawn), and keeps each actor's newest
// MoveInput by sequence number. A session can only ever drive its own actor:
// Move frames carry no actor id, the session decides which actor they move.
// Malformed frames, frames out of turn and stale updates are dropped and
// counted; none of them stops the tick. Runs on the tick goroutine.
func (p *Pipeline) Ingest(tick uint64) {
	p.tick = tick
	p.inbox = p.transport.Receive(p.inbox[:0])
	for i := range p.inbox {
		in := &p.inbox[i]
		switch in.Kind {
		case net.SessionOpened:
			p.openSession(in.Session)
		case net.SessionClosed:
			p.closeSession(in.Session)
		case net.FrameReceived:
			p.frameFrom(in.Session, in.Frame)
		}
	}
	clear(p.inbox) // do not pin the transport's buffers
}

// openSession records a new connection in the session table and gives it a
// slot: the index the actor's Client component carries, so the tick finds
// the session without hashing.
func (p *Pipeline) openSession(id net.SessionID) {
	s := &session{}
	if n := len(p.freeSlots); n > 0 {
		s.slot = p.freeSlots[n-1]
		p.freeSlots = p.freeSlots[:n-1]
		p.slots[s.slot] = s
	} else {
		s.slot = uint32(len(p.slots))
		p.slots = append(p.slots, s)
	}
	p.sessions[id] = s
}

func (p *Pipeline) closeSession(id net.SessionID) {
	s, ok := p.sessions[id]
	if !ok {
		return
	}
	if s.state != awaitingHello {
		p.world.Despawn(s.actor)
	}
	delete(p.sessions, id)
	// The slot is reused only once the despawn is applied (the join frees
	// it), so a stale Client.Slot never reaches another player's session.
	p.closedSlots = append(p.closedSlots, s.slot)
}

func (p *Pipeline) frameFrom(id net.SessionID, frame []byte) {
	s, ok := p.sessions[id]
	if !ok {
		p.stats.DroppedInputs++
		return
	}
	typ, err := net.PeekType(frame)
	if err != nil {
		p.stats.Malformed++
		return
	}
	switch typ {
	case net.TypeHello:
		p.hello(id, s, frame)
	case net.TypeMove:
		p.moveFrame(id, s, frame)
	default:
		p.stats.Malformed++ // a server-to-client frame type from a client
	}
}

func (p *Pipeline) hello(id net.SessionID, s *session, frame []byte) {
	h, err := net.DecodeHello(frame)
	if err != nil {
		p.stats.Malformed++
		return
	}
	if s.state != awaitingHello {
		p.stats.DroppedInputs++ // a second Hello changes nothing
		return
	}
	if p.busy {
		p.stats.BusyRejections++
		p.refuse(id, net.RefuseBusy, BusyReason)
		return
	}
	if h.Protocol != p.cfg.Protocol {
		p.refuse(id, net.RefuseProtocol, "protocol mismatch: this server speaks a different game protocol version")
		return
	}
	spawn, err := p.cfg.Admit(h)
	if err != nil {
		p.refuse(id, net.RefuseToken, err.Error())
		return
	}
	s.actor = p.world.Spawn(ecs.ActorSpec{Transform: spawn, Client: components.Client{Session: uint64(id), Slot: s.slot}})
	s.state = joining
}

// BusyReason is what a client turned away by admission control reads.
const BusyReason = "server busy, try again shortly"

func (p *Pipeline) refuse(id net.SessionID, code net.RefuseCode, reason string) {
	p.stats.Refused++
	if s := p.sessions[id]; s != nil {
		s.kicked = true
	}
	p.out = net.AppendRefuse(p.out[:0], net.Refuse{Code: code, Reason: []byte(reason)})
	p.transport.SendReliable(id, p.out)
	p.transport.Disconnect(id, reason)
}

// moveFrame keeps the update if it is the newest the actor has seen. An update
// older than one already applied is a client going backwards: it is
// rejected with a correction. One older than an update still pending this
// tick was merely overtaken and is dropped quietly. Both are counted. Over
// the client's rate limit an update is dropped and counted, but when one of
// this tick is already kept, the dropped one is the older of the two.
func (p *Pipeline) moveFrame(id net.SessionID, s *session, frame []byte) {
	m, err := net.DecodeMove(frame)
	if err != nil {
		p.stats.Malformed++
		return
	}
	if s.state != playing || s.kicked {
		p.stats.DroppedInputs++
		return
	}
	in := p.inputs.Get(s.entity)
	standing := m.X == in.X && m.Y == in.Y && m.Z == in.Z
	keep, flood := s.limiter.admit(&p.cfg.Limits, p.cfg.TickRate, p.tick, standing)
	if flood != "" {
		p.stats.Kicked++
		s.kicked = true
		p.transport.Disconnect(id, flood)
		return
	}
	if !keep {
		p.stats.RateLimited++
		if in.Pending && m.Seq > in.Seq {
			// Over the limit, but an update of this tick is already kept
			// (Move clears Pending every tick): one of the two is the
			// excess, and it is the older one. Keep the newer in its place,
			// so a client over its limit (or a server running behind its
			// tick rate) moves to the latest position sent, not the first.
			keepInput(in, m)
		}
		return
	}
	if m.Seq <= in.Seq {
		p.stats.StaleInputs++
		if !in.Pending && !s.correct {
			p.stats.Rejected++
			s.correct = true
			p.corrections = append(p.corrections, s)
		}
		return
	}
	keepInput(in, m)
}

// keepInput makes m the actor's pending update.
func keepInput(in *components.MoveInput, m net.Move) {
	*in = components.MoveInput{
		Seq: m.Seq, X: m.X, Y: m.Y, Z: m.Z, Yaw: m.Yaw,
		WorldOrCell: m.WorldOrCell, Flags: m.Flags, Pending: true,
		ChangedTick: in.ChangedTick,
	}
}
