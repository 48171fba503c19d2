package gateway

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/throng-go/throng/internal/idtable"
	"github.com/throng-go/throng/net/wire"
)

// Config configures a [Gateway].
type Config struct {
	// Conn is the gateway's NATS connection. The Gateway does not close
	// it.
	Conn *nats.Conn
	// Name names the gateway among the gateways of one world: zone
	// servers answer on a subject of this name. Letters, digits, '-' and
	// '_'; at most 255 bytes.
	Name string
	// Prefix starts every subject; empty means "throng".
	Prefix string
	// Front is the transport the gateway's clients connect to. The Gateway
	// receives from it and sends to it; Close closes it.
	Front wire.Transport
	// Zone returns the zone whose server serves a new session. Nil sends
	// every session to zone 1, and so does a zone of 0 (no server's), from
	// Zone or Route.
	Zone func(s wire.SessionID) uint32
	// Route, when set, picks the zone of a new session by its Hello
	// instead (where its player stands, say): the gateway holds the
	// session until its first frame, and sends it with that frame to the
	// zone Route returns for the Hello. A first frame that is not a Hello
	// goes to the zone Zone picks (whose server refuses it).
	Route func(s wire.SessionID, hello wire.Hello) uint32
	// ZoneTimeout is how long a zone server serving sessions of the
	// gateway may stay silent (its transport sends at least a heartbeat
	// every TransportConfig.Heartbeat) before the gateway takes it for dead: it
	// disconnects the zone's sessions with a reason (ZoneGone), so that
	// their clients can connect again, to the zone's server once it has
	// restarted. 0 means DefaultZoneTimeout.
	ZoneTimeout time.Duration
	// Heartbeat is the longest a stepping gateway stays silent towards a
	// zone server it has sent sessions: a Step with nothing for that zone
	// sends it an empty message that long after the last, so that the
	// server tells a gateway that stopped from one whose clients are quiet
	// (keep it well under the servers' TransportConfig.GatewayTimeout).
	// 0 means DefaultHeartbeat.
	Heartbeat time.Duration
}

// DefaultZoneTimeout is Config.ZoneTimeout when it is 0: ten default
// heartbeats.
const DefaultZoneTimeout = 10 * DefaultHeartbeat

// ZoneGone is the reason a gateway gives the clients of a zone server it
// takes for dead.
func ZoneGone(zone uint32) string {
	return fmt.Sprintf("zone server %d stopped answering", zone)
}

// ZoneForgot is the reason a gateway gives a client whose zone server
// says it holds no such session: it restarted since the session opened.
func ZoneForgot(zone uint32) string {
	return fmt.Sprintf("zone server %d restarted and does not know this session", zone)
}

// Gateway carries its clients' sessions to zone servers and back (see the
// package doc). [Gateway.Step] forwards what the clients sent;
// zone servers' messages are handed to the clients as they arrive.
type Gateway struct {
	cfg Config
	sub *nats.Subscription
	in  []wire.Inbound
	// routes holds the sessions routed to a zone: Step routes the
	// clients' frames by it, and the handling of a zone's message moves
	// a session in it. Guarded by routeMu (taken after mu, when both).
	routes  idtable.Table[wire.SessionID, route]
	routeMu sync.Mutex
	// unrouted holds the sessions opened that wait for their Hello to be
	// routed (Config.Route).
	unrouted map[wire.SessionID]bool
	outs     map[uint32]*message  // this step's message to each zone
	order    []uint32             // the zones of outs, in the order first used
	sentAt   map[uint32]time.Time // when Step last sent each zone of outs a message

	mu        sync.Mutex // serializes the handling of zone messages; guards forgotten and heard
	forgotten []stray    // sessions a zone server does not hold, for the next Step
	batches   batches    // the batch entries of the zone message being handled
	// A moved session's message to its new zone, and a buffer for
	// publishing it (move).
	moveMsg message
	moveBuf []byte
	// shadows holds the sessions opened at a second zone ahead of their
	// move (shadow entries), by session, with what that zone sent them
	// meanwhile; nShadows counts them, so that a zone's datagrams are
	// looked up only while some session has one. Under mu.
	shadows  idtable.Table[wire.SessionID, *shadowed]
	nShadows int
	// unrouted sessions whose route had a shadow, for settleShadows;
	// under routeMu.
	shadowsGone []wire.SessionID
	heard       map[uint32]time.Time
	// routedAt holds, per zone, when Step first sent it a session since it
	// was last heard: a zone never heard from is timed from then.
	routedAt  map[uint32]time.Time
	inUse     map[uint32]bool // dropSilentZones': the zones serving a session
	checked   time.Time       // when dropSilentZones last looked
	lostZones atomic.Uint64
	dropped   atomic.Uint64
	malformed atomic.Uint64
	forwarded atomic.Uint64
	messages  atomic.Uint64
	replies   atomic.Uint64
	oversize  atomic.Uint64
	// Shadows opened, moves that found theirs, shadows closed otherwise.
	shadowed, shadowMoves, shadowsEnded atomic.Uint64
	scratch                             []byte // Step's
}

// stray is a session a zone server said it does not hold, and that zone.
type stray struct {
	s    wire.SessionID
	zone uint32
}

// route is a session's zone, and its latest Move frames (nil until its
// first), for when a zone server moves it; shadow is the zone the session
// is opened at too, ahead of its move (0: none), which Step sends its
// frames as well.
type route struct {
	zone   uint32
	shadow uint32
	moves  *moves
}

// New returns a gateway subscribed to its subject. It takes the zone
// servers' messages from then on.
func New(cfg Config) (*Gateway, error) {
	switch {
	case cfg.Conn == nil:
		return nil, errors.New("gateway: no NATS connection")
	case cfg.Front == nil:
		return nil, errors.New("gateway: no front transport")
	case !validName(cfg.Name):
		return nil, fmt.Errorf("gateway: name %q: letters, digits, '-' and '_', 1 to 255 bytes", cfg.Name)
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "throng"
	}
	if cfg.Zone == nil {
		cfg.Zone = func(wire.SessionID) uint32 { return 1 }
	}
	if cfg.ZoneTimeout <= 0 {
		cfg.ZoneTimeout = DefaultZoneTimeout
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	g := &Gateway{cfg: cfg, unrouted: map[wire.SessionID]bool{},
		outs: map[uint32]*message{}, heard: map[uint32]time.Time{}, routedAt: map[uint32]time.Time{},
		inUse: map[uint32]bool{}, sentAt: map[uint32]time.Time{}}
	sub, err := cfg.Conn.Subscribe(gatewaySubject(cfg.Prefix, cfg.Name)+".*", g.fromZone)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Every message counts (a session moved, a Welcome): none is to be
	// dropped for a handler that fell behind in a burst, as NATS does past
	// a subscription's default pending limits.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.sub = sub
	return g, nil
}

// validName reports whether name can be a gateway's: one NATS subject
// token of plain characters.
func validName(name string) bool {
	if name == "" || len(name) > 255 || name == "zone" { // "zone" is the zone servers' subjects' token
		return false
	}
	return !strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
}

// Step forwards what the clients did since the last step (sessions
// opened, frames, sessions closed) to their zones' servers, one message
// per zone, and returns how many entries it forwarded. (A session a zone
// server moves goes to its new server as the gateway hears of it, not
// at a step.) Calls must not overlap.
func (g *Gateway) Step() int {
	g.mu.Lock()
	forgotten := g.forgotten
	g.forgotten = nil
	g.mu.Unlock()
	// A session its zone server does not hold, still routed there (a
	// session moved on since is not), is ended: the server restarted
	// since it opened.
	g.routeMu.Lock()
	for _, f := range forgotten {
		if r := g.routes.Get(f.s); r.zone == f.zone {
			g.cfg.Front.Disconnect(f.s, ZoneForgot(f.zone))
			g.unroute(f.s, r)
			g.dropped.Add(1)
		}
	}
	g.routeMu.Unlock()
	g.dropSilentZones()
	g.in = g.cfg.Front.Receive(g.in[:0])
	// routeMu is held across up to routeRun frames (held counts them), not
	// taken for each: a lock a frame cost more than routing it. It is let
	// go before what takes it, or g.mu, itself.
	held := 0
	for _, in := range g.in {
		if held == routeRun || held > 0 && g.routing(in) {
			g.routeMu.Unlock()
			held = 0
		}
		if g.route(in) {
			continue
		}
		var newZone uint32
		if in.Kind == wire.SessionOpened {
			newZone = someZone(g.cfg.Zone(in.Session))
		}
		if held == 0 {
			g.routeMu.Lock()
		}
		held++
		r := g.routes.Get(in.Session)
		if newZone != 0 {
			r = route{zone: newZone}
			g.routes.Put(in.Session, r)
		}
		if r.zone == 0 {
			continue
		}
		z := r.zone
		m := g.message(z)
		switch in.Kind {
		case wire.SessionOpened:
			m.add(opened, uint64(in.Session), nil)
		case wire.FrameReceived:
			m.add(frame, uint64(in.Session), in.Frame)
			if r.shadow != 0 {
				g.message(r.shadow).add(frame, uint64(in.Session), in.Frame)
			}
			if t, err := wire.PeekType(in.Frame); err == nil && t == wire.TypeMove {
				if r.moves == nil {
					r.moves = &moves{}
					g.routes.Put(in.Session, r)
				}
				r.moves.add(in.Frame)
			}
		case wire.SessionClosed:
			m.add(closed, uint64(in.Session), []byte(in.Reason))
			if r.shadow != 0 {
				g.message(r.shadow).add(closed, uint64(in.Session), []byte(in.Reason))
			}
			g.unroute(in.Session, r)
		}
		if newZone != 0 {
			g.routeMu.Unlock()
			held = 0
			g.routed(z)
		}
	}
	if held > 0 {
		g.routeMu.Unlock()
	}
	if len(g.shadowsGone) > 0 {
		g.settleShadows()
	}
	return g.publish()
}

// unroute drops session s's route r; routeMu is held. A shadow it had is
// forgotten at the step's end (settleShadows).
func (g *Gateway) unroute(s wire.SessionID, r route) {
	g.routes.Drop(s)
	if r.shadow != 0 {
		g.shadowsGone = append(g.shadowsGone, s)
	}
}

// publish sends each zone what this step has for it, one message (or a
// heartbeat when it has had nothing for a while), and returns how many
// entries went.
func (g *Gateway) publish() int {
	sent := 0
	limit := int(g.cfg.Conn.MaxPayload())
	now := time.Now()
	for _, z := range g.order {
		m := g.outs[z]
		switch {
		case !m.empty():
			sent += m.n
			msgs, left, scratch := m.publish(g.cfg.Conn, zoneSubject(g.cfg.Prefix, z), limit, g.scratch)
			g.scratch = scratch
			g.messages.Add(uint64(msgs))
			g.oversize.Add(uint64(left))
			m.clear()
			g.sentAt[z] = now
		case now.Sub(g.sentAt[z]) >= g.cfg.Heartbeat:
			// Nothing for the zone: the heartbeat, the message's name
			// alone, tells its server this gateway lives.
			if g.cfg.Conn.Publish(zoneSubject(g.cfg.Prefix, z), m.b) == nil {
				g.messages.Add(1)
			}
			g.sentAt[z] = now
		}
	}
	g.forwarded.Add(uint64(sent))
	return sent
}

// dropSilentZones disconnects the sessions of every zone server silent
// for longer than ZoneTimeout (heard last, or first sent a session since,
// that long ago): it is taken for dead. It looks ten times a timeout.
func (g *Gateway) dropSilentZones() {
	now := time.Now()
	if now.Sub(g.checked) < g.cfg.ZoneTimeout/10 {
		return // checked lately: the walk over every session is not each step's
	}
	g.checked = now
	g.mu.Lock()
	var silent []uint32
	clear(g.inUse)
	g.routeMu.Lock()
	g.routes.Each(func(_ wire.SessionID, r route) { g.inUse[r.zone] = true })
	g.routeMu.Unlock()
	for _, z := range slices.Sorted(maps.Keys(g.inUse)) {
		last := g.heard[z]
		if at, ok := g.routedAt[z]; ok && at.After(last) {
			last = at
		}
		if now.Sub(last) > g.cfg.ZoneTimeout {
			silent = append(silent, z)
			delete(g.routedAt, z)
		}
	}
	g.mu.Unlock()
	for _, z := range silent {
		g.lostZones.Add(1)
		g.routeMu.Lock()
		g.routes.Each(func(s wire.SessionID, r route) {
			if r.zone == z {
				g.cfg.Front.Disconnect(s, ZoneGone(z))
				g.unroute(s, r)
				g.dropped.Add(1)
			}
		})
		g.routeMu.Unlock()
	}
}

// routed notes that the gateway sent zone z a session: a zone not heard
// from since is timed from the first such.
func (g *Gateway) routed(z uint32) {
	g.mu.Lock()
	g.routedLocked(z)
	g.mu.Unlock()
}

// routedLocked is routed with g.mu held.
func (g *Gateway) routedLocked(z uint32) {
	if _, ok := g.routedAt[z]; !ok && !g.heard[z].After(time.Now().Add(-g.cfg.ZoneTimeout)) {
		g.routedAt[z] = time.Now()
	}
}

// routeRun is the most frames Step routes under one hold of routeMu.
const routeRun = 64

// routing reports whether route would act on in (and take routeMu). It
// runs for every frame a client sends: the map is read only while some
// session waits for its route, never in a crowd's steady play.
func (g *Gateway) routing(in wire.Inbound) bool {
	return g.cfg.Route != nil && (in.Kind == wire.SessionOpened || len(g.unrouted) > 0 && g.unrouted[in.Session])
}

// route handles what a session waiting for its route (Config.Route) did,
// and reports whether it did: its opening is held, its first frame picks
// its zone and goes there after the opening, its close before a frame is
// forgotten.
func (g *Gateway) route(in wire.Inbound) bool {
	if !g.routing(in) {
		return false
	}
	if in.Kind == wire.SessionOpened {
		g.unrouted[in.Session] = true
		return true
	}
	delete(g.unrouted, in.Session)
	if in.Kind != wire.FrameReceived {
		return true // closed before it said anything
	}
	z := g.cfg.Zone(in.Session)
	if h, err := wire.DecodeHello(in.Frame); err == nil {
		z = g.cfg.Route(in.Session, h)
	}
	z = someZone(z)
	g.routeMu.Lock()
	g.routes.Put(in.Session, route{zone: z})
	g.routeMu.Unlock()
	m := g.message(z)
	m.add(opened, uint64(in.Session), nil)
	m.add(frame, uint64(in.Session), in.Frame)
	g.routed(z)
	return true
}

// someZone returns z, or zone 1 (Config.Zone's default) for zone 0,
// which no zone server has.
func someZone(z uint32) uint32 {
	return max(z, 1)
}

// message returns this step's message to zone z.
func (g *Gateway) message(z uint32) *message {
	m := g.outs[z]
	if m == nil {
		m = &message{}
		m.reset(g.cfg.Name)
		g.outs[z] = m
		g.order = append(g.order, z)
	}
	return m
}

// Run steps every interval until ctx is done. (A session a zone server
// moves goes on as the gateway hears of it, not at a step.)
func (g *Gateway) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.Step()
		}
	}
}

// fromZone hands a zone server's message to the clients it addresses:
// datagrams, reliable frames and disconnects, in order.
func (g *Gateway) fromZone(m *nats.Msg) {
	defer g.replies.Add(1) // counted once handled, for whoever waits on it
	_, entries, err := decode(m.Data)
	if err != nil {
		g.malformed.Add(1)
		return
	}
	zone, err := strconv.ParseUint(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], 10, 32)
	if err != nil || zone == 0 {
		g.malformed.Add(1)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heard[uint32(zone)] = time.Now()
	delete(g.routedAt, uint32(zone))
	front := g.cfg.Front
	g.batches.reset()
	eachEntry(entries, func(k kind, s uint64, payload []byte) {
		if g.nShadows > 0 {
			if sh := g.shadows.Get(wire.SessionID(s)); sh != nil && sh.zone == uint32(zone) {
				g.fromShadow(wire.SessionID(s), sh, k, payload)
				return
			}
		}
		switch k {
		case datagram:
			front.SendUnreliable(wire.SessionID(s), payload)
		case batch:
			front.SendUnreliable(wire.SessionID(s), g.batches.datagram(payload))
		case reliable:
			front.SendReliable(wire.SessionID(s), payload)
		case disconnect:
			front.Disconnect(wire.SessionID(s), string(payload))
		case moved:
			g.move(wire.SessionID(s), binary.LittleEndian.Uint32(payload), payload[4:])
		case shadow:
			g.shadow(wire.SessionID(s), uint32(zone), binary.LittleEndian.Uint32(payload), payload[4:])
		case unshadow:
			g.unshadow(wire.SessionID(s), uint32(zone), string(payload))
		case unknown:
			g.forgotten = append(g.forgotten, stray{s: wire.SessionID(s), zone: uint32(zone)})
		}
	})
}

// toClient hands the client of session s one entry a zone server sent it.
func (g *Gateway) toClient(s wire.SessionID, k kind, payload []byte) {
	switch k {
	case datagram:
		g.cfg.Front.SendUnreliable(s, payload)
	case reliable:
		g.cfg.Front.SendReliable(s, payload)
	}
}

// Stats is what a gateway counts.
type Stats struct {
	Forwarded uint64 // entries sent to zone servers
	Messages  uint64 // messages sent to zone servers (one per zone per step, two where a session moved to it)
	Replies   uint64 // messages from zone servers handled, the malformed included
	Malformed uint64 // zone servers' messages dropped: they did not decode
	Oversize  uint64 // clients' frames dropped: no NATS message could hold one
	// ZonesLost counts zone servers taken for dead (silent past
	// ZoneTimeout), and SessionsDropped the sessions disconnected with
	// them or because their zone server no longer knew them.
	ZonesLost, SessionsDropped uint64
	// Shadows counts sessions opened at a second zone server ahead of
	// their move (Transport.Shadow), ShadowMoves the moves that found
	// the session opened there, and ShadowsEnded the shadows that ended
	// otherwise (withdrawn, given up by their zone server, or their
	// client gone).
	Shadows, ShadowMoves, ShadowsEnded uint64
}

// Stats returns the gateway's counts so far.
func (g *Gateway) Stats() Stats {
	return Stats{Forwarded: g.forwarded.Load(), Messages: g.messages.Load(), Replies: g.replies.Load(), Malformed: g.malformed.Load(),
		Oversize: g.oversize.Load(), ZonesLost: g.lostZones.Load(), SessionsDropped: g.dropped.Load(),
		Shadows: g.shadowed.Load(), ShadowMoves: g.shadowMoves.Load(), ShadowsEnded: g.shadowsEnded.Load()}
}

// Close stops taking zone servers' messages and closes the front
// transport, which ends every client's session.
func (g *Gateway) Close() error {
	err := g.sub.Unsubscribe()
	return errors.Join(err, g.cfg.Front.Close())
}
