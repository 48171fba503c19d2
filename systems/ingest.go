package systems

import (
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/net/wire"
)

// sessionState is where a session is in its life.
type sessionState uint8

const (
	awaitingHello sessionState = iota // connected, no Hello yet
	waiting                           // Hello accepted, waiting for its turn to join (Config.JoinAppears)
	joining                           // actor spawn queued, applied in the join
	attaching                         // to take an actor in the world in the join (Attach)
	playing                           // actor in the world
)

// session is the server's record of one client connection. Its two
// halves are written on different cores: sessionIngest by ingest on the
// tick goroutine's, sessionRelay by the core that relays to the session.
// Each half starts its own pair of cache lines (the L2 fetches lines in
// 128-byte pairs) and the session's size is a whole number of pairs, so
// that Go's size class, whose objects start on page-aligned spans, puts
// every session on pair boundaries: otherwise a session would share a line
// with its neighbour's relay fields, and each budget relay would take the
// next session's ingest line from the tick goroutine's core.
type session struct {
	sessionIngest
	_ [(linePair - unsafe.Sizeof(sessionIngest{})%linePair) % linePair]byte
	sessionRelay
	_ [(linePair - unsafe.Sizeof(sessionRelay{})%linePair) % linePair]byte
}

// sessionIngest is what ingest and the join read and write.
type sessionIngest struct {
	id      wire.SessionID
	state   sessionState
	actor   components.ActorID
	entity  ark.Entity // the actor's entity, once playing (stable for its life)
	correct bool       // send a correction in this tick's join
	kicked  bool       // disconnected by the server; its close is on the way
	// resumed marks a session attached to its actor (Attach) that has not
	// had an update kept since: the stale updates it sends first are the
	// ones its old server applied, sent again, not a client going back.
	resumed bool
	slot    uint32     // index in Pipeline.slots, carried by the actor's Client
	player  string     // the name Admit gave it; "" for a guest
	class   uint8      // the class Admit gave its actor
	kept    *save.Kept // the actor handed back to it, until its spawn is applied
	limiter limiter
	// The commands it sent in tick cmdTick, against MaxCommandsPerTick.
	cmdTick uint64
	cmds    int
}

// sessionRelay is what the relay writes. What it reads of every
// recipient each tick (the spread, the thinning, how many records it
// owes: the backlog's first field) comes first, within relayHot bytes,
// which the relay asks for a few recipients ahead (relayAhead).
type sessionRelay struct {
	spread uint8 // period multiplier that keeps its due records near the budget
	// thin is the share of due ticks, in 256ths, that a recipient at the
	// longest spread drops (relay_thin.go); thinCalm counts its calm
	// ticks as calm counts the spread's.
	thin     uint8
	calm     int              // ticks in a row its spread could have been lower
	thinCalm int              // ticks in a row its thinning could have been less
	backlog  interest.Backlog // records owed under the per-connection budget
}

// relayHot is how many bytes from the start of a sessionRelay the relay
// reads of every recipient: its fields before the backlog, and the
// backlog's first (its owed records, whose count Backlog.Owed reads).
const relayHot = unsafe.Offsetof(sessionRelay{}.backlog) + unsafe.Sizeof([]byte(nil))

// linePair is what the L2 fetches at once: two cache lines.
const linePair = 128

// ingest drains the transport: opens and closes sessions, admits Hello
// frames (queuing the actor's spawn), and keeps each actor's newest
// MoveInput by sequence number. A session can only ever drive its own actor:
// Move frames carry no actor id, the session decides which actor they move.
// Malformed frames, frames out of turn and stale updates are dropped and
// counted; none of them stops the tick. Runs on the tick goroutine; the
// ingest system does the same in two steps, the Move frames' share on the
// pool (RouteInputs, ApplyInputs).
func (p *Pipeline) ingest(tick uint64) {
	p.routeInputs(tick)
	for b := range p.buckets {
		p.applyInputs(b)
	}
	p.mergeInputs()
}

// routeInputs is ingest's serial step: it receives, handles session events
// and Hellos in order, and hands each Move frame to the input bucket of
// its session (by slot range), where ApplyInputs finds it: a session's
// frames stay in one bucket, in the order they came. It returns the
// number of Move frames routed. With fewer sessions than
// minInputsToOffload (and, with parallelism on, MinActorsToOffload), it
// applies them as they come and routes none.
func (p *Pipeline) routeInputs(tick uint64) int {
	p.tick = tick
	p.elapsed += 1 + p.skipped
	p.skipped = 0
	p.buckets = resizeSlice(p.buckets, max(p.cfg.Shards.ShardsPerCluster, 1))
	// A server with few players applies each Move frame as it comes (into
	// bucket 0's counters): routing them first would only add a pass. A
	// crowd's frames are routed, inline too, so that applyInputs finds
	// their rows before it applies them; on the pool, only once there are
	// enough for the pool to pay (MinActorsToOffload).
	least := p.minRouted
	if p.cfg.Parallel {
		least = max(p.cfg.MinActorsToOffload, least)
	}
	p.inputsDirect = p.sessions.Len() < least
	clear(p.commands) // their payloads alias what the last Receive gave
	p.commands = p.commands[:0]
	p.left = p.left[:0]
	p.joins, p.joinSpent = 0, 0
	p.admitWaiting()
	p.inbox = p.transport.Receive(p.inbox[:0])
	routed := 0
	for i := range p.inbox {
		if p.inputsDirect && i+ingestAhead < len(p.inbox) {
			p.askAhead(&p.inbox[i+ingestAhead])
		}
		in := &p.inbox[i]
		switch in.Kind {
		case wire.SessionOpened:
			p.openSession(in.Session)
		case wire.SessionClosed:
			p.closeSession(in.Session)
		case wire.FrameReceived:
			if p.frameFrom(in.Session, in.Frame) {
				routed++
			}
		}
	}
	clear(p.inbox) // the frames stay valid until the next Receive; the buckets hold them until applied
	return routed
}

// ingestAhead is how many events ahead of the one it handles routeInputs
// asks for the MoveInput row of a Move frame's actor, when it applies the
// frames as they come (inputsDirect).
const ingestAhead = 8

// askAhead asks for the MoveInput row that moveFrame will write for event
// in, if it is a frame of a playing session. The rows lie in the tables of
// their actors' chunks, in no order the frames come in, and Move last
// wrote each on whichever core had its shard: found and asked for as each
// frame is handled, every row is a miss waited for in turn; asked for
// frames ahead, the misses overlap. Nothing moves a row during ingest, and
// a frame that is not a Move frame only costs the lookup.
func (p *Pipeline) askAhead(in *wire.Inbound) {
	if in.Kind != wire.FrameReceived {
		return
	}
	slot := p.slotOf.Get(in.Session)
	if slot == 0 {
		return
	}
	p.claimInput(p.slots[slot-1])
}

// claimInput returns the MoveInput row of session s's actor, asked for in
// exclusive state (moveFrame writes it), or nil where s does not play.
func (p *Pipeline) claimInput(s *session) *components.MoveInput {
	if s.state != playing || s.kicked {
		return nil
	}
	in := p.inputs.Get(s.entity)
	cacheline.Claim(unsafe.Slice(in, 1))
	return in
}

// applyInputs keeps the updates of the Move frames in input bucket b (see
// moveFrame). Buckets hold different sessions, so they may be applied at
// the same time on different goroutines: each touches only its sessions,
// their actors' MoveInput rows and its own counters.
//
// It finds every frame's row first, then applies the frames. The rows lie
// in the tables of their actors' chunks, not in session order, and finding
// each (Ark's entity index, the table's column, the row) is a chain of
// cache misses the CPU cannot see coming. A loop that does nothing else
// lets the CPU follow many of them at once, where a loop that also applies
// frames fills the CPU's window with the applying. Nothing moves a row
// during ingest (spawns, despawns and chunk changes wait for the join), so
// the rows found stay valid.
func (p *Pipeline) applyInputs(b int) {
	bk := &p.buckets[b]
	rows := bk.rows[:0]
	for i := range bk.moves {
		rows = append(rows, p.claimInput(bk.moves[i].s))
	}
	for i := range bk.moves {
		m := &bk.moves[i]
		p.moveFrame(bk, m.id, m.s, m.frame, rows[i])
	}
	clear(rows)
	bk.rows = rows[:0]
	clear(bk.moves) // do not pin the transport's buffers
	bk.moves = bk.moves[:0]
}

// mergeInputs adds the buckets' counters and corrections to the tick's,
// bucket by bucket, once they have all been applied.
func (p *Pipeline) mergeInputs() {
	for b := range p.buckets {
		bk := &p.buckets[b]
		p.stats.Malformed += bk.malformed
		p.stats.DroppedInputs += bk.dropped
		p.stats.Kicked += bk.kicked
		p.stats.RateLimited += bk.rateLimited
		p.stats.StaleInputs += bk.stale
		p.stats.Rejected += bk.rejected
		p.corrections = append(p.corrections, bk.corrections...)
		clear(bk.corrections)
		bk.inputCounts, bk.corrections = inputCounts{}, bk.corrections[:0]
	}
}

// inputBucket is the Move frames of some sessions, in arrival order, and
// what applying them counted.
type inputBucket struct {
	moves       []routedMove
	rows        []*components.MoveInput // applyInputs': each move's actor's row, or nil
	corrections []*session              // sessions to correct: a stale update
	inputCounts
	// Buckets are applied side by side: keep their counters off each
	// other's cache lines.
	_ [64]byte
}

// inputCounts is what ApplyInputs adds to the tick's counters.
type inputCounts struct {
	malformed, dropped, kicked, rateLimited, stale, rejected uint64
}

type routedMove struct {
	id    wire.SessionID
	s     *session
	frame []byte
}

// openSession records a new connection in the session table and gives it a
// slot: the index the actor's Client component carries, so the tick finds
// the session without hashing.
func (p *Pipeline) openSession(id wire.SessionID) {
	s := &session{}
	s.id = id
	if p.cfg.MaxRecordsPerTick > 0 {
		// Made here, not on the first tick the client owes: in a crowd
		// that tick comes for one client or another for hundreds of ticks.
		s.backlog.Reserve(interest.MinOwedRoom)
	}
	if n := len(p.freeSlots); n > 0 {
		s.slot = p.freeSlots[n-1]
		p.freeSlots = p.freeSlots[:n-1]
		p.slots[s.slot] = s
	} else {
		s.slot = uint32(len(p.slots))
		p.slots = append(p.slots, s)
	}
	p.sessions.Put(id, s)
	p.slotOf.Put(id, s.slot+1)
}

// dropSession takes session id out of the session table; its slot is
// freed by the join.
func (p *Pipeline) dropSession(id wire.SessionID) {
	p.sessions.Drop(id)
	p.slotOf.Drop(id)
}

func (p *Pipeline) closeSession(id wire.SessionID) {
	s := p.sessions.Get(id)
	if s == nil {
		return
	}
	if s.player != "" {
		p.keep(s)
	}
	if s.state != awaitingHello && s.state != waiting && s.state != attaching {
		p.world.Despawn(s.actor)
	}
	p.dropSession(id)
	// The slot is reused only once the despawn is applied (the join frees
	// it), so a stale Client.Slot never reaches another player's session.
	p.closedSlots = append(p.closedSlots, s.slot)
}

// frameFrom handles a Hello at once and a Move frame at once or by routing
// it to its session's bucket, which it reports.
func (p *Pipeline) frameFrom(id wire.SessionID, frame []byte) bool {
	// The slot, from its own table: the session itself is read only where
	// the frame is handled, which for a Move frame with many players is
	// in its bucket, on the pool. Read here, on the tick goroutine alone,
	// each session of a big world was a cache miss.
	slot := p.slotOf.Get(id)
	if slot == 0 {
		p.stats.DroppedInputs++
		return false
	}
	s := p.slots[slot-1]
	typ, err := wire.PeekType(frame)
	if err != nil {
		p.stats.Malformed++
		return false
	}
	switch typ {
	case wire.TypeHello:
		p.hello(id, s, frame)
	case wire.TypeCommand:
		p.command(id, s, frame)
	case wire.TypeMove:
		if p.inputsDirect {
			p.moveFrame(&p.buckets[0], id, s, frame, nil)
			return false
		}
		// Buckets take slot ranges, so that frames arriving in slot order
		// are applied in that order when the buckets run one after another.
		bk := &p.buckets[int(slot-1)*len(p.buckets)/len(p.slots)]
		bk.moves = append(bk.moves, routedMove{id: id, s: s, frame: frame})
		return true
	default:
		p.stats.Malformed++ // a server-to-client frame type from a client
	}
	return false
}

// Command is a command of the game's own that a client sent
// ([client.Client.SendCommand]): the sender's actor and session, and the
// payload, which Throng does not read.
type Command struct {
	Actor   components.ActorID
	Session uint64
	// Payload aliases the transport's buffer: it is valid until the next
	// tick's ingest. Copy what you keep longer.
	Payload []byte
}

// MaxCommandsPerTick is how many commands one client may send a tick; the
// rest are dropped and counted in DroppedInputs.
const MaxCommandsPerTick = 16

// command hands a Command frame to the game's systems, if its session plays
// and is within MaxCommandsPerTick.
func (p *Pipeline) command(id wire.SessionID, s *session, frame []byte) {
	payload, err := wire.DecodeCommand(frame)
	if err != nil {
		p.stats.Malformed++
		return
	}
	if s.state != playing || s.kicked {
		p.stats.DroppedInputs++ // no actor to speak for (yet)
		return
	}
	if s.cmdTick != p.tick {
		s.cmdTick, s.cmds = p.tick, 0
	}
	if s.cmds >= MaxCommandsPerTick {
		p.stats.DroppedInputs++
		return
	}
	s.cmds++
	p.commands = append(p.commands, Command{Actor: s.actor, Session: uint64(id), Payload: payload})
	p.stats.Commands++
}

// Commands returns the commands clients sent this tick, in the order they
// arrived. They are gathered by ingest: read them from a system that runs
// after it (pinned scheduler.After(IngestName)), or between ticks, on the
// tick goroutine. The slice and the payloads are valid until the next
// tick's ingest.
func (p *Pipeline) Commands() []Command { return p.commands }

// SendEvent queues an event of the game's own (payload, which Throng does
// not read) on the reliable stream of actor's client, behind what was
// queued for it before, and reports whether it was queued: false for an
// actor that is unknown, despawned or has no client. A payload over the
// transport's frame limit (1,022 bytes by default) is dropped by the
// transport and counted in its Stats. Systems may call it at the same time
// (a lock orders them); it reads the world's actor index, so not while the
// join applies changes (no other system runs then).
func (p *Pipeline) SendEvent(actor components.ActorID, payload []byte) bool {
	e, ok := p.world.Entity(actor)
	if !ok {
		return false
	}
	c := p.clients.Get(e)
	if c.Session == 0 {
		return false
	}
	p.eventMu.Lock()
	defer p.eventMu.Unlock()
	p.eventBuf = wire.AppendEvent(p.eventBuf[:0], payload)
	p.transport.SendReliable(wire.SessionID(c.Session), p.eventBuf)
	p.eventsSent++
	return true
}

// moveFrame keeps the update if it is the newest the actor has seen. An update
// older than one already applied is a client going backwards: it is
// rejected with a correction. One older than an update still pending this
// tick was merely overtaken and is dropped quietly. Both are counted. Over
// the client's rate limit an update is dropped and counted, but when one of
// this tick is already kept, the dropped one is the older of the two.
//
// It runs as the frame comes (RouteInputs) or from its bucket
// (ApplyInputs), counting in bucket bk. in is the actor's MoveInput row
// when the caller has found it; nil, moveFrame finds it if the session
// plays.
func (p *Pipeline) moveFrame(bk *inputBucket, id wire.SessionID, s *session, frame []byte, in *components.MoveInput) {
	m, err := wire.DecodeMove(frame)
	if err != nil {
		bk.malformed++
		return
	}
	if s.state != playing || s.kicked {
		bk.dropped++
		return
	}
	if in == nil {
		in = p.inputs.Get(s.entity)
	}
	if s.resumed && m.Seq <= in.Seq {
		// A move its old server applied, sent again by a gateway: not the
		// client's doing, so neither corrected nor held against its rate.
		bk.stale++
		return
	}
	standing := m.X == in.X && m.Y == in.Y && m.Z == in.Z
	keep, flood := s.limiter.admit(&p.cfg.Limits, p.cfg.TickRate, p.elapsed, standing)
	if flood != "" {
		bk.kicked++
		s.kicked = true
		p.transport.Disconnect(id, flood)
		return
	}
	if !keep {
		bk.rateLimited++
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
		bk.stale++
		if !in.Pending && !s.correct {
			bk.rejected++
			s.correct = true
			bk.corrections = append(bk.corrections, s)
		}
		return
	}
	s.resumed = false
	keepInput(in, m)
}

// keepInput makes m the actor's pending update.
func keepInput(in *components.MoveInput, m wire.Move) {
	*in = components.MoveInput{
		Seq: m.Seq, X: m.X, Y: m.Y, Z: m.Z, Yaw: m.Yaw,
		WorldOrCell: m.WorldOrCell, Flags: m.Flags, Pending: true,
		ChangedTick: in.ChangedTick, Allowance: in.Allowance, // Move's bookkeeping
	}
}
