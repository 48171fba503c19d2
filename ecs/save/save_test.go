package save_test

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// Health is a plain component of a game's own.
type Health struct {
	Points, Max int32
	Poisoned    bool
}

// Label is a coded one: a string.
type Label struct{ Text string }

type labelCodec struct{}

func (labelCodec) Append(dst []byte, v *Label) []byte { return append(dst, v.Text...) }
func (labelCodec) Decode(src []byte, v *Label) error {
	if bytes.IndexByte(src, 0) >= 0 {
		return errors.New("a label holds no NUL")
	}
	v.Text = string(src)
	return nil
}

func gameTypes() []save.Type {
	return []save.Type{save.Plain[Health]("game.health", 1), save.Coded[Label]("game.label", 2, labelCodec{})}
}

// world builds a world of n actors spread over a few chunks, some with
// Health, some with a Label, some with both, and (when players) a few
// with clients, which saves leave out.
func world(t testing.TB, n int, players bool) *ecs.World {
	w := ecs.NewWorld(64)
	ids := make([]components.ActorID, n)
	for i := range n {
		spec := ecs.ActorSpec{
			Transform: components.Transform{X: float32(i%40) * 7.5, Y: float32(i/40) * 3.25, Z: float32(i % 3), Yaw: float32(i) / 100, WorldOrCell: uint32(i % 2)},
			Animation: components.Animation{Flags: uint16(i)},
		}
		if players && i%10 == 3 {
			spec.Client = components.Client{Session: uint64(i + 1), Slot: uint32(i)}
		}
		ids[i] = w.Spawn(spec)
	}
	w.Despawn(ids[n-1]) // an ID issued and gone: never reused after a load
	w.Apply(nil)
	health := ark.NewMap[Health](w.Ark())
	label := ark.NewMap[Label](w.Ark())
	for i, id := range ids[:n-1] {
		e, ok := w.Entity(id)
		require.True(t, ok)
		if i%3 != 0 {
			health.Add(e, &Health{Points: int32(i), Max: 100, Poisoned: i%7 == 0})
		}
		if i%4 == 1 {
			label.Add(e, &Label{Text: fmt.Sprintf("crate %d", i)})
		}
	}
	return w
}

// saveTo takes a save of w into dir, its copy units run one after another.
func saveTo(t testing.TB, s *save.Saver, dir string, tick uint64) save.Result {
	return saveWith(t, s, dir, tick, save.Players{})
}

// saveAgainAndAfresh saves w with s, a Saver that saved it before, and
// with a new Saver, and checks that the two files are the same bytes: a
// Saver reusing its last save's buffers writes what a new one would.
func saveAgainAndAfresh(t *testing.T, s *save.Saver, w *ecs.World) (again, fresh save.Result) {
	t.Helper()
	again = saveTo(t, s, t.TempDir(), 2)
	newSaver, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	fresh = saveTo(t, newSaver, t.TempDir(), 2)
	a, err := os.ReadFile(again.Path)
	require.NoError(t, err)
	b, err := os.ReadFile(fresh.Path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "the second save equals a new Saver's")
	return again, fresh
}

// saveWith is saveTo with players.
func saveWith(t testing.TB, s *save.Saver, dir string, tick uint64, players save.Players) save.Result {
	units, err := s.Begin(tick, players)
	require.NoError(t, err)
	for i := range units {
		s.CopyUnit(i)
	}
	res, err := s.Write(dir, 2).Wait()
	require.NoError(t, err)
	return res
}

func TestSaveLoadSaveGivesTheSameBytes(t *testing.T) {
	w := world(t, 500, true)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	first := saveTo(t, s, dir, 41)
	assert.Equal(t, 499-50, first.Actors, "the players' actors are left out")

	f, err := save.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(41), f.Tick())
	loaded := ecs.NewWorld(64)
	require.NoError(t, f.Restore(loaded, gameTypes()))
	assert.Equal(t, 449, loaded.Len())
	assert.Equal(t, w.NextID(), loaded.NextID(), "IDs issued before the save are not issued again")

	// What each actor holds came back.
	health := ark.NewMap[Health](loaded.Ark())
	label := ark.NewMap[Label](loaded.Ark())
	transforms := ark.NewMap[components.Transform](loaded.Ark())
	for i := range 499 {
		e, ok := loaded.Entity(components.ActorID{ID: uint32(i + 1)})
		if i%10 == 3 {
			assert.False(t, ok, "player %d", i)
			continue
		}
		require.True(t, ok, "actor %d", i)
		assert.Equal(t, float32(i%40)*7.5, transforms.Get(e).X)
		assert.Equal(t, i%3 != 0, health.Has(e))
		if i%3 != 0 {
			assert.Equal(t, Health{Points: int32(i), Max: 100, Poisoned: i%7 == 0}, *health.Get(e))
		}
		if i%4 == 1 {
			assert.Equal(t, fmt.Sprintf("crate %d", i), label.Get(e).Text)
		}
	}

	savesAlike(t, first, loaded, 41)
}

// savesAlike checks that loaded, a world read back from the save first
// (written at tick), saves again to the same bytes.
func savesAlike(t *testing.T, first save.Result, loaded *ecs.World, tick uint64) {
	t.Helper()
	s2, err := save.NewSaver(loaded, gameTypes())
	require.NoError(t, err)
	second := saveTo(t, s2, t.TempDir(), tick)
	a, err := os.ReadFile(first.Path)
	require.NoError(t, err)
	b, err := os.ReadFile(second.Path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(a, b), "save, load, save: %d bytes, then %d", len(a), len(b))
}

func TestSavesKeepTheNewestAndTheManifestNamesTheLatest(t *testing.T) {
	w := world(t, 100, false)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	for tick := uint64(1); tick <= 4; tick++ {
		saveTo(t, s, dir, tick*10)
	}
	names, err := filepath.Glob(filepath.Join(dir, "world-*.save"))
	require.NoError(t, err)
	require.Len(t, names, 2, "keep 2")
	f, err := save.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(40), f.Tick())
}

// damaged saves w into a fresh directory and returns the file's bytes and
// path, for a test to spoil.
func damaged(t *testing.T) ([]byte, string) {
	w := world(t, 300, false)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	res := saveTo(t, s, t.TempDir(), 7)
	data, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	return data, res.Path
}

func TestDamagedFilesAreRefusedNamingThePart(t *testing.T) {
	data, path := damaged(t)
	blockStart := func() int {
		// The first block follows the header and the type table, whose
		// end is the first byte after the table's checksum: find it by
		// reading a good file with one block flipped and looking at the
		// error instead would be circular, so walk the table here.
		at := 48
		for range binary.LittleEndian.Uint32(data[28:]) {
			at += 1 + int(data[at])
			at += 8
			at += 2 + int(binary.LittleEndian.Uint16(data[at:]))
		}
		return at + 4
	}()
	cases := []struct {
		name  string
		spoil func([]byte) []byte
		want  string
	}{
		{"truncated in a block", func(b []byte) []byte { return b[:blockStart+40] }, "block 0 (chunk"},
		{"truncated before the trailer", func(b []byte) []byte { return b[:len(b)-10] }, "trailer: truncated"},
		{"empty", func([]byte) []byte { return nil }, "header: truncated"},
		{"a bit flipped in a block", func(b []byte) []byte { b[blockStart+60] ^= 0x10; return b }, "block 0 (chunk 0/0/0): checksum mismatch"},
		{"a bit flipped in the type table", func(b []byte) []byte { b[50] ^= 1; return b }, "type table: checksum mismatch"},
		{"a bit flipped in the header", func(b []byte) []byte { b[13] ^= 1; return b }, "header: checksum mismatch"},
		{"a newer version", func(b []byte) []byte { b[8] = save.Version + 1; return b }, fmt.Sprintf("format version %d; this build reads versions 1 to %d", save.Version+1, save.Version)},
		{"not a save", func(b []byte) []byte { copy(b, "NOTASAVE"); return b }, "not a Throng save"},
		{"bytes after the end", func(b []byte) []byte { return append(b, 0) }, "trailer"},
		// A header whose checksum is right but whose counts are not: Load
		// makes room in the world before it reads the blocks.
		{"more actors than the file holds", func(b []byte) []byte { binary.LittleEndian.PutUint64(b[36:], 1<<40); return reseal(b) },
			"header: says 1099511627776 actors, the blocks hold 299"},
		{"more blocks than the file holds", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[32:], 1<<31); return reseal(b) },
			"truncated"},
		// Load has placed the blocks before it when it finds this one.
		{"a bit flipped in the last block", func(b []byte) []byte { b[len(b)-26] ^= 4; return b }, "checksum mismatch"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spoilt := filepath.Join(t.TempDir(), filepath.Base(path))
			require.NoError(t, os.WriteFile(spoilt, c.spoil(bytes.Clone(data)), 0o644))
			_, err := save.Read(spoilt)
			var fe *save.FormatError
			require.ErrorAs(t, err, &fe)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), spoilt)
			// Load, which places blocks while it reads on, finds the same.
			_, lerr := save.Load(spoilt, ecs.NewWorld(64), gameTypes())
			require.ErrorAs(t, lerr, &fe)
			assert.Equal(t, err.Error(), lerr.Error())
		})
	}
}

// TestLoadPlacesWhatRestorePlaces: Load, which reads the file piece by
// piece while it places what it has checked, builds the world Read and
// Restore build, for a save of many blocks over several of its pieces,
// and keeps the same players for their return.
func TestLoadPlacesWhatRestorePlaces(t *testing.T) {
	w := world(t, 30_000, true)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	first := saveTo(t, s, dir, 9)
	require.Greater(t, first.Bytes, int64(1<<20), "the file spans several of Load's reads")

	read, err := save.Read(dir)
	require.NoError(t, err)
	restored := ecs.NewWorld(64)
	require.NoError(t, read.Restore(restored, gameTypes()))
	loaded := ecs.NewWorld(64)
	f, err := save.Load(dir, loaded, gameTypes())
	require.NoError(t, err)
	assert.Equal(t, 26_999, loaded.Len(), "every actor but the players' and the one despawned")
	assert.Equal(t, restored.Len(), loaded.Len())
	assert.Equal(t, uint64(9), f.Tick())
	assert.Equal(t, w.NextID(), loaded.NextID())
	savesAlike(t, first, restored, 9)
	savesAlike(t, first, loaded, 9)

	// A world that does not fit is refused before anything is placed.
	_, err = save.Load(dir, loaded, gameTypes())
	assert.ErrorContains(t, err, "already has 26999 actors")
	_, err = save.Load(dir, ecs.NewWorld(64), nil)
	assert.ErrorContains(t, err, "which the game has not registered")

	// Named players are kept for their return, the same from either.
	names := make([]string, 30_000)
	for i := 3; i < len(names); i += 20 {
		names[i] = fmt.Sprintf("player %d", i)
	}
	named := t.TempDir()
	saveWith(t, s, named, 10, save.Players{Names: names})
	read, err = save.Read(named)
	require.NoError(t, err)
	keptRead, err := read.Kept(gameTypes())
	require.NoError(t, err)
	f, err = save.Load(named, ecs.NewWorld(64), gameTypes())
	require.NoError(t, err)
	keptLoaded, err := f.Kept(gameTypes())
	require.NoError(t, err)
	assert.Len(t, keptLoaded, 1_500)
	assert.Equal(t, keptRead, keptLoaded)
}

func TestRestoreRefusesTypesThatDoNotMatch(t *testing.T) {
	w := world(t, 50, false)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	saveTo(t, s, dir, 1)
	f, err := save.Read(dir)
	require.NoError(t, err)

	type HealthV2 struct{ Points, Max, Armour int32 }
	for _, c := range []struct {
		types []save.Type
		want  string
	}{
		{[]save.Type{save.Coded[Label]("game.label", 2, labelCodec{})}, `"game.health", which the game has not registered`},
		{[]save.Type{save.Plain[Health]("game.health", 2), save.Coded[Label]("game.label", 2, labelCodec{})}, `"game.health" version 1; the game registers version 2`},
		{[]save.Type{save.Plain[HealthV2]("game.health", 1), save.Coded[Label]("game.label", 2, labelCodec{})}, "bump its version"},
	} {
		fresh := ecs.NewWorld(64)
		err := f.Restore(fresh, c.types)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
		assert.Zero(t, fresh.Len(), "nothing restored")
	}
}

func TestTypesThatCannotBeSavedAreRefused(t *testing.T) {
	type WithSlice struct{ Items []int }
	assert.ErrorContains(t, save.Plain[WithSlice]("game.items", 1).Err(), "field Items: holds a slice; use save.Coded")
	assert.ErrorContains(t, save.Plain[Health]("throng.health", 1).Err(), "Throng's own")
	assert.ErrorContains(t, save.Plain[Health]("", 1).Err(), "must be 1 to 255 bytes")
	_, err := save.NewSaver(ecs.NewWorld(64), []save.Type{save.Plain[Health]("a", 1), save.Plain[Health]("a", 1)})
	assert.ErrorContains(t, err, `"a" registered twice`)
}

// TestASaverFollowsTablesThatChange: between two saves by one Saver,
// actors gain a component (moving table), a chunk's table grows past its
// capacity (its columns move), actors go and a new chunk fills. The
// second save is byte for byte what a new Saver writes of the same world:
// nothing the first save learned of the tables is used once it is stale.
func TestASaverFollowsTablesThatChange(t *testing.T) {
	w := world(t, 400, false)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	saveTo(t, s, t.TempDir(), 1)

	health := ark.NewMap[Health](w.Ark())
	for id := uint32(1); id < 400; id += 3 { // those without Health get it
		if e, ok := w.Entity(components.ActorID{ID: id}); ok && !health.Has(e) {
			health.Add(e, &Health{Points: int32(id), Max: 7})
		}
	}
	for i := range 300 { // the first chunk's table grows
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i % 60), Y: float32(i / 60)}})
	}
	for i := range 50 { // a new chunk
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 5000 + float32(i), Y: 5000}})
	}
	for id := uint32(2); id < 400; id += 7 {
		w.Despawn(components.ActorID{ID: id})
	}
	w.Apply(nil)

	again, want := saveAgainAndAfresh(t, s, w)
	assert.Equal(t, want.Actors, again.Actors)
}
