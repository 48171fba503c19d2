package zone

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// This file moves a player with its actor: the hand-off of an actor with
// a client, whose session follows it through the gateway
// (Options.Gateway).
//
// The owner opens the session at the receiver too when it sends the
// Prepare (gateway.Transport.Shadow): the gateway sends the receiver the
// client's last moves and every frame from then on, while the owner still
// serves it. The owner lets the session go when it sends the Commit, and
// moves it to the receiver in the same tick: from then on no input
// reaches the copy the receiver is taking. The receiver attaches the
// session to the actor once it has taken it, which with the session
// opened there already is as soon as the Commit comes; a session that
// comes first waits (parked) for the Commit. A hand-off withdrawn before
// the Commit closes the second opening (gateway.Transport.Unshadow). A hand-off that fails after the session went (the Commit
// refused, a zone fenced) sends the session back to the old owner, which
// attaches it to its actor again. docs/zones.md tells the whole path.

// sessionWait is how many hand-off timeouts a server waits for a
// player's session: the receiver, from taking the actor, for the session
// to come and play it, and a parked session for its Commit; the old
// owner, after a failed hand-off, for it to come back. An actor whose
// session does not come is despawned (its player left meanwhile), a
// session whose Commit does not come sent back. It is long (ten seconds
// at 30 Hz with the default timeout) because a player is lost when it
// runs out: an overloaded server or gateway delays messages by seconds,
// and only a player who left keeps an actor waiting that long.
const sessionWait = 30

// resumeVersion starts the payload a moved or shadowed session carries.
const resumeVersion = 2

// resumeSize is the payload's length: version u8, the zone that lets the
// session go u16, the actor's id there u32, the hand-off's sequence u64.
// What the session had there when it was let go comes with the Commit
// (HandoffRequest.Applied, LetGoAt): the payload is sent with the Prepare.
const resumeSize = 15

var errResume = errors.New("zone: a moved session's payload of the wrong size or version")

// resumeOf is what a moved session's payload says.
type resumeOf struct {
	key remote // the zone that lets it go, and the actor's id there
	seq uint64 // the hand-off's
}

// appendResume appends the payload that names, to the receiver, the
// hand-off a moved session belongs to.
func appendResume(dst []byte, r resumeOf) []byte {
	le := binary.LittleEndian
	dst = append(dst, resumeVersion)
	dst = le.AppendUint16(dst, uint16(r.key.zone))
	dst = le.AppendUint32(dst, r.key.actor)
	return le.AppendUint64(dst, r.seq)
}

func decodeResume(b []byte) (resumeOf, error) {
	if len(b) != resumeSize || b[0] != resumeVersion {
		return resumeOf{}, errResume
	}
	le := binary.LittleEndian
	return resumeOf{remote{ID(le.Uint16(b[1:])), le.Uint32(b[3:])}, le.Uint64(b[7:])}, nil
}

// parked is a session moved here before the Commit of its hand-off was
// taken.
type parked struct {
	resumeOf
	session wire.SessionID
	payload []byte
	until   uint64 // our tick it is sent back at, if not taken by then
}

// returning is our player's actor whose hand-off failed after its
// session went: the session is on its way back.
type returning struct {
	seq    uint64
	until  uint64
	player string
}

// resumePayload returns the payload that names hand-off o of our actor
// id to its receiver, with the session's shadow and its move, in a buffer
// the next call reuses (the gateway transport copies it).
func (z *Server) resumePayload(id components.ActorID, o *outgoing) []byte {
	z.hand.payload = appendResume(z.hand.payload[:0], resumeOf{remote{z.opts.Zone, id.ID}, o.seq})
	return z.hand.payload
}

// shadow opens the session of our player's actor id at the receiver of
// hand-off o, which offer has just made, ahead of the Commit. A session
// that cannot be (it closed this tick) is not: letting it go fails later,
// as it would have.
func (z *Server) shadow(id components.ActorID, o *outgoing, s wire.SessionID) {
	if z.opts.Gateway.Shadow(s, uint32(o.to), z.resumePayload(id, o)) == nil {
		o.shadow = s
	}
}

// letGo readies our player's actor id for the Commit of hand-off o: it
// must still stand in the receiver's zone (a player may have walked back
// since the Prepare); its session is let go and moved to the receiver. It
// reports whether the Commit may go; if not, the hand-off is withdrawn.
func (z *Server) letGo(id components.ActorID, o *outgoing, v *view) bool {
	g := &z.ghosts
	to, _ := v.m.Zone(o.to)
	e, alive := g.world.Entity(id)
	if !alive || to.Reach(g.world.KeyOf(*g.transforms.Get(e))) != 0 {
		z.withdraw(id)
		return false
	}
	s, player, err := z.srv.Detach(id)
	if err != nil {
		z.withdraw(id) // its player left since the Prepare
		return false
	}
	payload := z.resumePayload(id, o)
	o.applied, o.letGoAt = g.inputs.Get(e).Seq, time.Now().UnixNano()
	if err := z.opts.Gateway.Move(s, uint32(o.to), payload); err != nil {
		// The client left since this tick's Receive: its actor goes as a
		// leaving player's does.
		z.withdraw(id)
		g.world.Despawn(id)
		return false
	}
	o.session, o.player, o.shadow = s, player, 0
	z.stats.h.SessionsMoved.Add(1)
	return true
}

// withdraw forgets a hand-off not committed, without the time-out a
// rollback waits: the actor may be offered again at once.
func (z *Server) withdraw(id components.ActorID) {
	if o := z.hand.out[id]; o != nil {
		z.unshadow(o)
	}
	delete(z.hand.out, id)
	z.stats.h.RolledBack.Add(1)
}

// unshadow closes the second opening of hand-off o's session at its
// receiver, if it has one: the session stays ours.
func (z *Server) unshadow(o *outgoing) {
	if o.shadow != 0 {
		_ = z.opts.Gateway.Unshadow(o.shadow) // fails only for a session closed meanwhile, which closes there too
		o.shadow = 0
	}
}

// expectBack notes that the session of our actor id, moved for hand-off
// o, which failed, is to come back (the receiver sends it back).
func (z *Server) expectBack(id components.ActorID, o *outgoing) {
	z.hand.back[id] = returning{seq: o.seq, until: z.ghosts.tick + sessionWait*uint64(z.opts.HandoffTimeout), player: o.player}
}

// resume attaches the sessions moved here to their actors, from the
// tick's apply system after the hand-off requests are taken (before
// Prepare: the join welcomes each). A session comes with the actor a
// neighbour handed us, or back to an actor of ours whose hand-off failed.
// Each waits (parked) until its actor is ready for it: the Commit taken,
// or the failure heard. One whose Commit this server refused, that waits
// sessionWait timeouts, or that arrives while the server is fenced (holds
// false), is sent back whence it came, or if it was coming back,
// disconnected; one for nothing here is disconnected.
func (z *Server) resume(holds bool) {
	gw := z.opts.Gateway
	if gw == nil {
		return
	}
	h := &z.hand
	h.resumed = gw.TakeResumed(h.resumed[:0])
	for _, r := range h.resumed {
		of, err := decodeResume(r.Payload)
		if err != nil {
			z.refuseSession(r.Session, "zone: a session moved here without a valid hand-off")
			continue
		}
		h.parked = append(h.parked, parked{resumeOf: of, session: r.Session, payload: r.Payload,
			until: z.ghosts.tick + sessionWait*uint64(z.opts.HandoffTimeout)})
	}
	h.parked = slices.DeleteFunc(h.parked, func(p parked) bool {
		if p.key.zone == z.opts.Zone {
			return z.comeBack(p, holds)
		}
		rec := h.in[p.key]
		switch {
		case holds && rec != nil && rec.seq == p.seq && rec.phase == taken && rec.client && rec.session == 0:
			if err := z.srv.Attach(p.session, rec.local, rec.player); err != nil {
				// Closed since it came: its actor waits out its time
				// (awaitSessions), and goes.
				gw.Disconnect(p.session, "zone: "+err.Error())
				return true
			}
			z.countInputs(p.session, rec.applied, rec.inputSeq)
			z.countSwitch(rec.letGoAt)
			gw.Release(p.session)
			rec.session = p.session
			return true
		case !holds || z.ghosts.tick >= p.until || rec != nil && rec.seq > p.seq || h.bounced[p.key] == p.seq:
			// Its Commit was refused, never came or was overtaken: the
			// old owner keeps the actor, and takes the session back.
			delete(h.bounced, p.key)
			if gw.Move(p.session, uint32(p.key.zone), p.payload) == nil {
				z.stats.h.SessionsMoved.Add(1)
			}
			return true
		}
		return false
	})
}

// comeBack attaches parked session p, which returns to an actor of ours
// after a failed hand-off, once the failure is heard; it reports whether
// p is done with.
func (z *Server) comeBack(p parked, holds bool) bool {
	h := &z.hand
	id := components.ActorID{ID: p.key.actor}
	if b, ok := h.back[id]; ok && b.seq == p.seq {
		delete(h.back, id)
		if holds {
			if z.srv.Attach(p.session, id, b.player) == nil {
				z.opts.Gateway.Release(p.session)
				z.stats.h.SessionsTaken.Add(1)
				return true
			}
		}
		z.ghosts.world.Despawn(id)
		z.refuseSession(p.session, "zone: this player's hand-off failed and its actor could not be given back")
		return true
	}
	if o := h.out[id]; o != nil && o.seq == p.seq && o.session != 0 && holds && z.ghosts.tick < p.until {
		return false // the receiver's refusal is on its way
	}
	z.refuseSession(p.session, "zone: this server holds no actor for the session moved back to it")
	return true
}

// countInputs checks the moves session s is handed here against the
// last move the old owner took from it (applied, which the Commit says
// apart from the actor's input) and the last move the Commit says this
// server's actor has had (had): moves after applied missing below the
// newest one handed are missed (the switch lost them; the client's
// sequence numbers grow by one a move, and the moves come in any order),
// and moves at or before applied but after had would be applied a second
// time (the old owner took them, the sequence check here does not drop
// them).
func (z *Server) countInputs(s wire.SessionID, applied, had uint32) {
	h := &z.hand
	h.after = h.after[:0]
	twice := 0
	z.opts.Gateway.HeldMoves(s, func(seq uint32) {
		if seq > had && seq <= applied {
			twice++
		}
		if seq > applied {
			h.after = append(h.after, seq)
		}
	})
	if len(h.after) > 0 {
		slices.Sort(h.after)
		h.after = slices.Compact(h.after)
		z.stats.h.InputsMissed.Add(uint64(h.after[len(h.after)-1] - applied - uint32(len(h.after))))
	}
	z.stats.h.InputsDuplicated.Add(uint64(twice))
}

// countSwitch counts a player's switch by how many tick periods passed
// from when the old owner let its session go (at, by that server's clock)
// to now, when this server attaches it: it is welcomed in this tick's
// join, and its moves are applied from the next.
func (z *Server) countSwitch(at int64) {
	ticks := int((time.Now().UnixNano() - at + int64(z.period) - 1) / int64(z.period))
	z.stats.h.switches[min(max(ticks, 0), len(z.stats.h.switches)-1)].Add(1)
}

// refuseSession disconnects a moved session this server cannot take.
func (z *Server) refuseSession(s wire.SessionID, reason string) {
	z.opts.Gateway.Disconnect(s, reason)
	z.stats.h.SessionsLost.Add(1)
}

// awaitSessions checks the players' actors waiting for their sessions,
// taken here or come back after a failed hand-off: one whose session
// plays it now is done; one still without it sessionWait timeouts on is
// despawned (its player left during the hand-off, or its session was
// lost), so that no player's actor stands in the world without its
// player.
func (z *Server) awaitSessions() {
	h, g := &z.hand, &z.ghosts
	for id, rec := range h.awaiting {
		e, alive := g.world.Entity(id)
		switch {
		case !alive || rec.local != id:
			delete(h.awaiting, id)
		case rec.session != 0 && g.clients.Get(e).Session == uint64(rec.session):
			delete(h.awaiting, id)
			z.stats.h.SessionsTaken.Add(1)
		case g.tick >= rec.due:
			delete(h.awaiting, id)
			g.gone = append(g.gone, id) // despawned in id order with the tick's gone ghosts
			z.stats.h.SessionsLost.Add(1)
		}
	}
	for id, b := range h.back {
		if g.tick >= b.until {
			delete(h.back, id)
			g.gone = append(g.gone, id)
			z.stats.h.SessionsLost.Add(1)
		}
	}
}

// awaits reports whether id is a player's actor waiting for its session:
// not to be offered on meanwhile.
func (h *handoffs) awaits(id components.ActorID) bool {
	_, taken := h.awaiting[id]
	_, back := h.back[id]
	return taken || back
}
