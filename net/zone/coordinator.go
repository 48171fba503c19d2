package zone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A Coordinator moves borders between zones to balance their load: it
// listens to the zone servers' load reports (Options.LoadEvery) and, when
// a zone holds many more actors than a neighbour it shares a whole side
// with, gives that neighbour the column or row of chunks along the side,
// by writing the map (see [PlanMove] for the rule). The servers do the
// rest as for any actor that stands in another zone's chunks: they hand
// the actors standing there to the zone that owns the chunks now,
// players with their sessions, without a blink.
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
	// Imbalance is how many times the actors of its neighbour a zone must
	// hold before it gives the neighbour chunks; 0 means 1.25.
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
	cols, rows := append(r.Columns[:0], c.scratch.Columns...), append(r.Rows[:0], c.scratch.Rows...)
	*r = c.scratch
	r.Columns, r.Rows = cols, rows
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
			reports[id] = cp
		}
	}
	c.mu.Unlock()
	next, mv, ok := PlanMove(m, reports, c.opts.Imbalance, c.opts.MinActors)
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

// PlanMove decides the one border move that balances m best, from each
// zone's load report as of m (zones without one are left alone), and
// returns the map after it. A zone may give a neighbour the column or row
// of its chunks along a side the two share whole (same extent, so that
// both stay rectangles), if it keeps at least one column or row, holds at
// least minActors actors and more than imbalance times the neighbour's,
// and the larger of the two loads after the move (the strip's actors
// counted on the other side) is below the larger before: so a move never
// just swaps which side is heavy, and the sum of the squared loads falls
// with every move (borders settle rather than swing). Of the moves
// allowed, the one that lowers that larger load most is taken, ties by
// the order of m's zones.
func PlanMove(m Map, reports map[ID]LoadReport, imbalance float64, minActors uint32) (Map, Move, bool) {
	var best Move
	var rest Rect
	var bestGain int64
	found := false
	for _, a := range m.Zones {
		ra, ok := reports[a.ID]
		if !ok || !sameShape(ra, a) || ra.Actors < minActors {
			continue
		}
		for _, b := range m.Zones {
			rb, ok := reports[b.ID]
			if b.ID == a.ID || b.WorldOrCell != a.WorldOrCell || !ok || float64(ra.Actors) <= imbalance*float64(rb.Actors) {
				continue
			}
			strip, left, n, ok := sideStrip(a.Chunks, b.Chunks, ra)
			if !ok {
				continue
			}
			la, lb := int64(ra.Actors), int64(rb.Actors)
			gain := max(la, lb) - max(la-int64(n), lb+int64(n))
			if gain > bestGain {
				best, rest, bestGain, found = Move{From: a.ID, To: b.ID, Chunks: strip, Actors: n}, left, gain, true
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

// sameShape reports whether r counts zone z's rectangle as it is.
func sameShape(r LoadReport, z Zone) bool {
	return r.Chunks == z.Chunks && len(r.Columns) == int(int64(z.Chunks.MaxX)-int64(z.Chunks.MinX)+1) &&
		len(r.Rows) == int(int64(z.Chunks.MaxY)-int64(z.Chunks.MinY)+1)
}

// sideStrip returns the column or row of a's chunks along the side a
// shares whole with b, a without it, and the actors r counts there; false
// when they share no whole side or a has but one column or row across it.
func sideStrip(a, b Rect, r LoadReport) (strip, rest Rect, n uint32, ok bool) {
	sameRows := a.MinY == b.MinY && a.MaxY == b.MaxY
	sameCols := a.MinX == b.MinX && a.MaxX == b.MaxX
	strip, rest = a, a
	switch {
	case sameRows && int64(a.MaxX)+1 == int64(b.MinX) && a.MaxX > a.MinX:
		strip.MinX, rest.MaxX = a.MaxX, a.MaxX-1
		return strip, rest, r.Columns[len(r.Columns)-1], true
	case sameRows && int64(b.MaxX)+1 == int64(a.MinX) && a.MaxX > a.MinX:
		strip.MaxX, rest.MinX = a.MinX, a.MinX+1
		return strip, rest, r.Columns[0], true
	case sameCols && int64(a.MaxY)+1 == int64(b.MinY) && a.MaxY > a.MinY:
		strip.MinY, rest.MaxY = a.MaxY, a.MaxY-1
		return strip, rest, r.Rows[len(r.Rows)-1], true
	case sameCols && int64(b.MaxY)+1 == int64(a.MinY) && a.MaxY > a.MinY:
		strip.MaxY, rest.MinY = a.MinY, a.MinY+1
		return strip, rest, r.Rows[0], true
	}
	return Rect{}, Rect{}, 0, false
}

// grow returns b with strip, which runs along one of its sides.
func grow(b, strip Rect) Rect {
	b.MinX, b.MinY = min(b.MinX, strip.MinX), min(b.MinY, strip.MinY)
	b.MaxX, b.MaxY = max(b.MaxX, strip.MaxX), max(b.MaxY, strip.MaxY)
	return b
}
