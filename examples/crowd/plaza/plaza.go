package plaza

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// Defaults of [Config].
const (
	DefaultProps = 5000
	DefaultNPCs  = 200
	// DefaultSlideUpdatesPerSecond is how often a sliding prop's place is
	// told: a third of the default tick rate, the rate at which the plaza's
	// bots send their own moves.
	DefaultSlideUpdatesPerSecond = 10
)

// Animation flags of the plaza's actors, beside the bots' own
// (scenario.FlagWalking, scenario.FlagJumping).
const (
	// FlagNPC marks every NPC. On the wire an NPC is an actor like a
	// player (a client cannot tell who drives an actor), so the flag is
	// how a client draws NPCs apart.
	FlagNPC uint16 = 1 << 8
	// FlagSliding marks a prop told while it slides; one at rest has it
	// cleared.
	FlagSliding uint16 = 1 << 9
)

// Names of the plaza's systems, for pinning systems of your own around
// them.
const (
	NPCsName    = "plaza-npcs"
	PhysicsName = "plaza-physics"
	PropsName   = "plaza-props"
)

// Config says what Setup puts on the plaza. The zero Config is the
// default plaza: DefaultProps props and DefaultNPCs NPCs, seed 0.
type Config struct {
	// Seed fixes where the props and NPCs stand and every choice the NPCs
	// make: the same seed and the same players give the same plaza.
	Seed uint64
	// Props is how many props stand on the plaza; 0 means DefaultProps, a
	// negative count none.
	Props int
	// NPCs is how many NPCs wander it; 0 means DefaultNPCs, a negative
	// count none.
	NPCs int
	// SlideUpdatesPerSecond is how often a sliding prop's place is told
	// to the players around it, at most the tick rate; 0 means
	// DefaultSlideUpdatesPerSecond. A push and a prop coming to rest are
	// told at once whatever the rate.
	SlideUpdatesPerSecond int
}

func (c Config) resolved(tickRate int) (Config, error) {
	if c.SlideUpdatesPerSecond < 0 {
		return c, fmt.Errorf("plaza: SlideUpdatesPerSecond must not be negative, got %d", c.SlideUpdatesPerSecond)
	}
	c.Props = defaultCount(c.Props, DefaultProps)
	c.NPCs = defaultCount(c.NPCs, DefaultNPCs)
	if c.SlideUpdatesPerSecond == 0 {
		c.SlideUpdatesPerSecond = DefaultSlideUpdatesPerSecond
	}
	c.SlideUpdatesPerSecond = min(c.SlideUpdatesPerSecond, tickRate)
	return c, nil
}

func defaultCount(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// World is the plaza's game state on a server: its props and NPCs and the
// systems that move them (see the package documentation). Its methods
// are safe to call from any goroutine.
type World struct {
	srv   *throng.Server
	cfg   Config
	props props
	npcs  actors

	changes atomic.Uint64
	sliding atomic.Int64
}

// actors is a run of actors Setup spawned, with consecutive ActorIDs from
// first: actor i is first+i. An entry's entity is known once the join
// that spawned it has run (live).
type actors struct {
	first    uint32
	entities []ark.Entity
	live     []bool
}

// index returns the position of id in the run.
func (a *actors) index(id components.ActorID) (int, bool) {
	i := int(id.ID) - int(a.first)
	return i, a.first != 0 && i >= 0 && i < len(a.entities)
}

// ids lists the run's ActorIDs.
func (a *actors) ids() []components.ActorID {
	ids := make([]components.ActorID, len(a.entities))
	for i := range ids {
		ids[i] = components.ActorID{ID: a.first + uint32(i)}
	}
	return ids
}

// props is the plaza's props with the physics' index of them: each prop
// bucketed by the cell of the physics' field its Body stands in.
type props struct {
	actors
	field  field
	cellOf []int32
	cells  buckets
	dirty  bool // a prop changed cells since cells was built
}

// Setup puts the plaza on srv before its first tick: it spawns cfg's props
// (uniform over scenario.PlazaArea, each with a Body) and NPCs (uniform
// over the plaza, each with a Stroll), and adds the plaza's three
// systems, NPCsName, PhysicsName and PropsName. The actors enter the
// world in the first tick's join. It returns an error if srv has ticked
// already (systems can no longer be added) or cfg is invalid.
//
// The World owns what it spawned: despawning one of its actors elsewhere
// is noticed (the systems leave it alone), moving one is not.
func Setup(srv *throng.Server, cfg Config) (*World, error) {
	if srv == nil {
		return nil, errors.New("plaza: Setup needs a server")
	}
	cfg, err := cfg.resolved(srv.Settings().TickRate)
	if err != nil {
		return nil, err
	}
	w := &World{srv: srv, cfg: cfg}
	aw := srv.World().Ark()
	transforms := ark.NewMap[components.Transform](aw)
	anims := ark.NewMap[components.Animation](aw)
	bodies := ark.NewMap[Body](aw)
	strolls := ark.NewMap[Stroll](aw)
	herd := newHerd(w, transforms, anims, strolls)
	phys := newPhysics(w, bodies)
	tell := &teller{w: w, phys: phys, bodies: bodies, transforms: transforms, anims: anims}
	for _, add := range []struct {
		sys  scheduler.System
		pins []scheduler.Placement
	}{
		{herd, []scheduler.Placement{scheduler.Before(systems.PrepareName)}},
		{phys, []scheduler.Placement{scheduler.After(systems.MoveName), scheduler.Before(systems.JoinName)}},
		{tell, []scheduler.Placement{scheduler.After(systems.JoinName)}},
	} {
		if err := srv.AddSystem(add.sys, add.pins...); err != nil {
			return nil, fmt.Errorf("plaza: %w", err)
		}
	}
	w.spawnProps(transforms, bodies)
	w.spawnNPCs(strolls)
	return w, nil
}

// Random streams of the layout, apart from each other.
const (
	streamProps = 0x70726f7073
	streamNPCs  = 0x6e706373
)

func (w *World) spawnProps(transforms *ark.Map[components.Transform], bodies *ark.Map[Body]) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, streamProps))
	area := scenario.PlazaArea()
	body := func(_ *ark.World, e ark.Entity) {
		t := transforms.Get(e)
		bodies.Add(e, &Body{X: t.X, Y: t.Y})
	}
	p := &w.props
	p.field = newField(cellSize)
	for i := range w.cfg.Props {
		x, y := uniform(rng, area)
		id := w.srv.World().Spawn(ecs.ActorSpec{
			Prop:      true,
			Transform: components.Transform{X: x, Y: y, Yaw: randomYaw(rng)},
			Init:      body,
		})
		if i == 0 {
			p.first = id.ID
		}
		cx, cy := p.field.cellOf(x, y)
		p.cellOf = append(p.cellOf, p.field.index(cx, cy))
	}
	p.entities = make([]ark.Entity, w.cfg.Props)
	p.live = make([]bool, w.cfg.Props)
	p.cells.build(p.field.cells(), p.cellOf)
}

func (w *World) spawnNPCs(strolls *ark.Map[Stroll]) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed, streamNPCs))
	area := scenario.PlazaArea()
	stroll := func(_ *ark.World, e ark.Entity) { strolls.Add(e, &Stroll{}) }
	for i := range w.cfg.NPCs {
		x, y := uniform(rng, area)
		id := w.srv.World().Spawn(ecs.ActorSpec{
			Transform: components.Transform{X: x, Y: y, Yaw: randomYaw(rng)},
			Animation: components.Animation{Flags: FlagNPC},
			Init:      stroll,
		})
		if i == 0 {
			w.npcs.first = id.ID
		}
	}
	w.npcs.entities = make([]ark.Entity, w.cfg.NPCs)
	w.npcs.live = make([]bool, w.cfg.NPCs)
}

// uniform returns a point drawn uniformly from a, a unit inside its edges.
func uniform(rng *rand.Rand, a scenario.Area) (x, y float32) {
	x = a.MinX + 1 + float32(rng.Float64())*(a.MaxX-a.MinX-2)
	y = a.MinY + 1 + float32(rng.Float64())*(a.MaxY-a.MinY-2)
	return x, y
}

func randomYaw(rng *rand.Rand) float32 {
	return float32((rng.Float64()*2 - 1) * math.Pi)
}

// follow brings the World up to date with a join's changes: its actors
// spawned (their entities now known) and despawned.
func (w *World) follow(changes []ecs.Change) {
	for i := range changes {
		c := &changes[i]
		if c.Kind != ecs.Spawned && c.Kind != ecs.Despawned {
			continue
		}
		run := &w.npcs
		if c.Prop {
			run = &w.props.actors
		}
		if j, ok := run.index(c.ID); ok {
			run.entities[j], run.live[j] = c.Entity, c.Kind == ecs.Spawned
		}
	}
}

// Props returns the plaza's props' ActorIDs, in spawn order.
func (w *World) Props() []components.ActorID { return w.props.ids() }

// NPCs returns the plaza's NPCs' ActorIDs, in spawn order.
func (w *World) NPCs() []components.ActorID { return w.npcs.ids() }

// Actors returns how many actors Setup spawned: props and NPCs.
func (w *World) Actors() int { return len(w.props.entities) + len(w.npcs.entities) }

// PropChanges returns how many prop changes the plaza has made so far:
// World.Update and World.Nudge calls for a prop whose place or flags it
// changed (a push, a slide told, a prop come to rest). Each is told, in the next join, to
// every player within the server's prop radius of it (Stats' PropsSent
// counts those frames).
func (w *World) PropChanges() uint64 { return w.changes.Load() }

// Sliding returns how many props were sliding at the end of the last
// tick.
func (w *World) Sliding() int { return int(w.sliding.Load()) }
