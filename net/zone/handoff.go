package zone

import (
	"slices"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/wire"
)

// DefaultHandoffTimeout is Options.HandoffTimeout when it is 0.
const DefaultHandoffTimeout = 10

// HandoffSubject is the subject zone id takes hand-off requests on.
func HandoffSubject(prefix string, id ID) string {
	return prefix + ".handoff." + strconv.Itoa(int(id))
}

// answerSubject is where zone id's hand-off requests are answered. It is
// fixed per zone, not an inbox per request, so that a request is one
// publish and an answer one message; the requester acts on answers at a
// tick boundary anyway.
func answerSubject(prefix string, id ID) string {
	return HandoffSubject(prefix, id) + ".answers"
}

// HandoffStats are a zone server's hand-off counts since New.
type HandoffStats struct {
	// As the actor's owner: hand-offs Started (a Prepare sent), Committed
	// (the actor turned into a ghost of the new owner's), Refused by the
	// receiver, TimedOut (no answer to the Prepare in time) and RolledBack
	// (refused or timed out: the actor stays ours and is offered again
	// later).
	Started, Committed, Refused, TimedOut, RolledBack uint64
	// As the receiver: actors Taken on a Commit, and requests Declined.
	Taken, Declined uint64
	// Messages: requests sent and received, answers sent and received.
	RequestsSent, RequestsReceived, AnswersSent, AnswersReceived uint64
	// Players' sessions (with Options.Gateway): SessionsMoved sent on
	// (to the new owner of their actor with its Commit, or back to the
	// old owner after a failed hand-off, a session opened here with the
	// Prepare and not yet moved included), SessionsTaken welcomed here to
	// their actor, SessionsLost ended because they could not follow their
	// actor (a session that never came, its actor despawned; or one that
	// came for no actor, disconnected).
	SessionsMoved, SessionsTaken, SessionsLost uint64
	// InputsMissed counts, as the receiver, the moves a player sent during
	// its hand-off that reached neither the old owner before it let the
	// session go nor this server; InputsDuplicated those the old owner
	// took that this server would apply again. Both from the moves this
	// server is handed for the session, against the last move the old
	// owner took and the last it gave the actor (the Commit's Applied and
	// Input.Seq).
	InputsMissed, InputsDuplicated uint64
	// SwitchTicks counts, as the receiver, the players' sessions attached
	// here by how many tick periods passed from the old owner letting the
	// session go to this server attaching it (by the two servers' clocks:
	// one host's, or synchronized ones), SwitchTicks[i] for i periods
	// begun, the last for that many or more. The player is welcomed in the
	// tick that attaches it, and its moves are applied from the next.
	SwitchTicks [8]uint64
	// Records is how many hand-offs offered to this server it remembers,
	// to answer a request repeated late: one for each actor it took and
	// still owns, and one for each other hand-off of the last 16 hand-off
	// timeouts. Counted when they are looked over, once a timeout.
	Records int
	// ComponentsLeft counts, as the receiver, the components of the
	// game's own that came with a Commit and that this server could not
	// give the actor it took: a type it has not registered under that
	// name and version, or a value its codec refused (the Logger says
	// which). The actor is taken without them.
	ComponentsLeft uint64
}

// mailbox holds the hand-off requests and answers NATS delivered since
// the last tick; the tick takes them at its start. NATS' delivery
// goroutines fill it, the tick goroutine empties it. Under the same lock
// it holds what the delivery goroutine answers Ready with (see readyNow).
type mailbox struct {
	mu       sync.Mutex
	requests []request
	answers  []HandoffAnswer
	closed   bool
	// lent indexes the ghost table as the last tick left it: (owner zone,
	// owner's id) to the ghost's id here.
	lent map[remote]components.ActorID
	// seqs holds, per (owner zone, owner's id), the newest Prepare acted
	// on, by either goroutine.
	seqs map[remote]uint64
	// view is the map view the last tick held its zone as of, nil when
	// fenced; me is the zone's entry in it.
	view *view
	me   Zone
	buf  [handoffAnswerSize]byte
}

type request struct {
	HandoffRequest
	reply string
	// ready is the ghost's id the delivery goroutine answered Ready with,
	// 0 when it left the request to the tick.
	ready uint32
}

func (z *Server) receiveRequest(msg *nats.Msg) {
	r, err := DecodeHandoffRequest(msg.Data)
	if err != nil {
		z.stats.dropped.Add(1)
		return
	}
	mb := &z.mail
	mb.mu.Lock()
	if !mb.closed {
		mb.requests = append(mb.requests, request{r, msg.Reply, z.readyNow(r, msg.Reply)})
	}
	mb.mu.Unlock()
	// Counted once queued (and answered, if it was): whoever sees the
	// count knows the next tick takes it.
	z.stats.h.RequestsReceived.Add(1)
}

func (z *Server) receiveAnswer(msg *nats.Msg) {
	if len(msg.Data) == 0 {
		return // NATS' "no responders": as good as no answer
	}
	a, err := DecodeHandoffAnswer(msg.Data)
	if err != nil {
		z.stats.dropped.Add(1)
		return
	}
	mb := &z.mail
	mb.mu.Lock()
	if !mb.closed {
		mb.answers = append(mb.answers, a)
	}
	mb.mu.Unlock()
	z.stats.h.AnswersReceived.Add(1)
}

func (mb *mailbox) take(reqs []request, ans []HandoffAnswer) ([]request, []HandoffAnswer) {
	mb.mu.Lock()
	reqs = append(reqs, mb.requests...)
	ans = append(ans, mb.answers...)
	mb.requests, mb.answers = mb.requests[:0], mb.answers[:0]
	mb.mu.Unlock()
	return reqs, ans
}

// handoffs is the tick goroutine's hand-off state, on both sides.
type handoffs struct {
	seq uint64 // the last sequence number this server gave a hand-off
	// out holds our actors being handed off, by their id here, and
	// committing the ones whose Commit is sent, by (new owner, its id).
	out        map[components.ActorID]*outgoing
	committing map[remote]components.ActorID
	retryAt    map[components.ActorID]uint64 // our tick an actor rolled back may be offered again
	// in remembers, per (owner zone, owner's id), the last hand-off
	// offered to us, so that a repeat is answered without acting twice
	// and an older one is refused; takenAs finds the record an actor of
	// ours was taken on, to close it when the actor is handed on.
	in      map[remote]*incoming
	takenAs map[components.ActorID]remote
	// awaiting holds the actors taken with a client whose session is not
	// playing them yet (see awaitSessions).
	awaiting map[components.ActorID]*incoming
	// back holds our players' actors whose hand-off failed after their
	// sessions went, until the sessions come back; parked the sessions
	// moved here before their Commit was taken.
	back   map[components.ActorID]returning
	parked []parked
	// bounced holds, per (owner zone, owner's id), the sequence of a
	// player's Commit this server refused: its session, moved here with
	// it, goes back at once.
	bounced map[remote]uint64
	resumed []gateway.Resumed
	after   []uint32 // countInputs' scratch: a session's held moves after the old owner's last
	payload []byte   // resumePayload's
	reqs    []request
	ans     []HandoffAnswer
	msg     []byte
	carried []byte
	freed   []components.ActorID
}

type remote struct {
	zone  ID
	actor uint32
}

type phase uint8

const (
	preparing phase = iota
	committing
	taken
	returned // (incoming) taken, then handed back to the zone it came from
	passed   // (incoming) taken, then handed on to another zone
)

type outgoing struct {
	to     ID
	seq    uint64
	phase  phase
	remote uint32 // the actor's id at the new owner, from its Ready
	sentAt uint64 // our tick the last request went out
	// client marks a player's actor; session is its session, let go and
	// moved to the new owner with the Commit; shadow the session while it
	// is opened at the new owner too, from the Prepare to the Commit.
	client  bool
	session wire.SessionID
	shadow  wire.SessionID
	player  string // its player's name, from letting it go
	// applied is the last move the actor had from its session, and
	// letGoAt when the session was let go (Unix nanoseconds): the
	// Commit's Applied and LetGoAt.
	applied uint32
	letGoAt int64
}

type incoming struct {
	seq    uint64
	phase  phase
	local  components.ActorID
	tick   uint64 // for taken: our tick number it was taken at
	seenAt uint64 // our tick of the last request about it
	// client marks a player's actor, whose session follows it: attached
	// as session once it came, due by our tick due.
	client   bool
	session  wire.SessionID
	due      uint64
	inputSeq uint32 // the last move the old owner applied, from the Commit
	player   string // its player's name, from the Commit
	// applied and letGoAt are the Commit's Applied and LetGoAt: the
	// last move the old owner took from the session, and when it let it
	// go.
	applied uint32
	letGoAt int64
}

// offer starts handing our actor id, standing in zone to's chunks, to
// that zone: a Prepare with its state; client marks a player's actor. An
// actor already being handed off, or rolled back less than a timeout
// ago, is left alone.
func (z *Server) offer(to ID, revision uint64, id components.ActorID, t components.Transform, a components.Animation, in components.MoveInput, c components.Client) {
	client := c.Session != 0
	h := &z.hand
	if _, busy := h.out[id]; busy {
		return
	}
	if at, ok := h.retryAt[id]; ok {
		if z.ghosts.tick < at {
			return
		}
		delete(h.retryAt, id)
	}
	h.seq++
	o := &outgoing{to: to, seq: h.seq, sentAt: z.ghosts.tick, client: client}
	h.out[id] = o
	z.stats.h.Started.Add(1)
	z.send(o, HandoffRequest{Kind: Prepare, Zone: z.opts.Zone, Revision: revision, Seq: o.seq, Actor: id.ID,
		Transform: t, Animation: a, Input: in, Class: c.Class, Phase: components.PhaseKey(id, c), Client: client})
	if client {
		z.shadow(id, o, wire.SessionID(c.Session))
	}
}

func (z *Server) send(o *outgoing, r HandoffRequest) {
	h := &z.hand
	h.msg = AppendHandoffRequest(h.msg[:0], r)
	if z.nc.PublishRequest(HandoffSubject(z.prefix, o.to), answerSubject(z.prefix, z.opts.Zone), h.msg) == nil {
		z.stats.h.RequestsSent.Add(1)
	}
}

// sendState sends request kind for o with the actor's state now.
func (z *Server) sendState(kind uint8, revision uint64, id components.ActorID, o *outgoing) {
	g := &z.ghosts
	r := HandoffRequest{Kind: kind, Zone: z.opts.Zone, Revision: revision, Seq: o.seq, Actor: id.ID, Client: o.client}
	if e, ok := g.world.Entity(id); ok {
		c := g.clients.Get(e)
		r.Transform, r.Animation, r.Input, r.Class, r.Phase = *g.transforms.Get(e), *g.animations.Get(e), *g.inputs.Get(e), c.Class, components.PhaseKey(id, *c)
		if kind == Commit {
			// The game's components go with the Commit, which the
			// receiver takes the actor on: as they stand now.
			z.hand.carried = save.AppendCarried(z.hand.carried[:0], g.world.Ark(), e, z.types)
			r.Carried, r.Player = z.hand.carried, o.player
			r.Applied, r.LetGoAt = o.applied, o.letGoAt
		}
	}
	o.sentAt = g.tick
	z.send(o, r)
}

func (z *Server) answer(reply string, a HandoffAnswer) {
	if reply == "" {
		return
	}
	h := &z.hand
	h.msg = AppendHandoffAnswer(h.msg[:0], a)
	if z.nc.Publish(reply, h.msg) == nil {
		z.stats.h.AnswersSent.Add(1)
	}
}

// rollBack forgets hand-off o of actor id: it stays ours, offered again
// a timeout from now. A player's session moved already for the Commit is
// expected back (the receiver sends it back).
func (z *Server) rollBack(id components.ActorID, o *outgoing) {
	h := &z.hand
	delete(h.out, id)
	z.unshadow(o)
	if o.session != 0 {
		z.expectBack(id, o)
	}
	if o.phase == committing {
		delete(h.committing, remote{o.to, o.remote})
	}
	h.retryAt[id] = z.ghosts.tick + uint64(z.opts.HandoffTimeout)
	z.stats.h.RolledBack.Add(1)
}

// handOver turns our actor id into a ghost of its new owner's, in place:
// the same entity and ActorID, so our players see it go on moving.
// fromTick is the new owner's first tick listing it as its own; its
// batches of earlier ticks do not list it and must not despawn it.
func (z *Server) handOver(id components.ActorID, o *outgoing, fromTick uint64) {
	h, g := &z.hand, &z.ghosts
	delete(h.out, id)
	delete(h.committing, remote{o.to, o.remote})
	g.lend(remote{o.to, o.remote}, id)
	src := g.sources[o.to]
	if src == nil {
		src = &source{since: z.watch.load().since[o.to], heardAt: g.tick}
		g.sources[o.to] = src
	}
	gh := &ghost{local: id, gen: src.gen, from: fromTick}
	src.actors.put(o.remote, gh)
	g.local.Put(id.ID, remote{o.to, o.remote})
	if e, ok := g.world.Entity(id); ok {
		gh.last = heardAs(o.remote, *g.transforms.Get(e), g.animations.Get(e).Flags, *g.clients.Get(e), id)
		if len(z.types) > 0 {
			// Its new owner keeps them from now on; a copy here would go
			// stale while the game's systems still found it.
			save.DropCarried(g.world.Ark(), e, z.types)
		}
	}
	// Taken here once: its old owner's listings of it are no longer ours
	// to skip, and the record is kept only to answer a late repeat.
	if key, ok := h.takenAs[id]; ok {
		delete(h.takenAs, id)
		if rec := h.in[key]; rec != nil && rec.local == id && rec.phase == taken {
			rec.phase, rec.seenAt = passed, g.tick
			if key == (remote{o.to, o.remote}) {
				rec.phase = returned // whence it came
			}
		}
	}
	z.stats.h.Committed.Add(1)
}

// takeAnswers acts on the answers to our requests, at the tick's start.
func (z *Server) takeAnswers(v *view) {
	h := &z.hand
	for _, a := range h.ans {
		id := components.ActorID{ID: a.Actor}
		o := h.out[id]
		if o == nil || o.seq != a.Seq || o.to != a.Zone {
			continue // late: the hand-off was rolled back or is done
		}
		switch {
		case a.Kind == Refused:
			z.stats.h.Refused.Add(1)
			z.rollBack(id, o)
		case a.Kind == Ready && o.phase == preparing:
			if o.client && !z.letGo(id, o, v) {
				continue
			}
			o.phase, o.remote = committing, a.Local
			h.committing[remote{o.to, o.remote}] = id
			z.sendState(Commit, v.revision, id, o)
		case a.Kind == Committed && o.phase == committing:
			z.handOver(id, o, a.Tick)
		}
	}
}

// expire rolls back the hand-offs whose Prepare went unanswered for
// HandoffTimeout ticks. A Commit is not rolled back but sent again (same
// sequence, answered once): once it is sent the receiver may have taken
// the actor, and rolling back then could leave it owned twice.
func (z *Server) expire(revision uint64) {
	h := &z.hand
	timeout := uint64(z.opts.HandoffTimeout)
	h.freed = h.freed[:0]
	for id := range h.out {
		h.freed = append(h.freed, id)
	}
	slices.SortFunc(h.freed, func(a, b components.ActorID) int { return int(a.ID) - int(b.ID) })
	for _, id := range h.freed {
		o := h.out[id]
		if _, alive := z.ghosts.world.Entity(id); !alive {
			z.rollBack(id, o) // despawned by the game meanwhile
			continue
		}
		if z.ghosts.tick-o.sentAt < timeout {
			continue
		}
		if o.phase == committing {
			z.sendState(Commit, revision, id, o)
			continue
		}
		z.stats.h.TimedOut.Add(1)
		z.rollBack(id, o)
	}
	// A record is kept long enough to answer a late repeat (16 timeouts
	// from the last request, or from the actor leaving us), and that of
	// an actor taken for as long as it is ours. They are looked over once
	// a timeout: one kept a timeout longer answers as it would have.
	if z.ghosts.tick%timeout != 0 {
		return
	}
	for k, rec := range h.in {
		if rec.phase == taken {
			if _, alive := z.ghosts.world.Entity(rec.local); alive {
				continue
			}
		}
		if z.ghosts.tick-rec.seenAt > 16*timeout {
			delete(h.in, k)
			delete(h.bounced, k)
			if at, ok := h.takenAs[rec.local]; ok && at == k {
				delete(h.takenAs, rec.local)
			}
			z.mail.forget(k, rec.seq)
		}
	}
	z.stats.h.records.Store(int64(len(h.in)))
}

// abandon drops every hand-off in flight, when the server is fenced: it
// no longer owns what it was handing off, nor may it take anything.
func (z *Server) abandon() {
	h := &z.hand
	for _, r := range h.reqs {
		z.decline(r)
	}
	for id, o := range h.out {
		z.rollBack(id, o)
	}
}

func (z *Server) decline(r request) {
	z.stats.h.Declined.Add(1)
	if r.Kind == Commit && r.Client {
		z.hand.bounced[remote{r.Zone, r.Actor}] = r.Seq
	}
	z.answer(r.reply, HandoffAnswer{Kind: Refused, Zone: z.opts.Zone, Seq: r.Seq, Actor: r.Actor})
}

// Ghost reports whether actor id of this server's world is a ghost, and
// if so which zone owns it and under which id there. A game's systems
// leave ghosts alone: their owner moves them. An actor of ours whose
// Commit is sent counts as a ghost of the zone it goes to: that zone may
// own it already, and a move made here then would be lost. Call it from
// the tick's goroutine (a system, or between ticks).
func (z *Server) Ghost(id components.ActorID) (owner ID, remoteID uint32, ok bool) {
	if o := z.hand.out[id]; o != nil && o.phase == committing {
		return o.to, o.remote, true
	}
	if r := z.ghosts.local.Get(id.ID); r.zone != 0 {
		return r.zone, r.actor, true
	}
	return 0, 0, false
}
