package throng_test

import (
	"path/filepath"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

func TestClassesResolveInMetresAndUnits(t *testing.T) {
	opts, err := throng.LoadOptionsFile(filepath.Join("testdata", "full.json"))
	require.NoError(t, err)
	s, _, err := opts.Resolve()
	require.NoError(t, err)
	assert.Equal(t, []throng.ClassSettings{
		{Name: "player"},
		{Name: "npc", BudgetRank: 2, InterestTiers: []throng.InterestTier{{BeyondUnits: 30 * 64, Period: 2}, {BeyondUnits: 4000, Period: 6}}},
		{Name: "prop"},
		{Name: "lamp", RadiusUnits: 200 * 64},
		{Name: "crate", RadiusUnits: 3000},
	}, s.Classes, "Throng's three first, the game's numbered from 3 in order; metres at unitsPerMetre")
	assert.Equal(t, float32(64), s.UnitsPerMetre)
}

func TestBadClassesAreErrorsNamingTheKey(t *testing.T) {
	classes := func(entries string) string { return `{"classes": [` + entries + `]}` }
	tests := []struct{ doc, msg string }{
		{classes(`{"budgetRank": 1}`), "classes[0].name: missing (a list entry has no defaults)"},
		{classes(`{"name": ""}`), "classes[0].name: must name the class"},
		{classes(`{"name": "lamp"}, {"name": "lamp"}`), `classes[1].name: "lamp" is listed twice`},
		{classes(`{"name": "npc", "budgetRank": 8}`), "classes[0].budgetRank: must be 0 to 7, got 8"},
		{classes(`{"name": "lamp", "radiusUnits": 10, "radiusMetres": 1}`), "classes[0].radiusMetres: give radiusUnits or radiusMetres, not both"},
		{classes(`{"name": "lamp", "radiusMetres": 0}`), "classes[0].radiusMetres: must be a positive finite number, got 0"},
		{classes(`{"name": "player", "interestTiers": [{"beyondUnits": 10, "period": 2}]}`), "classes[0].interestTiers: the players' table is parallelism.interestTiers"},
		{classes(`{"name": "npc", "interestTiers": [{"period": 2}]}`), "classes[0].interestTiers[0].beyondUnits: give beyondUnits or beyondMetres, one of the two"},
		{classes(`{"name": "npc", "interestTiers": [{"beyondUnits": 10, "beyondMetres": 1, "period": 2}]}`), "classes[0].interestTiers[0].beyondUnits: give beyondUnits or beyondMetres, one of the two"},
		{classes(`{"name": "npc", "interestTiers": [{"beyondUnits": 10, "period": 3}, {"beyondUnits": 20, "period": 2}]}`), "classes[0].interestTiers[1].period: must not be shorter than the step before (3), got 2"},
		{`{"unitsPerMetre": 0}`, "unitsPerMetre: must be above 0"},
		{classes(`{"name": "c3"}, {"name": "c4"}, {"name": "c5"}, {"name": "c6"}, {"name": "c7"}, {"name": "c8"}, {"name": "c9"}, {"name": "c10"}, {"name": "c11"}, {"name": "c12"}, {"name": "c13"}, {"name": "c14"}, {"name": "c15"}, {"name": "c16"}`),
			`classes[13].name: "c16" is past the 16 classes a server has (3 of them Throng's)`},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			_, err := loadErr(t, tt.doc)
			assert.Equal(t, "throng: options: "+tt.msg, err.Error())
		})
	}
}

func TestAServerFindsItsClassesByName(t *testing.T) {
	opts := throng.Options{Transport: mem.New(mem.Options{}), Classes: []throng.ClassOptions{{Name: "lamp"}, {Name: "npc"}, {Name: "crate"}}}
	s, err := throng.New(opts)
	require.NoError(t, err)
	defer s.Close()
	for name, want := range map[string]uint8{"player": 0, "npc": 1, "prop": 2, "lamp": 3, "crate": 4} {
		got, ok := s.Class(name)
		assert.True(t, ok, name)
		assert.Equal(t, want, got, name)
	}
	_, ok := s.Class("dragon")
	assert.False(t, ok, "a class the settings do not name")
}

// herdDriver moves every actor of herd a unit east each tick, as a game's
// system would.
type herdDriver struct {
	world      *ecs.World
	transforms *ark.Map[components.Transform]
	herd       []components.ActorID
}

func (d *herdDriver) Name() string { return "herd" }
func (d *herdDriver) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform]())
}
func (d *herdDriver) RunSerial(*scheduler.Tick) {
	for _, id := range d.herd {
		if e, ok := d.world.Entity(id); ok {
			d.transforms.Get(e).X++
		}
	}
}

// TestEachClassIsHeardByItsOwnTiers: four NPCs the same distance from a
// player, all moving every tick, of four classes: "npc" with a table of
// its own (one update in six from 100 units), "herald" (every update to
// 100,000 units), "walker" (the players' table: one in two at 3,000 units)
// and "hermit" (the players' table within 2,000 units). Over 60 ticks the
// player hears them 10, 60, 30 and 0 times, and has seen all four appear.
func TestEachClassIsHeardByItsOwnTiers(t *testing.T) {
	srv, err := throng.New(throng.Options{
		Admit: func(wire.Hello) (throng.Entry, error) {
			return throng.Entry{Spawn: components.Transform{X: 2048, Y: 2048}}, nil
		},
		Classes: []throng.ClassOptions{
			{Name: "npc", InterestTiers: []throng.ClassTier{{BeyondUnits: new(float32(100)), Period: 6}}},
			{Name: "herald", InterestTiers: []throng.ClassTier{{BeyondMetres: new(float32(100_000.0 / 70)), Period: 2}}},
			{Name: "walker"},
			{Name: "hermit", RadiusUnits: new(float32(2000))},
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	world := srv.World()
	drive := &herdDriver{world: world, transforms: ark.NewMap[components.Transform](world.Ark())}
	names := map[components.ActorID]string{}
	for i, name := range []string{"npc", "herald", "walker", "hermit"} {
		class, ok := srv.Class(name)
		require.True(t, ok)
		id := world.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 2048 + 3000, Y: 700 * float32(i+1)}, Client: components.Client{Class: class}})
		drive.herd = append(drive.herd, id)
		names[id] = name
	}
	require.NoError(t, srv.AddSystem(drive, scheduler.Before(systems.MoveName)))
	player := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
	require.NoError(t, err)
	require.NoError(t, player.Send(hello))
	srv.Tick()
	srv.Tick()
	player.DrainDatagrams(func([]byte) {})
	appeared := map[string]bool{}
	player.DrainReliable(func(f []byte) {
		var fr wire.Frame
		require.NoError(t, wire.Decode(f, &fr))
		if name, ok := names[components.ActorID{ID: fr.Appear.Actor}]; ok && fr.Type == wire.TypeAppear {
			appeared[name] = true
		}
	})
	assert.Len(t, appeared, 4, "every NPC appeared, the hermit beyond its radius too")
	heard := map[string]int{}
	for range 60 {
		srv.Tick()
		player.DrainDatagrams(func(d []byte) {
			b, err := wire.DecodeBatch(d)
			require.NoError(t, err)
			for i := range b.Len() {
				if name, ok := names[components.ActorID{ID: b.At(i).Actor}]; ok {
					heard[name]++
				}
			}
		})
	}
	assert.Equal(t, map[string]int{"npc": 10, "herald": 60, "walker": 30}, heard, "the hermit, beyond its radius, is never heard")
}
