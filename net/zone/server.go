package zone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// Names of the two systems a zone server adds to its throng.Server, for
// pins of the game's own systems.
const (
	// ApplyName reads the neighbours' ghost batches and spawns, moves and
	// despawns the ghosts, and acts on hand-off requests and answers,
	// before Prepare.
	ApplyName = "zone-apply-ghosts"
	// PublishName sends this zone's border actors to its neighbours, and
	// offers them those of its actors that stand in their chunks (players'
	// only with Options.Gateway), after the join.
	PublishName = "zone-publish-ghosts"
)

// DefaultLease is Options.Lease when it is 0: ten of the map watch's
// checks, so that a busy second or a NATS restart does not fence a zone.
const DefaultLease = 10 * time.Second

// DefaultStaleTicks is Options.StaleTicks when it is 0.
const DefaultStaleTicks = 60

// Options configures a zone [Server].
type Options struct {
	// Zone is the zone this server holds; it must be in the map, with
	// Name as its owner, when New is called.
	Zone ID
	// Name is this server's name in the map's Owner fields. Required.
	Name string
	// Bucket is the JetStream key-value bucket holding the map; empty
	// means DefaultBucket.
	Bucket string
	// Prefix starts every subject the zone servers of one world use;
	// empty means "throng". Worlds sharing a NATS server need distinct
	// prefixes.
	Prefix string
	// StaleTicks is how many of its own ticks a server keeps a
	// neighbour's ghosts without a batch from it, before it despawns
	// them as gone. 0 means DefaultStaleTicks.
	StaleTicks int
	// Lease is how long the server acts on the map it holds without
	// knowing it to be the newest: its map watch checks the bucket every
	// second, and when no check has read it for Lease (NATS' key-value
	// store out of reach), the server stops acting as its zone's owner, as
	// if fenced, until a check reads the map again. So a zone given to
	// another owner while its old one was cut off from the map is held by
	// both for at most Lease. 0 means DefaultLease; negative, no lease.
	Lease time.Duration
	// HandoffMargin is how far, in world units, an actor must stand past
	// the zone's border before it is handed to the neighbour whose chunk
	// it stands in: a hysteresis, so that a player walking along a border
	// is not switched back and forth at every step across it (each switch
	// re-tells the player its view). Within the margin the actor stays
	// ours, shown across the border as a ghost like any other. 0 hands
	// off at the border; it must be below the chunk size.
	HandoffMargin float32
	// LoadEvery is how many of its own ticks pass between the server's
	// load reports to a Coordinator (see LoadReport). 0 means
	// DefaultLoadEvery; a negative value sends none.
	LoadEvery int
	// HandoffTimeout is how many of its own ticks a server waits for the
	// answer to a hand-off request: a Prepare unanswered that long is
	// rolled back (the actor stays, offered again as long after), a
	// Commit is sent again. 0 means DefaultHandoffTimeout.
	HandoffTimeout int
	// Gateway is the transport through which the server's players come,
	// when they come through gateways (package net/gateway): its actors
	// with a client are then handed off too, their sessions moved with
	// them, and sessions moved here are attached to the actors taken for
	// them. Nil hands off only actors without a client. It must be the
	// Transport of the throng.Server New is given.
	Gateway *gateway.Transport
	// Logger receives what the server reports besides its counts (a
	// hand-off's components it could not take, say); nil means
	// slog.Default().
	Logger *slog.Logger
	// PlayersBucket is the key-value bucket of the player directory (see
	// [PlayerWatch]), in which the server files each named player who
	// leaves it as kept here; "" means DefaultPlayersBucket. Every zone
	// server of a world and the programs that route its players name the
	// same bucket.
	PlayersBucket string
}

// Server makes one throng.Server the holder of one zone: it adds the
// ghost systems to it (see [ApplyName], [PublishName]), follows the zone
// map in NATS' key-value store and receives the neighbours' ghost
// batches. The throng.Server ticks as before, driven by its owner.
//
// Fencing: the server acts as the zone's owner (publishes its actors,
// takes in its neighbours' ghosts) only while the newest map revision it
// has read names it the zone's owner. Once a revision gives the zone to
// another owner, deletes the map or is not a valid map, it stops at its
// next tick, despawns its ghosts, and counts the ticks it sat fenced; it
// acts again only if a later revision names it owner again. Every batch
// it sends carries the revision it holds the zone as of, and a receiver
// refuses a batch sent as of a revision older than the one from which
// the map has named the sender's zone's owner, so an owner that has not
// yet heard it was replaced is not believed by those that have. A border
// moved (a zone's chunks changed, its owner not) fences no one.
type Server struct {
	srv    *throng.Server
	nc     *nats.Conn
	opts   Options
	watch  *mapWatch
	sub    *nats.Subscription
	reqSub *nats.Subscription
	ansSub *nats.Subscription
	cmdSub *nats.Subscription
	keySub *nats.Subscription
	prefix string

	inbox inbox
	mail  mailbox
	keys  keyRequests
	ghosts
	hand handoffs
	pub  publisher
	cmds commandBox

	stats counters
	// period is the server's tick period, for SwitchTicks.
	period time.Duration
	// types are the game's components a hand-off carries: the ones the
	// throng.Server saves.
	types []save.Type
	load  loadReporter
	dir   *filer
	// lapsedView is the view the tick acts on while the lease has run
	// out: lapsedOf's, holding no zone.
	lapsedView, lapsedOf *view
}

// tickView returns the view the tick acts on: the newest the map watch
// has read, or, when it has not known that view to be the newest for
// Options.Lease, the same view holding no zone (the server fenced until
// the watch reads the map again).
func (z *Server) tickView() *view {
	v := z.watch.load()
	if z.opts.Lease < 0 || !z.watch.lapsed(z.opts.Lease) {
		z.stats.lapsed.Store(false)
		return v
	}
	z.stats.lapsed.Store(true)
	if z.lapsedOf != v {
		z.lapsedView, z.lapsedOf = &view{revision: v.revision, m: v.m, since: v.since}, v
	}
	return z.lapsedView
}

// counters are the figures of [Stats], written by the tick goroutine and
// NATS' delivery goroutine, read by anyone.
type counters struct {
	sent, sentActors, received, dropped, refused, fencedTicks atomic.Uint64
	loadReports, sentBytes, unkeyed, keyRequests, keysAsked   atomic.Uint64
	ghosts                                                    atomic.Int64
	holds, lapsed                                             atomic.Bool
	revision                                                  atomic.Uint64
	h                                                         handoffCounters
	cmdSent, cmdArrived, cmdReceived                          atomic.Uint64
	cmdDropped, cmdRefused, cmdLost                           atomic.Uint64
}

type handoffCounters struct {
	Started, Committed, Refused, TimedOut, RolledBack, Taken, Declined atomic.Uint64
	RequestsSent, RequestsReceived, AnswersSent, AnswersReceived       atomic.Uint64
	SessionsMoved, SessionsTaken, SessionsLost                         atomic.Uint64
	InputsMissed, InputsDuplicated                                     atomic.Uint64
	ComponentsLeft                                                     atomic.Uint64
	switches                                                           [8]atomic.Uint64
	records                                                            atomic.Int64
}

// Stats are a zone server's counts since New.
type Stats struct {
	// BatchesSent and ActorsSent count the ghost batches published to the
	// neighbours (one per neighbour per tick) and the actors they listed;
	// BytesSent their bytes.
	BatchesSent, ActorsSent, BytesSent uint64
	// BatchesReceived counts well-formed batches taken from neighbours.
	BatchesReceived uint64
	// Dropped counts messages that were not a well-formed ghost batch
	// or keyframe request.
	Dropped uint64
	// Refused counts well-formed batches not believed: from a zone that
	// is not a neighbour, from a replaced owner (see the fencing rule on
	// [Server]), or received while this server was fenced.
	Refused uint64
	// Unkeyed counts ghost records that leave out a field this server
	// may not have heard (see GhostVersion): of an actor it has not heard
	// whole, skipped, and of one it has heard nothing of for more than
	// GhostRepeat of the sender's ticks, applied over what it heard last.
	// The sender lists every actor whole within GhostKeyEvery of its
	// ticks, and in its next batch once asked: KeyRequests counts this
	// server's asking, KeyframesAsked the askings it took from its
	// neighbours.
	Unkeyed, KeyRequests, KeyframesAsked uint64
	// FencedTicks counts ticks in which the server held no zone.
	FencedTicks uint64
	// LoadReports counts the load reports published (Options.LoadEvery).
	LoadReports uint64
	// Ghosts is the number of ghosts in the world now.
	Ghosts int
	// Holds reports whether the server held its zone at its last tick,
	// and Revision the map revision it last ticked as of.
	Holds    bool
	Revision uint64
	// Lapsed reports whether the server's lease ran out (Options.Lease):
	// it could not read the map for that long, and does not hold its zone
	// until it can.
	Lapsed bool
	// Handoffs counts the hand-offs of actors to and from neighbours.
	Handoffs HandoffStats
	// Commands counts the commands forwarded to the owners of ghosts.
	Commands CommandStats
	// PlayersFiled counts the players who left filed in the player
	// directory as kept here, and PlayersNotFiled those the directory
	// could not be told of (NATS away until the server closed, or more
	// waiting than the queue holds): if they return, they are routed as
	// newcomers.
	PlayersFiled, PlayersNotFiled uint64
}

// CommandStats counts commands forwarded between zones ([Server.Forward]).
type CommandStats struct {
	// Sent counts commands this server sent: forwarded by its game, or
	// passed on to the new owner of an actor handed off meanwhile.
	Sent uint64
	// Arrived counts well-formed commands that reached this server, and
	// Received those of them delivered to its game.
	Arrived, Received uint64
	// Dropped counts messages that were not a well-formed command.
	Dropped uint64
	// Refused counts commands from a zone the map does not make a
	// neighbour, or sent as of a revision older than its current entry.
	Refused uint64
	// Lost counts commands for an actor this server no longer holds (and
	// does not hold as a ghost), or passed on too often.
	Lost uint64
}

// New makes srv the holder of zone opts.Zone: it reads the map from the
// bucket (which [PublishMap] must have written), checks that the map
// names opts.Name the zone's owner, subscribes to the zone's ghost
// subject on nc and adds the ghost systems to srv. Call it before srv's
// first tick; nc stays the caller's. Close stops it.
func New(ctx context.Context, srv *throng.Server, nc *nats.Conn, opts Options) (*Server, error) {
	if opts.Name == "" {
		return nil, errors.New("zone: Options.Name is required")
	}
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.StaleTicks <= 0 {
		opts.StaleTicks = DefaultStaleTicks
	}
	if opts.HandoffTimeout <= 0 {
		opts.HandoffTimeout = DefaultHandoffTimeout
	}
	if opts.LoadEvery == 0 {
		opts.LoadEvery = DefaultLoadEvery
	}
	if opts.Lease == 0 {
		opts.Lease = DefaultLease
	}
	if m := opts.HandoffMargin; !(m >= 0 && m < srv.World().ChunkSize()) {
		return nil, fmt.Errorf("zone: Options.HandoffMargin %v: from 0 to below the chunk size (%v)", m, srv.World().ChunkSize())
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "throng"
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("zone: %w", err)
	}
	watch, err := watchMap(ctx, js, opts.Bucket)
	if err != nil {
		return nil, err
	}
	if opts.Gateway != nil && srv.Transport() != wire.Transport(opts.Gateway) {
		watch.stop()
		return nil, errors.New("zone: Options.Gateway is not the server's transport")
	}
	if v := watch.load(); !v.holds(opts.Zone, opts.Name) {
		watch.stop()
		return nil, fmt.Errorf("zone: map revision %d does not name %q the owner of zone %d", v.revision, opts.Name, opts.Zone)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	players, err := playersBucket(ctx, js, opts.PlayersBucket)
	if err != nil {
		watch.stop()
		return nil, err
	}
	z := &Server{srv: srv, nc: nc, opts: opts, watch: watch, prefix: prefix, types: srv.SavedTypes(),
		period: time.Second / time.Duration(max(srv.Settings().TickRate, 1)), dir: newFiler(players, opts.Zone, srv.KeptPlayers())}
	world := srv.World()
	z.ghosts = ghosts{
		world:      world,
		transforms: ark.NewMap[components.Transform](world.Ark()),
		animations: ark.NewMap[components.Animation](world.Ark()),
		clients:    ark.NewMap[components.Client](world.Ark()),
		inputs:     ark.NewMap[components.MoveInput](world.Ark()),
		sources:    map[ID]*source{},
	}
	z.inbox.latest = map[ID]GhostBatch{}
	z.mail.lent, z.mail.seqs = map[remote]components.ActorID{}, map[remote]uint64{}
	z.pub.subjects = map[ID]string{}
	z.hand = handoffs{out: map[components.ActorID]*outgoing{}, committing: map[remote]components.ActorID{},
		retryAt: map[components.ActorID]uint64{}, in: map[remote]*incoming{}, takenAs: map[components.ActorID]remote{}, awaiting: map[components.ActorID]*incoming{},
		back: map[components.ActorID]returning{}, bounced: map[remote]uint64{}}
	z.dropStrays(watch.load())
	if err = z.subscribe(); err != nil {
		z.Close()
		return nil, fmt.Errorf("zone: subscribing: %w", err)
	}
	// The subscription is live once the server has it: from New's return
	// on, every batch sent to the zone reaches it.
	if err = flush(ctx, nc); err != nil {
		z.Close()
		return nil, fmt.Errorf("zone: subscribing: %w", err)
	}
	err = errors.Join(
		srv.AddSystem(&applySystem{z}, scheduler.After(systems.IngestName), scheduler.Before(systems.PrepareName)),
		srv.AddSystem(&publishSystem{z}, scheduler.After(systems.JoinName)))
	if err != nil {
		z.Close()
		return nil, err
	}
	return z, nil
}

// flushTimeout bounds the round trip to the NATS server that makes a new
// subscription live, when the caller's context sets no deadline (nats.go
// refuses to flush without one).
const flushTimeout = 10 * time.Second

// flush makes nc's subscriptions live at the NATS server, within ctx, or
// within flushTimeout when ctx has no deadline.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}

// dropStrays despawns, before the first tick, the actors without a client
// that stand outside the zone: a world loaded from a save holds the ghosts
// the neighbours had lent it then (their owners lend them again), and
// actors it was handing off when the save was taken (their new owners
// took them, or will have them again from their old owners' saves). Left
// in, each would be a second copy of a neighbour's actor.
func (z *Server) dropStrays(v *view) {
	me, _ := v.m.Zone(z.opts.Zone)
	g := &z.ghosts
	for _, cv := range g.world.Snapshot(nil) {
		if me.Reach(cv.Key) == 0 {
			continue
		}
		for r := range cv.Len() {
			if cv.Clients[r].Session == 0 {
				g.world.Despawn(cv.IDs[r])
			}
		}
	}
}

func (z *Server) subscribe() (err error) {
	if z.sub, err = z.nc.Subscribe(GhostSubject(z.prefix, z.opts.Zone), z.receive); err != nil {
		return err
	}
	if z.reqSub, err = z.nc.Subscribe(HandoffSubject(z.prefix, z.opts.Zone), z.receiveRequest); err != nil {
		return err
	}
	if z.ansSub, err = z.nc.Subscribe(answerSubject(z.prefix, z.opts.Zone), z.receiveAnswer); err != nil {
		return err
	}
	if z.keySub, err = z.nc.Subscribe(keySubject(z.prefix, z.opts.Zone), z.receiveKeyRequest); err != nil {
		return err
	}
	z.cmdSub, err = z.nc.Subscribe(CommandSubject(z.prefix, z.opts.Zone), z.receiveCommand)
	return err
}

// GhostSubject is the subject zone id receives its neighbours' ghost
// batches on.
func GhostSubject(prefix string, id ID) string {
	return prefix + ".ghosts." + strconv.Itoa(int(id))
}

// Close stops receiving batches and following the map. The systems stay
// in the throng.Server; ticks after Close publish nothing.
func (z *Server) Close() {
	for _, sub := range []*nats.Subscription{z.sub, z.reqSub, z.ansSub, z.cmdSub, z.keySub} {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
	z.watch.stop()
	z.dir.close()
	z.inbox.close()
	z.mail.mu.Lock()
	z.mail.closed = true
	z.mail.mu.Unlock()
	z.cmds.mu.Lock()
	z.cmds.closed = true
	z.cmds.mu.Unlock()
}

// Zone returns the zone the server was made to hold.
func (z *Server) Zone() ID { return z.opts.Zone }

// Stats returns the server's counts. It may be called from any
// goroutine.
func (z *Server) Stats() Stats {
	c := &z.stats
	var switches [8]uint64
	for i := range switches {
		switches[i] = c.h.switches[i].Load()
	}
	return Stats{
		BatchesSent: c.sent.Load(), ActorsSent: c.sentActors.Load(), BytesSent: c.sentBytes.Load(),
		BatchesReceived: c.received.Load(), Dropped: c.dropped.Load(), Refused: c.refused.Load(), Unkeyed: c.unkeyed.Load(),
		KeyRequests: c.keyRequests.Load(), KeyframesAsked: c.keysAsked.Load(),
		FencedTicks: c.fencedTicks.Load(), LoadReports: c.loadReports.Load(), Ghosts: int(c.ghosts.Load()),
		Holds: c.holds.Load(), Revision: c.revision.Load(), Lapsed: c.lapsed.Load(),
		Handoffs: HandoffStats{
			Started: c.h.Started.Load(), Committed: c.h.Committed.Load(), Refused: c.h.Refused.Load(),
			TimedOut: c.h.TimedOut.Load(), RolledBack: c.h.RolledBack.Load(),
			Taken: c.h.Taken.Load(), Declined: c.h.Declined.Load(),
			RequestsSent: c.h.RequestsSent.Load(), RequestsReceived: c.h.RequestsReceived.Load(),
			AnswersSent: c.h.AnswersSent.Load(), AnswersReceived: c.h.AnswersReceived.Load(),
			SessionsMoved: c.h.SessionsMoved.Load(), SessionsTaken: c.h.SessionsTaken.Load(), SessionsLost: c.h.SessionsLost.Load(),
			InputsMissed: c.h.InputsMissed.Load(), InputsDuplicated: c.h.InputsDuplicated.Load(),
			ComponentsLeft: c.h.ComponentsLeft.Load(), SwitchTicks: switches, Records: int(c.h.records.Load()),
		},
		Commands: CommandStats{Sent: c.cmdSent.Load(), Arrived: c.cmdArrived.Load(), Received: c.cmdReceived.Load(), Dropped: c.cmdDropped.Load(),
			Refused: c.cmdRefused.Load(), Lost: c.cmdLost.Load()},
		PlayersFiled: z.dir.filed.Load(), PlayersNotFiled: z.dir.failed.Load(),
	}
}

// Revision returns the newest map revision the server has read and
// whether that revision names it its zone's owner (and its lease has not
// run out: Options.Lease). The tick acts on what it says at the tick's
// start. It may be called from any goroutine.
func (z *Server) Revision() (revision uint64, holds bool) {
	v := z.watch.load()
	lapsed := z.opts.Lease >= 0 && z.watch.lapsed(z.opts.Lease)
	return v.revision, v.holds(z.opts.Zone, z.opts.Name) && !lapsed
}

// Heard returns the newest tick of a batch received from zone id, 0 if
// none: tests and tools wait on it to know a neighbour's tick arrived.
func (z *Server) Heard(id ID) uint64 {
	z.inbox.mu.Lock()
	defer z.inbox.mu.Unlock()
	return z.inbox.heard[id]
}

// inbox holds the newest batch from each neighbour until the next tick
// takes it: a batch that a newer one overtakes before then is never
// applied, since the newer says where its actors are now. NATS' delivery
// goroutine fills it; the tick goroutine empties it.
type inbox struct {
	mu     sync.Mutex
	latest map[ID]GhostBatch
	heard  map[ID]uint64
	closed bool
}

// receive is the subscription's handler: it decodes the batch strictly
// and keeps it if it is newer than what the inbox holds from its zone.
func (z *Server) receive(msg *nats.Msg) {
	b, err := DecodeGhosts(msg.Data)
	if err != nil || b.Zone == z.opts.Zone {
		z.stats.dropped.Add(1)
		return
	}
	in := &z.inbox
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed {
		return
	}
	if old, ok := in.latest[b.Zone]; ok && old.Tick >= b.Tick {
		return
	}
	// msg.Data is ours to keep (nats.go hands each message its own
	// buffer), so the batch may alias it.
	in.latest[b.Zone] = b
	if in.heard == nil {
		in.heard = map[ID]uint64{}
	}
	in.heard[b.Zone] = max(in.heard[b.Zone], b.Tick)
}

// take appends the batches received since the last take to dst, ordered
// by zone so that they are applied in the same order on every run.
func (in *inbox) take(dst []GhostBatch) []GhostBatch {
	in.mu.Lock()
	for _, b := range in.latest {
		dst = append(dst, b)
	}
	clear(in.latest)
	in.mu.Unlock()
	slices.SortFunc(dst, func(a, b GhostBatch) int { return int(a.Zone) - int(b.Zone) })
	return dst
}

func (in *inbox) close() {
	in.mu.Lock()
	in.closed = true
	in.mu.Unlock()
}
