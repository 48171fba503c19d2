package gateway

import "github.com/throng-go/throng/net/wire"

// This file moves a session from one zone server to another
// (Transport.Move): the client's latest moves, kept to be sent again, and
// the session's opening at its new server.

// keptMoves is how many of a session's latest Move frames the gateway
// keeps, to send them again to the server a session moves to: a second of
// moves at 30 a second, for a switch that a busy server or gateway makes
// slow.
const keptMoves = 32

// moves is a ring of a session's latest Move frames: n kept, the next
// written at next (over the oldest once it is full). A Move frame has
// one size (wire.MoveSize), so the ring is one array: keeping a move
// writes one slot, not a slice header and the bytes it points to.
type moves struct {
	frames  [keptMoves][wire.MoveSize]byte
	n, next int
}

// add keeps Move frame f; a frame of another size, which no server
// takes, is not kept.
func (m *moves) add(f []byte) {
	if len(f) != wire.MoveSize {
		return
	}
	m.frames[m.next] = [wire.MoveSize]byte(f)
	m.next = (m.next + 1) % keptMoves
	m.n = min(m.n+1, keptMoves)
}

// each calls fn with the kept frames, oldest first.
func (m *moves) each(fn func(f []byte)) {
	first := (m.next - m.n + keptMoves) % keptMoves
	for i := range m.n {
		fn(m.frames[(first+i)%keptMoves][:])
	}
}

// move sends session s, which a zone server let go, to zone to's server
// at once: an opened entry with what the old server says of it (payload),
// then its kept Move frames. The clients' later frames go there too, from
// the next step on: the message is published before the route changes
// for the step (under routeMu), so that the new server hears of the
// session before any of them. A switch is timed from the old server
// letting the session go to the new one taking it, so it waits for no
// step. g.mu is held.
//
// A session opened at zone to already (a shadow) is not sent again: that
// server has had its frames since. Its route changes, and what that
// server sent the session meanwhile, held, goes to the client now, after
// everything of the old server's.
func (g *Gateway) move(s wire.SessionID, to uint32, payload []byte) {
	g.routeMu.Lock()
	defer g.routeMu.Unlock()
	r := g.routes.Get(s)
	if r.zone == 0 {
		return // the client left meanwhile
	}
	if sh := g.shadows.Get(s); sh != nil {
		if sh.zone == to {
			g.forgetShadow(s, &r)
			g.shadowMoves.Add(1)
			r.zone = to
			g.routes.Put(s, r)
			g.routedLocked(to)
			for _, e := range sh.held {
				g.toClient(s, e.k, e.payload)
			}
			return
		}
		g.closeShadow(s, &r, sh, ReasonWithdrawn)
	}
	g.openAt(s, r, to, payload)
	r.zone = to
	g.routes.Put(s, r)
	g.routedLocked(to)
}

// openAt sends zone to's server session s's opening, with payload, then
// the kept Move frames of its route r, at once.
func (g *Gateway) openAt(s wire.SessionID, r route, to uint32, payload []byte) {
	m := g.startMove()
	m.add(opened, uint64(s), payload)
	if r.moves != nil {
		r.moves.each(func(f []byte) { m.add(frame, uint64(s), f) })
	}
	g.sendMove(to)
}

// startMove returns the message for a session's move or shadow, empty.
func (g *Gateway) startMove() *message {
	g.moveMsg.reset(g.cfg.Name)
	return &g.moveMsg
}

// sendMove publishes the message startMove began to zone to's server, at
// once.
func (g *Gateway) sendMove(to uint32) {
	m := &g.moveMsg
	g.forwarded.Add(uint64(m.n))
	msgs, left, buf := m.publish(g.cfg.Conn, zoneSubject(g.cfg.Prefix, to), int(g.cfg.Conn.MaxPayload()), g.moveBuf)
	g.moveBuf = buf
	g.messages.Add(uint64(msgs))
	g.oversize.Add(uint64(left))
}
