package systems

import (
	"fmt"
	"slices"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// Who joins the world: a client's Hello, the game's Admit, the line of
// players waiting for their turn while joins would cost too much at once,
// and the players kept while they are away.

func (p *Pipeline) hello(id wire.SessionID, s *session, frame []byte) {
	h, err := wire.DecodeHello(frame)
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
		p.refuse(id, wire.RefuseBusy, BusyReason)
		return
	}
	if h.Protocol != p.cfg.Protocol {
		p.refuse(id, wire.RefuseProtocol, "protocol mismatch: this server speaks a different game protocol version")
		return
	}
	adm, err := p.cfg.Admit(h)
	if err != nil {
		p.refuse(id, wire.RefuseToken, err.Error())
		return
	}
	if adm.Class >= components.MaxClasses {
		p.refuse(id, wire.RefuseUnspecified, fmt.Sprintf("admit gave class %d, past the %d classes", adm.Class, components.MaxClasses))
		return
	}
	if !ecs.Finite(adm.Spawn) {
		// A spawn a game computed from what the client said (a chosen
		// spawn point, say) must not take the server down: Spawn panics.
		t := adm.Spawn
		p.refuse(id, wire.RefuseUnspecified, fmt.Sprintf("admit gave a spawn place that is not finite (%v, %v, %v, yaw %v)", t.X, t.Y, t.Z, t.Yaw))
		return
	}
	spawn := adm.Spawn
	s.class = adm.Class
	if s.player = adm.Player; s.player != "" {
		if k, ok := p.kept[s.player]; ok {
			delete(p.kept, s.player)
			s.kept, spawn = k, k.Transform
		}
	}
	if p.cfg.JoinAppears > 0 && (p.waitHead < len(p.waiting) || !p.joinFits(spawn)) {
		p.wait(id, s, spawn)
		return
	}
	p.spawnPlayer(id, s, spawn)
}

// joinFits reports whether a player spawning at spawn may join this tick,
// and if so counts its cost: the first of a tick always may, the others
// while the appears of the tick's joins stay within Config.JoinAppears. A
// join costs about twice the actors around its spawn (the newcomer is told
// of each, and each of it), plus twice the players that joined before it
// this tick, counted as if all had come to the same place. Into a crowd
// of 3,000 the default budget lets 5 in a tick, and 3,000 arriving at once
// are all in after about ten seconds at 30 Hz, instead of in one tick of
// a second and more; spread over a world, hundreds join in a tick.
func (p *Pipeline) joinFits(spawn components.Transform) bool {
	cost := 2 * (p.world.ActorsAround(p.world.KeyOf(spawn)) + p.joins)
	if p.joins > 0 && p.joinSpent+cost > p.cfg.JoinAppears {
		return false
	}
	p.joinSpent += cost
	return true
}

// spawnPlayer queues the spawn of session id's actor at spawn, with the
// state of the actor kept for it, if any: its class too, unless Admit gave
// this session one of its own.
func (p *Pipeline) spawnPlayer(id wire.SessionID, s *session, spawn components.Transform) {
	p.joins++
	spec := ecs.ActorSpec{Transform: spawn, Client: components.Client{Session: uint64(id), Slot: s.slot, Class: s.class, Phase: phaseOfPlayer(s.player)}}
	if k := s.kept; k != nil {
		spec.Animation = k.Animation
		if s.class == components.ClassPlayer && k.Class < components.MaxClasses {
			spec.Client.Class = k.Class
		}
		types := p.cfg.SavedTypes
		spec.Init = func(w *ark.World, e ark.Entity) {
			// The kept values were read back from a checked save or
			// taken by Keep with these types: Give fails only if the
			// game's codec cannot read its own encoding, and the actor
			// then returns without the value.
			_ = k.Give(w, e, types)
		}
	}
	s.actor = p.world.Spawn(spec)
	s.state = joining
	if s.player != "" {
		p.nameSlot(s)
	}
}

// phaseOfPlayer is the phase key of player's actor (components.Client.Phase):
// its name's for a named player, so that its pairs keep their send phases
// when it comes back or another server takes it; 0 (the actor id) for a
// guest.
func phaseOfPlayer(player string) uint32 {
	if player == "" {
		return 0
	}
	return interest.NameKey(player)
}

// nameSlot notes named session s's player by its slot, for saves.
func (p *Pipeline) nameSlot(s *session) {
	if int(s.slot) >= len(p.names) {
		p.names = append(p.names, make([]string, int(s.slot)+1-len(p.names))...)
	}
	p.names[s.slot] = s.player
}

// keep keeps the actor of named session s, which is closing, for its
// player's return: the actor as it stands, or the one handed back to it
// if its spawn is not applied yet.
func (p *Pipeline) keep(s *session) {
	k := s.kept
	if s.state == playing {
		k, _ = save.Keep(p.world, s.actor, s.player, p.cfg.SavedTypes)
	}
	if k != nil {
		p.kept[s.player] = k
		p.left = append(p.left, s.player)
	}
	if int(s.slot) < len(p.names) {
		p.names[s.slot] = ""
	}
}

// SavedPlayers returns what a save keeps of the players: the names of
// those in play by session slot, and the actors kept for those away. It is
// for the tick boundary; the lists are the pipeline's until the next tick.
func (p *Pipeline) SavedPlayers() save.Players {
	kept := make([]*save.Kept, 0, len(p.kept))
	for _, k := range p.kept {
		kept = append(kept, k)
	}
	return save.Players{Names: p.names, Kept: kept}
}

// Kept returns the actor kept for player, if one waits for its return.
func (p *Pipeline) Kept(player string) (*save.Kept, bool) {
	k, ok := p.kept[player]
	return k, ok
}

// KeptPlayers appends to dst the names of the players whose actors are
// kept for their return, sorted, and returns the extended slice.
func (p *Pipeline) KeptPlayers(dst []string) []string {
	start := len(dst)
	for name := range p.kept {
		dst = append(dst, name)
	}
	slices.Sort(dst[start:])
	return dst
}

// LeftThisTick returns the players whose actors were kept in this tick's
// ingest (they left), in the order they left; the list is the
// pipeline's until the next tick's ingest.
func (p *Pipeline) LeftThisTick() []string { return p.left }

// KeepAll adds kept actors (a save's, see save.File.Kept) to those waiting
// for their players, before the first tick.
func (p *Pipeline) KeepAll(kept []*save.Kept) {
	for _, k := range kept {
		p.kept[k.Player] = k
	}
}

// waitingHello is a session waiting for its turn to join, with the spawn
// the game's Admit gave it (Admit runs once, when the Hello comes: a token
// it refuses is refused at once).
type waitingHello struct {
	id    wire.SessionID
	spawn components.Transform
}

// wait puts session id at the back of the line: this tick's joins are
// used up, or others came first.
func (p *Pipeline) wait(id wire.SessionID, s *session, spawn components.Transform) {
	p.waiting = append(p.waiting, waitingHello{id: id, spawn: spawn})
	s.state = waiting
}

// maxJoinWaitSeconds is how long the line may stand still, admission
// control turning new players away, before the players in it are turned
// away too.
const maxJoinWaitSeconds = 10

// admitWaiting lets in the sessions waiting their turn, first come first
// served, as far as this tick's joins allow (joinFits). A session that left
// while it waited is skipped. While admission control turns new players
// away the line stands still, so the joins' own cost cannot turn away the
// players it paces; once it has stood still for maxJoinWaitSeconds, the
// players in it are turned away with "server busy", as a newcomer would
// be. How long a player has waited in a moving line does not count: a
// crowd of thousands joining one square waits longer than that, and a
// second made busy by its own joins must not send it all away.
func (p *Pipeline) admitWaiting() {
	for ; p.waitHead < len(p.waiting); p.waitHead++ {
		w := &p.waiting[p.waitHead]
		s := p.sessions.Get(w.id)
		switch {
		case s == nil || s.state != waiting || s.kicked:
		case p.busy && p.elapsed-p.busySince >= uint64(maxJoinWaitSeconds*max(p.cfg.TickRate, 1)):
			p.stats.BusyRejections++
			p.refuse(w.id, wire.RefuseBusy, BusyReason)
		case p.busy, !p.joinFits(w.spawn):
			return
		default:
			p.spawnPlayer(w.id, s, w.spawn)
		}
	}
	p.waiting, p.waitHead = p.waiting[:0], 0
}

// Waiting returns the number of sessions whose Hello waits for its turn to
// join (Config.JoinAppears); some may have left since.
func (p *Pipeline) Waiting() int { return len(p.waiting) - p.waitHead }

// BusyReason is what a client turned away by admission control reads.
const BusyReason = "server busy, try again shortly"

func (p *Pipeline) refuse(id wire.SessionID, code wire.RefuseCode, reason string) {
	p.stats.Refused++
	if s := p.sessions.Get(id); s != nil {
		s.kicked = true
	}
	p.out = wire.AppendRefuse(p.out[:0], wire.Refuse{Code: code, Reason: []byte(reason)})
	p.transport.SendReliable(id, p.out)
	p.transport.Disconnect(id, reason)
}
