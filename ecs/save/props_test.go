package save_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/grid"
)

// propsIn lists the IDs of the props World.PropsIn finds in chunk k.
func propsIn(w *ecs.World, k grid.AreaKey) []uint32 {
	var ids []uint32
	for _, v := range w.PropsIn(k, nil) {
		for _, id := range v.IDs {
			ids = append(ids, id.ID)
		}
	}
	return ids
}

// inSnapshot lists the IDs of the actors in w's Snapshot.
func inSnapshot(w *ecs.World) []uint32 {
	var ids []uint32
	for _, v := range w.Snapshot(nil) {
		for _, id := range v.IDs {
			ids = append(ids, id.ID)
		}
	}
	return ids
}

// prop is what a user sees of a prop: where it stands, its chunk, what its
// viewers were told, and its components of the game's.
type prop struct {
	Key       grid.AreaKey
	Transform components.Transform
	Animation components.Animation
	Told      components.MoveInput
	Health    *Health
	Label     *Label
}

// propsOf returns w's props by ID, found through PropsIn over every chunk
// that has any, and checks that none of them is in Snapshot.
func propsOf(t *testing.T, w *ecs.World) map[uint32]prop {
	t.Helper()
	health := ark.NewMap[Health](w.Ark())
	label := ark.NewMap[Label](w.Ark())
	out := map[uint32]prop{}
	actors := inSnapshot(w)
	for _, v := range w.PropSnapshot(nil) {
		for r, id := range v.IDs {
			p := prop{Key: v.Key, Transform: v.Transforms[r], Animation: v.Animations[r], Told: v.Inputs[r]}
			if e := v.Entities[r]; health.Has(e) {
				p.Health = health.Get(e)
			}
			if e := v.Entities[r]; label.Has(e) {
				p.Label = label.Get(e)
			}
			out[id.ID] = p
			assert.Contains(t, propsIn(w, v.Key), id.ID, "PropsIn finds prop %d in its chunk", id.ID)
			assert.NotContains(t, actors, id.ID, "prop %d is not in Snapshot", id.ID)
			k, ok := w.Key(id)
			require.True(t, ok)
			assert.Equal(t, v.Key, k)
		}
	}
	assert.Len(t, out, w.Props())
	return out
}

// mixedWorld builds a world of players (slots 0 to 3, of whom 0 and 2 are
// named), NPCs and 120 props over several chunks and both worldOrCells,
// some props with Health, some with a Label, most with animation flags;
// one prop was updated into another chunk and one changed its flags. It
// returns the world and the players' names.
func mixedWorld(t *testing.T) (*ecs.World, []string) {
	w := world(t, 200, false) // NPCs 1 to 199 (200 despawned)
	for i := range 4 {
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(40 * i), Y: 30}, Client: components.Client{Session: uint64(100 + i), Slot: uint32(i)}})
	}
	var props []components.ActorID
	for i := range 120 {
		props = append(props, w.Spawn(ecs.ActorSpec{
			Transform: components.Transform{X: float32(i%12) * 33, Y: float32(i/12) * 29, Z: 1, Yaw: float32(i) / 10, WorldOrCell: uint32(i % 3 / 2)},
			Animation: components.Animation{Flags: uint16(i % 7 * 3)},
			Prop:      true,
		}))
	}
	w.Apply(nil)
	health := ark.NewMap[Health](w.Ark())
	label := ark.NewMap[Label](w.Ark())
	for i, id := range props {
		e, _ := w.Entity(id)
		if i%4 == 1 {
			health.Add(e, &Health{Points: int32(i), Max: 50, Poisoned: i%8 == 1})
		}
		if i%5 == 2 {
			label.Add(e, &Label{Text: fmt.Sprintf("prop %d", i)})
		}
	}
	// A crate pushed into the next chunk, a door opened.
	e, _ := w.Entity(props[7])
	ark.NewMap[components.Transform](w.Ark()).Get(e).X = 1000
	w.Update(props[7])
	e, _ = w.Entity(props[8])
	ark.NewMap[components.Animation](w.Ark()).Get(e).Flags = 0x8000
	w.Update(props[8])
	w.Apply(nil)
	return w, []string{"ann", "", "bo", ""}
}

// TestPropsAreSavedAndLoadedAsProps: a world of players, NPCs and props
// saved and loaded has the same props, as props: the same IDs, places,
// flags, chunks and components of the game's, each told where it stands,
// none in Snapshot; the NPCs are back as actors, the named players wait.
func TestPropsAreSavedAndLoadedAsProps(t *testing.T) {
	w, names := mixedWorld(t)
	want := propsOf(t, w)
	require.Len(t, want, 120)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	res := saveWith(t, s, dir, 9, save.Players{Names: names})
	assert.Equal(t, 199+120, res.Actors, "NPCs and props")
	assert.Equal(t, 120, res.Props)
	assert.Equal(t, 2, res.Players)

	f, err := save.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, uint32(save.Version), f.Version())
	loaded := ecs.NewWorld(64)
	require.NoError(t, f.Restore(loaded, gameTypes()))
	assert.Equal(t, 199+120, loaded.Len())
	assert.Equal(t, 120, loaded.Props())
	got := propsOf(t, loaded)
	assert.Equal(t, want, got)
	for id, p := range got {
		tr := p.Transform
		assert.Equal(t, components.MoveInput{X: tr.X, Y: tr.Y, Z: tr.Z, Yaw: tr.Yaw, WorldOrCell: tr.WorldOrCell, Flags: p.Animation.Flags}, p.Told,
			"prop %d is told where it stands", id)
	}
	assert.Equal(t, uint16(0x8000), got[213].Animation.Flags)
	assert.Equal(t, loaded.KeyOf(components.Transform{X: 1000, Y: 0}), got[212].Key, "the pushed crate is in its new chunk")
	npcs := inSnapshot(loaded)
	slices.Sort(npcs)
	assert.Len(t, npcs, 199)
	assert.Equal(t, uint32(1), npcs[0])
	assert.Equal(t, uint32(199), npcs[198])
	kept, err := f.Kept(gameTypes())
	require.NoError(t, err)
	assert.Len(t, kept, 2, "ann and bo wait for their return")

	// Without the players, the loaded world saves as the world did.
	savesAlike(t, saveTo(t, s, t.TempDir(), 9), loaded, 9)
}

// TestAPropMovedWithoutAnUpdateLoadsWhereItStands: a prop whose Transform
// the game wrote into another chunk without World.Update is saved in its
// old chunk's table; the save still loads, and puts it where it stands.
func TestAPropMovedWithoutAnUpdateLoadsWhereItStands(t *testing.T) {
	w := ecs.NewWorld(64)
	crate := w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 10, Y: 10}, Prop: true})
	w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 20, Y: 10}, Prop: true})
	w.Apply(nil)
	e, _ := w.Entity(crate)
	ark.NewMap[components.Transform](w.Ark()).Get(e).X = 200
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	saveTo(t, s, dir, 1)

	f, err := save.Read(dir)
	require.NoError(t, err)
	loaded := ecs.NewWorld(64)
	require.NoError(t, f.Restore(loaded, gameTypes()))
	assert.Equal(t, 2, loaded.Props())
	there := grid.AreaKey{X: 3}
	assert.Equal(t, []uint32{crate.ID}, propsIn(loaded, there))
	assert.Equal(t, []uint32{2}, propsIn(loaded, grid.AreaKey{}))
	assert.Equal(t, components.MoveInput{X: 200, Y: 10}, propsOf(t, loaded)[crate.ID].Told)
}

// blockOffsets walks a save file's bytes and returns, for each block, where
// it starts and its column types.
func blockOffsets(t *testing.T, data []byte) (starts []int, columns [][]uint16) {
	t.Helper()
	le := binary.LittleEndian
	at := 48 // the header
	for range le.Uint32(data[28:]) {
		at += 1 + int(data[at]) + 8
		at += 2 + int(le.Uint16(data[at:]))
	}
	at += 4 // the type table's checksum
	for range le.Uint32(data[32:]) {
		starts = append(starts, at)
		n := int(le.Uint16(data[at+16:]))
		var cols []uint16
		for c := range n {
			cols = append(cols, le.Uint16(data[at+18+2*c:]))
		}
		columns = append(columns, cols)
		at += 18 + 2*n
		at += 8 + int(le.Uint64(data[at:])) + 4
	}
	require.Equal(t, len(data)-16, at, "the trailer follows the blocks")
	return starts, columns
}

// TestADamagedPropBlockIsRefusedNamingIt: a bit flipped in a props' block
// fails the read, naming that block and its chunk, and nothing is loaded.
func TestADamagedPropBlockIsRefusedNamingIt(t *testing.T) {
	w, names := mixedWorld(t)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	res := saveWith(t, s, t.TempDir(), 3, save.Players{Names: names})
	data, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	starts, columns := blockOffsets(t, data)
	const propMarker = 4 // the type table's throng.Prop
	block := slices.IndexFunc(columns, func(cols []uint16) bool { return len(cols) > 3 && cols[3] == propMarker })
	require.GreaterOrEqual(t, block, 1, "the props' blocks follow some others")
	at := starts[block]
	le := binary.LittleEndian
	chunk := fmt.Sprintf("%d/%d/%d", le.Uint32(data[at:]), int32(le.Uint32(data[at+4:])), int32(le.Uint32(data[at+8:])))
	data[at+18+2*len(columns[block])+8+5] ^= 0x04 // in its payload: an ActorID

	spoilt := filepath.Join(t.TempDir(), filepath.Base(res.Path))
	require.NoError(t, os.WriteFile(spoilt, data, 0o644))
	_, err = save.Read(spoilt)
	var fe *save.FormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, fmt.Sprintf("block %d (chunk %s)", block, chunk), fe.Part)
	assert.Contains(t, err.Error(), "checksum mismatch")
	assert.Contains(t, err.Error(), spoilt)
}

// TestASaverFollowsPropTablesThatChange is TestASaverFollowsTablesThatChange
// for props, among actors: between two saves by one Saver props gain a
// component, a chunk's prop table grows past its capacity, props move
// chunk by Update and go, and a new chunk of props fills. The second save
// is byte for byte what a new Saver writes of the same world.
func TestASaverFollowsPropTablesThatChange(t *testing.T) {
	w, _ := mixedWorld(t)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	saveTo(t, s, t.TempDir(), 1)

	health := ark.NewMap[Health](w.Ark())
	transforms := ark.NewMap[components.Transform](w.Ark())
	for id := uint32(205); id < 325; id += 3 {
		if e, ok := w.Entity(components.ActorID{ID: id}); ok && !health.Has(e) {
			health.Add(e, &Health{Points: int32(id), Max: 7})
		}
	}
	for i := range 300 { // the first chunk's prop table grows
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i % 60), Y: float32(i / 60)}, Prop: true})
	}
	for i := range 50 { // a new chunk of props
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 5000 + float32(i), Y: 5000}, Prop: true})
	}
	for id := uint32(206); id < 325; id += 7 {
		w.Despawn(components.ActorID{ID: id})
	}
	for id := uint32(208); id < 325; id += 11 {
		if e, ok := w.Entity(components.ActorID{ID: id}); ok {
			transforms.Get(e).Y += 100
			w.Update(components.ActorID{ID: id})
		}
	}
	w.Apply(nil)

	again, _ := saveAgainAndAfresh(t, s, w)
	assert.Equal(t, w.Props(), again.Props)
}
