package save_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

var update = flag.Bool("update", false, "rewrite the golden save of this format version")

// TestGoldenSavesStayReadable reads the save every format version wrote,
// kept in testdata (world-v<N>.save, written by this test with -update
// while N was the current version), and checks what it holds: since
// version 4 every actor's class, before it the class a spawn gives. Each
// version's file stays, so a later version's reader is checked against
// every earlier one. A save of the current version's world gives the
// golden file's bytes exactly.
func TestGoldenSavesStayReadable(t *testing.T) {
	golden := func(v uint32) string { return filepath.Join("testdata", fmt.Sprintf("world-v%d.save", v)) }
	current := golden(save.Version)
	if *update {
		data, err := os.ReadFile(goldenSave(t).Path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(current, data, 0o644))
	}
	for v := uint32(1); v <= save.Version; v++ {
		path := golden(v)
		f, err := save.Read(path)
		require.NoError(t, err, path)
		assert.Equal(t, v, f.Version())
		assert.Equal(t, uint64(1234), f.Tick())
		kept, err := f.Kept(gameTypes())
		require.NoError(t, err)
		switch v {
		case 1:
			assert.Equal(t, 53, f.Actors(), "60 actors, 6 players, 1 despawned")
			assert.Empty(t, kept, "version 1 kept no players")
		case 2:
			assert.Equal(t, 53+4, f.Actors(), "and 3 named players in play and 1 away")
		default:
			assert.Equal(t, 53+4+len(goldenProps), f.Actors(), "and the props")
		}
		if v >= 2 {
			byName := map[string]*save.Kept{}
			for _, k := range kept {
				byName[k.Player] = k
			}
			require.Len(t, byName, 4)
			assert.Equal(t, components.ActorID{ID: 4}, byName["player 3"].ID)
			assert.Equal(t, components.ActorID{ID: 44}, byName["player 43"].ID)
			assert.Equal(t, components.ActorID{ID: 2}, byName["away"].ID)
			assert.Equal(t, uint16(23), byName["player 23"].Animation.Flags)
			want := map[string]uint8{"player 3": components.ClassPlayer, "player 23": components.ClassPlayer,
				"player 43": components.ClassPlayer, "away": components.ClassPlayer}
			if v >= 4 {
				want["player 23"] = goldenPlayerClass
				want["away"] = components.ClassNPC // kept from actor 2, an NPC: Keep keeps its class
			}
			for name, class := range want {
				assert.Equal(t, class, byName[name].Class, "version %d: %s", v, name)
			}
		}
		w := ecs.NewWorld(64)
		require.NoError(t, f.Restore(w, gameTypes()))
		_, ok := w.Entity(components.ActorID{ID: 4})
		assert.False(t, ok, "a player's actor waits for its player")
		health := ark.NewMap[Health](w.Ark())
		label := ark.NewMap[Label](w.Ark())
		e, ok := w.Entity(components.ActorID{ID: 6}) // the sixth actor: i = 5
		require.True(t, ok)
		assert.Equal(t, Health{Points: 5, Max: 100}, *health.Get(e))
		assert.Equal(t, "crate 5", label.Get(e).Text)
		clients := ark.NewMap[components.Client](w.Ark())
		for id := uint32(1); id < 60; id++ {
			if e, ok := w.Entity(components.ActorID{ID: id}); ok {
				class := components.ClassNPC
				if v >= 4 && id == goldenNPC {
					class = goldenNPCClass
				}
				assert.Equal(t, components.Client{Class: class}, *clients.Get(e), "version %d: actor %d", v, id)
			}
		}
		if v < 3 {
			assert.Equal(t, uint32(61), w.NextID())
			assert.Zero(t, w.Props(), "version %d kept no props", v)
			continue
		}
		assert.Equal(t, uint32(61+len(goldenProps)), w.NextID())
		assert.Equal(t, len(goldenProps), w.Props())
		for i, gp := range goldenProps {
			id := components.ActorID{ID: uint32(61 + i)}
			e, ok := w.Entity(id)
			require.True(t, ok, "prop %d", id.ID)
			assert.Contains(t, propsIn(w, w.KeyOf(gp.at)), id.ID, "prop %d is a prop of its chunk", id.ID)
			assert.Equal(t, gp.at, *ark.NewMap[components.Transform](w.Ark()).Get(e))
			assert.Equal(t, gp.flags, ark.NewMap[components.Animation](w.Ark()).Get(e).Flags)
			assert.Equal(t, gp.health != 0, health.Has(e), "prop %d", id.ID)
			assert.Equal(t, gp.label != "", label.Has(e), "prop %d", id.ID)
			class := components.ClassProp
			if v >= 4 && gp.class != 0 {
				class = gp.class
			}
			assert.Equal(t, class, clients.Get(e).Class, "version %d: prop %d", v, id.ID)
		}
		e, _ = w.Entity(components.ActorID{ID: 63})
		assert.Equal(t, Health{Points: 3, Max: 9}, *health.Get(e))
		assert.Equal(t, "chest", label.Get(e).Text)
	}
	// Today's writer still writes today's golden file.
	got, err := os.ReadFile(goldenSave(t).Path)
	require.NoError(t, err)
	want, err := os.ReadFile(current)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the writer's bytes changed: bump save.Version and add a golden file, or run with -update if the change is meant")
}

// goldenProp is a prop of the golden world.
type goldenProp struct {
	at     components.Transform
	flags  uint16
	health int32 // its Health's Points, 0: no Health
	label  string
	class  uint8 // a game's class, since version 4; 0: ClassProp
}

// goldenProps are the golden world's props, since version 3: IDs 61 on.
var goldenProps = []goldenProp{
	{at: components.Transform{X: 10, Y: 10, Yaw: 1}, flags: 0x11, health: 1},
	{at: components.Transform{X: 70, Y: 10}, label: "door"},
	{at: components.Transform{X: 12, Y: 11, Z: 2}, flags: 3, health: 3, label: "chest", class: 4},
	{at: components.Transform{X: 5, Y: 5, WorldOrCell: 1}},
	{at: components.Transform{X: 300, Y: -200}, flags: 7, health: 5},
}

// The golden world's actors of a game's class, since version 4: an NPC
// and the player of slot 23 (actor 24).
const (
	goldenNPC         = 6
	goldenNPCClass    = 5
	goldenPlayerClass = 7
)

// goldenSave saves the golden world: 60 actors, 6 of them players, of
// whom those of slots 3, 23 and 43 are named, a kept player away, and the
// goldenProps; NPC goldenNPC, player 23 and the chest are of a game's
// class.
func goldenSave(t *testing.T) save.Result {
	w := world(t, 60, true)
	clients := ark.NewMap[components.Client](w.Ark())
	for id, class := range map[uint32]uint8{goldenNPC: goldenNPCClass, 24: goldenPlayerClass} {
		e, ok := w.Entity(components.ActorID{ID: id})
		require.True(t, ok)
		clients.Get(e).Class = class
	}
	for _, gp := range goldenProps {
		id := w.Spawn(ecs.ActorSpec{Transform: gp.at, Animation: components.Animation{Flags: gp.flags}, Prop: true,
			Client: components.Client{Class: gp.class}})
		w.Apply(nil)
		e, _ := w.Entity(id)
		if gp.health != 0 {
			ark.NewMap[Health](w.Ark()).Add(e, &Health{Points: gp.health, Max: 9})
		}
		if gp.label != "" {
			ark.NewMap[Label](w.Ark()).Add(e, &Label{Text: gp.label})
		}
	}
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	names := make([]string, 60)
	for _, i := range []int{3, 23, 43} {
		names[i] = fmt.Sprintf("player %d", i)
	}
	away, ok := save.Keep(w, components.ActorID{ID: 2}, "away", gameTypes())
	require.True(t, ok)
	return saveWith(t, s, t.TempDir(), 1234, save.Players{Names: names, Kept: []*save.Kept{away}})
}
