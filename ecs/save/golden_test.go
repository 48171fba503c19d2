package save_test

import (
	"bytes"
	"flag"
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
	current := filepath.Join("testdata", "world-v1.save")
	if *update {
		w := world(t, 60, true)
		s, err := save.NewSaver(w, gameTypes())
		require.NoError(t, err)
		res := saveTo(t, s, t.TempDir(), 1234)
		data, err := os.ReadFile(res.Path)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(current, data, 0o644))
	}
	golden := []string{current}
	for _, path := range golden {
		f, err := save.Read(path)
		require.NoError(t, err, path)
		assert.Equal(t, uint64(1234), f.Tick())
		assert.Equal(t, 53, f.Actors(), "60 actors, 6 players, 1 despawned")
		w := ecs.NewWorld(64)
		require.NoError(t, f.Restore(w, gameTypes()))
		health := ark.NewMap[Health](w.Ark())
		label := ark.NewMap[Label](w.Ark())
		e, ok := w.Entity(components.ActorID{ID: 6}) // the sixth actor: i = 5
		require.True(t, ok)
		assert.Equal(t, Health{Points: 5, Max: 100}, *health.Get(e))
		assert.Equal(t, "crate 5", label.Get(e).Text)
		assert.Equal(t, uint32(61), w.NextID())
	}
	// Today's writer still writes today's golden file.
	w := world(t, 60, true)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	res := saveTo(t, s, t.TempDir(), 1234)
	got, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	want, err := os.ReadFile(current)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want, got), "the writer's bytes changed: bump save.Version and add a golden file, or run with -update if the change is meant")
}
