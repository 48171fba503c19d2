package zone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Coordinator moves borders between zones to balance their load: it
// listens to the zone servers' load reports (Options.LoadEvery) and, when
// a zone's load (its actors, their pairs or its tick time:
// CoordinatorOptions.Measure) is much more than a neighbour's it shares a
// whole side with, gives that neighbour the column or row of chunks along
// the side, by writing the map (see [PlanMoveBy] for the rule). The
// servers do the rest as for any actor that stands in another zone's
// chunks: they hand the actors standing there to the zone that owns the
// chunks now, players with their sessions, without a blink.
//
// The map is written with a compare-and-set on the revision the move was
// planned from, so a coordinator never overwrites a map it has not read
// (another coordinator's move, an operator's edit); and it plans only
// from reports every zone sent as of the map's newest revision, so that
// after a move it waits until every zone has seen it and counted again.
// Run one per world; a second is harmless, only idle.
type Coordinator struct {
	nc   *nats.Conn
	kv   jetstream.KeyValue
	sub  *nats.Subscription
	opts CoordinatorOptions

	mu       sync.Mutex
	reports  map[ID]*LoadReport
	lastMove time.Time
	scratch  LoadReport

	received, dropped, moves, conflicts atomic.Uint64
}

// CoordinatorOptions configure a [Coordinator].
type CoordinatorOptions struct {
	// Bucket and Prefix are the zone servers' (Options.Bucket and
	// Options.Prefix); empty means the defaults.
	Bucket, Prefix string
	// Measure is the load balanced: the zones' actors (LoadActors, the
	// default), their pairs (LoadPairs) or their tick time (LoadWork).
	Measure LoadMeasure
	// Imbalance is how many times its neighbour's load a zone's must be
	// before it gives the neighbour chunks; 0 means 1.25.
	Imbalance float64
	// MinActors is the fewest actors a zone must hold to give chunks
	// away; 0 means 100. Below it, a zone is not worth splitting.
	MinActors uint32
	// Settle is how long after one of its moves the coordinator waits
	// before the next, for the hand-offs of the last to finish; 0 means
	// 5 seconds, a negative value not at all.
	Settle time.Duration
	// Logger receives the moves and the failures to write the map; nil
	// means slog.Default().
	Logger *slog.Logger
}

// LoadMeasure is what a coordinator balances.
type LoadMeasure uint8

const (
	// LoadActors balances the zones' own actors: right where the actors
	// are spread alike, and what a tick's per-actor work (inputs, moves,
	// hand-offs) grows with.
	LoadActors LoadMeasure = iota
	// LoadPairs balances the pairs their actors make with those in sight
	// (LoadReport.Pairs): what the relay's work grows with, so a zone
	// holding a dense crowd counts for more than one holding as many
	// actors spread out, and gives chunks first.
	LoadPairs
	// LoadWork balances the zone servers' tick time (LoadReport.Work),
	// each zone's shared out over its columns and rows by their pairs
	// (their actors, where it counts no pairs): the load as each host
	// bears it, the game's systems, the ghosts and a slower machine
	// included, but as noisy as a second's measurement.
	LoadWork
)

// String returns the measure's name: "actors", "pairs" or "work".
func (m LoadMeasure) String() string {
	switch m {
	case LoadPairs:
		return "pairs"
	case LoadWork:
		return "work"
	}
	return "actors"
}

// Move is a border moved: zone From gave zone To the rectangle of
// chunks Chunks (one column or row of From's), where its last report
// counted Actors of its actors; Revision is the map's revision after it.
type Move struct {
	From, To ID
	Chunks   Rect
	Actors   uint32
	Revision uint64
}

// CoordinatorStats are a coordinator's counts since it started.
type CoordinatorStats struct {
	// Reports counts the well-formed load reports received, Dropped the
	// messages that were not one.
	Reports, Dropped uint64
	// Moves counts the borders moved; Conflicts the moves not written
	// because the map changed after it was read.
	Moves, Conflicts uint64
}

// NewCoordinator starts listening to the zone servers' load reports. The
// map's bucket must exist (PublishMap made it). Close stops it; nc stays
// the caller's.
func NewCoordinator(ctx context.Context, nc *nats.Conn, opts CoordinatorOptions) (*Coordinator, error) {
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.Prefix == "" {
		opts.Prefix = "throng"
	}
	if opts.Imbalance == 0 {
		opts.Imbalance = 1.25
	}
	if opts.Measure > LoadWork {
		return nil, fmt.Errorf("zone: coordinator: unknown load measure %d", opts.Measure)
	}
	if opts.Imbalance < 1 {
		return nil, fmt.Errorf("zone: coordinator: Imbalance %v is below 1: every move would be undone by the next", opts.Imbalance)
	}
	if opts.MinActors == 0 {
		opts.MinActors = 100
	}
	if opts.Settle == 0 {
		opts.Settle = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("zone: coordinator: %w", err)
	}
	kv, err := js.KeyValue(ctx, opts.Bucket)
	if err != nil {
		return nil, fmt.Errorf("zone: coordinator: map bucket %q: %w", opts.Bucket, err)
	}
	c := &Coordinator{nc: nc, kv: kv, opts: opts, reports: map[ID]*LoadReport{}}
	if c.sub, err = nc.Subscribe(LoadSubject(opts.Prefix, "*"), c.receive); err != nil {
		return nil, fmt.Errorf("zone: coordinator: %w", err)
	}
	if err := flush(ctx, nc); err != nil {
		c.Close()
		return nil, fmt.Errorf("zone: coordinator: %w", err)
	}
	return c, nil
}

func (c *Coordinator) receive(msg *nats.Msg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := DecodeLoadReport(msg.Data, &c.scratch); err != nil {
		c.dropped.Add(1)
		return
	}
	r := c.reports[c.scratch.Zone]
	if r == nil {
		r = &LoadReport{}
		c.reports[c.scratch.Zone] = r
	}
	if c.scratch.Revision < r.Revision {
		c.received.Add(1)
		return // overtaken by a report as of a newer map
	}
	// The report keeps slices of its own: the scratch's are the next
	// decode's.
	cols, rows := append(r.Columns[:0], c.scratch.Columns...), append(r.Rows[:0], c.scratch.Rows...)
	colPairs, rowPairs := append(r.ColumnPairs[:0], c.scratch.ColumnPairs...), append(r.RowPairs[:0], c.scratch.RowPairs...)
	*r = c.scratch
	r.Columns, r.Rows, r.ColumnPairs, r.RowPairs = cols, rows, colPairs, rowPairs
	c.received.Add(1)
}

// Step plans one move from the newest map and reports and writes it. It
// reports whether it moved a border; no move is no error (the zones are
// balanced, a report is missing or older than the map, the last move has
// not settled, or the map changed meanwhile: counted in Conflicts).
func (c *Coordinator) Step(ctx context.Context) (Move, bool, error) {
	c.mu.Lock()
	settling := c.opts.Settle > 0 && time.Since(c.lastMove) < c.opts.Settle
	c.mu.Unlock()
	if settling {
		return Move{}, false, nil
	}
	e, err := c.kv.Get(ctx, mapKey)
	if err != nil {
		return Move{}, false, fmt.Errorf("zone: coordinator: reading the map: %w", err)
	}
	m, err := DecodeMap(e.Value())
	if err != nil {
		return Move{}, false, fmt.Errorf("zone: coordinator: revision %d: %w", e.Revision(), err)
	}
	c.mu.Lock()
	reports := make(map[ID]LoadReport, len(c.reports))
	for id, r := range c.reports {
		if r.Revision == e.Revision() {
			// A copy: receive reuses the report's slices.
			cp := *r
			cp.Columns, cp.Rows = slices.Clone(r.Columns), slices.Clone(r.Rows)
			cp.ColumnPairs, cp.RowPairs = slices.Clone(r.ColumnPairs), slices.Clone(r.RowPairs)
			reports[id] = cp
		}
	}
	c.mu.Unlock()
	next, mv, ok := PlanMoveBy(m, reports, c.opts.Measure, c.opts.Imbalance, c.opts.MinActors)
	if !ok {
		return Move{}, false, nil
	}
	data, err := json.Marshal(next)
	if err != nil {
		return Move{}, false, fmt.Errorf("zone: coordinator: %w", err)
	}
	rev, err := c.kv.Update(ctx, mapKey, data, e.Revision())
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			c.conflicts.Add(1)
			return Move{}, false, nil
		}
		return Move{}, false, fmt.Errorf("zone: coordinator: writing the map: %w", err)
	}
	mv.Revision = rev
	c.mu.Lock()
	c.lastMove = time.Now()
	c.mu.Unlock()
	c.moves.Add(1)
	c.opts.Logger.Info("zone: border moved", "from", mv.From, "to", mv.To, "chunks", mv.Chunks, "actors", mv.Actors, "revision", rev)
	return mv, true, nil
}

// Run steps every period until ctx is done, logging what fails.
func (c *Coordinator) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, _, err := c.Step(ctx); err != nil && ctx.Err() == nil {
				c.opts.Logger.Warn("zone: coordinator", "err", err)
			}
		}
	}
}

// Stats returns the coordinator's counts; any goroutine may call it.
func (c *Coordinator) Stats() CoordinatorStats {
	return CoordinatorStats{Reports: c.received.Load(), Dropped: c.dropped.Load(), Moves: c.moves.Load(), Conflicts: c.conflicts.Load()}
}

// Close stops listening.
func (c *Coordinator) Close() {
	if c.sub != nil {
		_ = c.sub.Unsubscribe()
	}
}

// PlanMove is [PlanMoveBy] balancing the zones' actors (LoadActors).
func PlanMove(m Map, reports map[ID]LoadReport, imbalance float64, minActors uint32) (Map, Move, bool) {
	return PlanMoveBy(m, reports, LoadActors, imbalance, minActors)
}

// PlanMoveBy decides the one border move that balances m best, by the
// load measure names (the zones' actors, their pairs or their tick
// time), from each zone's load report as of m (zones without one, or
// with one that does not count their rectangle by that measure, are left
// alone), and returns the map after it. A zone may give a neighbour the
// column or row of its chunks along a side the two share whole (same
// extent, so that both stay rectangles), if it keeps at least one column
// or row, holds at least minActors actors and more than imbalance times
// the neighbour's load, and the larger of the two loads after the move
// (the strip's counted on the other side) is below the larger before: so
// a move never just swaps which side is heavy, and the sum of the squared
// loads falls with every move (borders settle rather than swing). Of the
// moves allowed, the one that lowers that larger load most is taken, ties
// by the order of m's zones.
func PlanMoveBy(m Map, reports map[ID]LoadReport, measure LoadMeasure, imbalance float64, minActors uint32) (Map, Move, bool) {
	var best Move
	var rest Rect
	var bestGain uint64
	found := false
	for _, a := range m.Zones {
		ra, ok := reports[a.ID]
		if !ok || !sameShape(ra, a, measure) || ra.Actors < minActors {
			continue
		}
		la := ra.load(measure)
		for _, b := range m.Zones {
			rb, ok := reports[b.ID]
			if b.ID == a.ID || b.WorldOrCell != a.WorldOrCell || !ok || !sameShape(rb, b, measure) {
				continue
			}
			lb := rb.load(measure)
			if float64(la) <= imbalance*float64(lb) {
				continue
			}
			strip, left, edge, ok := sideStrip(a.Chunks, b.Chunks)
			if !ok {
				continue
			}
			n := ra.strip(edge, measure)
			if n > la {
				continue // a report whose strip holds more than its zone: not one of a server's
			}
			if after := max(la-n, lb+n); after < la { // la > lb: la is the larger before
				if gain := la - after; gain > bestGain {
					actors := uint32(ra.strip(edge, LoadActors))
					best, rest, bestGain, found = Move{From: a.ID, To: b.ID, Chunks: strip, Actors: actors}, left, gain, true
				}
			}
		}
	}
	if !found {
		return m, Move{}, false
	}
	next := Map{Zones: slices.Clone(m.Zones)}
	for i := range next.Zones {
		z := &next.Zones[i]
		switch z.ID {
		case best.From:
			z.Chunks = rest
		case best.To:
			z.Chunks = grow(z.Chunks, best.Chunks)
		}
	}
	return next, best, true
}

// sameShape reports whether r counts zone z's rectangle as it is: a
// count for each of its columns and rows, and a pair count for each when
// the measure reads them (pairs, work).
func sameShape(r LoadReport, z Zone, measure LoadMeasure) bool {
	w, h := int(int64(z.Chunks.MaxX)-int64(z.Chunks.MinX)+1), int(int64(z.Chunks.MaxY)-int64(z.Chunks.MinY)+1)
	return r.Chunks == z.Chunks && len(r.Columns) == w && len(r.Rows) == h &&
		(measure == LoadActors || len(r.ColumnPairs) == w && len(r.RowPairs) == h)
}

// A side of a zone's rectangle, for its strip along it: sideStrip's
// answer, which LoadReport.strip reads the counts of.
type side uint8

const (
	eastSide side = iota
	westSide
	northSide
	southSide
)

// sideStrip returns the column or row of a's chunks along the side a
// shares whole with b, a without it, and which side it is; false when
// they share no whole side or a has but one column or row across it.
func sideStrip(a, b Rect) (strip, rest Rect, s side, ok bool) {
	sameRows := a.MinY == b.MinY && a.MaxY == b.MaxY
	sameCols := a.MinX == b.MinX && a.MaxX == b.MaxX
	strip, rest = a, a
	switch {
	case sameRows && int64(a.MaxX)+1 == int64(b.MinX) && a.MaxX > a.MinX:
		strip.MinX, rest.MaxX = a.MaxX, a.MaxX-1
		return strip, rest, eastSide, true
	case sameRows && int64(b.MaxX)+1 == int64(a.MinX) && a.MaxX > a.MinX:
		strip.MaxX, rest.MinX = a.MinX, a.MinX+1
		return strip, rest, westSide, true
	case sameCols && int64(a.MaxY)+1 == int64(b.MinY) && a.MaxY > a.MinY:
		strip.MinY, rest.MaxY = a.MaxY, a.MaxY-1
		return strip, rest, northSide, true
	case sameCols && int64(b.MaxY)+1 == int64(a.MinY) && a.MaxY > a.MinY:
		strip.MaxY, rest.MinY = a.MinY, a.MinY+1
		return strip, rest, southSide, true
	}
	return Rect{}, Rect{}, 0, false
}

// load is the zone's load by measure (LoadWork in microseconds).
func (r *LoadReport) load(measure LoadMeasure) uint64 {
	switch measure {
	case LoadPairs:
		return r.Pairs
	case LoadWork:
		return uint64(max(r.Work/time.Microsecond, 0))
	}
	return uint64(r.Actors)
}

// strip is the load by measure of the column or row along side s (r has
// the zone's shape: sameShape). By work, the zone's tick time times the
// strip's share of its pairs, or of its actors where it counts no pairs.
func (r *LoadReport) strip(s side, measure LoadMeasure) uint64 {
	if measure == LoadWork {
		part, whole := r.strip(s, LoadPairs), r.Pairs
		if whole == 0 {
			part, whole = r.strip(s, LoadActors), uint64(r.Actors)
		}
		if whole == 0 {
			return 0
		}
		hi, lo := bits.Mul64(r.load(LoadWork), part)
		if hi >= whole {
			// A quotient past 64 bits: a strip counting far more than its
			// zone, which PlanMoveBy leaves alone.
			return math.MaxUint64
		}
		q, _ := bits.Div64(hi, lo, whole)
		return q
	}
	if measure == LoadPairs {
		return along(s, r.ColumnPairs, r.RowPairs)
	}
	return uint64(along(s, r.Columns, r.Rows))
}

// along returns the count of the column or row along side s: the last
// or first of cols or rows.
func along[T uint32 | uint64](s side, cols, rows []T) T {
	switch s {
	case eastSide:
		return cols[len(cols)-1]
	case westSide:
		return cols[0]
	case northSide:
		return rows[len(rows)-1]
	}
	return rows[0]
}

// grow returns b with strip, which runs along one of its sides.
func grow(b, strip Rect) Rect {
	b.MinX, b.MinY = min(b.MinX, strip.MinX), min(b.MinY, strip.MinY)
	b.MaxX, b.MaxY = max(b.MaxX, strip.MaxX), max(b.MaxY, strip.MaxY)
	return b
}
