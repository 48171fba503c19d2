package systems

import (
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
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
// a 4096-unit chunk is 58.5 m): the radius is 80 m, the radius seed games
// of crowds and props held 200 players at 30 Hz with; the slack an eighth
// of it, so that a walking player takes its sight again every few seconds.
const (
	DefaultPropRadiusUnits = 5600
	DefaultPropSlackUnits  = 700
)

// propSight is the join's state of prop sight: each session's sight
// point, by session slot, and the scratch of one look.
type propSight struct {
	reach, slack float32 // R+d and d
	points       []sightPoint
	views        []ecs.ChunkView
	gone         []uint32 // props whose Updated found them despawned: their Despawned is told already
}

// sightPoint is where a session's props were last taken from.
type sightPoint struct {
	actor uint32 // the actor it was taken for; 0: none yet
	x, y  float32
	world uint32
}

// place is where a prop stands for its viewers.
type place struct {
	x, y  float32
	world uint32
}

func (s sightPoint) sees(q place, reach float32) bool {
	if s.actor == 0 || s.world != q.world {
		return false
	}
	dx, dy := q.x-s.x, q.y-s.y
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
}

// tellProps runs in the join after the actors' visibility: it tells the
// props' changes of this Apply to the players who see them, then takes
// again the sight points of the players who moved past the slack (and
// first takes those of players new to it). A world without props skips
// it: the points it would take describe no prop either way.
func (p *Pipeline) tellProps() {
	ps := &p.sight
	if p.world.Props() == 0 && !p.propChanged() {
		return
	}
	ps.gone = ps.gone[:0]
	for i := range p.report.Changes {
		if c := &p.report.Changes[i]; c.Prop {
			p.tellPropChange(c)
		}
	}
	if len(ps.points) < len(p.slots) {
		ps.points = append(ps.points, make([]sightPoint, len(p.slots)-len(ps.points))...)
	}
	for slot, s := range p.slots {
		pt := &ps.points[slot]
		if s == nil || s.state != playing {
			pt.actor = 0
			continue
		}
		t := p.transforms.Get(s.entity)
		if pt.actor == s.actor.ID && pt.world == t.WorldOrCell {
			dx, dy := t.X-pt.x, t.Y-pt.y
			if dx*dx+dy*dy <= ps.slack*ps.slack {
				continue
			}
		}
		if pt.actor != s.actor.ID {
			pt.actor = 0 // a new player, or a new one in the slot: it saw nothing
		}
		p.lookAgain(s, pt, sightPoint{actor: s.actor.ID, x: t.X, y: t.Y, world: t.WorldOrCell})
	}
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
// before or after it.
func (p *Pipeline) tellPropChange(c *ecs.Change) {
	ps := &p.sight
	was := place{c.Last.X, c.Last.Y, c.Last.WorldOrCell}
	switch c.Kind {
	case ecs.Spawned:
		e, ok := p.world.Entity(c.ID)
		if !ok { // despawned in the same Apply: no one was told of it
			ps.gone = append(ps.gone, c.ID.ID)
			return
		}
		msg := p.propOf(c.ID.ID, p.inputs.Get(e))
		now := place{msg.X, msg.Y, msg.WorldOrCell}
		for slot := range ps.points {
			if ps.points[slot].sees(now, ps.reach) {
				p.sendProp(slot, msg)
			}
		}
	case ecs.Updated:
		e, ok := p.world.Entity(c.ID)
		if !ok { // despawned later in the same Apply: its viewers lose it here
			ps.gone = append(ps.gone, c.ID.ID)
			p.tellGone(c.ID.ID, was)
			return
		}
		msg := p.propOf(c.ID.ID, p.inputs.Get(e))
		now := place{msg.X, msg.Y, msg.WorldOrCell}
		for slot := range ps.points {
			pt := &ps.points[slot]
			if pt.sees(now, ps.reach) {
				p.sendProp(slot, msg)
			} else if pt.sees(was, ps.reach) {
				p.sendPropGone(slot, c.ID.ID)
			}
		}
	case ecs.Despawned:
		for _, id := range ps.gone {
			if id == c.ID.ID {
				return
			}
		}
		p.tellGone(c.ID.ID, was)
	}
}

// tellGone tells everyone who saw prop id at q that it is gone.
func (p *Pipeline) tellGone(id uint32, q place) {
	ps := &p.sight
	for slot := range ps.points {
		if ps.points[slot].sees(q, ps.reach) {
			p.sendPropGone(slot, id)
		}
	}
}

// lookAgain moves a session's sight point from *pt to next and tells it
// the props that came into its sight and left it: it walks the props of
// the chunks around both points, those around the old one only where they
// are not around the new one.
func (p *Pipeline) lookAgain(s *session, pt *sightPoint, next sightPoint) {
	old := *pt
	*pt = next
	lo, hi := p.sightChunks(next)
	p.lookIn(s, old, next, lo, hi, nil)
	if old.actor != 0 {
		olo, ohi := p.sightChunks(old)
		if old.world != next.world {
			p.lookIn(s, old, next, olo, ohi, nil)
		} else {
			p.lookIn(s, old, next, olo, ohi, &[2]grid.AreaKey{lo, hi})
		}
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

// lookIn compares, for every prop in the chunks from lo to hi (skipping
// those from skip[0] to skip[1]), whether old and next see it, and tells
// session s the difference.
func (p *Pipeline) lookIn(s *session, old, next sightPoint, lo, hi grid.AreaKey, skip *[2]grid.AreaKey) {
	ps := &p.sight
	for y := lo.Y; y <= hi.Y; y++ {
		for x := lo.X; x <= hi.X; x++ {
			if skip != nil && x >= skip[0].X && x <= skip[1].X && y >= skip[0].Y && y <= skip[1].Y {
				continue
			}
			ps.views = p.world.PropsIn(grid.AreaKey{WorldOrCell: lo.WorldOrCell, X: x, Y: y}, ps.views[:0])
			for vi := range ps.views {
				v := &ps.views[vi]
				for r := range v.Inputs {
					in := &v.Inputs[r]
					q := place{in.X, in.Y, in.WorldOrCell}
					seen, sees := old.sees(q, ps.reach), next.sees(q, ps.reach)
					switch {
					case sees && !seen:
						p.sendPropTo(uint64(s.id), p.propOf(v.IDs[r].ID, in))
					case seen && !sees:
						p.sendDisappear(uint64(s.id), v.IDs[r].ID)
					}
				}
			}
		}
	}
	clear(ps.views) // no column buffers kept past the tick
}

// propOf is a prop's Prop frame: the place and flags it is told at.
func (p *Pipeline) propOf(id uint32, in *components.MoveInput) wire.Prop {
	return wire.Prop{Actor: id, X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw, WorldOrCell: in.WorldOrCell, Flags: in.Flags}
}

// viewer returns the session of slot if it is the player whose sight
// point the slot holds: a session that left this tick, or a new one in its
// slot, is told nothing by the point of the last.
func (p *Pipeline) viewer(slot int) (uint64, bool) {
	s := p.slots[slot]
	if s == nil || s.state != playing || s.actor.ID != p.sight.points[slot].actor {
		return 0, false
	}
	return uint64(s.id), true
}

func (p *Pipeline) sendProp(slot int, msg wire.Prop) {
	if session, ok := p.viewer(slot); ok {
		p.sendPropTo(session, msg)
	}
}

func (p *Pipeline) sendPropGone(slot int, id uint32) {
	if session, ok := p.viewer(slot); ok {
		p.sendDisappear(session, id)
	}
}

func (p *Pipeline) sendPropTo(session uint64, msg wire.Prop) {
	p.out = wire.AppendProp(p.out[:0], msg)
	p.transport.SendReliable(wire.SessionID(session), p.out)
	p.stats.PropsSent++
}
