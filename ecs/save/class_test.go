package save_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/grid"
)

// Game classes of classWorld.
const (
	guardClass     = 5 // an NPC's
	lanternClass   = 4 // a prop's
	spectatorClass = 3 // a player's
)

// classWorld builds a world of NPCs, props and players over ten chunks,
// the players all in the first: NPCs of ClassNPC and of guardClass, some
// with Health, props of ClassProp and of lanternClass, some with a Label,
// and players (slots 0 to 9, the even ones named "p<slot>"), slot 4's of
// spectatorClass. It returns the world, the players' names and the class
// each actor was spawned in, by ID.
func classWorld(t *testing.T) (*ecs.World, []string, map[uint32]uint8) {
	w := ecs.NewWorld(64)
	want := map[uint32]uint8{}
	for i := range 400 {
		spec := ecs.ActorSpec{
			Transform: components.Transform{X: float32(i%40) * 16, Y: float32(i/40) * 6, Yaw: float32(i) / 10},
			Animation: components.Animation{Flags: uint16(i)},
		}
		class := components.ClassNPC
		switch i % 4 {
		case 1:
			class = guardClass
		case 2:
			spec.Prop, class = true, components.ClassProp
		case 3:
			spec.Prop, class = true, lanternClass
		}
		if class != components.ClassNPC && class != components.ClassProp {
			spec.Client.Class = class // a game's, given at spawn; Throng's by Spawn
		}
		id := w.NextID()
		switch {
		case i%3 == 0 && !spec.Prop:
			spec.Init = func(w *ark.World, e ark.Entity) {
				ark.NewMap[Health](w).Add(e, &Health{Points: int32(id), Max: 10})
			}
		case i%5 == 2 && spec.Prop:
			spec.Init = func(w *ark.World, e ark.Entity) {
				ark.NewMap[Label](w).Add(e, &Label{Text: fmt.Sprintf("lamp %d", id)})
			}
		}
		w.Spawn(spec)
		want[id] = class
	}
	names := make([]string, 10)
	for slot := range 10 {
		spec := ecs.ActorSpec{
			Transform: components.Transform{X: float32(slot) * 5, Y: 40},
			Client:    components.Client{Session: uint64(1000 + slot), Slot: uint32(slot)},
		}
		if slot == 4 {
			spec.Client.Class = spectatorClass
		}
		if slot%2 == 0 {
			names[slot] = fmt.Sprintf("p%d", slot)
		}
		id := w.Spawn(spec)
		want[id.ID] = spec.Client.Class
	}
	w.Apply(nil)
	return w, names, want
}

// classesOf returns the class of every actor of w, props included, by ID,
// as the world's snapshots show them.
func classesOf(w *ecs.World) map[uint32]uint8 {
	out := map[uint32]uint8{}
	for _, views := range [][]ecs.ChunkView{w.Snapshot(nil), w.PropSnapshot(nil)} {
		for _, v := range views {
			for r, id := range v.IDs {
				out[id.ID] = v.Clients[r].Class
			}
		}
	}
	return out
}

// TestEveryActorsClassIsSavedAndLoaded: NPCs, props and players, each of
// Throng's class or of a game's, are saved and loaded in their classes:
// NPCs and props back in the world, players' actors (in play and away)
// kept with theirs.
func TestEveryActorsClassIsSavedAndLoaded(t *testing.T) {
	w, names, want := classWorld(t)
	require.Equal(t, want, classesOf(w), "the world as spawned")
	// A player away, kept from the actor of slot 4 (spectatorClass).
	away, ok := save.Keep(w, components.ActorID{ID: 405}, "away", gameTypes())
	require.True(t, ok)
	assert.Equal(t, uint8(spectatorClass), away.Class)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	res := saveWith(t, s, dir, 5, save.Players{Names: names, Kept: []*save.Kept{away}})
	assert.Equal(t, 400, res.Actors)
	assert.Equal(t, 200, res.Props)
	assert.Equal(t, 5+1, res.Players)

	f, err := save.Read(dir)
	require.NoError(t, err)
	loaded := ecs.NewWorld(64)
	require.NoError(t, f.Restore(loaded, gameTypes()))
	got := classesOf(loaded)
	require.Len(t, got, 400)
	for id, class := range got {
		assert.Equal(t, want[id], class, "actor %d", id)
	}
	assert.Equal(t, 200, loaded.Props())
	kept, err := f.Kept(gameTypes())
	require.NoError(t, err)
	keptClass := map[string]uint8{}
	for _, k := range kept {
		keptClass[k.Player] = k.Class
	}
	assert.Equal(t, map[string]uint8{"p0": components.ClassPlayer, "p2": components.ClassPlayer, "p4": spectatorClass,
		"p6": components.ClassPlayer, "p8": components.ClassPlayer, "away": spectatorClass}, keptClass)
	e, ok := loaded.Entity(components.ActorID{ID: 8}) // a lantern, labelled
	require.True(t, ok)
	assert.Equal(t, "lamp 8", ark.NewMap[Label](loaded.Ark()).Get(e).Text, "the game's columns follow the classes")
	e, ok = loaded.Entity(components.ActorID{ID: 10}) // a guard, with Health
	require.True(t, ok)
	assert.Equal(t, Health{Points: 10, Max: 10}, *ark.NewMap[Health](loaded.Ark()).Get(e))

	// Without the players, the loaded world saves as the world did.
	savesAlike(t, saveTo(t, s, t.TempDir(), 5), loaded, 5)
}

// TestAClassPastMaxClassesIsRefusedNamingTheBlock: a class byte of 200 in
// an actors', a props' or a players' block, with the block's checksum and
// the file's made good again, fails the read, naming that block and its
// chunk and the actor, and nothing of the file is loaded.
func TestAClassPastMaxClassesIsRefusedNamingTheBlock(t *testing.T) {
	refusedNamingTheBlock(t, func(spoilt []byte, b spoiltBlock) string {
		// The class column follows the ActorIDs, Transforms and
		// Animations, and in a players' block the names.
		class := b.payload + b.rows*(4+20+2)
		if b.kind == "players" {
			for range b.rows {
				class += 4 + int(binary.LittleEndian.Uint32(spoilt[class:]))
			}
		}
		require.Contains(t, b.cols, uint16(classType))
		spoilt[class+b.row] = 200
		return "has class 200; classes are below components.MaxClasses (16)"
	})
}

// TestAPlaceThatIsNoPlaceIsRefusedNamingTheBlock: a NaN written over an
// actor's X in each kind of block, the checksums made good again, fails
// the read in the same way.
func TestAPlaceThatIsNoPlaceIsRefusedNamingTheBlock(t *testing.T) {
	refusedNamingTheBlock(t, func(spoilt []byte, b spoiltBlock) string {
		binary.LittleEndian.PutUint32(spoilt[b.payload+4*b.rows+20*b.row:], math.Float32bits(float32(math.NaN())))
		return "stands at a place that is not finite"
	})
}

// The type table's throng.Player, throng.Prop and throng.Class.
const (
	playerType = 3
	propType   = 4
	classType  = 5
)

// spoiltBlock is the last row of a block refusedNamingTheBlock spoils.
type spoiltBlock struct {
	kind          string
	cols          []uint16
	payload, rows int // where its payload starts in the file, its rows
	row           int
}

// refusedNamingTheBlock saves classWorld, and for an actors', a props' and
// a players' block spoils the last row by spoil (which returns what the
// error says of the row), makes the checksums good again and reads the
// file: the read fails, naming the block, its chunk and the actor, and
// nothing of the file is loaded.
func refusedNamingTheBlock(t *testing.T, spoil func(spoilt []byte, b spoiltBlock) string) {
	w, names, _ := classWorld(t)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	res := saveWith(t, s, t.TempDir(), 5, save.Players{Names: names})
	data, err := os.ReadFile(res.Path)
	require.NoError(t, err)
	starts, columns := blockOffsets(t, data)
	le := binary.LittleEndian
	for _, kind := range []struct {
		name string
		is   func(cols []uint16) bool
	}{
		{"actors", func(cols []uint16) bool { return cols[3] == classType }},
		{"props", func(cols []uint16) bool { return cols[3] == propType }},
		{"players", func(cols []uint16) bool { return cols[3] == playerType }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			block := -1
			for b, cols := range columns {
				if kind.is(cols) && block < 0 {
					block = b
				}
			}
			require.GreaterOrEqual(t, block, 0)
			at := starts[block]
			b := spoiltBlock{kind: kind.name, cols: columns[block], rows: int(le.Uint32(data[at+12:]))}
			b.payload, b.row = at+18+2*len(b.cols)+8, b.rows-1
			id := le.Uint32(data[b.payload+4*b.row:])
			spoilt := bytes.Clone(data)
			says := spoil(spoilt, b)
			path := filepath.Join(t.TempDir(), filepath.Base(res.Path))
			require.NoError(t, os.WriteFile(path, reseal(spoilt), 0o644))

			f, err := save.Read(path)
			assert.Nil(t, f, "nothing of the file is loaded")
			var fe *save.FormatError
			require.ErrorAs(t, err, &fe)
			chunk := grid.AreaKey{WorldOrCell: le.Uint32(data[at:]), X: int32(le.Uint32(data[at+4:])), Y: int32(le.Uint32(data[at+8:]))}
			assert.Equal(t, fmt.Sprintf("block %d (chunk %d/%d/%d)", block, chunk.WorldOrCell, chunk.X, chunk.Y), fe.Part)
			assert.Contains(t, err.Error(), fmt.Sprintf("actor %d (row %d) %s", id, b.row, says))
			assert.Contains(t, err.Error(), path)
		})
	}
}

// TestASaveOfAClassPastMaxClassesFails: an actor whose class the game
// wrote past components.MaxClasses (through Ark, where Spawn would have
// refused it) fails the save, naming the actor, rather than write a file
// no load would take; the manifest still names the save before.
func TestASaveOfAClassPastMaxClassesFails(t *testing.T) {
	saveFailsNaming(t, func(w *ecs.World, e ark.Entity) {
		ark.NewMap[components.Client](w.Ark()).Get(e).Class = components.MaxClasses
	}, "actor 7 has class 16, past components.MaxClasses (16)")
}

// TestASaveOfAPlaceThatIsNoPlaceFails: so does an actor whose Transform
// the game made infinite through Ark.
func TestASaveOfAPlaceThatIsNoPlaceFails(t *testing.T) {
	saveFailsNaming(t, func(w *ecs.World, e ark.Entity) {
		ark.NewMap[components.Transform](w.Ark()).Get(e).Yaw = float32(math.Inf(-1))
	}, "actor 7 (row 0) stands at a place that is not finite")
}

// saveFailsNaming saves classWorld, spoils actor 7 (a prop) by spoil and
// saves again: the second save fails saying want, leaves no temporary
// file, and the manifest still names the first.
func saveFailsNaming(t *testing.T, spoil func(w *ecs.World, e ark.Entity), want string) {
	w, _, _ := classWorld(t)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	saveTo(t, s, dir, 1)
	e, _ := w.Entity(components.ActorID{ID: 7})
	spoil(w, e)

	units, err := s.Begin(2, save.Players{})
	require.NoError(t, err)
	for i := range units {
		s.CopyUnit(i)
	}
	_, err = s.Write(dir, 2).Wait()
	require.ErrorContains(t, err, want)
	f, err := save.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), f.Tick())
	left, err := filepath.Glob(filepath.Join(dir, "*.tmp"))
	require.NoError(t, err)
	assert.Empty(t, left)
}

// TestRestoreGivesTheClassASpawnGives: ecs.World.RestoreBlock and
// RestoreProps place an actor saved at ClassPlayer (a file before version
// 4 keeps no class) in the class a spawn without a client gives, keep a
// saved class, and refuse one past components.MaxClasses before placing
// anything.
func TestRestoreGivesTheClassASpawnGives(t *testing.T) {
	w := ecs.NewWorld(64)
	at := func(id uint32, class uint8) ecs.SavedActor {
		return ecs.SavedActor{ID: components.ActorID{ID: id}, Transform: components.Transform{X: float32(id)}, Class: class}
	}
	_, err := w.RestoreBlock(grid.AreaKey{}, []ecs.SavedActor{at(1, 0), at(2, guardClass), at(3, components.ClassNPC)}, nil)
	require.NoError(t, err)
	_, err = w.RestoreProps(grid.AreaKey{}, []ecs.SavedActor{at(4, 0), at(5, lanternClass)}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[uint32]uint8{1: components.ClassNPC, 2: guardClass, 3: components.ClassNPC,
		4: components.ClassProp, 5: lanternClass}, classesOf(w))

	_, err = w.RestoreBlock(grid.AreaKey{}, []ecs.SavedActor{at(6, 0), at(7, components.MaxClasses)}, nil)
	require.ErrorContains(t, err, "actor 7 has class 16, past components.MaxClasses")
	assert.Equal(t, 5, w.Len(), "nothing placed")
}

// TestChunksOfOneClassAreSavedInIt: chunks whose actors are all of one
// class (NPCs, guards, props, lanterns; the save writes the class without
// reading the rows) and a chunk that held two (a guard walked in among
// NPCs and out again, leaving NPCs alone there) load with every actor in
// its class.
func TestChunksOfOneClassAreSavedInIt(t *testing.T) {
	w := ecs.NewWorld(64)
	want := map[uint32]uint8{}
	spawn := func(x float32, prop bool, class uint8) components.ActorID {
		spec := ecs.ActorSpec{Transform: components.Transform{X: x, Y: 10}, Prop: prop, Client: components.Client{Class: class}}
		id := w.Spawn(spec)
		switch {
		case class != components.ClassPlayer:
			want[id.ID] = class
		case prop:
			want[id.ID] = components.ClassProp
		default:
			want[id.ID] = components.ClassNPC
		}
		return id
	}
	for i := range 20 {
		x := float32(i%5) * 3
		spawn(x, false, 0)               // chunk 0: NPCs
		spawn(64+x, false, guardClass)   // chunk 1: guards
		spawn(128+x, true, 0)            // chunk 2: props
		spawn(192+x, true, lanternClass) // chunk 3: lanterns
		spawn(256+x, false, 0)           // chunk 4: NPCs, and a guard for a while
	}
	visitor := spawn(320, false, guardClass)
	w.Apply(nil)
	e, _ := w.Entity(visitor)
	for _, x := range []float32{260, 330} { // into chunk 4 and out
		ark.NewMap[components.Transform](w.Ark()).Get(e).X = x
		w.Relocate(visitor)
		w.Apply(nil)
	}
	for k, wantOne := range map[int32]bool{0: true, 1: true, 4: false} {
		c, _ := w.ChunkEntity(grid.AreaKey{X: k})
		_, one := w.ClassIn(c, false)
		require.Equal(t, wantOne, one, "chunk %d", k)
	}
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	dir := t.TempDir()
	saveWith(t, s, dir, 3, save.Players{})
	f, err := save.Read(dir)
	require.NoError(t, err)
	loaded := ecs.NewWorld(64)
	require.NoError(t, f.Restore(loaded, gameTypes()))
	assert.Equal(t, want, classesOf(loaded))
}
