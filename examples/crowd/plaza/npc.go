package plaza

import (
	"math"
	"math/bits"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/scheduler"
)

// Stroll is an NPC's own state, a component of the plaza's: the heading it
// wanders on, whether it stands, the tick its current leg (a walk or a
// stop) ends, and the player it follows (0: none).
type Stroll struct {
	Heading   float32
	Standing  bool
	Until     uint64
	Following uint32
}

// How the NPCs move, in units (about 70 to the metre) and seconds.
const (
	// FollowRange: an NPC follows the nearest player within 10 m.
	FollowRange = 700
	// KeepDistance: it walks up to 1.5 m of that player and waits there.
	KeepDistance = 105
	// FollowSpeed and WanderSpeed are its paces following (3.6 m/s) and
	// wandering (1.4 m/s).
	FollowSpeed = 250
	WanderSpeed = 100
)

// Legs of an NPC's wander, in seconds: it walks a straight line for 3 to 8
// s, stands for 2 to 5 s, and turns to a new heading.
const (
	minWalk, maxWalk   = 3, 8
	minStand, maxStand = 2, 5
)

// npcsPerUnit is how many NPCs one unit of NPCsName moves.
const npcsPerUnit = 64

// herd is NPCsName: a parallel system that walks the NPCs. An NPC's new
// Transform must be written before Move, which relays the change and
// moves the NPC to its chunk; a system that writes Transforms conflicts
// with Move, the relay (which reads them) and Prepare (structural), so it
// runs in a stage of its own before one of them. Pinned before Prepare,
// it shares the first stage with Ingest, which writes only MoveInput and
// the sessions: its units run beside Ingest's instead of in a stage of
// their own between Prepare and Move. It reads the players where the
// last tick's Move left them.
type herd struct {
	w          *World
	transforms *ark.Map[components.Transform]
	anims      *ark.Map[components.Animation]
	strolls    *ark.Map[Stroll]
	players    *crowd
	area       scenario.Area // where NPCs wander: the plaza
	tick       uint64
	dt         float32
	ticksPerS  float64
}

func newHerd(w *World, transforms *ark.Map[components.Transform], anims *ark.Map[components.Animation], strolls *ark.Map[Stroll]) *herd {
	return &herd{
		w: w, transforms: transforms, anims: anims, strolls: strolls,
		players: newCrowd(w.srv.World().Ark(), FollowRange, true, false),
		area:    scenario.PlazaArea(),
	}
}

func (h *herd) Name() string { return NPCsName }

func (h *herd) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.ActorID](), scheduler.Read[components.Client](),
		scheduler.Write[components.Transform](), scheduler.Write[components.Animation](), scheduler.Write[Stroll]())
}

// Plan finds the players (on the tick goroutine, linear in them) and
// plans a unit for every npcsPerUnit NPCs.
func (h *herd) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	n := len(h.w.npcs.entities)
	if n == 0 {
		return units
	}
	h.tick, h.dt = t.Number, float32(t.Delta.Seconds())
	h.ticksPerS = 1 / t.Delta.Seconds()
	h.players.gather(t.Number, h.dt)
	for lo := 0; lo < n; lo += npcsPerUnit {
		units = append(units, scheduler.Unit{Key: uint64(lo/npcsPerUnit) + 1, Cost: float64(min(npcsPerUnit, n-lo))})
	}
	return units
}

// RunUnit walks NPCs i*npcsPerUnit to (i+1)*npcsPerUnit-1.
func (h *herd) RunUnit(i int) {
	npcs := &h.w.npcs
	for j := i * npcsPerUnit; j < min((i+1)*npcsPerUnit, len(npcs.entities)); j++ {
		if npcs.live[j] {
			h.step(npcs.first+uint32(j), npcs.entities[j])
		}
	}
}

// step moves one NPC a tick: toward the nearest player within FollowRange
// (the lowest ActorID among equals), stopping KeepDistance from it, or
// else on its wander.
func (h *herd) step(id uint32, e ark.Entity) {
	t, s, a := h.transforms.Get(e), h.strolls.Get(e), h.anims.Get(e)
	var (
		by   *walker
		dist float32 = FollowRange * FollowRange // by's, squared
	)
	cx, cy := h.players.field.cellOf(t.X, t.Y)
	h.players.near(cx, cy, func(w *walker) {
		dx, dy := w.x-t.X, w.y-t.Y
		d := dx*dx + dy*dy
		if d < dist || (d == dist && by != nil && w.id < by.id) {
			by, dist = w, d
		}
	})
	walking := false
	if by != nil {
		s.Following = by.id
		d := float32(math.Sqrt(float64(dist)))
		if d > KeepDistance {
			step := min(FollowSpeed*h.dt, d-KeepDistance)
			dx, dy := (by.x-t.X)/d, (by.y-t.Y)/d
			t.X, t.Y = t.X+dx*step, t.Y+dy*step
			t.Yaw = float32(math.Atan2(float64(dy), float64(dx)))
			walking = true
		}
	} else {
		s.Following = 0
		if h.tick >= s.Until {
			h.nextLeg(id, s)
		}
		if !s.Standing {
			h.wander(t, s)
			walking = true
		}
	}
	flags := a.Flags&^scenario.FlagWalking | FlagNPC
	if walking {
		flags |= scenario.FlagWalking
	}
	a.Flags = flags
}

// nextLeg ends an NPC's walk in a stop, or its stop in a walk on a new
// heading, each as long as the NPC's dice for this tick say.
func (h *herd) nextLeg(id uint32, s *Stroll) {
	r := dice(h.w.cfg.Seed, id, h.tick)
	long := unitOf(bits.RotateLeft64(r, 32))
	if s.Standing || s.Until == 0 {
		s.Standing = false
		s.Heading = float32((unitOf(r)*2 - 1) * math.Pi)
		s.Until = h.tick + h.ticks(minWalk+long*(maxWalk-minWalk))
		return
	}
	s.Standing = true
	s.Until = h.tick + h.ticks(minStand+long*(maxStand-minStand))
}

// ticks is seconds in ticks, at least one.
func (h *herd) ticks(seconds float64) uint64 {
	return uint64(max(math.Round(seconds*h.ticksPerS), 1))
}

// wander walks an NPC a tick along its heading, turning back at the
// plaza's edges; one outside the plaza (it followed a player out) heads
// for the plaza's middle.
func (h *herd) wander(t *components.Transform, s *Stroll) {
	a := h.area
	if t.X < a.MinX || t.X > a.MaxX || t.Y < a.MinY || t.Y > a.MaxY {
		s.Heading = float32(math.Atan2(float64((a.MinY+a.MaxY)/2-t.Y), float64((a.MinX+a.MaxX)/2-t.X)))
	}
	step := WanderSpeed * h.dt
	sin, cos := math.Sincos(float64(s.Heading))
	x, y := t.X+float32(cos)*step, t.Y+float32(sin)*step
	turned := false
	if (x < a.MinX && cos < 0) || (x > a.MaxX && cos > 0) {
		cos, x, turned = -cos, t.X, true
	}
	if (y < a.MinY && sin < 0) || (y > a.MaxY && sin > 0) {
		sin, y, turned = -sin, t.Y, true
	}
	if turned {
		s.Heading = float32(math.Atan2(sin, cos))
	}
	t.X, t.Y, t.Yaw = x, y, s.Heading
}

// dice is an NPC's random number for a tick: a hash of the seed, its
// ActorID and the tick (SplitMix64's finalizer), so that its choices
// depend on nothing else, not on which unit or core moves it.
func dice(seed uint64, id uint32, tick uint64) uint64 {
	z := seed ^ uint64(id)*0x9e3779b97f4a7c15 ^ tick*0xd1b54a32d192ed03
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// unitOf maps the top 53 bits of r into [0, 1).
func unitOf(r uint64) float64 { return float64(r>>11) / (1 << 53) }
