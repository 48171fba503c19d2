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
// while N was the current version), and checks what it holds. Each
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
		if v == 1 {
			assert.Equal(t, 53, f.Actors(), "60 actors, 6 players, 1 despawned")
			assert.Empty(t, kept, "version 1 kept no players")
		} else {
			assert.Equal(t, 53+4, f.Actors(), "and 3 named players in play and 1 away")
			byName := map[string]*save.Kept{}
			for _, k := range kept {
				byName[k.Player] = k
			}
			require.Len(t, byName, 4)
			assert.Equal(t, components.ActorID{ID: 4}, byName["player 3"].ID)
			assert.Equal(t, components.ActorID{ID: 44}, byName["player 43"].ID)
			assert.Equal(t, components.ActorID{ID: 2}, byName["away"].ID)
			assert.Equal(t, uint16(23), byName["player 23"].Animation.Flags)
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
		assert.Equal(t, uint32(61), w.NextID())
	}
	// Today's writer still writes today's golden file.
	got, err := os.ReadFile(goldenSave(t).Path)
	require.NoError(t, err)
	want, err := os.ReadFile(current)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the writer's bytes changed: bump save.Version and add a golden file, or run with -update if the change is meant")
}

// goldenSave saves the golden world: 60 actors, 6 of them players, of
// whom those of slots 3, 23 and 43 are named, and a kept player away.
func goldenSave(t *testing.T) save.Result {
	w := world(t, 60, true)
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
