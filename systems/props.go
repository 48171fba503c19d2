package systems

import (
	"cmp"
	"slices"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
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
	// reach is R+d for each class's radius R, reachLo and reachHi the
	// least and the greatest of them; slack is d.
	reach            [components.MaxClasses]float32
	reachLo, reachHi float32
	slack            float32
	points           []sightPoint
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
	// news are this tick's prop changes as told, looks the sessions whose
	// sight is taken again (lookAt: each slot's look, -1 for none), and
	// tellers the pool units that tell them (tellJob).
	news     []propNews
	newsKeys []newsKey // with many news: each news by the chunks it touches, sorted (spatialNews)
	newsRuns []newsRun // newsKeys' chunks, one a run of equal keys, as groups of entries
	// groups are the news as the tellers decide them (props_news.go),
	// kinds the kinds' tier tables, nudgeKinds the kinds of this tick's
	// nudges (a bit each), limits and lims the vector kernel's table of
	// their limits, and toldFrames and lostFrames each news' frames.
	groups                 []newsGroup
	kinds                  []newsKinds
	nudgeKinds             uint64
	limits                 int64
	lims                   [interest.MaxSteps][8]float32
	toldFrames, lostFrames []byte
	looks                  []look
	lookAt                 []int32
	tellUnits              []scheduler.Unit
	tellers                []teller
	job                    tellJob
}

// newsKey files a news by a chunk it touches (its place before or now).
type newsKey struct {
	key grid.AreaKey
	at  int32 // index in propSight.news
}

// newsRun is one chunk's news: their entries are the groups lo to hi of
// propSight.groups.
type newsRun struct {
	key    grid.AreaKey
	lo, hi int32
}

// spatialNews is how many news a tick needs for each session to find
// those near it by chunk (newsKeys) instead of checking every one: a
// runtime spawn of a thousand props must not cost a thousand checks for
// every player in the world.
const spatialNews = 64

// propNews is one prop change of the Apply as the join tells it: where
// its viewers saw it (was, if it was in the world before) and what it is
// now (now, if it still is). A viewer who sees it now gets a Prop frame; one
// who saw it and does not now, a Disappear.
type propNews struct {
	was, now       wire.Prop
	hadWas, hasNow bool
	nudge          bool    // World.Nudge: a viewer who saw it and sees it may hear it later (props_news.go)
	half           uint32  // the prop's sender half of the pair phase (interest.SenderHalf), for nudges
	reach          float32 // its class's R+d
	kind           uint8   // its class's kind (Pipeline.tierSets), for nudges
}

// propChunk is one chunk's props as told, with their x and y apart for
// the looks' distance checks.
type propChunk struct {
	props  []wire.Prop
	xs, ys []float32
	reach2 []float32 // each prop's class's R+d, squared
	dirty  bool      // listed in propSight.dirty
}

// sightPoint is where a session's props were last taken from.
type sightPoint struct {
	actor uint32 // the actor it was taken for; 0: none yet
	x, y  float32
	world uint32
}

// look is one session's sight taken again: from old to next.
type look struct {
	old, next sightPoint
}

// configure fills in the prop sight's radii, by class (a class's own
// Radius, else radius), and its slack.
func (ps *propSight) configure(radius, slack float32, classes []Class) {
	if !(radius > 0) {
		radius = DefaultPropRadiusUnits
	}
	if !(slack > 0) {
		slack = DefaultPropSlackUnits
	}
	ps.slack = slack
	ps.reachLo, ps.reachHi = radius+slack, radius+slack
	for k := range ps.reach {
		r := radius
		if k < len(classes) && classes[k].Radius > 0 {
			r = classes[k].Radius
		}
		ps.reach[k] = r + slack
		ps.reachLo, ps.reachHi = min(ps.reachLo, r+slack), max(ps.reachHi, r+slack)
	}
	ps.places.worlds = make(map[uint32]*placeGrid)
}

// reachOf returns R+d for a prop of class.
func (ps *propSight) reachOf(class uint8) float32 { return ps.reach[class%components.MaxClasses] }

// minTellsToOffload is the least work, in slots times news plus looks
// (each about a hundred), for which the telling runs on the pool; below it
// a pool pass's handoff costs more than the second core saves.
const minTellsToOffload = 2000

// tellProps runs in the join after the actors' visibility: it tells the
// props' changes of this Apply to the players who see them, then takes
// again the sight points of the players who moved past the slack (and
// first takes those of players new to it). The serial part gathers the
// news and the looks; the telling runs session by session, on the pool
// through t when there is much of it, each session's frames in one batch.
// A world without props skips it: the points it would take describe no
// prop either way.
func (p *Pipeline) tellProps(t *scheduler.Tick) {
	ps := &p.sight
	if p.world.Props() == 0 && !p.propChanged() {
		return
	}
	p.gatherNews()
	if len(ps.points) < len(p.slots) {
		ps.points = append(ps.points, make([]sightPoint, len(p.slots)-len(ps.points))...)
	}
	p.refreshPlaces()
	ps.looks = ps.looks[:0]
	ps.lookAt = resizeSlice(ps.lookAt, len(p.slots))
	for i := range ps.lookAt {
		ps.lookAt[i] = -1
	}
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
			if s := p.sessions.Get(wire.SessionID(c.Session)); s != nil {
				p.lookFrom(int(s.slot))
			}
		}
	}
	for _, s := range p.attached { // sessions that took an actor this join
		p.lookFrom(int(s.slot))
	}
	if len(ps.news) > 0 || len(ps.looks) > 0 {
		p.runTells(t)
	}
}

// gatherNews turns the Apply's prop changes into news, in their order,
// and marks the places of their chunks out of date.
func (p *Pipeline) gatherNews() {
	ps := &p.sight
	ps.news, ps.gone = ps.news[:0], ps.gone[:0]
	for i := range p.report.Changes {
		c := &p.report.Changes[i]
		if !c.Prop {
			continue
		}
		if c.Kind == ecs.Updated {
			p.stats.PropUpdates++
		}
		ps.staleChunk(c.From)
		ps.staleChunk(c.To)
		n := propNews{
			was:    wire.Prop{Actor: c.ID.ID, X: c.Last.X, Y: c.Last.Y, WorldOrCell: c.Last.WorldOrCell},
			hadWas: c.Kind != ecs.Spawned, nudge: c.Nudged,
			reach: ps.reachOf(c.Class), kind: p.frame.classSet[c.Class%components.MaxClasses],
		}
		if n.nudge {
			n.half = interest.SenderHalf(c.ID.ID)
		}
		if c.Kind == ecs.Despawned && slices.Contains(ps.gone, c.ID.ID) {
			continue // its viewers were told at its spawn or update
		}
		if c.Kind != ecs.Despawned {
			if e, ok := p.world.Entity(c.ID); ok {
				n.now, n.hasNow = propOf(c.ID.ID, p.inputs.Get(e)), true
			} else {
				// Despawned later in the same Apply: those who saw it lose
				// it here (none, after a spawn), and its Despawned is told.
				ps.gone = append(ps.gone, c.ID.ID)
			}
		}
		if n.hadWas || n.hasNow {
			ps.news = append(ps.news, n)
		}
	}
	ps.fileNews(p)
}

// fileNews files the news by the chunks they touch when they are many
// (newsKeys, newsRuns), and lays them out for the tellers (layNews).
func (ps *propSight) fileNews(p *Pipeline) {
	ps.newsKeys = ps.newsKeys[:0]
	if len(ps.news) < spatialNews {
		ps.layNews(p)
		return
	}
	size := p.cfg.ChunkSize
	for i := range ps.news {
		n := &ps.news[i]
		var was grid.AreaKey
		if n.hadWas {
			was = grid.KeyOf(n.was.WorldOrCell, n.was.X, n.was.Y, size)
			ps.newsKeys = append(ps.newsKeys, newsKey{was, int32(i)})
		}
		if now := grid.KeyOf(n.now.WorldOrCell, n.now.X, n.now.Y, size); n.hasNow && (!n.hadWas || now != was) {
			ps.newsKeys = append(ps.newsKeys, newsKey{now, int32(i)})
		}
	}
	slices.SortFunc(ps.newsKeys, func(a, b newsKey) int {
		return cmp.Or(grid.Compare(a.key, b.key), cmp.Compare(a.at, b.at))
	})
	ps.layNews(p)
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
	if i := ps.lookAt[slot]; i >= 0 { // a second look in one tick (a teleport): from the first's start
		ps.looks[i].next = next
	} else {
		ps.lookAt[slot] = int32(len(ps.looks))
		ps.looks = append(ps.looks, look{old: *pt, next: next})
	}
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

// propChanged reports whether this Apply changed a prop.
func (p *Pipeline) propChanged() bool {
	for i := range p.report.Changes {
		if p.report.Changes[i].Prop {
			return true
		}
	}
	return false
}

// propOf is a prop's Prop frame: the place and flags it is told at.
func propOf(id uint32, in *components.MoveInput) wire.Prop {
	return wire.Prop{Actor: id, X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw, WorldOrCell: in.WorldOrCell, Flags: in.Flags}
}
