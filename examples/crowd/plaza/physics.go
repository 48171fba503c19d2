package plaza

import (
	"math"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/scheduler"
)

// Body is a prop's physics state, a component of the plaza's own: where
// the physics has the prop and how fast it slides (units a second). The
// prop's Transform is where the players were last told it is; the
// physics writes only Body, and PropsName's step copies Body to the
// Transform when the change is due to be told.
type Body struct {
	X, Y   float32
	VX, VY float32
}

// The physics of a prop, in units (about 70 to the metre) and seconds.
const (
	// PushReach: a player within this distance of a prop (1 m), moving
	// toward it, pushes it. NPCs walk through props: with 200 of them
	// wandering the plaza they would push more than the players do.
	PushReach = 70
	// Kick: a pushed prop slides off at this many times its pusher's
	// velocity, unless it already moves faster that way, so that it slides
	// ahead of the player rather than sticking to it.
	Kick = 1.5
	// Friction slows a sliding prop by this much a second, each second
	// (3 m/s^2): a prop kicked at walking pace slides about 7 m, for 2 s.
	Friction = 210
	// RestSpeed: a prop slower than this comes to rest.
	RestSpeed = 10
)

// cellSize is the edge of the physics' cells: more than PushReach, so the
// players who can push a prop stand in the 3 x 3 cells around it, and
// few enough cells (85 x 85 over the spawn area) that walking them all is
// cheap.
const cellSize = 256

// physicsBands is how many units the physics splits the plaza into: bands
// of rows of cells, so each unit owns the props of its rows and writes
// only their Bodies.
const physicsBands = 16

// physics is PhysicsName: a parallel system that pushes and slides the
// props. It reads every player's Transform (after Move, so this tick's)
// and writes only the props' Bodies, so the scheduler runs it beside the
// relay, which reads Transforms too. Each unit walks the props of a band
// of cells and lists those that moved; the serial PropsName step tells
// them after the join.
type physics struct {
	w       *World
	bodies  *ark.Map[Body]
	walkers *crowd
	tick    uint64
	dt      float32
	rows    int32      // rows of cells a band
	bands   []int      // the band of each unit this tick
	moved   [][]int32  // per band: this tick's moved props, in cell order
	lo, hi  [2]float32 // the walls: the spawn area's edges
}

func newPhysics(w *World, bodies *ark.Map[Body]) *physics {
	f := newField(cellSize)
	area := scenario.PlazaSpawnArea()
	return &physics{
		w:       w,
		bodies:  bodies,
		walkers: newCrowd(w.srv.World().Ark(), cellSize, true, true),
		rows:    (f.cols + physicsBands - 1) / physicsBands,
		moved:   make([][]int32, physicsBands),
		lo:      [2]float32{area.MinX, area.MinY},
		hi:      [2]float32{area.MaxX, area.MaxY},
	}
}

func (p *physics) Name() string { return PhysicsName }

func (p *physics) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.ActorID](), scheduler.Read[components.Transform](),
		scheduler.Read[components.Client](), scheduler.Write[Body]())
}

// Plan finds this tick's players and their velocities (on the tick
// goroutine, linear in the players) and plans one unit a band that holds
// props.
func (p *physics) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	p.tick, p.dt = t.Number, float32(t.Delta.Seconds())
	for b := range p.moved {
		p.moved[b] = p.moved[b][:0]
	}
	p.bands = p.bands[:0]
	props := &p.w.props
	if len(props.entities) == 0 {
		return units
	}
	p.walkers.gather(t.Number, p.dt)
	f := props.field
	for b := range int32(physicsBands) {
		lo, hi := min(b*p.rows, f.cols), min((b+1)*p.rows, f.cols)
		n := props.cells.start[f.index(0, hi)] - props.cells.start[f.index(0, lo)]
		if n == 0 {
			continue
		}
		p.bands = append(p.bands, int(b))
		units = append(units, scheduler.Unit{Key: uint64(b) + 1, Cost: float64(n)})
	}
	return units
}

// RunUnit pushes and slides the props of unit i's band, cell by cell, and
// lists those that moved or came to rest.
func (p *physics) RunUnit(i int) {
	b := p.bands[i]
	props := &p.w.props
	f := props.field
	moved := p.moved[b]
	for cy := int32(b) * p.rows; cy < min(int32(b+1)*p.rows, f.cols); cy++ {
		for cx := range f.cols {
			in := props.cells.in(f.index(cx, cy))
			if len(in) == 0 {
				continue
			}
			near := p.walkers.anyNear(cx, cy)
			for _, j := range in {
				if !props.live[j] {
					continue
				}
				body := p.bodies.Get(props.entities[j])
				if !near && body.VX == 0 && body.VY == 0 {
					continue
				}
				if near {
					p.push(body, cx, cy)
				}
				if p.slide(body) {
					moved = append(moved, j)
				}
			}
		}
	}
	p.moved[b] = moved
}

// push gives body the velocity of the player who pushes it, if any: of
// the players within PushReach moving toward it, the fastest (the lowest
// ActorID among equals, so the order players are found in never matters).
func (p *physics) push(body *Body, cx, cy int32) {
	var (
		by    *walker
		speed float32 // by's, squared
	)
	p.walkers.near(cx, cy, func(w *walker) {
		dx, dy := body.X-w.x, body.Y-w.y
		if dx*dx+dy*dy > PushReach*PushReach || w.vx*dx+w.vy*dy <= 0 {
			return
		}
		s := w.vx*w.vx + w.vy*w.vy
		if by == nil || s > speed || (s == speed && w.id < by.id) {
			by, speed = w, s
		}
	})
	if by == nil {
		return
	}
	v := float32(math.Sqrt(float64(speed)))
	if along := (body.VX*by.vx + body.VY*by.vy) / v; along < Kick*v {
		body.VX, body.VY = Kick*by.vx, Kick*by.vy
	}
}

// slide moves a sliding body on by a tick and slows it by friction; it
// comes to rest below RestSpeed, and stops against the spawn area's edges,
// the plaza's walls. It reports whether the body moved or came to rest.
func (p *physics) slide(body *Body) bool {
	if body.VX == 0 && body.VY == 0 {
		return false
	}
	s := float32(math.Hypot(float64(body.VX), float64(body.VY)))
	slower := s - Friction*p.dt
	if slower < RestSpeed {
		body.VX, body.VY = 0, 0
		return true
	}
	body.VX *= slower / s
	body.VY *= slower / s
	body.X, body.VX = wall(body.X+body.VX*p.dt, body.VX, p.lo[0], p.hi[0])
	body.Y, body.VY = wall(body.Y+body.VY*p.dt, body.VY, p.lo[1], p.hi[1])
	return true
}

// wall keeps x within [lo, hi]: a body that reaches a wall stops along
// that axis.
func wall(x, v, lo, hi float32) (float32, float32) {
	if x < lo {
		return lo, 0
	}
	if x > hi {
		return hi, 0
	}
	return x, v
}

// teller is PropsName: a serial system pinned after the join that tells
// what the physics did. World.Update panics while the world is guarded
// (from Prepare to the join), so a parallel system cannot call it; this
// step runs where the world is free again. For each prop the physics
// moved this tick, in band and cell order, it re-buckets the prop by its
// Body, and when the change is due it copies the Body's place to the
// Transform, sets or clears FlagSliding, and tells it: a push and a
// prop's coming to rest at once, through World.Update, which every viewer
// hears; a step of a slide every tickRate / SlideUpdatesPerSecond ticks
// (spread over the ticks by prop), through World.Nudge, which far viewers
// hear less often (the rest's Update then tells everyone where it stands).
//
// The delay that gives: the physics of tick t reads where Move put the
// players in t, and its changes are queued after t's join, so the next
// join, tick t+1's, tells them: a push reaches the players one tick (33
// ms at 30 Hz) after the move that made it.
type teller struct {
	w          *World
	phys       *physics
	bodies     *ark.Map[Body]
	transforms *ark.Map[components.Transform]
	anims      *ark.Map[components.Animation]
}

func (t *teller) Name() string { return PropsName }

func (t *teller) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[Body](), scheduler.Write[components.Transform](), scheduler.Write[components.Animation]())
}

func (t *teller) RunSerial(tick *scheduler.Tick) {
	w := t.w
	w.follow(w.srv.Changes())
	every := uint64(max(w.srv.Settings().TickRate/w.cfg.SlideUpdatesPerSecond, 1))
	sliding := 0
	for _, moved := range t.phys.moved {
		for _, i := range moved {
			if t.tell(i, tick.Number, every) {
				sliding++
			}
		}
	}
	w.sliding.Store(int64(sliding))
	if p := &w.props; p.dirty {
		p.cells.build(p.field.cells(), p.cellOf)
		p.dirty = false
	}
}

// tell re-buckets prop i and tells its change when due; it reports whether
// the prop still slides.
func (t *teller) tell(i int32, tick, every uint64) bool {
	p := &t.w.props
	if !p.live[i] {
		return false
	}
	e := p.entities[i]
	body := t.bodies.Get(e)
	if cx, cy := p.field.cellOf(body.X, body.Y); p.field.index(cx, cy) != p.cellOf[i] {
		p.cellOf[i], p.dirty = p.field.index(cx, cy), true
	}
	slides := body.VX != 0 || body.VY != 0
	tr, an := t.transforms.Get(e), t.anims.Get(e)
	told := an.Flags&FlagSliding != 0
	if slides && told && (tick+uint64(i))%every != 0 {
		return true // sliding on; told at its next turn
	}
	flags := an.Flags &^ FlagSliding
	if slides {
		flags |= FlagSliding
	}
	if tr.X == body.X && tr.Y == body.Y && an.Flags == flags {
		return slides
	}
	id := components.ActorID{ID: p.first + uint32(i)}
	if slides && told { // a step of a slide: far viewers may hear fewer
		tr.X, tr.Y = body.X, body.Y
		t.w.srv.World().Nudge(id)
	} else { // a push or a rest: everyone hears it
		tr.X, tr.Y, an.Flags = body.X, body.Y, flags
		t.w.srv.World().Update(id)
	}
	t.w.changes.Add(1)
	return slides
}
