package gateway

import (
	"fmt"
	"slices"

	"github.com/throng-go/throng/net/wire"
)

// This file opens a session at a second zone server ahead of its move
// (Transport.Shadow): the gateway sends that server the client's frames
// too, holds what it sends the client until the move, and ends the second
// opening when the move will not come.

// shadowed is a session's second opening, at zone, ahead of its move:
// payload is what its server was told of it, held what that server sent
// the session before the move came (the client gets it once its old
// server's frames are all through).
type shadowed struct {
	zone    uint32
	payload []byte
	held    []heldEntry
	overrun bool // held past maxHeld: the client is disconnected
}

// heldEntry is one entry for the client held back: a datagram, a
// reliable frame.
type heldEntry struct {
	k       kind
	payload []byte
}

// maxHeld bounds what a shadow's zone may send the session before its
// move comes (a welcome and the view around it, a few ticks of it): one
// that sends more has a session its old server never let go, and the
// client is disconnected (ShadowOverrun) rather than sent both servers'
// frames.
const maxHeld = 1 << 14

// ShadowOverrun is the reason a gateway gives a client whose new zone
// server sent it more than the gateway holds before its old server let
// it go.
func ShadowOverrun(zone uint32) string {
	return fmt.Sprintf("zone server %d played this session before its old server let it go", zone)
}

// ReasonWithdrawn is the reason of the SessionClosed a zone server sees
// for a session opened there ahead of its move (a shadow) when the move
// will not come: the old server withdrew the hand-off.
const ReasonWithdrawn = "hand-off withdrawn"

// shadow opens session s at zone to's server too, ahead of its move, for
// the zone server that serves it (from): an opened entry with what that
// server says of it (payload), then its kept Move frames, at once; from
// the next step on its frames go to both. When the move comes the new
// server has the session and every frame since, so the switch waits for
// no message from the gateway. A session with a shadow elsewhere closes
// that one first; a shadow asked for by a zone that does not serve the
// session (it moved on meanwhile) is ignored. g.mu is held.
func (g *Gateway) shadow(s wire.SessionID, from, to uint32, payload []byte) {
	g.routeMu.Lock()
	defer g.routeMu.Unlock()
	r := g.routes.Get(s)
	if r.zone != from || to == from {
		return
	}
	if sh := g.shadows.Get(s); sh != nil {
		g.closeShadow(s, &r, sh, ReasonWithdrawn)
	}
	g.openAt(s, r, to, payload)
	r.shadow = to
	g.routes.Put(s, r)
	g.shadows.Put(s, &shadowed{zone: to, payload: slices.Clone(payload)})
	g.nShadows++
	g.shadowed.Add(1)
}

// unshadow closes session s's shadow, for the zone server that serves
// it (from), which withdrew the hand-off: that zone's server sees the
// session closed with reason. g.mu is held.
func (g *Gateway) unshadow(s wire.SessionID, from uint32, reason string) {
	g.routeMu.Lock()
	defer g.routeMu.Unlock()
	r := g.routes.Get(s)
	sh := g.shadows.Get(s)
	if sh == nil || r.zone != from {
		return
	}
	g.closeShadow(s, &r, sh, reason)
	g.routes.Put(s, r)
}

// fromShadow handles what the zone server holding session s's shadow sent
// it: frames for the client wait for the move (the client gets its old
// server's frames first); a move back, a disconnect or an unknown ends
// the shadow, since that server let it go (its move back names the
// shadow's payload, and one of an older shadow is ignored). g.mu is held.
func (g *Gateway) fromShadow(s wire.SessionID, sh *shadowed, k kind, payload []byte) {
	switch k {
	case datagram, reliable, batch:
		if k == batch {
			// Rebuilt now: the message's later batches may refer to its
			// records.
			k, payload = datagram, g.batches.datagram(payload)
		}
		switch {
		case sh.overrun:
			return
		case len(sh.held) == maxHeld:
			// The client's close, at the next step, closes the session at
			// both servers.
			sh.overrun, sh.held = true, nil
			g.cfg.Front.Disconnect(s, ShadowOverrun(sh.zone))
			g.dropped.Add(1)
			return
		}
		sh.held = append(sh.held, heldEntry{k, slices.Clone(payload)})
	case moved:
		if !slices.Equal(payload[4:], sh.payload) {
			return
		}
		fallthrough
	case disconnect, unknown:
		g.routeMu.Lock()
		r := g.routes.Get(s)
		g.dropShadow(s, &r)
		if r.zone != 0 {
			g.routes.Put(s, r)
		}
		g.routeMu.Unlock()
	}
}

// dropShadow forgets session s's shadow, in the gateway's table and in
// its route r (which the caller puts back); g.mu and routeMu are held.
// It counts a shadow that ended without its move.
func (g *Gateway) dropShadow(s wire.SessionID, r *route) {
	if g.shadows.Get(s) != nil {
		g.shadowsEnded.Add(1)
	}
	g.forgetShadow(s, r)
}

// forgetShadow is dropShadow uncounted.
func (g *Gateway) forgetShadow(s wire.SessionID, r *route) {
	if g.shadows.Get(s) != nil {
		g.shadows.Drop(s)
		g.nShadows--
	}
	r.shadow = 0
}

// closeShadow ends session s's shadow sh, which its move will not
// follow: forgotten (dropShadow, in route r, which the caller puts back)
// and closed at its zone's server with reason, at once; g.mu and routeMu
// are held.
func (g *Gateway) closeShadow(s wire.SessionID, r *route, sh *shadowed, reason string) {
	g.dropShadow(s, r)
	g.startMove().add(closed, uint64(s), []byte(reason))
	g.sendMove(sh.zone)
}

// settleShadows forgets the shadows of the sessions Step or
// dropSilentZones unrouted (their clients left, or their zone server
// went): each shadow's server was told with the close, or is told by the
// zone server's own time-out.
func (g *Gateway) settleShadows() {
	g.mu.Lock()
	g.routeMu.Lock()
	for _, s := range g.shadowsGone {
		if r := g.routes.Get(s); r.zone == 0 {
			g.dropShadow(s, &r)
		}
	}
	g.shadowsGone = g.shadowsGone[:0]
	g.routeMu.Unlock()
	g.mu.Unlock()
}
