package systems

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// propRig is a rig among props: the players walk, and the test spawns,
// changes and despawns props between ticks, as a game's systems would.
type propRig struct {
	*rig
	props []components.ActorID // spawned and not despawned
	// known[i] is what player i was told: each prop in its sight, at the
	// state last told.
	known []map[uint32]wire.Prop
	pos   []components.Transform // where each player asked to be
	// classes are the prop classes spawn picks from (ClassProp alone when
	// empty), radius each one's radius, class each prop's.
	classes []uint8
	radius  map[uint8]float32
	class   map[uint32]uint8
}

// spawn queues a prop at tr, of one of the rig's classes, and returns it.
func (r *propRig) spawn(rng *rand.Rand, tr components.Transform) components.ActorID {
	class := components.ClassProp
	if len(r.classes) > 0 {
		class = r.classes[rng.IntN(len(r.classes))]
	}
	id := r.p.world.Spawn(ecs.ActorSpec{Transform: tr, Prop: true, Client: components.Client{Class: class}})
	r.class[id.ID] = class
	return id
}

const (
	testPropRadius = 3000
	testPropSlack  = 400
)

// newClassPropRig is a rig of players among props, whose props take the
// classes of radius (ClassProp's own at testPropRadius unless given).
func newClassPropRig(t *testing.T, players int, rng *rand.Rand, radius map[uint8]float32) *propRig {
	spawns := make([]components.Transform, players)
	for i := range spawns {
		spawns[i] = components.Transform{X: rng.Float32() * 12000, Y: rng.Float32() * 12000}
	}
	cfg := Config{PropRadius: testPropRadius, PropSlack: testPropSlack}
	all := map[uint8]float32{components.ClassProp: testPropRadius}
	var classes []uint8
	for k, v := range radius {
		all[k] = v
		classes = append(classes, k)
		cfg.Classes = append(cfg.Classes, make([]Class, max(0, int(k)+1-len(cfg.Classes)))...)
		cfg.Classes[k].Radius = v
	}
	slices.Sort(classes)
	r := &propRig{rig: newRig(t, cfg, spawns), pos: spawns, classes: classes, radius: all, class: map[uint32]uint8{}}
	for range players {
		r.known = append(r.known, map[uint32]wire.Prop{})
	}
	return r
}

// step moves every player by up to stride, ticks, and reads what each was
// told, checking that a Prop frame is sent only for a prop that came into
// sight or changed: told reports, per player, the props told this tick.
func (r *propRig) step(rng *rand.Rand, stride float32) {
	for i, c := range r.clients {
		r.seq[i]++
		p := &r.pos[i]
		p.X = min(max(p.X+(rng.Float32()*2-1)*stride, 0), 12000)
		p.Y = min(max(p.Y+(rng.Float32()*2-1)*stride, 0), 12000)
		require.NoError(r.t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: p.X, Y: p.Y})))
	}
	r.rig.step()
	for i, c := range r.clients {
		c.DrainDatagrams(func(d []byte) {
			b, err := wire.DecodeBatch(d)
			require.NoError(r.t, err)
			for k := range b.Len() {
				_, isProp := r.known[i][b.At(k).Actor]
				require.False(r.t, isProp, "no movement record is sent for a prop")
			}
		})
		c.DrainReliable(func(f []byte) {
			var fr wire.Frame
			require.NoError(r.t, wire.Decode(f, &fr))
			switch fr.Type {
			case wire.TypeProp:
				was, ok := r.known[i][fr.Prop.Actor]
				require.False(r.t, ok && was == fr.Prop, "tick %d: player %d told prop %d again, unchanged", r.tick, i, fr.Prop.Actor)
				r.known[i][fr.Prop.Actor] = fr.Prop
			case wire.TypeDisappear:
				delete(r.known[i], fr.Disappear.Actor)
			}
		})
	}
}

// check holds every player's props against the rule, worked out afresh
// from the world: every prop within the radius of the player is known at
// its state now, and every prop known is within the radius plus twice the
// slack and known at its state now.
func (r *propRig) check() {
	p := r.p
	now := map[uint32]wire.Prop{}
	for _, id := range r.props {
		e, ok := p.world.Entity(id)
		require.True(r.t, ok)
		now[id.ID] = propOf(id.ID, p.inputs.Get(e))
	}
	for i := range r.clients {
		e, ok := p.world.Entity(components.ActorID{ID: r.actors[i]})
		require.True(r.t, ok)
		at := p.transforms.Get(e)
		for id, state := range now {
			d2 := sq(state.X-at.X) + sq(state.Y-at.Y)
			known, ok := r.known[i][id]
			radius := r.radius[r.class[id]]
			if d2 <= radius*radius {
				require.True(r.t, ok, "tick %d: player %d does not know prop %d, %.0f away", r.tick, i, id, sqrt(d2))
			}
			if ok {
				require.Equal(r.t, state, known, "tick %d: player %d knows prop %d at an old state", r.tick, i, id)
				require.LessOrEqual(r.t, d2, sq(radius+2*testPropSlack), "tick %d: player %d knows prop %d, %.0f away", r.tick, i, id, sqrt(d2))
			}
		}
		for id := range r.known[i] {
			_, ok := now[id]
			require.True(r.t, ok, "tick %d: player %d still knows prop %d, despawned", r.tick, i, id)
		}
	}
}

func sq(v float32) float32 { return v * v }

func sqrt(v float32) float32 {
	x := v
	for range 30 {
		if x == 0 {
			return 0
		}
		x = (x + v/x) / 2
	}
	return x
}

// TestPropsReachThePlayersWithinTheirRadius plays a world of walking
// players among props that are spawned, pushed, changed and despawned,
// and checks after every tick what each player was told against the rule
// worked out from the world (propRig.check): every prop within the radius
// known at its current state, none beyond the radius and twice the slack,
// no despawned prop left, no Prop frame for a prop that did not change.
func TestPropsReachThePlayersWithinTheirRadius(t *testing.T) {
	for _, c := range []struct {
		stride  float32 // a walk; leaps past the slack every tick
		pushes  int     // props changed a tick: few, or enough to be found by chunk (spatialNews)
		classes bool    // props of three classes, of three radii
	}{{150, 10, false}, {900, 10, false}, {150, 100, false}, {150, 10, true}, {900, 100, true}} {
		stride := c.stride
		t.Run(fmt.Sprintf("stride=%g/pushes=%d/classes=%v", stride, c.pushes, c.classes), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(stride)))
			var radius map[uint8]float32
			if c.classes {
				radius = map[uint8]float32{components.ClassProp: testPropRadius, 4: 1200, 5: 7000}
			}
			r := newClassPropRig(t, 12, rng, radius)
			w := r.p.world
			transforms, anims := r.p.transforms, r.p.anims
			for range 400 {
				r.props = append(r.props, r.spawn(rng, components.Transform{X: rng.Float32() * 12000, Y: rng.Float32() * 12000}))
			}
			var told int
			for tick := range 120 {
				r.step(rng, stride)
				r.check()
				for _, k := range r.known {
					told += len(k)
				}
				for range c.pushes { // push some, change some
					id := r.props[rng.IntN(len(r.props))]
					e, _ := w.Entity(id)
					if rng.IntN(2) == 0 {
						tr := transforms.Get(e)
						tr.X = min(max(tr.X+(rng.Float32()*2-1)*2000, 0), 12000)
						tr.Y = min(max(tr.Y+(rng.Float32()*2-1)*2000, 0), 12000)
					} else {
						anims.Get(e).Flags ^= 1 << rng.IntN(16)
					}
					w.Update(id)
				}
				if tick%7 == 0 { // one goes, one comes; one comes and goes at once
					i := rng.IntN(len(r.props))
					w.Despawn(r.props[i])
					r.props = append(r.props[:i], r.props[i+1:]...)
					r.props = append(r.props, r.spawn(rng, components.Transform{X: rng.Float32() * 12000, Y: rng.Float32() * 12000}))
					brief := r.spawn(rng, r.pos[0])
					w.Despawn(brief)
				}
				if tick%11 == 0 { // pushed, then gone in the same tick
					i := rng.IntN(len(r.props))
					e, _ := w.Entity(r.props[i])
					transforms.Get(e).X += 500
					w.Update(r.props[i])
					w.Despawn(r.props[i])
					r.props = append(r.props[:i], r.props[i+1:]...)
				}
			}
			r.step(rng, stride)
			r.check()
			require.Greater(t, told, 12*120, "players had props in sight")
		})
	}
}

// TestThePlaceIndexFindsEveryChunkItWasGiven grows a world's grid in every
// direction, chunk by chunk in a random order, and finds each chunk's
// places again, and nothing where none were added.
func TestThePlaceIndexFindsEveryChunkItWasGiven(t *testing.T) {
	ix := placeIndex{worlds: map[uint32]*placeGrid{}}
	rng := rand.New(rand.NewPCG(1, 2))
	added := map[grid.AreaKey]*propChunk{}
	for range 300 {
		k := grid.AreaKey{WorldOrCell: uint32(rng.IntN(2)), X: int32(rng.IntN(41) - 20), Y: int32(rng.IntN(41) - 20)}
		c := ix.add(k)
		if was, ok := added[k]; ok {
			require.Same(t, was, c, "a chunk added again keeps its places")
		}
		added[k] = c
	}
	for x := int32(-22); x <= 22; x++ {
		for y := int32(-22); y <= 22; y++ {
			for w := uint32(0); w < 3; w++ {
				k := grid.AreaKey{WorldOrCell: w, X: x, Y: y}
				var got *propChunk
				if g := ix.worlds[w]; g != nil {
					got = g.at(x, y)
				}
				require.Same(t, added[k], got, "chunk %v", k)
			}
		}
	}
}

// TestANudgedPropReachesFarViewersLessOften: a crate slides (World.Nudge
// every tick) between a player beside it and one 5,000 units away: the
// near one hears every step, the far one one in its tiers' period (3 at
// that distance: a step in 2,048 units from 4,096 on); when the crate
// comes to rest (World.Update, where the last nudge left it), both know
// where it stands.
func TestANudgedPropReachesFarViewersLessOften(t *testing.T) {
	spawns := []components.Transform{{X: 1000, Y: 1000}, {X: 1000, Y: 6000}}
	r := newRig(t, Config{Tiers: defaultTiers(t), PropRadius: 6000, PropSlack: 400}, spawns)
	w := r.p.world
	crate := w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 1200, Y: 1000}, Prop: true})
	heard := make([][]wire.Prop, 2)
	step := func() {
		r.standStep()
		for i, c := range r.clients {
			c.DrainDatagrams(func([]byte) {})
			c.DrainReliable(func(f []byte) {
				if q, err := wire.DecodeProp(f); err == nil {
					heard[i] = append(heard[i], q)
				}
			})
		}
	}
	step()
	require.Len(t, heard[0], 1, "the near player is told of the crate")
	require.Len(t, heard[1], 1, "so is the far one")
	e, _ := w.Entity(crate)
	const slides = 40
	for range slides {
		r.p.transforms.Get(e).X += 10
		w.Nudge(crate)
		step()
	}
	near, far := len(heard[0])-1, len(heard[1])-1
	assert.Equal(t, slides, near, "the near player hears every step")
	assert.InDelta(t, slides/3, far, 1, "the far player hears one step in three")
	w.Update(crate)
	step()
	for i := range heard {
		last := heard[i][len(heard[i])-1]
		assert.Equal(t, float32(1200+10*slides), last.X, "player %d knows where the crate came to rest", i)
	}
	assert.Len(t, heard[1], 1+far+1, "the far player is told the rest")
}

// TestNewsAreToldAsThePlainRule: the frames a session is told of the
// tick's news (tellNews: the news filed by chunk when they are many, laid
// out as columns, decided into bit sets, written in order) are those of
// the rule taken news by news over every news (plainNews): few news and
// many, in a few chunks and spread over many, in three worlds; spawns,
// moves, despawns and nudges of two kinds of tier table (one with periods
// past the residue tables' 16); places on the reach's edge, NaN and
// infinite ones; ticks near 0 and near the tick counter's wrap, where the
// nudges' phases are taken as written.
func TestNewsAreToldAsThePlainRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	steps := []interest.Step{{BeyondUnits: 1000, Period: 3}, {BeyondUnits: 2500, Period: 17}, {BeyondUnits: 4000, Period: 40}, {BeyondUnits: 5000, Period: 255}}
	long, err := interest.NewTiers(steps, 255)
	require.NoError(t, err)
	var edges []float32 // the bands' limits of both tables
	for _, s := range append(steps, interest.DefaultSteps(2048, 4)...) {
		edges = append(edges, s.BeyondUnits)
	}
	p := &Pipeline{}
	p.cfg.ChunkSize = 4096
	p.tierSets = []interest.Tiers{defaultTiers(t), long}
	reaches := []float32{2000, 4500, DefaultPropRadiusUnits + DefaultPropSlackUnits}
	p.sight.reachHi = reaches[2]
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	var tl teller
	var seen newsSeen
	for _, n := range []int{5, 63, 64, 300, 3000} {
		for _, spread := range []float32{3, 40} { // chunks a side the news fall in
			ps := &p.sight
			ps.news = make([]propNews, n)
			place := func() wire.Prop {
				// Whole units, so that a point a reach or a limit away is
				// exactly on it.
				q := wire.Prop{Actor: rng.Uint32(), WorldOrCell: uint32(rng.IntN(3)), X: float32(rng.IntN(int(spread * 4096))), Y: float32(rng.IntN(int(spread * 4096))), Flags: uint16(rng.Uint32())}
				switch rng.IntN(40) {
				case 0:
					q.X = nan
				case 1:
					q.Y = -inf
				}
				return q
			}
			for i := range ps.news {
				nw := &ps.news[i]
				nw.hadWas, nw.hasNow = rng.IntN(4) != 0, true
				if nw.hadWas && rng.IntN(4) == 0 {
					nw.hasNow = false
				}
				nw.was, nw.now = place(), place()
				if rng.IntN(2) == 0 { // a push: near where it was
					nw.now.WorldOrCell, nw.now.X, nw.now.Y = nw.was.WorldOrCell, nw.was.X+float32(rng.IntN(600)-300), nw.was.Y+float32(rng.IntN(600)-300)
				}
				nw.now.Actor = nw.was.Actor
				nw.reach, nw.kind = reaches[rng.IntN(len(reaches))], uint8(rng.IntN(2))
				if nw.nudge = nw.hadWas && nw.hasNow && rng.IntN(3) != 0; nw.nudge {
					nw.half = interest.SenderHalf(nw.was.Actor)
				}
			}
			for _, tick := range []uint64{0, uint64(rng.Uint32()), math.MaxUint32 - 2*interest.PhaseModulus, math.MaxUint32 - 2*interest.PhaseModulus + 1, math.MaxUint32 - uint64(rng.IntN(interest.PhaseModulus)), 1<<32 + 5} {
				p.frame.Tick = tick
				ps.fileNews(p)
				for range 100 {
					pt := sightPoint{actor: 1, world: uint32(rng.IntN(3)), x: rng.Float32() * spread * 4096, y: rng.Float32() * spread * 4096}
					if at := ps.news[rng.IntN(n)]; rng.IntN(2) == 0 { // on a news' reach or a band's limit, or near it
						pt.world, pt.x, pt.y = at.now.WorldOrCell, at.now.X+at.reach, at.now.Y
						switch rng.IntN(4) {
						case 0:
							pt.x, pt.y = at.was.X+rng.Float32()*1000, at.was.Y
						case 1:
							pt.world, pt.x, pt.y = at.was.WorldOrCell, at.was.X-at.reach, at.was.Y
						case 2:
							pt.x = at.now.X + edges[rng.IntN(len(edges))]
						}
					}
					rhalf := interest.RecipientHalf(rng.Uint32())
					tl.out = tl.out[:0]
					tl.tellNews(p, &pt, rhalf)
					want := plainNews(p, &pt, rhalf, &seen)
					require.Equal(t, want, append([]byte{}, tl.out...), "%d news over %g chunks a side, tick %d, point %+v", n, spread, tick, pt)
				}
			}
		}
	}
	t.Logf("%+v", seen)
	require.True(t, seen.told > 0 && seen.lost > 0 && seen.nudged > 0 && seen.withheld > 0 && seen.wrapped > 0, "%+v", seen)
}

// sees is the rule's sight: a point sees a place in its world within
// reach.
func (s sightPoint) sees(q *wire.Prop, reach float32) bool {
	if s.actor == 0 || s.world != q.WorldOrCell {
		return false
	}
	dx, dy := q.X-s.x, q.Y-s.y
	return dx*dx+dy*dy <= reach*reach
}

// newsSeen counts what plainNews decided: props told, Disappears,
// nudges told and withheld, and nudges decided at ticks near the wrap.
type newsSeen struct{ told, lost, nudged, withheld, wrapped int }

// plainNews is the frames of the tick's news for a session whose sight
// point was pt, news by news over every news, as the rule says: a prop's
// state to a viewer who sees it now, unless it is a nudge, the viewer saw
// it before, and the pair is not due at the tier period of its distance
// now; a Disappear to one who saw it and does not now.
func plainNews(p *Pipeline, pt *sightPoint, rhalf uint32, count *newsSeen) []byte {
	out := []byte{}
	for _, n := range p.sight.news {
		seen := n.hadWas && pt.sees(&n.was, n.reach)
		switch {
		case n.hasNow && pt.sees(&n.now, n.reach):
			dx, dy := n.now.X-pt.x, n.now.Y-pt.y
			period := uint32(p.tierSets[n.kind].PeriodSq(dx*dx + dy*dy))
			due := period <= 1 || (n.half+rhalf+uint32(p.frame.Tick))%period == 0
			if n.nudge && seen {
				count.nudged++
				if !newsFast(uint32(p.frame.Tick)) {
					count.wrapped++
				}
			}
			if !n.nudge || !seen || due {
				out = append(out, wire.PropSize, 0)
				out = wire.AppendProp(out, n.now)
				count.told++
			} else {
				count.withheld++
			}
		case seen:
			out = append(out, wire.DisappearSize, 0)
			out = wire.AppendDisappear(out, wire.Disappear{Actor: n.was.Actor})
			count.lost++
		}
	}
	return out
}
