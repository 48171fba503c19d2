package systems

import (
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// Prop sight: which props each player is told about.
//
// A prop matters only near it, so a player sees the props within the prop
// radius R and is never told about one much farther. Each player has a
// sight point, where it stood when its props were last taken; the point is
// taken again, in the join, once the player is more than the slack d from
// it. A player sees a prop when the prop's place (what its viewers were
// last told: its MoveInput) lies within R+d of the player's sight point,
// in the same worldOrCell. The player is always within d of its point, so
//
//   - every prop within R of a player is in its sight, and
//   - no prop in its sight is farther than R+2d,
//
// at the end of every tick. Sight is a function of the points and the
// places alone, so the join tells each change exactly: when a sight point
// is taken again, the player is sent a Prop frame for each prop that came
// into sight and a Disappear for each that left it; when a prop changes
// (World.Update), every player who saw it or sees it now is sent the
// difference, the new state to those who see it. A prop that does not
// change costs nothing: no tick looks at it until a player's sight point
// moves near it.

// Defaults of the prop sight, in world units (about 70 to the metre where
// a 4096-unit chunk is 58.5 m): the radius is 80 m, the radius at which
// seed games of crowds among props held 200 players at 30 Hz; the slack
// an eighth of it, so that a walking player takes its sight again every
// few seconds.
const (
	DefaultPropRadiusUnits = 5600
	DefaultPropSlackUnits  = 700
)

// propSight is the join's state of prop sight: each session's sight
// point by session slot, the props' places by chunk, and the work of this
// tick's looks.
type propSight struct {
	reach, slack float32 // R+d and d
	points       []sightPoint
	// watching says the world had props when this tick's frame was
	// prepared: Move then marks the players past their slack (Frame.look).
	watching bool
	// places holds, per chunk, its props as told: a flat copy of their
	// MoveInputs that the looks read instead of querying Ark's tables. It
	// is built whole the first time it is needed (built), and a chunk is
	// built again when a prop changes in it (dirty, in the join).
	places placeIndex
	built  bool
	dirty  []grid.AreaKey
	views  []ecs.ChunkView
	gone   []uint32 // props whose Updated found them despawned: their Despawned is told already
	// looks are this tick's sessions whose sight is taken again, and
	// lookUnits their units on the pool (lookJob).
	looks     []look
	lookUnits []scheduler.Unit
	lookers   []looker
	job       lookJob
}

// propChunk is one chunk's props as told, with their x and y apart for
// the looks' distance checks.
type propChunk struct {
	props  []wire.Prop
	xs, ys []float32
	dirty  bool // listed in propSight.dirty
}

// sightPoint is where a session's props were last taken from.
type sightPoint struct {
	actor uint32 // the actor it was taken for; 0: none yet
	x, y  float32
	world uint32
}

// look is one session's sight taken again: from old to next.
type look struct {
	session   wire.SessionID
	old, next sightPoint
}

func (s sightPoint) sees(q *wire.Prop, reach float32) bool {
	if s.actor == 0 || s.world != q.WorldOrCell {
		return false
	}
	dx, dy := q.X-s.x, q.Y-s.y
	return dx*dx+dy*dy <= reach*reach
}

// configure fills in the prop sight's radius and slack.
func (ps *propSight) configure(radius, slack float32) {
	if !(radius > 0) {
		radius = DefaultPropRadiusUnits
	}
	if !(slack > 0) {
		slack = DefaultPropSlackUnits
	}
	ps.reach, ps.slack = radius+slack, slack
	ps.places.worlds = make(map[uint32]*placeGrid)
}

// minLooksToOffload is the fewest looks a tick hands to the pool; fewer
// run on the tick goroutine, where a pool pass's handoff would cost more
// than they do.
const minLooksToOffload = 32

// tellProps runs in the join after the actors' visibility: it tells the
// props' changes of this Apply to the players who see them, then takes
// again the sight points of the players who moved past the slack (and
// first takes those of players new to it), on the pool through t when
// there are many. A world without props skips it: the points it would
// take describe no prop either way.
func (p *Pipeline) tellProps(t *scheduler.Tick) {
	ps := &p.sight
	if p.world.Props() == 0 && !p.propChanged() {
		return
	}
	ps.gone = ps.gone[:0]
	for i := range p.report.Changes {
		if c := &p.report.Changes[i]; c.Prop {
			p.tellPropChange(c)
			p.stats.PropChanges++
		}
	}
	if len(ps.points) < len(p.slots) {
		ps.points = append(ps.points, make([]sightPoint, len(p.slots)-len(ps.points))...)
	}
	p.refreshPlaces()
	ps.looks = ps.looks[:0]
	// The players Move found past their slack, in the frame's order, then
	// those the Apply placed: new players, and teleported ones, at their
	// Transform now. In a tick whose frame was prepared before the world
	// had props, Move marked no one: every player is checked here.
	f := &p.frame
	if ps.watching {
		for a, past := range f.look {
			if past {
				p.lookFrom(int(f.slot[a]))
			}
		}
	} else {
		for slot := range p.slots {
			p.lookFrom(slot)
		}
	}
	for i := range p.report.Changes {
		if c := &p.report.Changes[i]; c.Session != 0 && (c.Kind == ecs.Spawned || c.Kind == ecs.Teleported) {
			if s := p.sessions[wire.SessionID(c.Session)]; s != nil {
				p.lookFrom(int(s.slot))
			}
		}
	}
	p.runLooks(t)
}

// lookFrom queues a look for the player of slot from where it stands now,
// if it is still playing and has moved past its slack since its sight
// point was taken (or has none yet).
func (p *Pipeline) lookFrom(slot int) {
	ps := &p.sight
	pt := &ps.points[slot]
	s := p.slots[slot]
	if s == nil || s.state != playing {
		pt.actor = 0
		return
	}
	tr := p.transforms.Get(s.entity)
	if pt.actor == s.actor.ID && pt.world == tr.WorldOrCell {
		if dx, dy := tr.X-pt.x, tr.Y-pt.y; dx*dx+dy*dy <= ps.slack*ps.slack {
			return
		}
	}
	if pt.actor != s.actor.ID {
		pt.actor = 0 // a new player, or a new one in the slot: it saw nothing
	}
	next := sightPoint{actor: s.actor.ID, x: tr.X, y: tr.Y, world: tr.WorldOrCell}
	ps.looks = append(ps.looks, look{session: s.id, old: *pt, next: next})
	*pt = next
}

// pastSlack reports whether the player of slot (actor id, at t) must take
// its prop sight again: it has none yet, or stands in another worldOrCell
// or farther than the slack from its sight point. Move calls it for every
// player (in parallel: the points change only in the join).
func (ps *propSight) pastSlack(slot, id uint32, t *components.Transform) bool {
	if int(slot) >= len(ps.points) {
		return true
	}
	pt := &ps.points[slot]
	dx, dy := t.X-pt.x, t.Y-pt.y
	return pt.actor != id || pt.world != t.WorldOrCell || dx*dx+dy*dy > ps.slack*ps.slack
}

// runLooks runs this tick's looks: in units of consecutive looks on the
// pool, each unit with its own buffer and counts, or all on the tick
// goroutine when they are few or t is nil. Each session's frames come
// from one look, so the split never changes a byte a client gets.
func (p *Pipeline) runLooks(t *scheduler.Tick) {
	ps := &p.sight
	n := 1
	if t != nil && !p.inline && len(ps.looks) >= minLooksToOffload {
		n = max(min(len(p.units), len(ps.looks)/(minLooksToOffload/2)), 1)
	}
	if len(ps.lookers) < n {
		ps.lookers = append(ps.lookers, make([]looker, n-len(ps.lookers))...)
	}
	ps.job = lookJob{p: p, n: n}
	if n == 1 {
		ps.job.RunUnit(0)
	} else {
		ps.lookUnits = ps.lookUnits[:0]
		for u := range n {
			ps.lookUnits = append(ps.lookUnits, scheduler.Unit{Key: lookKeySalt ^ uint64(u), Cost: float64(len(ps.looks) / n)})
		}
		t.Parallel(&ps.job, ps.lookUnits)
	}
	for u := range n {
		lk := &ps.lookers[u]
		p.stats.PropsSent += lk.props
		p.stats.Disappears += lk.disappears
		lk.props, lk.disappears = 0, 0
	}
}

// lookKeySalt keeps the looks' units apart from the join's other keys in
// the pool's cost table.
const lookKeySalt = 0x510e527fade682d1

// lookJob runs the looks: unit u the u-th of n slices of them.
type lookJob struct {
	p *Pipeline
	n int
}

func (j *lookJob) RunUnit(u int) {
	ps := &j.p.sight
	lk := &ps.lookers[u]
	for i := len(ps.looks) * u / j.n; i < len(ps.looks)*(u+1)/j.n; i++ {
		lk.look(j.p, &ps.looks[i])
	}
}

// looker is one unit's state: its frame buffer and what it sent.
type looker struct {
	out               []byte
	props, disappears int
}

// look tells one session what came into its sight and what left it as
// its point moved from l.old to l.next: it walks the props of the chunks
// around either point once, the square around both when they are near
// (the usual step), each square apart when they are not.
func (lk *looker) look(p *Pipeline, l *look) {
	lo, hi := p.sightChunks(l.next)
	if l.old.actor == 0 {
		lk.lookIn(p, l, lo, hi, nil)
		return
	}
	olo, ohi := p.sightChunks(l.old)
	if l.old.world == l.next.world && olo.X <= hi.X+1 && lo.X <= ohi.X+1 && olo.Y <= hi.Y+1 && lo.Y <= ohi.Y+1 {
		lo.X, lo.Y = min(lo.X, olo.X), min(lo.Y, olo.Y)
		hi.X, hi.Y = max(hi.X, ohi.X), max(hi.Y, ohi.Y)
		lk.lookIn(p, l, lo, hi, nil)
		return
	}
	lk.lookIn(p, l, lo, hi, nil)
	if l.old.world != l.next.world {
		lk.lookIn(p, l, olo, ohi, nil)
	} else {
		lk.lookIn(p, l, olo, ohi, &[2]grid.AreaKey{lo, hi})
	}
}

// lookIn compares, for every prop in the chunks from lo to hi (skipping
// those from skip[0] to skip[1]), whether l.old and l.next see it, and
// tells l.session the difference. A chunk that lies wholly within both
// sights, or wholly outside both, holds no difference and is passed over.
func (lk *looker) lookIn(p *Pipeline, l *look, lo, hi grid.AreaKey, skip *[2]grid.AreaKey) {
	reach := p.sight.reach
	r2, size := reach*reach, p.cfg.ChunkSize
	world := lo.WorldOrCell
	nx, ny := l.next.x, l.next.y
	if l.next.actor == 0 || l.next.world != world {
		nx, ny = inf, inf
	}
	ox, oy := l.old.x, l.old.y
	if l.old.actor == 0 || l.old.world != world {
		ox, oy = inf, inf
	}
	g := p.sight.places.worlds[world]
	if g == nil {
		return
	}
	for y := lo.Y; y <= hi.Y; y++ {
		for x := lo.X; x <= hi.X; x++ {
			if skip != nil && x >= skip[0].X && x <= skip[1].X && y >= skip[0].Y && y <= skip[1].Y {
				continue
			}
			bx, by := float32(x)*size, float32(y)*size
			inNew, outNew := boxInDisc(bx, by, size, nx, ny, r2)
			inOld, outOld := boxInDisc(bx, by, size, ox, oy, r2)
			if (inNew && inOld) || (outNew && outOld) {
				continue
			}
			c := g.at(x, y)
			if c == nil {
				continue
			}
			xs, ys := c.xs, c.ys[:len(c.xs)]
			for i, px := range xs {
				py := ys[i]
				dnx, dny, dox, doy := px-nx, py-ny, px-ox, py-oy
				sees, seen := dnx*dnx+dny*dny <= r2, dox*dox+doy*doy <= r2
				if sees == seen {
					continue
				}
				if sees {
					lk.out = wire.AppendProp(lk.out[:0], c.props[i])
					lk.props++
				} else {
					lk.out = wire.AppendDisappear(lk.out[:0], wire.Disappear{Actor: c.props[i].Actor})
					lk.disappears++
				}
				p.transport.SendReliable(l.session, lk.out)
			}
		}
	}
}

// inf stands for a sight point that sees nothing: every distance to it is
// infinite.
var inf = float32(math.Inf(1))

// boxInDisc reports whether the square of side size at (bx, by) lies
// wholly within the disc of squared radius r2 around (x, y), and whether
// wholly outside it. The square is taken a unit larger on every side, so
// that a prop that rounding put on a chunk's edge is never passed over.
func boxInDisc(bx, by, size, x, y, r2 float32) (in, out bool) {
	fx := max(x-bx, bx+size-x) + 1 // the farthest edge in x, and in y
	fy := max(y-by, by+size-y) + 1
	nx := max(bx-x-1, 0, x-(bx+size)-1) // the nearest, 0 within the box
	ny := max(by-y-1, 0, y-(by+size)-1)
	return fx*fx+fy*fy <= r2, nx*nx+ny*ny > r2
}

// refreshPlaces brings the props' places up to date for this tick's
// looks, on the tick goroutine (the looks only read them): all of them the
// first time, then the chunks where props changed.
func (p *Pipeline) refreshPlaces() {
	ps := &p.sight
	if !ps.built {
		ps.built = true
		ps.views = p.world.PropSnapshot(ps.views)
		for i := range ps.views {
			if i == 0 || ps.views[i].Key != ps.views[i-1].Key {
				ps.dirty = append(ps.dirty, ps.views[i].Key)
			}
		}
		clear(ps.views) // no column buffers kept past the tick
	}
	for _, key := range ps.dirty {
		c := ps.places.add(key)
		c.dirty = false
		c.props, c.xs, c.ys = c.props[:0], c.xs[:0], c.ys[:0]
		ps.views = p.world.PropsIn(key, ps.views[:0])
		for vi := range ps.views {
			v := &ps.views[vi]
			for r := range v.Inputs {
				in := &v.Inputs[r]
				c.props = append(c.props, propOf(v.IDs[r].ID, in))
				c.xs, c.ys = append(c.xs, in.X), append(c.ys, in.Y)
			}
		}
		clear(ps.views)
	}
	ps.dirty = ps.dirty[:0]
}

// placeIndex finds a chunk's places by its key: per worldOrCell, a dense
// grid over the chunks that ever held props, grown as they come, so that
// a look finds each of its chunks by arithmetic instead of hashing.
type placeIndex struct {
	worlds map[uint32]*placeGrid
}

// placeGrid is one worldOrCell's chunks from (x0, y0), w by h.
type placeGrid struct {
	x0, y0, w, h int32
	cells        []*propChunk
}

// at returns the places of chunk (x, y), or nil.
func (g *placeGrid) at(x, y int32) *propChunk {
	x, y = x-g.x0, y-g.y0
	if x < 0 || y < 0 || x >= g.w || y >= g.h {
		return nil
	}
	return g.cells[y*g.w+x]
}

// add returns the places of chunk key, made empty if it had none.
func (ix *placeIndex) add(key grid.AreaKey) *propChunk {
	g := ix.worlds[key.WorldOrCell]
	if g == nil {
		g = &placeGrid{x0: key.X, y0: key.Y}
		ix.worlds[key.WorldOrCell] = g
	}
	if c := g.at(key.X, key.Y); c != nil {
		return c
	}
	if key.X < g.x0 || key.Y < g.y0 || key.X >= g.x0+g.w || key.Y >= g.y0+g.h {
		g.grow(key.X, key.Y)
	}
	c := &propChunk{}
	g.cells[(key.Y-g.y0)*g.w+key.X-g.x0] = c
	return c
}

// grow widens g to hold chunk (x, y), with room to spare on the side it
// grew toward, so that a world discovered chunk by chunk regrows its grid
// a logarithmic number of times.
func (g *placeGrid) grow(x, y int32) {
	x0, y0, x1, y1 := g.x0, g.y0, g.x0+g.w, g.y0+g.h
	if g.w == 0 {
		x0, y0, x1, y1 = x, y, x+1, y+1
	}
	if x < x0 {
		x0 = x - (x1-x0)/2
	}
	if x >= x1 {
		x1 = x + 1 + (x1-x0)/2
	}
	if y < y0 {
		y0 = y - (y1-y0)/2
	}
	if y >= y1 {
		y1 = y + 1 + (y1-y0)/2
	}
	cells := make([]*propChunk, int(x1-x0)*int(y1-y0))
	for cy := range g.h {
		for cx := range g.w {
			cells[int(g.y0+cy-y0)*int(x1-x0)+int(g.x0+cx-x0)] = g.cells[cy*g.w+cx]
		}
	}
	g.x0, g.y0, g.w, g.h, g.cells = x0, y0, x1-x0, y1-y0, cells
}

// staleChunk lists chunk key's places to be built again, once.
func (ps *propSight) staleChunk(key grid.AreaKey) {
	if !ps.built {
		return // the first build takes every chunk
	}
	c := ps.places.add(key)
	if !c.dirty {
		c.dirty = true
		ps.dirty = append(ps.dirty, key)
	}
}

// sightChunks returns the corner chunks of the square of chunks that a
// sight point's reach touches.
func (p *Pipeline) sightChunks(pt sightPoint) (lo, hi grid.AreaKey) {
	r, size := p.sight.reach, p.cfg.ChunkSize
	lo = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x-r, size), Y: chunkOf(pt.y-r, size)}
	hi = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x+r, size), Y: chunkOf(pt.y+r, size)}
	return lo, hi
}

func chunkOf(v, size float32) int32 {
	return int32(math.Floor(float64(v / size)))
}

// propChanged reports whether this Apply changed a prop.
func (p *Pipeline) propChanged() bool {
	for i := range p.report.Changes {
		if p.report.Changes[i].Prop {
			return true
		}
	}
	return false
}

// tellPropChange tells one prop change to the players who see the prop,
// before or after it, and marks the places of its chunks out of date.
func (p *Pipeline) tellPropChange(c *ecs.Change) {
	ps := &p.sight
	ps.staleChunk(c.From)
	ps.staleChunk(c.To)
	was := wire.Prop{Actor: c.ID.ID, X: c.Last.X, Y: c.Last.Y, WorldOrCell: c.Last.WorldOrCell}
	switch c.Kind {
	case ecs.Spawned:
		e, ok := p.world.Entity(c.ID)
		if !ok { // despawned in the same Apply: no one was told of it
			ps.gone = append(ps.gone, c.ID.ID)
			return
		}
		msg := propOf(c.ID.ID, p.inputs.Get(e))
		for slot := range ps.points {
			if ps.points[slot].sees(&msg, ps.reach) {
				p.sendProp(slot, msg)
			}
		}
	case ecs.Updated:
		e, ok := p.world.Entity(c.ID)
		if !ok { // despawned later in the same Apply: its viewers lose it here
			ps.gone = append(ps.gone, c.ID.ID)
			p.tellGone(&was)
			return
		}
		msg := propOf(c.ID.ID, p.inputs.Get(e))
		for slot := range ps.points {
			pt := &ps.points[slot]
			if pt.sees(&msg, ps.reach) {
				p.sendProp(slot, msg)
			} else if pt.sees(&was, ps.reach) {
				p.sendPropGone(slot, c.ID.ID)
			}
		}
	case ecs.Despawned:
		for _, id := range ps.gone {
			if id == c.ID.ID {
				return
			}
		}
		p.tellGone(&was)
	}
}

// tellGone tells everyone who saw prop q.Actor at q that it is gone.
func (p *Pipeline) tellGone(q *wire.Prop) {
	ps := &p.sight
	for slot := range ps.points {
		if ps.points[slot].sees(q, ps.reach) {
			p.sendPropGone(slot, q.Actor)
		}
	}
}

// propOf is a prop's Prop frame: the place and flags it is told at.
func propOf(id uint32, in *components.MoveInput) wire.Prop {
	return wire.Prop{Actor: id, X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw, WorldOrCell: in.WorldOrCell, Flags: in.Flags}
}

// viewer returns the session of slot if it is the player whose sight
// point the slot holds: a session that left this tick, or a new one in its
// slot, is told nothing by the point of the last.
func (p *Pipeline) viewer(slot int) (wire.SessionID, bool) {
	s := p.slots[slot]
	if s == nil || s.state != playing || s.actor.ID != p.sight.points[slot].actor {
		return 0, false
	}
	return s.id, true
}

func (p *Pipeline) sendProp(slot int, msg wire.Prop) {
	if session, ok := p.viewer(slot); ok {
		p.out = wire.AppendProp(p.out[:0], msg)
		p.transport.SendReliable(session, p.out)
		p.stats.PropsSent++
	}
}

func (p *Pipeline) sendPropGone(slot int, id uint32) {
	if session, ok := p.viewer(slot); ok {
		p.sendDisappear(uint64(session), id)
	}
}
