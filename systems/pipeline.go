package systems

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/internal/idtable"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// Config is what the pipeline needs to know, resolved by the server from
// its Options.
type Config struct {
	// ChunkSize is the chunk edge in world units; also the longest step one
	// update may make.
	ChunkSize float32
	// TickRate is told to clients in Welcome.
	TickRate int
	// Tiers is the interest table; the zero value sends every update.
	Tiers interest.Tiers
	// Shards says how clusters are cut into work units.
	Shards ShardPlan
	// Parallel enables the pool; false runs Move and Relay inline on the
	// tick goroutine.
	Parallel bool
	// MinActorsToOffload: ticks with fewer actors run inline.
	MinActorsToOffload int
	// Protocol is the game protocol version clients must send in Hello.
	Protocol uint16
	// Limits caps what each client may send.
	Limits Limits
	// Throttle spaces far pairs of overloaded clusters; the zero value
	// never throttles. BudgetMicros is the wall-clock target of the
	// parallel phase (targetTickBudgetMicros) that pressure is measured
	// against.
	Throttle     interest.Throttle
	BudgetMicros int
	// PressWorkShare is the share of the tick period whole ticks must
	// take, smoothed, for pressure to rise (see ObserveWork); 0 means
	// DefaultPressWorkShare.
	PressWorkShare float64
	// MaxRecordsPerTick caps the records one client is sent per tick; the
	// rest are owed (interest.Backlog). 0 means no cap.
	MaxRecordsPerTick int
	// NearestSenders is how many of a client's nearest senders the budget
	// never thins: once its periods are stretched (a spread above 1),
	// they keep their tier period and are sent ahead of the cut
	// (relay_near.go). 0 to MaxNearestSenders, and at most
	// MaxRecordsPerTick; 0 turns it off.
	NearestSenders int
	// JoinAppears bounds the Hellos admitted in one tick by the appears
	// their joins cost (see joinFits); the rest wait their turn,
	// first come first served, so that a crowd arriving at once joins over
	// several ticks instead of in one tick of hundreds of milliseconds.
	// 0 means no limit.
	JoinAppears int
	// Admit decides whether a Hello is let in, as which player, and where
	// its actor spawns. A non-nil error refuses the session with the
	// error's text. Nil admits everyone as a guest at the origin of
	// worldOrCell 0.
	Admit func(h wire.Hello) (Entry, error)
	// SavedTypes are the game's components that a player's actor keeps
	// while the player is away (see Entry.Player).
	SavedTypes []save.Type
	// PropRadius is how near a player a prop must be to be in its sight,
	// and PropSlack how far the player moves before its sight is taken
	// again: a player sees every prop within PropRadius and none beyond
	// PropRadius + 2*PropSlack (see props.go). 0 means the defaults,
	// DefaultPropRadiusUnits and DefaultPropSlackUnits.
	PropRadius, PropSlack float32
	// Classes configures the relevance classes, by class
	// (components.Client.Class): Classes[k] is class k. A class past its
	// end follows Tiers, ranks 0, and has no radius of its own.
	Classes []Class
}

// Class is how the pipeline treats the actors of one relevance class.
type Class struct {
	// Tiers is the interest table a sender of the class follows, when
	// OwnTiers is set; else it follows Config.Tiers, the players' table.
	// For a prop class it spaces the nudges viewers hear (World.Nudge).
	Tiers    interest.Tiers
	OwnTiers bool
	// Rank orders the classes under a client's per-connection budget:
	// once the client's periods are stretched (its spread), a sender of
	// rank k is stretched 2^k times as much (rankedSpread), and while
	// records are owed it is offered at its pair weight (interest.Weight)
	// halved k times, never below 1. At equal distance a player (rank 0)
	// goes before an NPC (rank 1); weights stay within the tier table's
	// range, so interest.WaitBound still bounds every owed wait. Ranks act
	// only with a budget (Config.MaxRecordsPerTick).
	Rank uint8
	// Radius is how near a recipient the class's actors matter. A prop
	// within it is in a player's sight (0 means Config.PropRadius); an
	// actor the relay moves gets no update beyond it (0: everywhere in
	// the 3x3 chunk stencil), while its Appear and Disappear still follow
	// the stencil.
	Radius float32
}

// rankedWeight is weight under rank (see Class.Rank).
func rankedWeight(weight, rank uint8) uint8 {
	return max(weight>>min(rank, 7), 1)
}

// Entry is what Admit decides for a Hello it lets in.
type Entry struct {
	// Player names the player. When a named player leaves, its actor is
	// kept under the name (its Transform, Animation and SavedTypes
	// components), in saves too, and handed back when a Hello admitted
	// under the same name comes: the actor returns where it stood, as a
	// new actor (ActorIDs are never reused). "" admits a guest, whose
	// actor ends with its session. Admit should refuse a name already in
	// play: two sessions under one name each spawn, and the one that
	// leaves last is kept.
	Player string
	// Spawn is where the actor spawns, unless one is kept for Player.
	Spawn components.Transform
	// Class is the actor's relevance class (components.Client.Class):
	// ClassPlayer, or a game's own class for a player that others should
	// see by other tiers or rank (a spectator's camera, a rider).
	Class uint8
}

// TickStats is what one tick did, for the metrics line and Stats.
type TickStats struct {
	Tick            uint64
	Actors          int
	Clusters        int
	Biggest         int
	Units           int
	Relays          int64
	DatagramsOut    int
	BytesOut        int64
	Corrections     int
	Appears         int
	Disappears      int   // of actors and props
	PropsSent       int   // Prop frames: props come into sight or changed
	PropUpdates     int   // prop changes (World.Update, Nudge) this tick's join told, each to all who see the prop
	Throttled       int64 // pairs not sent this tick because of throttling
	Owed            int   // records owed to clients after this tick's cuts
	Pressure        int   // highest cluster pressure level this tick
	Waiting         int   // sessions waiting their turn to join (Config.JoinAppears)
	Parallel        time.Duration
	JoinTime        time.Duration
	Busy            time.Duration // summed Move and Relay unit time
	Malformed       uint64        // running totals from here down
	DroppedInputs   uint64
	StaleInputs     uint64
	RateLimited     uint64
	Kicked          uint64
	Rejected        uint64
	Refused         uint64
	NonFinite       uint64 // Transforms a game's system left not finite, put back (ecs.Finite)
	BusyRejections  uint64
	CorrectionsSent uint64
	Commands        uint64 // the game's commands handed to its systems (Pipeline.Commands)
	EventsSent      uint64 // the game's events sent (Pipeline.SendEvent)
}

// Pipeline runs Throng's tick over one world and one transport: Ingest,
// Prepare, Move, Relay and Join. The server drives it; its methods run on
// the tick goroutine except the Move and Relay jobs, which the pool runs.
type Pipeline struct {
	cfg       Config
	world     *ecs.World
	transport wire.Transport
	batcher   wire.BatchSender // transport's, when it has one
	laner     wire.LaneSender  // transport's, when it has one
	lanes     laneSet          // the lanes Relay units hold, with laner
	ahead     wire.SendAhead   // transport's, when it has one
	tiers     interest.Tiers   // the players' table, tierSets[0]
	// The kinds of sender: each distinct table and radius the classes
	// follow with, under the per-connection budget, each distinct rank;
	// the players' table at rank 0 first. A cell holds senders of one kind
	// (cell.kind, Frame.classSet). tierSets, kindRank and kindReach are
	// each kind's table, rank and radius.
	tierSets  []interest.Tiers
	kindRank  []uint8
	kindReach []float32 // each kind's radius, squared (Class.Radius); +Inf for none
	// kindBands is each kind's table for the vector kernels (the players'
	// first, chooseByTiers8's), kindLimits how many of its band limits
	// are finite.
	kindBands  []tierBands
	kindLimits []int
	// dense lays out the due keys (relay_dense.go); denseDue holds, for
	// each tier period p, (p - tick mod p) mod p this tick.
	dense    denseLayout
	denseDue [interest.FastPeriods]uint32
	// spreadKeys are the due keys of the spreads above 1 whose stretched
	// tier periods the dense walk can lay out (relay_dense.go); keyed[s]
	// is 1 plus the index of spread s's, when they are built this tick.
	spreadKeys []spreadKeys
	keyed      [256]uint8
	// byteKeys are the due bytes of the other spreads above 1 the dense
	// walk takes (relay_bytes.go), where bytesOK; byted[s] is 1 plus the
	// index of spread s's, when they are built this tick.
	byteKeys []byteKeys
	byted    [256]uint8
	bytesOK  bool
	maxRank  uint8 // the highest of kindRank
	// throttleEveryReach is a test hook: the relay works at every level of
	// pressure (relayLevel), and classify marks every class the throttle
	// distance reaches, even those whose periods it cannot lengthen at the
	// level, so their pairs go one by one.
	throttleEveryReach bool
	clock              *interest.Clock
	inputs             *ark.Map[components.MoveInput]
	transforms         *ark.Map[components.Transform]
	anims              *ark.Map[components.Animation]
	clients            *ark.Map[components.Client]

	frame          Frame
	move           moveJob
	relay          relayJob
	dueBuild       dueJob
	dueUnits       []scheduler.Unit
	boundJob       boundJob // the cells' boxes on the pool (bound)
	boundUnits     []scheduler.Unit
	units          []scheduler.Unit
	shardRelays    []int64
	shardThrottled []int64
	shardOwed      []int32
	shardMoveTime  []time.Duration
	shardRelayTime []time.Duration
	scratch        []relayScratch // per unit of Relay
	shardDatagrams []int32
	shardBytes     []int64
	longest        uint64 // longest period any pair can get
	owedRoom       int    // the most senders any unit's backlog round has had room for
	pressedSpread  int    // the longest spread pressure gives a recipient (see aimFor)
	inline         bool
	linking        bool // Move's units link the stencils (Frame.linkPart)
	tick           uint64
	busy           bool
	busySince      uint64 // elapsed when busy last turned on
	loads          clusterLoads
	parallelAt     time.Time

	// sessions are the transport's open sessions by id: ids come in
	// sequence, and ingest looks one up for every frame.
	sessions idtable.Table[wire.SessionID, *session]
	slotOf   idtable.Table[wire.SessionID, uint32] // each session's slot + 1 (frameFrom)
	// names holds the names of the players in play by session slot ("" for
	// guests), and kept the actors kept for players away, by name.
	names []string
	kept  map[string]*save.Kept
	left  []string // the players kept this tick (LeftThisTick)
	// The watched player (Watch), whether its relay ran this tick, what it
	// was sent and is owed (written by its relay unit), and Spectate's
	// scratch.
	watch, watched         uint32
	watchSent, watchOwed   []uint32
	spectGroup, spectShard []int32
	spectProps             []ecs.ChunkView
	slots                  []*session // by Client.Slot; nil when free
	freeSlots              []uint32
	closedSlots            []uint32     // freed once this tick's despawns are applied
	attaching              []attachment // sessions to take an actor in the join (Attach)
	attached               []*session   // those that took one in this join, for tellProps
	corrections            []*session
	commands               []Command // this tick's, see Pipeline.Commands
	eventMu                sync.Mutex
	eventBuf               []byte // SendEvent's, under eventMu
	eventsSent             uint64 // under eventMu; into Stats
	inbox                  []wire.Inbound
	waiting                []waitingHello // Hellos waiting for their turn, from waitHead on
	waitHead               int
	joins                  int           // Hellos admitted this tick
	joinSpent              int           // the appears this tick's joins cost (joinFits)
	rateTold               uint16        // the slowed rate (centihertz) last told the clients; 0 while at the nominal rate
	elapsed                uint64        // tick periods of time so far: ticks run and periods skipped (Skip)
	skipped                uint64        // periods skipped since the last tick, for elapsed
	buckets                []inputBucket // this tick's Move frames by session, see RouteInputs
	inputsAlone            bool          // ApplyInputs runs on the tick goroutine, every bucket in one unit
	inputsDirect           bool          // RouteInputs applies Move frames as they come
	minRouted              int           // the fewest sessions whose Move frames are routed (tests lower it)
	out                    []byte
	report                 ecs.ApplyReport
	vis                    visibility
	fan                    fanOut // the visibility news of the join, on their way out
	minFanned              int    // the fewest queued frames whose flush runs on the pool (tests lower it)
	alwaysList             bool   // build the due lists even when no recipient would read them (tests of the lists)
	sight                  propSight
	stats                  TickStats
}

// New returns a pipeline over world and transport.
func New(cfg Config, world *ecs.World, transport wire.Transport) (*Pipeline, error) {
	if world == nil || transport == nil {
		return nil, errors.New("systems: New needs a world and a transport")
	}
	if !(cfg.ChunkSize > 0) {
		return nil, errors.New("systems: chunk size must be positive")
	}
	if n := cfg.NearestSenders; n < 0 || n > MaxNearestSenders || cfg.MaxRecordsPerTick > 0 && n > cfg.MaxRecordsPerTick {
		return nil, fmt.Errorf("systems: NearestSenders must be 0 to %d and at most MaxRecordsPerTick (%d), got %d", MaxNearestSenders, cfg.MaxRecordsPerTick, n)
	}
	if cfg.Admit == nil {
		cfg.Admit = func(wire.Hello) (Entry, error) { return Entry{}, nil }
	}
	p := &Pipeline{
		cfg:        cfg,
		world:      world,
		transport:  transport,
		tiers:      cfg.Tiers,
		clock:      interest.NewClock(0),
		inputs:     ark.NewMap[components.MoveInput](world.Ark()),
		transforms: ark.NewMap[components.Transform](world.Ark()),
		anims:      ark.NewMap[components.Animation](world.Ark()),
		clients:    ark.NewMap[components.Client](world.Ark()),
		kept:       make(map[string]*save.Kept),
	}
	p.batcher, _ = transport.(wire.BatchSender)
	p.laner, _ = transport.(wire.LaneSender)
	p.ahead, _ = transport.(wire.SendAhead)
	p.minRouted = minInputsToOffload
	p.minFanned = minFannedToOffload
	p.move.p = p
	p.relay.p = p
	p.dueBuild = dueJob{f: &p.frame}
	if err := p.configureClasses(); err != nil {
		return nil, err
	}
	p.longest = uint64(max(p.longestTier(), cfg.Throttle.MaxLevel()+1))
	p.frame.due.setPeriods(p.tierSets)
	p.dense = layDense(p.frame.due.tierPeriods)
	p.spreadKeys = layKeyedSpreads(p.dense, p.frame.due.tierPeriods)
	for i := range p.tierSets {
		p.kindBands = append(p.kindBands, bandsOf(&p.tierSets[i]))
		p.kindLimits = append(p.kindLimits, finiteLimits(&p.kindBands[i]))
	}
	p.bytesOK = p.bytesLayout()
	p.pressedSpread = pressedSpread(p.longestTier())
	p.sight.configure(cfg.PropRadius, cfg.PropSlack, cfg.Classes)
	return p, nil
}

// configureClasses lays out cfg.Classes: the kinds of sender (tierSets,
// kindRank; the players' table at rank 0 first) and each class's kind and
// rank. Ranks make kinds only under a budget, the only place they act.
func (p *Pipeline) configureClasses() error {
	if len(p.cfg.Classes) > components.MaxClasses {
		return fmt.Errorf("systems: %d classes, at most components.MaxClasses (%d)", len(p.cfg.Classes), components.MaxClasses)
	}
	// A kind's table is its tier table and its radius: the kinds of one
	// table share a sparse chunk's cell (bucketBySet).
	type table struct {
		tiers  interest.Tiers
		reach2 float32 // the radius squared; +Inf for none
	}
	type kind struct {
		table
		rank uint8
	}
	inf := float32(math.Inf(1))
	kinds := []kind{{table{p.tiers, inf}, 0}}
	for k := range components.MaxClasses {
		var c Class
		if k < len(p.cfg.Classes) {
			c = p.cfg.Classes[k]
		}
		want := kind{table{p.tiers, inf}, 0}
		if c.OwnTiers {
			want.tiers = c.Tiers
		}
		if c.Radius > 0 {
			want.reach2 = c.Radius * c.Radius
		}
		if p.cfg.MaxRecordsPerTick > 0 {
			want.rank = min(c.Rank, 7)
		}
		at := slices.Index(kinds, want)
		if at < 0 {
			at = len(kinds)
			kinds = append(kinds, want)
		}
		p.frame.classSet[k] = uint8(at)
	}
	p.tierSets, p.kindRank, p.kindReach = p.tierSets[:0], p.kindRank[:0], p.kindReach[:0]
	var tables []table
	for i, k := range kinds {
		p.tierSets = append(p.tierSets, k.tiers)
		p.kindRank = append(p.kindRank, k.rank)
		p.kindReach = append(p.kindReach, k.reach2)
		at := slices.Index(tables, k.table)
		if at < 0 {
			at = len(tables)
			tables = append(tables, k.table)
		}
		p.frame.kindTable[i] = uint8(at)
		p.frame.tableKind[i] = uint8(slices.IndexFunc(kinds, func(o kind) bool { return o.table == k.table }))
		p.frame.anyRanked = p.frame.anyRanked || k.rank > 0
		p.maxRank = max(p.maxRank, k.rank)
	}
	p.frame.tables = len(tables)
	p.frame.sets = len(kinds)
	return nil
}

// rankedSpread is the spread at which a recipient at spread takes the
// senders of kind: under the budget (a spread above 1, the recipient's
// due records past it) a kind of rank k has its periods stretched 2^k
// times as much as rank 0's, so that at equal distance a player is sent
// more often than an NPC of rank 1; without a budget it changes nothing.
func (p *Pipeline) rankedSpread(kind, spread uint8) uint8 {
	if spread <= 1 {
		return spread
	}
	return uint8(min(int(spread)<<p.kindRank[kind], 255))
}

// ranked reports whether cell ci's senders are decided one by one by
// rankedPairs for a recipient at spread: a ranked kind, or a sparse cell
// holding one (cell.mixed), while a spread makes ranks count.
func (p *Pipeline) ranked(ci int32, spread uint8) bool {
	c := &p.frame.cells[ci]
	return spread > 1 && (p.kindRank[c.kind] > 0 || c.mixed)
}

// rankedPairs writes the senders of cell ci (see ranked), whose class
// from r's cell is class, due to recipient r at spread, each at its
// kind's rankedSpread, pair by pair; want and rhalf are r's residues
// (interest.Clock.Want) and recipient half. Ranked kinds are the few
// senders of a game's lower classes, or a sparse chunk's: the lists, built
// for the recipients' spreads, do not cover their longer periods. Where no
// period reaches the cap of 255, every one is a multiple of spread, so a
// sender off the spread's phase is passed over before its distance is
// taken; the class gives a pair's tier period as chooseBased takes it.
func (p *Pipeline) rankedPairs(w *batchOut, r, ci int32, spread uint8, class cellClass, want *interest.Residues, rhalf uint32) {
	if class.beyond {
		return
	}
	f := &p.frame
	c := &f.cells[ci]
	tiers := &p.tierSets[c.kind] // every kind of the cell follows its table and radius
	cut := p.kindReach[c.kind]
	rx, ry, rz, tick := f.x[r], f.y[r], f.z[r], f.Tick
	uncapped := int(tiers.Longest())*int(spread)<<p.maxRank <= 255
	for a := c.actors.lo; a < c.actors.hi; a++ {
		ch := f.changed[a]
		if ch == 0 || a == r || ch+255 <= tick || uncapped && !p.due(&f.res[a], want, spread, f.half[a], rhalf) {
			continue
		}
		sp := p.rankedSpread(f.classSet[f.class[a]], spread)
		dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
		d := dx*dx + dy*dy + dz*dz
		if d >= cut {
			continue
		}
		tp := class.near
		if d >= class.edge {
			tp = class.far
		}
		if tp == 0 { // no class: the table decides
			tp = tiers.PeriodSq(d)
		}
		period := stretch(tp, sp)
		if ch+uint64(period) <= tick || period > 1 && !p.due(&f.res[a], want, period, f.half[a], rhalf) {
			continue
		}
		w.one(a)
	}
}

// longestTier is the longest period any class's table gives.
func (p *Pipeline) longestTier() uint8 {
	longest := uint8(1)
	for i := range p.tierSets {
		longest = max(longest, p.tierSets[i].Longest())
	}
	return longest
}

// tiersOf returns the table cell ci's senders follow.
func (p *Pipeline) tiersOf(ci int32) *interest.Tiers { return &p.tierSets[p.frame.cells[ci].kind] }

// Skip tells the pipeline that the server skipped n tick periods without
// a tick (it fell behind its rate): the clients' rate limits count time in
// tick periods, and a client sending at its limit sent through those
// periods too.
func (p *Pipeline) Skip(n uint64) { p.skipped += n }

// slowedShare is the share of the nominal tick rate below which a server
// counts as slowed and tells its clients the rate it ticks at (TellRate).
const slowedShare = 0.95

// TellRate tells every playing client the rate the server ticked at over
// the last second (centihertz, hundredths of a Hz), in a Rate frame, while
// that is below slowedShare of the nominal rate; once it is back, it tells
// them the nominal rate once. A client admitted while the server is slowed
// gets the latest rate right after its Welcome. The server calls it once a
// second.
func (p *Pipeline) TellRate(centihertz uint16) {
	nominal := uint16(min(p.cfg.TickRate*100, 0xffff))
	slowed := float64(centihertz) < slowedShare*float64(nominal)
	if !slowed && p.rateTold == 0 {
		return
	}
	p.rateTold = 0
	if slowed {
		p.rateTold = max(centihertz, 1)
	} else {
		centihertz = nominal
	}
	p.out = wire.AppendRate(p.out[:0], wire.Rate{Nominal: uint16(p.cfg.TickRate), Centihertz: centihertz})
	p.sessions.Each(func(id wire.SessionID, s *session) {
		if s.state == playing && !s.kicked {
			p.transport.SendReliable(id, p.out)
		}
	})
}

// SetBusy tells Ingest whether admission control is turning new sessions
// away (the server decides from its work per tick).
func (p *Pipeline) SetBusy(busy bool) {
	if busy && !p.busy {
		p.busySince = p.elapsed
	}
	p.busy = busy
}

// Stats returns what the last completed tick did.
func (p *Pipeline) Stats() TickStats {
	st := p.stats
	p.eventMu.Lock()
	st.EventsSent = p.eventsSent // systems after the join send events too
	p.eventMu.Unlock()
	return st
}

// Changes returns what this tick's join did to actors (ecs.ApplyReport):
// spawns (players admitted this tick, NPCs), despawns (players who left,
// actors removed), chunk moves and teleports, in the order they were
// applied. Valid until the next tick's join.
func (p *Pipeline) Changes() []ecs.Change { return p.report.Changes }

// Players returns the number of sessions in play or joining.
func (p *Pipeline) Players() int { return p.sessions.Len() }

// prepare snapshots the world for tick (see Frame.prepare) and plans the
// units of Move and Relay.
func (p *Pipeline) prepare(t *scheduler.Tick) {
	tick := t.Number
	p.watched = 0 // the relay sets it again if the watched player is in
	p.mergeInputs()
	// The join's snapshot, when nothing has changed the world's shape
	// since: its views are those a Snapshot would copy again (a megabyte
	// in a world of thousands of chunks).
	if p.vis.fresh && p.world.SnapshotGen() == p.vis.gen {
		p.frame.views, p.vis.views = p.vis.views, p.frame.views
	} else {
		p.frame.views = p.world.Snapshot(p.frame.views)
	}
	p.vis.fresh = false
	p.layOut(t)
	p.sight.watching = p.world.Props() > 0
	p.clock.Set(tick)
	for _, tp := range p.frame.due.tierPeriods {
		p.denseDue[tp%interest.FastPeriods] = tickDue(tp, tick)
	}
	p.units = p.units[:0]
	for _, sh := range p.frame.shards {
		p.units = append(p.units, scheduler.Unit{Key: sh.Key, Cost: float64(sh.Hi - sh.Lo)})
	}
	n := len(p.units)
	p.shardRelays = resizeSlice(p.shardRelays, n)
	p.shardThrottled = resizeSlice(p.shardThrottled, n)
	p.shardMoveTime = resizeSlice(p.shardMoveTime, n)
	p.shardRelayTime = resizeSlice(p.shardRelayTime, n)
	clear(p.shardRelays)
	clear(p.shardThrottled)
	clear(p.shardMoveTime)
	clear(p.shardRelayTime)
	p.shardDatagrams = resizeSlice(p.shardDatagrams, n)
	p.shardBytes = resizeSlice(p.shardBytes, n)
	p.shardOwed = resizeSlice(p.shardOwed, n)
	clear(p.shardDatagrams)
	clear(p.shardBytes)
	clear(p.shardOwed)
	if len(p.scratch) < n {
		p.scratch = append(p.scratch, make([]relayScratch, n-len(p.scratch))...)
	}
	p.loads.levelsFor(&p.frame)
	p.inline = !p.offloads()
	// A big world's stencils are linked by Move's units, beside its
	// shards: the links are first read by the relay.
	p.linking = !p.inline && len(p.frame.links) > 1
	if !p.linking {
		p.frame.linkRest()
	}
	p.stats.Tick = tick
	p.stats.Actors = p.frame.Len()
	p.stats.Clusters, p.stats.Biggest = p.frame.Clusters()
	p.stats.Units = len(p.units)
}

// layOut is Frame.prepare, leaving the placing of the actors to Move's
// units, each its own shard's, in a world of thousands of chunks on the
// pool (Frame.deferPlace): on the tick goroutine it would be a tenth of a
// millisecond of Prepare, and a pass of the pool of its own would cost
// about what it saves on a few cores.
func (p *Pipeline) layOut(t *scheduler.Tick) {
	f := &p.frame
	f.begin(p.world, t.Number, p.cfg.Shards)
	f.deferPlace = p.offloads() && len(f.groups) >= deferPlaceChunks
	if !f.deferPlace {
		f.placeRange(0, int32(f.Len()), &f.layoutCounts)
	}
	f.end(p.cfg.Shards)
}

// offloads reports whether this tick's frame goes to the pool.
func (p *Pipeline) offloads() bool {
	return p.cfg.Parallel && p.frame.Len() >= p.cfg.MinActorsToOffload
}

// SetShardsPerCluster sets the most shards one cluster is cut into, from
// the next Prepare on (the server sets it from the pool size each tick).
func (p *Pipeline) SetShardsPerCluster(n int) { p.cfg.Shards.ShardsPerCluster = n }
