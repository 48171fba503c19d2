package plaza_test

import (
	"fmt"
	"math"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// spot is where a test admits a player: by token.
type spot map[string]components.Transform

func (s spot) admit(h wire.Hello) (throng.Entry, error) {
	t, ok := s[string(h.Token)]
	if !ok {
		return throng.Entry{}, fmt.Errorf("no player %q here", h.Token)
	}
	return throng.Entry{Player: string(h.Token), Spawn: t}, nil
}

// stage is a server on the in-memory transport with the plaza set up as
// cfg says, ticked once so that its actors are in the world.
type stage struct {
	t      *testing.T
	srv    *throng.Server
	plaza  *plaza.World
	spots  spot
	places *ark.Map[components.Transform]
	anims  *ark.Map[components.Animation]
}

func newStage(t *testing.T, cfg plaza.Config, opts throng.Options) *stage {
	t.Helper()
	s := &stage{t: t, spots: spot{}}
	opts.Admit = s.spots.admit
	srv, err := throng.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	s.srv = srv
	s.plaza, err = plaza.Setup(srv, cfg)
	require.NoError(t, err)
	s.places = ark.NewMap[components.Transform](srv.World().Ark())
	s.anims = ark.NewMap[components.Animation](srv.World().Ark())
	srv.Tick()
	return s
}

// where returns an actor's Transform.
func (s *stage) where(id components.ActorID) components.Transform {
	e, ok := s.srv.World().Entity(id)
	require.True(s.t, ok, "actor %d is in the world", id.ID)
	return *s.places.Get(e)
}

// player is a client of the stage's server and what it heard.
type player struct {
	c      *mem.Client
	actor  uint32
	seq    uint32
	props  map[uint32][]wire.Prop // every Prop frame, by prop
	gone   map[uint32]int         // Disappears, by actor
	record map[uint32]wire.Record // the last record of each actor
	frame  wire.Frame
}

// join admits a player called token at t, ticks until it is in, and
// returns it.
func (s *stage) join(token string, t components.Transform) *player {
	s.t.Helper()
	s.spots[token] = t
	p := &player{c: s.srv.Mem().Dial(), props: map[uint32][]wire.Prop{}, gone: map[uint32]int{}, record: map[uint32]wire.Record{}}
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
	require.NoError(s.t, err)
	require.NoError(s.t, p.c.Send(hello))
	for range 10 {
		s.srv.Tick()
		if p.hear(s.t); p.actor != 0 {
			return p
		}
	}
	s.t.Fatalf("%s was never welcomed", token)
	return nil
}

// hear reads what arrived.
func (p *player) hear(t *testing.T) {
	p.c.DrainReliable(func(b []byte) {
		require.NoError(t, wire.Decode(b, &p.frame))
		switch p.frame.Type {
		case wire.TypeWelcome:
			p.actor = p.frame.Welcome.Actor
		case wire.TypeProp:
			p.props[p.frame.Prop.Actor] = append(p.props[p.frame.Prop.Actor], p.frame.Prop)
		case wire.TypeDisappear:
			p.gone[p.frame.Disappear.Actor]++
		}
	})
	p.c.DrainDatagrams(func(d []byte) {
		b, err := wire.DecodeBatch(d)
		require.NoError(t, err)
		for i := range b.Len() {
			r := b.At(i)
			p.record[r.Actor] = r
		}
	})
}

// move sends the player's next update.
func (p *player) move(t *testing.T, x, y float32) {
	p.seq++
	require.NoError(t, p.c.Send(wire.AppendMove(nil, wire.Move{Seq: p.seq, X: x, Y: y, Flags: scenario.FlagWalking})))
}

// tick runs one tick and lets every player hear it.
func (s *stage) tick(players ...*player) {
	s.srv.Tick()
	for _, p := range players {
		p.hear(s.t)
	}
}

func TestThePlazaSystemsRunWhereTheirAccessAllows(t *testing.T) {
	s := newStage(t, plaza.Config{Props: 10, NPCs: 10}, throng.Options{})
	sched, err := s.srv.Schedule()
	require.NoError(t, err)
	assert.Equal(t, "[[ingest plaza-npcs] [prepare] [move] [relay plaza-physics] [join] [plaza-props]]", fmt.Sprint(sched.Stages()),
		"the NPCs beside ingest, before Move; the physics beside the relay; the props' changes after the join")
	assert.Len(t, s.plaza.Props(), 10)
	assert.Len(t, s.plaza.NPCs(), 10)
	assert.Equal(t, 20, s.plaza.Actors())
	assert.Equal(t, 20, s.srv.World().Len(), "in the world after the first tick")
	assert.Equal(t, 10, s.srv.World().Props())
}

// TestADefaultPlazaHasFiveThousandPropsOnItsTwoHundredFortyMetres: the
// zero Config is the plaza of the scenario: 5,000 props and 200 NPCs,
// all standing on the 240 x 240 m plaza.
func TestADefaultPlazaHasFiveThousandPropsOnItsTwoHundredFortyMetres(t *testing.T) {
	s := newStage(t, plaza.Config{}, throng.Options{})
	require.Len(t, s.plaza.Props(), plaza.DefaultProps)
	require.Len(t, s.plaza.NPCs(), plaza.DefaultNPCs)
	area := scenario.PlazaArea()
	in := func(tr components.Transform) bool {
		return tr.X >= area.MinX && tr.X <= area.MaxX && tr.Y >= area.MinY && tr.Y <= area.MaxY
	}
	var quarter [4]int
	for _, id := range s.plaza.Props() {
		tr := s.where(id)
		require.True(t, in(tr), "prop %d at %+v is on the plaza", id.ID, tr)
		q := 0
		if tr.X > (area.MinX+area.MaxX)/2 {
			q++
		}
		if tr.Y > (area.MinY+area.MaxY)/2 {
			q += 2
		}
		quarter[q]++
	}
	for q, n := range quarter {
		assert.InDelta(t, plaza.DefaultProps/4, n, 150, "quarter %d holds its share", q)
	}
	for _, id := range s.plaza.NPCs() {
		require.True(t, in(s.where(id)), "NPC %d is on the plaza", id.ID)
	}
}

// TestAPushSlidesThePropAndThePlayersAroundAreTold: a player walking into
// a prop pushes it the way it walks; a player 20 m away is told where it
// went, every step of its slide and where it comes to rest (within a few
// metres); one 50 m away is told the push, every other step (the slide's
// steps are nudges, which far players hear at their interest tiers'
// period) and the rest; one 150 m away, outside the prop radius, is told
// nothing of it.
func TestAPushSlidesThePropAndThePlayersAroundAreTold(t *testing.T) {
	s := newStage(t, plaza.Config{Props: 1, NPCs: -1, Seed: 4}, throng.Options{})
	prop := s.plaza.Props()[0]
	at := s.where(prop)
	pusher := s.join("pusher", components.Transform{X: at.X - 300, Y: at.Y})
	beside := s.join("beside", components.Transform{X: at.X, Y: at.Y - 1400})
	near := s.join("near", components.Transform{X: at.X, Y: at.Y + 3500})
	far := s.join("far", components.Transform{X: at.X, Y: at.Y + 10500})
	s.tick(pusher, beside, near, far)
	require.Len(t, near.props[prop.ID], 1, "the player 50 m away sees the prop")
	assert.Empty(t, far.props[prop.ID], "the one 150 m away does not")
	require.Zero(t, s.plaza.PropChanges())

	// Walk east at 300 units a second, straight at the prop, until it moves.
	x := at.X - 300
	for range 60 {
		x += 10
		pusher.move(t, x, at.Y)
		s.tick(pusher, beside, near, far)
		if s.plaza.PropChanges() > 0 {
			break
		}
	}
	require.Positive(t, s.plaza.PropChanges(), "the walk reached the prop and pushed it")
	assert.InDelta(t, at.X-plaza.PushReach, x, 15, "within a metre of it")
	s.tick(pusher, beside, near, far) // the join that tells the push
	heard := near.props[prop.ID]
	require.Len(t, heard, 2, "the push is told at once")
	assert.Greater(t, heard[1].X, at.X, "east, the way the pusher walked")
	assert.InDelta(t, at.Y, heard[1].Y, 0.01)
	assert.NotZero(t, heard[1].Flags&plaza.FlagSliding, "told as sliding")
	assert.Equal(t, 1, s.plaza.Sliding())

	// The pusher stands; the prop slides on, slowing, and comes to rest.
	ticks := 0
	for ; s.plaza.Sliding() > 0 && ticks < 300; ticks++ {
		s.tick(pusher, beside, near, far)
	}
	require.Zero(t, s.plaza.Sliding(), "the prop came to rest")
	slid := float64(s.where(prop).X - at.X)
	assert.Greater(t, slid, 300.0, "a kick at walking pace slides it some metres")
	assert.Less(t, slid, 900.0, "and friction stops it within about 13 m")
	assert.InDelta(t, 2*30, ticks, 20, "in about 2 s")
	s.tick(pusher, beside, near, far)
	for _, p := range []*player{beside, near} {
		heard := p.props[prop.ID]
		last := heard[len(heard)-1]
		assert.Equal(t, s.where(prop).X, last.X, "the place it came to rest at is told")
		assert.Zero(t, last.Flags&plaza.FlagSliding, "at rest")
	}
	heard = beside.props[prop.ID]
	assert.InDelta(t, ticks/3, len(heard)-2, 3, "while it slid, about 10 times a second")
	assert.Equal(t, uint64(len(heard)-1), s.plaza.PropChanges(), "every change made was told to the player 20 m away")
	heard = near.props[prop.ID]
	assert.InDelta(t, ticks/6, len(heard)-3, 3, "50 m away, every other step of the slide")

	told := len(heard)
	for range 30 {
		s.tick(pusher, beside, near, far)
	}
	assert.Len(t, near.props[prop.ID], told, "a prop at rest costs nothing")
	assert.Empty(t, far.props[prop.ID], "the far player heard nothing of it all along")
	assert.Zero(t, far.gone[prop.ID])
}

// TestAPropWalkedAwayFromIsNotPushed: walking past a prop or away from it
// within reach does not push it: only a walker moving toward it does.
func TestAPropWalkedAwayFromIsNotPushed(t *testing.T) {
	s := newStage(t, plaza.Config{Props: 1, NPCs: -1, Seed: 4}, throng.Options{})
	prop := s.plaza.Props()[0]
	at := s.where(prop)
	p := s.join("walker", components.Transform{X: at.X + 20, Y: at.Y})
	x := at.X + 20
	for range 30 { // away, east, from 20 units off
		x += 10
		p.move(t, x, at.Y)
		s.tick(p)
	}
	assert.Zero(t, s.plaza.PropChanges(), "walking away pushes nothing")
	assert.Equal(t, at, s.where(prop))
}

// TestNPCsFollowTheNearestPlayerWithinTenMetres: an NPC with a player 5
// m away walks up to it and stops 1.5 m short, and the player sees it
// come, flagged as an NPC; a player 30 m away is not followed.
func TestNPCsFollowTheNearestPlayerWithinTenMetres(t *testing.T) {
	s := newStage(t, plaza.Config{Props: -1, NPCs: 1, Seed: 2}, throng.Options{})
	npc := s.plaza.NPCs()[0]
	at := s.where(npc)
	follow := components.Transform{X: at.X + 350, Y: at.Y}
	near := s.join("near", follow)
	far := s.join("far", components.Transform{X: at.X - 2100, Y: at.Y})
	for range 60 { // 2 s: 245 units to walk at 250 a second
		s.tick(near, far)
	}
	got := s.where(npc)
	d := math.Hypot(float64(follow.X-got.X), float64(follow.Y-got.Y))
	assert.InDelta(t, plaza.KeepDistance, d, 1, "the NPC stands 1.5 m from the player it followed")
	assert.InDelta(t, at.Y, got.Y, 10, "it came straight (after a step or two of its wander while the players joined)")
	r, ok := near.record[npc.ID]
	require.True(t, ok, "the player saw the NPC move")
	assert.InDelta(t, got.X, r.X, 0.01)
	assert.NotZero(t, r.Flags&plaza.FlagNPC, "flagged as an NPC")

	// The player walks 5 m east: the NPC follows.
	for x := follow.X; x < follow.X+350; x += 10 {
		near.move(t, x+10, follow.Y)
		s.tick(near, far)
	}
	for range 30 {
		s.tick(near, far)
	}
	got = s.where(npc)
	assert.InDelta(t, follow.X+350-plaza.KeepDistance, got.X, 1, "and caught up again")
	assert.NotZero(t, near.record[npc.ID].Flags&plaza.FlagNPC)
}

// TestLoneNPCsWanderTheirPlaza: NPCs with no player near walk and stand
// in turns, and stay on the plaza.
func TestLoneNPCsWanderTheirPlaza(t *testing.T) {
	s := newStage(t, plaza.Config{Props: -1, NPCs: 20, Seed: 9}, throng.Options{})
	start := map[uint32]components.Transform{}
	for _, id := range s.plaza.NPCs() {
		start[id.ID] = s.where(id)
	}
	area := scenario.PlazaArea()
	walked, stood := 0, 0
	for range 30 * 20 { // 20 s
		s.srv.Tick()
		for _, id := range s.plaza.NPCs() {
			tr := s.where(id)
			require.True(t, tr.X >= area.MinX && tr.X <= area.MaxX && tr.Y >= area.MinY && tr.Y <= area.MaxY, "NPC %d left the plaza: %+v", id.ID, tr)
			e, _ := s.srv.World().Entity(id)
			if s.anims.Get(e).Flags&scenario.FlagWalking != 0 {
				walked++
			} else {
				stood++
			}
		}
	}
	assert.Greater(t, walked, stood, "walks (3 to 8 s) are longer than stops (2 to 5 s)")
	assert.Positive(t, stood, "but they stop too")
	moved := 0
	for _, id := range s.plaza.NPCs() {
		if s.where(id) != start[id.ID] {
			moved++
		}
	}
	assert.Equal(t, 20, moved)
}
