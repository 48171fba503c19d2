package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/throng-go/throng/internal/idtable"
	"github.com/throng-go/throng/net/wire"
)

// TransportConfig configures a zone server's [Transport].
type TransportConfig struct {
	// Conn is the zone server's NATS connection. The Transport does not
	// close it.
	Conn *nats.Conn
	// Zone is the zone this server holds: gateways send the sessions they
	// route to it on its subject. Not 0.
	Zone uint32
	// Prefix starts every subject; empty means "throng".
	Prefix string
	// Heartbeat is the longest the transport stays silent towards a
	// gateway it serves: a Flush with nothing to send publishes an empty
	// message that long after the last, so that the gateway tells a zone
	// server that stopped from one whose players are quiet (keep it well
	// under the gateways' Config.ZoneTimeout). 0 means DefaultHeartbeat.
	Heartbeat time.Duration
	// GatewayTimeout is how long a gateway whose sessions the server
	// holds may stay silent (a stepping gateway sends at least a heartbeat
	// every Config.Heartbeat) before the transport takes it for dead: it
	// closes that gateway's sessions with a reason (GatewayGone), so that
	// the server lets their actors go (and keeps its named players' for
	// their return) instead of holding them for clients that are gone.
	// 0 means DefaultGatewayTimeout.
	GatewayTimeout time.Duration
}

// DefaultGatewayTimeout is TransportConfig.GatewayTimeout when it is 0:
// ten default heartbeats.
const DefaultGatewayTimeout = 10 * DefaultHeartbeat

// GatewayGone is the reason of the SessionClosed a zone server sees for
// each session of a gateway its transport took for dead.
func GatewayGone(gateway string) string {
	return fmt.Sprintf("gateway %s stopped answering", gateway)
}

// Transport is the [wire.Transport] through which a zone server serves
// the sessions of gateways: each gateway session it is sent becomes one
// session of its own, numbered from 1 as every transport numbers them.
// What the server sends during a tick is held, per gateway, and published
// as one message when the tick ends ([Transport.Flush], which the server
// calls); a session the server disconnects is closed at once, and its
// gateway told with that message.
type Transport struct {
	cfg TransportConfig
	sub *nats.Subscription

	inMu    sync.Mutex
	inbox   [][]byte // messages from gateways, in arrival order
	held    [][]byte // the messages the last Receive handed out frames of
	pending []wire.Inbound

	mu       sync.RWMutex // guards the maps, closed and resumed
	closed   bool
	resumed  []Resumed        // sessions opened as moved here, since TakeResumed
	releases []wire.SessionID // sessions to release at the next Flush
	last     wire.SessionID
	sessions idtable.Table[wire.SessionID, *session]
	// open holds, of each open session, what sending to it needs, inline
	// (read for every recipient of a tick, under a lane's lock; sessions
	// holds the rest, under mu).
	open idtable.Table[wire.SessionID, sendRec]
	// byRemote finds a session by its gateway's name, then the gateway's
	// id for it (a gateway numbers its sessions in sequence): a frame's
	// look-up hashes the name, of a few gateways, and reads a table.
	byRemote map[string]*idtable.Table[uint64, wire.SessionID]
	outs     map[string]*outbox
	outList  []*outbox // outs in the order made: an outbox's idx is its place
	// lanes are the relay's (SendUnreliableBatchLane, lanes.go), one per
	// unit running at once: each holds this tick's datagrams of the units
	// that held it, a message per gateway, and reads the send table under
	// its own lock, so that units on several cores never wait on one
	// another. A change to the send table holds every
	// lane's lock as well as mu (lockLanes); lanes only grow, under mu.
	lanes atomic.Pointer[[]*lane]

	n   wire.Stats // guarded by mu (Receive's counts) or atomics below
	out struct {
		datagrams, datagramBytes, reliable, reliableBytes atomic.Uint64
		droppedDatagrams, droppedReliable                 atomic.Uint64
	}
	malformed atomic.Uint64
	// heard holds when a message from each gateway was last received
	// (Receive's time), and checked when dropSilentGateways last looked;
	// under mu.
	heard   map[string]time.Time
	checked time.Time
	// Gateways taken for dead, and the sessions closed with them.
	lostGateways, sessionsDropped atomic.Uint64
	// Messages taken from gateways and published to them.
	received, published atomic.Uint64
	strays              atomic.Uint64
	oversize            atomic.Uint64 // entries no message could hold
	scratch             []byte        // publishLanes', under mu
	// limit is NATS' largest payload as Flush last read it: a lane's
	// message is limited by it, without taking the connection's lock for
	// every recipient.
	limit atomic.Int64
}

// sendRec is what sending to an open session needs (Transport's send
// table): its gateway's outbox and the gateway's id for it.
type sendRec struct {
	out *outbox
	id  uint64
}

// remote names a session by its gateway and the gateway's id for it.
type remote struct {
	gateway string
	id      uint64
}

// session is one gateway session the zone server holds.
type session struct {
	remote
	out *outbox
	// A resumed session's frames wait (held) until the server has taken
	// it to its actor (Release): until then its pipeline would drop them.
	holding bool
	held    [][]byte
}

// outbox is what the zone server sent one gateway's sessions this tick.
type outbox struct {
	mu      sync.Mutex
	name    string // the gateway's
	subject string
	idx     int // its place in Transport.outList, and in each lane's messages
	m       message
	last    time.Time // when a message last went to the gateway (Flush's)
	// laned: a lane holds datagrams for this gateway since the last
	// publish. What m held when the first of them came was set aside
	// then, in early (beginLanes), and goes ahead of the lanes, so that
	// the gateway gets a tick's traffic in the order it was sent: m
	// before the relay, the lanes, m after, published together.
	laned   atomic.Bool
	early   message
	ctl     message // a shadow's opening or close, published at once (control)
	scratch []byte  // publish's, under mu
}

// DefaultHeartbeat is TransportConfig.Heartbeat when it is 0.
const DefaultHeartbeat = 500 * time.Millisecond

// NewTransport subscribes to the zone's subject and returns its Transport.
func NewTransport(cfg TransportConfig) (*Transport, error) {
	if cfg.Conn == nil {
		return nil, errors.New("gateway: no NATS connection")
	}
	if cfg.Zone == 0 {
		return nil, errors.New("gateway: zone 0")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "throng"
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = DefaultHeartbeat
	}
	if cfg.GatewayTimeout <= 0 {
		cfg.GatewayTimeout = DefaultGatewayTimeout
	}
	t := &Transport{cfg: cfg, byRemote: map[string]*idtable.Table[uint64, wire.SessionID]{}, outs: map[string]*outbox{},
		heard: map[string]time.Time{}}
	t.limit.Store(cfg.Conn.MaxPayload())
	sub, err := cfg.Conn.Subscribe(zoneSubject(cfg.Prefix, cfg.Zone), func(m *nats.Msg) {
		t.inMu.Lock()
		t.inbox = append(t.inbox, m.Data)
		t.inMu.Unlock()
		t.received.Add(1)
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	// Held for the next Receive without limit: a session's opening or
	// frame dropped past NATS' default pending limits would be lost.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	t.sub = sub
	return t, nil
}

// Malformed returns how many messages from gateways were dropped because
// they did not decode.
func (t *Transport) Malformed() uint64 { return t.malformed.Load() }

// Oversize returns how many entries (frames for the gateway's clients)
// were dropped because no NATS message can hold them (past the server's
// max_payload).
func (t *Transport) Oversize() uint64 { return t.oversize.Load() }

// Strays returns how many frames came for a session the server does not
// hold (moved to another zone server, or closed, while the frame was on
// its way; or opened with this zone's server before it restarted) and
// were dropped; the gateway is told of each.
func (t *Transport) Strays() uint64 { return t.strays.Load() }

// Messages returns how many messages the transport has taken from
// gateways (held for the next Receive) and published to them.
func (t *Transport) Messages() (received, published uint64) {
	return t.received.Load(), t.published.Load()
}

// Receive implements [wire.Transport]: the sessions and frames of every
// message that arrived since the last call, in order, and the sessions
// closed by Disconnect and Close since then.
func (t *Transport) Receive(dst []wire.Inbound) []wire.Inbound {
	t.inMu.Lock()
	t.inbox, t.held = t.held[:0], t.inbox
	t.inMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	dst = append(dst, t.pending...)
	t.pending = t.pending[:0]
	now := time.Now()
	for _, msg := range t.held {
		name, entries, err := decode(msg)
		if err != nil {
			t.malformed.Add(1)
			continue
		}
		t.heard[name] = now
		eachEntry(entries, func(k kind, id uint64, payload []byte) {
			dst = t.inbound(dst, name, k, id, payload)
		})
	}
	if t.dropSilentGateways(now) {
		dst = append(dst, t.pending...)
		t.pending = t.pending[:0]
	}
	return dst
}

// dropSilentGateways closes the sessions of every gateway not heard from
// for longer than GatewayTimeout, and reports whether it closed any; t.mu
// is held. It looks ten times a timeout. A gateway that comes back is
// told of each close (a disconnect entry) and ends the client's session.
func (t *Transport) dropSilentGateways(now time.Time) bool {
	timeout := t.cfg.GatewayTimeout
	if now.Sub(t.checked) < timeout/10 {
		return false
	}
	t.checked = now
	var silent []wire.SessionID
	t.sessions.Each(func(s wire.SessionID, ss *session) {
		if now.Sub(t.heard[ss.gateway]) > timeout {
			silent = append(silent, s)
		}
	})
	if len(silent) == 0 {
		return false
	}
	slices.Sort(silent)
	lost := map[string]bool{}
	for _, s := range silent {
		name := t.sessions.Get(s).gateway
		lost[name] = true
		t.disconnect(s, GatewayGone(name))
	}
	for name := range lost {
		delete(t.heard, name)
	}
	t.lostGateways.Add(uint64(len(lost)))
	t.sessionsDropped.Add(uint64(len(silent)))
	return true
}

// GatewaysLost returns how many times the transport took a gateway for
// dead, and how many sessions it closed with them.
func (t *Transport) GatewaysLost() (gateways, sessions uint64) {
	return t.lostGateways.Load(), t.sessionsDropped.Load()
}

// inbound turns one entry from gateway name into what the server sees;
// t.mu is held. An entry for a session the server does not hold (closed
// by Disconnect, say, while the client's frames were on their way), or a
// second opening of one it holds, is dropped.
func (t *Transport) inbound(dst []wire.Inbound, name string, k kind, id uint64, payload []byte) []wire.Inbound {
	r := remote{name, id}
	var s wire.SessionID
	of := t.byRemote[name]
	if of != nil {
		s = of.Get(id)
	}
	open := s != 0
	switch {
	case k == opened && !open && !t.closed:
		t.last++
		s = t.last
		ss := &session{remote: r, out: t.outbox(name), holding: len(payload) > 0}
		t.sessions.Put(s, ss)
		t.lockLanes()
		t.open.Put(s, sendRec{out: ss.out, id: id})
		t.unlockLanes()
		if of == nil {
			of = new(idtable.Table[uint64, wire.SessionID])
			t.byRemote[name] = of
		}
		of.Put(id, s)
		t.n.Opened++
		if ss.holding {
			t.resumed = append(t.resumed, Resumed{Session: s, Payload: slices.Clone(payload)})
		}
		return append(dst, wire.Inbound{Kind: wire.SessionOpened, Session: s})
	case k == frame && open:
		t.n.FramesIn++
		t.n.BytesIn += uint64(len(payload))
		if ss := t.sessions.Get(s); ss.holding {
			ss.held = append(ss.held, slices.Clone(payload))
			return dst
		}
		return append(dst, wire.Inbound{Kind: wire.FrameReceived, Session: s, Frame: payload})
	case k == closed && open:
		t.forget(s)
		return append(dst, wire.Inbound{Kind: wire.SessionClosed, Session: s, Reason: string(payload)})
	case k == frame:
		// A frame for a session this server does not hold: moved on or
		// closed while the frame was on its way, or opened with a server
		// that has since restarted. The gateway is told; it ends the
		// session if it still routes it here.
		t.strays.Add(1)
		out := t.outbox(name)
		out.mu.Lock()
		out.m.add(unknown, id, nil)
		out.mu.Unlock()
	}
	return dst
}

// outbox returns gateway name's outbox, made on first use; t.mu is held.
func (t *Transport) outbox(name string) *outbox {
	out := t.outs[name]
	if out == nil {
		out = &outbox{name: name, subject: gatewayZoneSubject(t.cfg.Prefix, name, t.cfg.Zone), idx: len(t.outList)}
		out.m.reset(name)
		out.early.reset(name)
		out.ctl.reset(name)
		out.m.limit = int(t.cfg.Conn.MaxPayload())
		t.outs[name] = out
		t.outList = append(t.outList, out)
	}
	return out
}

// forget drops session s from the maps and counts it closed; t.mu is held.
func (t *Transport) forget(s wire.SessionID) {
	ss := t.sessions.Get(s)
	t.lockLanes()
	t.open.Drop(s)
	t.unlockLanes()
	t.sessions.Drop(s)
	if of := t.byRemote[ss.gateway]; of != nil {
		of.Drop(ss.id)
	}
	t.n.Closed++
}

// opened returns what sending to session s needs; its out is nil if s is
// not open.
func (t *Transport) opened(s wire.SessionID) sendRec {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.open.Get(s)
}

// send adds an entry for session s to its gateway's message of this
// tick; false if s is not open.
func (t *Transport) send(s wire.SessionID, k kind, payload []byte) bool {
	r := t.opened(s)
	if r.out == nil {
		return false
	}
	r.out.mu.Lock()
	r.out.m.add(k, r.id, payload)
	r.out.mu.Unlock()
	return true
}

// SendUnreliable implements [wire.Transport].
func (t *Transport) SendUnreliable(s wire.SessionID, d []byte) {
	r := t.opened(s)
	if len(d) < wire.BatchHeaderSize || r.out == nil {
		t.out.droppedDatagrams.Add(1)
		return
	}
	r.out.mu.Lock()
	r.out.m.addDatagram(r.id, d)
	r.out.mu.Unlock()
	t.out.datagrams.Add(1)
	t.out.datagramBytes.Add(uint64(len(d)))
}

// SendUnreliableBatch implements [wire.BatchSender].
func (t *Transport) SendUnreliableBatch(s wire.SessionID, datagrams []byte, size int) {
	if size < 1 || size > len(datagrams) {
		size = len(datagrams)
	}
	r := t.opened(s)
	// One look-up and one lock for the recipient's datagrams of a tick.
	var n, bytes, dropped uint64
	if r.out != nil {
		r.out.mu.Lock()
	}
	for off := 0; off < len(datagrams); off += size {
		d := datagrams[off:min(off+size, len(datagrams))]
		if r.out == nil || len(d) < wire.BatchHeaderSize {
			dropped++
			continue
		}
		r.out.m.addDatagram(r.id, d)
		n++
		bytes += uint64(len(d))
	}
	if r.out != nil {
		r.out.mu.Unlock()
	}
	if dropped > 0 {
		t.out.droppedDatagrams.Add(dropped)
	}
	if n > 0 {
		t.out.datagrams.Add(n)
		t.out.datagramBytes.Add(bytes)
	}
}

// SendReliable implements [wire.Transport].
func (t *Transport) SendReliable(s wire.SessionID, f []byte) {
	if len(f) < wire.HeaderSize || len(f) > wire.MaxStreamFrame || !t.send(s, reliable, f) {
		t.out.droppedReliable.Add(1)
		return
	}
	t.out.reliable.Add(1)
	t.out.reliableBytes.Add(uint64(len(f)))
}

// SendReliableBatch implements [wire.ReliableBatchSender].
func (t *Transport) SendReliableBatch(s wire.SessionID, frames []byte) {
	if rest := wire.EachStreamFrame(frames, func(f []byte) { t.SendReliable(s, f) }); rest > 0 {
		t.out.droppedReliable.Add(1)
	}
}

// Disconnect implements [wire.Transport]: the gateway is told with this
// tick's message, after the frames sent before it, and the server sees
// the session closed with reason on its next Receive.
func (t *Transport) Disconnect(s wire.SessionID, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.disconnect(s, reason)
}

// disconnect is Disconnect with t.mu held.
func (t *Transport) disconnect(s wire.SessionID, reason string) {
	ss := t.sessions.Get(s)
	if ss == nil {
		return
	}
	ss.out.mu.Lock()
	ss.out.m.add(disconnect, ss.id, []byte(reason))
	ss.out.mu.Unlock()
	t.forget(s)
	t.pending = append(t.pending, wire.Inbound{Kind: wire.SessionClosed, Session: s, Reason: reason})
}

// ReasonMoved is the reason of the SessionClosed a zone server sees for a
// session it moved to another ([Transport.Move]).
const ReasonMoved = "moved to another zone server"

// Resumed is a session that another zone server sent here with its
// actor ([Transport.Move]): Payload is what that server said of it.
type Resumed struct {
	Session wire.SessionID
	Payload []byte
}

// TakeResumed appends to dst the sessions that arrived moved from another
// zone server since the last call, in order, and returns it. They are
// open sessions that will not say Hello: the zone server takes each to
// its actor (throng.Server.Attach) as its Payload says, then releases
// its frames ([Transport.Release]), or disconnects it.
func (t *Transport) TakeResumed(dst []Resumed) []Resumed {
	t.mu.Lock()
	defer t.mu.Unlock()
	dst = append(dst, t.resumed...)
	t.resumed = t.resumed[:0]
	return dst
}

// HeldMoves calls fn with the sequence number of each Move frame held
// for resumed session s (those it sent while it waited to be taken, the
// gateway's copy of its last moves first), in order. A zone server checks
// them against the last move the old server applied, to count the moves a
// switch lost or would apply twice.
func (t *Transport) HeldMoves(s wire.SessionID, fn func(seq uint32)) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ss := t.sessions.Get(s)
	if ss == nil {
		return
	}
	for _, f := range ss.held {
		if m, err := wire.DecodeMove(f); err == nil {
			fn(m.Seq)
		}
	}
}

// Release hands the server the frames resumed session s sent while it
// waited to be taken to its actor, and its later frames as they come.
// Call it with throng.Server.Attach: the frames are handed over once the
// tick whose join takes the session to its actor has ended (Flush), so
// that they reach it playing, on the Receive after.
func (t *Transport) Release(s wire.SessionID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releases = append(t.releases, s)
}

// release hands over the frames of the sessions Release named; t.mu is
// held. It runs at the end of a tick (Flush): a session released between
// ticks, or during one before its join, was taken to its actor by then.
func (t *Transport) release() {
	for _, s := range t.releases {
		ss := t.sessions.Get(s)
		if ss == nil || !ss.holding {
			continue
		}
		ss.holding = false
		for _, f := range ss.held {
			t.pending = append(t.pending, wire.Inbound{Kind: wire.FrameReceived, Session: s, Frame: f})
		}
		ss.held = nil
	}
	t.releases = t.releases[:0]
}

// Move sends session s to zone to's server, telling it payload (with the
// session's opening: [Transport.TakeResumed] there), and forgets it here:
// the server sees it closed (reason [ReasonMoved]) on its next Receive,
// which a server that let the session's actor go (throng.Server.Detach)
// had forgotten already. The gateway sends the session's later frames
// there, after its last Move frames again, which the new server's
// sequence check keeps from being applied twice; a session opened there
// already ([Transport.Shadow]) is not sent again, the gateway only
// switches its route. The move goes to the gateway at once, in a message with what this tick sent it so far,
// rather than at the tick's Flush: a player's switch is timed from here.
func (t *Transport) Move(s wire.SessionID, to uint32, payload []byte) error {
	if to == 0 || len(payload) == 0 {
		return errors.New("gateway: a move goes to a zone, and says something of the session")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ss := t.sessions.Get(s)
	if ss == nil {
		return fmt.Errorf("gateway: move: no session %d", s)
	}
	entry := binary.LittleEndian.AppendUint32(nil, to)
	out := ss.out
	t.publishLanes(out) // this tick's datagrams, if the relay has run, go first
	out.mu.Lock()
	// After what this tick sent the gateway so far: the client gets those
	// frames ahead of any from its new server.
	out.m.add(moved, ss.id, append(entry, payload...))
	t.publish(out, int(t.cfg.Conn.MaxPayload()), time.Now())
	out.mu.Unlock()
	t.forget(s)
	t.pending = append(t.pending, wire.Inbound{Kind: wire.SessionClosed, Session: s, Reason: ReasonMoved})
	return nil
}

// Shadow opens session s at zone to's server too, ahead of a Move there,
// telling it payload as a Move would ([Transport.TakeResumed] there): the
// gateway sends it the session's last Move frames and, from then on,
// every frame the client sends, while this server goes on serving it.
// A Move to that zone then finds the session there already, with every
// frame since, so the new server can take it as soon as it hears of the
// move's hand-off, without waiting for the gateway to forward it. What
// that server sends the session before the Move reaches the gateway is
// held there until it does. [Transport.Unshadow] (or a Shadow elsewhere)
// closes the second opening when the move will not come. The request
// goes to the gateway at once.
func (t *Transport) Shadow(s wire.SessionID, to uint32, payload []byte) error {
	if to == 0 || to == t.cfg.Zone || len(payload) == 0 {
		return errors.New("gateway: a shadow goes to another zone, and says something of the session")
	}
	return t.control(s, shadow, append(binary.LittleEndian.AppendUint32(nil, to), payload...))
}

// Unshadow closes session s's opening at another zone's server
// ([Transport.Shadow]): the hand-off it was for was withdrawn. That
// server sees the session closed with [ReasonWithdrawn]. It goes to the
// gateway at once.
func (t *Transport) Unshadow(s wire.SessionID) error {
	return t.control(s, unshadow, []byte(ReasonWithdrawn))
}

// control sends session s's gateway one entry at once, in a message of
// its own: the gateway acts on it ahead of the tick's traffic, which
// matters to no client.
func (t *Transport) control(s wire.SessionID, k kind, payload []byte) error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ss := t.sessions.Get(s)
	if ss == nil {
		return fmt.Errorf("gateway: no session %d", s)
	}
	out := ss.out
	out.mu.Lock()
	out.ctl.add(k, ss.id, payload)
	out.scratch = t.sendMessage(&out.ctl, out.subject, int(t.limit.Load()), out.scratch)
	out.mu.Unlock()
	return nil
}

// Flush implements [wire.Flusher]: it publishes what this tick sent each
// gateway, one message each, and hands over the frames of the sessions
// released ([Transport.Release]).
func (t *Transport) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.releases) > 0 {
		t.release()
	}
	limit := int(t.cfg.Conn.MaxPayload())
	t.limit.Store(int64(limit))
	now := time.Now()
	for _, out := range t.outList {
		lanes := out.laned.Load()
		t.publishLanes(out)
		out.mu.Lock()
		if lanes {
			out.last = now
		}
		out.m.limit = limit // NATS' may change with the server it reconnects to
		if !lanes && out.m.empty() && len(out.m.sealed) == 0 && now.Sub(out.last) >= t.cfg.Heartbeat {
			if t.cfg.Conn.Publish(out.subject, out.m.b) == nil {
				t.published.Add(1)
			}
			out.last = now
		}
		if !out.m.empty() || len(out.m.sealed) > 0 {
			t.publish(out, limit, now)
		}
		out.mu.Unlock()
	}
}

// publish sends what out holds to its gateway now; out.mu is held.
// Publish copies the message into the connection's buffer; traffic past
// the server's largest payload (limit) goes as several messages.
func (t *Transport) publish(out *outbox, limit int, now time.Time) {
	out.last = now
	out.scratch = t.sendMessage(&out.m, out.subject, limit, out.scratch)
}

// sendMessage publishes m on subject, counts what went and what no message could
// hold, and empties m; scratch is m.publish's buffer, returned for the
// next call.
func (t *Transport) sendMessage(m *message, subject string, limit int, scratch []byte) []byte {
	sent, left, scratch := m.publish(t.cfg.Conn, subject, limit, scratch)
	t.published.Add(uint64(sent))
	t.oversize.Add(uint64(left))
	m.clear()
	return scratch
}

// Stats implements [wire.Transport].
func (t *Transport) Stats() wire.Stats {
	t.mu.RLock()
	st := t.n
	t.mu.RUnlock()
	st.DatagramsOut = t.out.datagrams.Load()
	st.DatagramBytesOut = t.out.datagramBytes.Load()
	st.ReliableOut = t.out.reliable.Load()
	st.ReliableBytesOut = t.out.reliableBytes.Load()
	st.DroppedDatagrams = t.out.droppedDatagrams.Load()
	if ls := t.lanes.Load(); ls != nil {
		for _, l := range *ls {
			l.mu.Lock()
			st.DatagramsOut += l.datagrams
			st.DatagramBytesOut += l.bytes
			st.DroppedDatagrams += l.dropped
			l.mu.Unlock()
		}
	}
	st.DroppedReliable = t.out.droppedReliable.Load()
	return st
}

// Close implements [wire.Transport]: every session is disconnected with
// wire.ReasonTransportClosed, the gateways told, and the subscription
// ended.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	var open []wire.SessionID
	t.sessions.Each(func(s wire.SessionID, _ *session) { open = append(open, s) })
	slices.Sort(open)
	for _, s := range open {
		t.disconnect(s, wire.ReasonTransportClosed)
	}
	t.mu.Unlock()
	t.Flush()
	return t.sub.Unsubscribe()
}
