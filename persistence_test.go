package throng_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// Crate is a component of a game's own, kept by saves.
type Crate struct {
	Contents uint32
	Open     bool
}

var savedTypes = []save.Type{save.Plain[Crate]("test.crate", 1)}

// propsServer is a server whose world holds 200 props near the origin,
// half of them crates, after one tick.
func propsServer(t *testing.T, opts throng.Options) *throng.Server {
	t.Helper()
	opts.SavedTypes = savedTypes
	opts.Admit = func(wire.Hello) (throng.Entry, error) {
		return throng.Entry{Spawn: components.Transform{X: 500, Y: 500}}, nil
	}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	if opts.LoadFrom != "" {
		return srv
	}
	w := srv.World()
	var ids []components.ActorID
	for i := range 200 {
		ids = append(ids, w.Spawn(ecs.ActorSpec{
			Transform: components.Transform{X: float32(i%20) * 150, Y: float32(i/20) * 150, Yaw: float32(i)},
			Animation: components.Animation{Flags: uint16(i % 5)},
		}))
	}
	w.Apply(nil)
	crates := ark.NewMap[Crate](w.Ark())
	for i, id := range ids {
		if i%2 == 0 {
			e, _ := w.Entity(id)
			crates.Add(e, &Crate{Contents: uint32(i)})
		}
	}
	srv.Tick()
	return srv
}

// saveNow saves srv into dir and waits for the write.
func saveNow(t *testing.T, srv *throng.Server, dir string) throng.SaveReport {
	t.Helper()
	p, err := srv.Save(dir)
	require.NoError(t, err)
	rep, err := p.Wait()
	require.NoError(t, err)
	return rep
}

// appears joins a player to srv and returns the Appear records its first
// ticks bring, in order.
func appears(t *testing.T, srv *throng.Server) []wire.Appear {
	t.Helper()
	c := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("visitor")})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))
	var got []wire.Appear
	var f wire.Frame
	for range 5 {
		srv.Tick()
		c.DrainReliable(func(b []byte) {
			require.NoError(t, wire.Decode(b, &f))
			if f.Type == wire.TypeAppear {
				got = append(got, f.Appear)
			}
		})
	}
	return got
}

// TestALoadedServerShowsClientsTheSameWorld: a player joining a server
// started from a save is told of the same actors, where they stood, as
// one joining the server that saved; the game's components come back.
func TestALoadedServerShowsClientsTheSameWorld(t *testing.T) {
	dir := t.TempDir()
	orig := propsServer(t, throng.Options{})
	rep := saveNow(t, orig, dir)
	assert.Equal(t, 200, rep.Actors)
	assert.Positive(t, rep.Bytes)
	want := appears(t, orig)
	require.Len(t, want, 200)

	loaded := propsServer(t, throng.Options{LoadFrom: dir})
	assert.Equal(t, 200, loaded.World().Len())
	assert.Equal(t, want, appears(t, loaded))

	crates := ark.NewMap[Crate](loaded.World().Ark())
	for i := range 200 {
		e, ok := loaded.World().Entity(components.ActorID{ID: uint32(i + 1)})
		require.True(t, ok)
		assert.Equal(t, i%2 == 0, crates.Has(e), "prop %d", i)
		if i%2 == 0 {
			assert.Equal(t, uint32(i), crates.Get(e).Contents)
		}
	}
	// IDs go on from the save's: the visitor of the loaded server took
	// 201, the next spawn takes 202.
	id := loaded.World().Spawn(ecs.ActorSpec{})
	assert.Equal(t, uint32(202), id.ID, "the loaded visitor took 201")
}

// TestLoadFromADamagedSaveFailsNew: a server is not started from half a
// world.
func TestLoadFromADamagedSaveFailsNew(t *testing.T) {
	dir := t.TempDir()
	rep := saveNow(t, propsServer(t, throng.Options{}), dir)
	data, err := os.ReadFile(rep.Path)
	require.NoError(t, err)
	data[len(data)/2] ^= 0x40
	require.NoError(t, os.WriteFile(rep.Path, data, 0o644))
	_, err = throng.New(throng.Options{LoadFrom: dir, SavedTypes: savedTypes})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum mismatch")

	_, err = throng.New(throng.Options{LoadFrom: filepath.Join(dir, "nothing-here")})
	assert.ErrorContains(t, err, "loadFrom")
}

// TestRunSavesPeriodicallyAndOnStopping: with persistence set, Run saves
// every everySeconds and once more as it stops, and the directory keeps
// the newest saves.
func TestRunSavesPeriodicallyAndOnStopping(t *testing.T) {
	dir := t.TempDir()
	every, keep := 0.2, 2
	srv := propsServer(t, throng.Options{Persistence: throng.Persistence{Dir: dir, EverySeconds: &every, Keep: &keep}})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	require.NoError(t, srv.Run(ctx))
	st := srv.Stats().Saves
	assert.GreaterOrEqual(t, st.Written, uint64(3), "about one save every 0.2 s over 1.5 s")
	assert.Zero(t, st.Failed)
	names, err := filepath.Glob(filepath.Join(dir, "world-*.save"))
	require.NoError(t, err)
	assert.Len(t, names, keep)
	f, err := save.Read(dir)
	require.NoError(t, err)
	assert.Equal(t, 200, f.Actors())
	assert.Equal(t, filepath.Base(names[len(names)-1]), filepath.Base(f.Path()), "the manifest names the newest")
}

func TestBadPersistenceSettingsAreErrors(t *testing.T) {
	_, err := throng.LoadOptions(strings.NewReader(`{"persistence": {"keep": 0, "everySeconds": -1}}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "persistence.keep: must be at least 1, got 0")
	assert.Contains(t, err.Error(), "persistence.everySeconds: must be 0 to 1e9 seconds, got -1")
}

// join dials srv as token and ticks until its Welcome comes.
func join(t *testing.T, srv *throng.Server, token string) (*mem.Client, wire.Welcome) {
	t.Helper()
	c := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
	require.NoError(t, err)
	require.NoError(t, c.Send(hello))
	var f wire.Frame
	for range 10 {
		srv.Tick()
		var w *wire.Welcome
		c.DrainReliable(func(b []byte) {
			require.NoError(t, wire.Decode(b, &f))
			if f.Type == wire.TypeWelcome {
				w = &f.Welcome
			}
		})
		if w != nil {
			return c, *w
		}
	}
	t.Fatalf("%s was not welcomed", token)
	return nil, wire.Welcome{}
}

// TestAReturningPlayerGetsItsActorBack: a named player who left, and one
// in play at the save, come back after the server restarts from the save
// where they stood, with their game's components; a guest's actor is
// gone with its session.
func TestAReturningPlayerGetsItsActorBack(t *testing.T) {
	dir := t.TempDir()
	opts := throng.Options{SavedTypes: savedTypes, Admit: func(h wire.Hello) (throng.Entry, error) {
		name := string(h.Token)
		if name == "guest" {
			name = ""
		}
		return throng.Entry{Player: name, Spawn: components.Transform{X: 500, Y: 500}}, nil
	}}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	defer srv.Close()
	place := func(actor uint32, x, y float32, crate uint32) {
		w := srv.World()
		w.Teleport(components.ActorID{ID: actor}, components.Transform{X: x, Y: y, Yaw: 1})
		e, ok := w.Entity(components.ActorID{ID: actor})
		require.True(t, ok)
		ark.NewMap[Crate](w.Ark()).Add(e, &Crate{Contents: crate, Open: true})
	}
	alice, wa := join(t, srv, "alice")
	_, wc := join(t, srv, "carol")
	guest, wg := join(t, srv, "guest")
	place(wa.Actor, 900, 700, 77)
	place(wc.Actor, 1300, 200, 5)
	place(wg.Actor, 100, 100, 9)
	srv.Tick()
	alice.Close()
	guest.Close()
	srv.Tick()
	k, ok := srv.Kept("alice")
	require.True(t, ok, "alice's actor is kept while she is away")
	assert.Equal(t, float32(900), k.Transform.X)
	_, ok = srv.Kept("guest")
	assert.False(t, ok)
	_, ok = srv.Kept("")
	assert.False(t, ok, "a guest's actor is not kept")
	assert.Equal(t, 2, saveNow(t, srv, dir).Players, "alice away and carol in play")

	// Alice returns to the same server...
	_, back := join(t, srv, "alice")
	assert.Equal(t, [2]float32{900, 700}, [2]float32{back.X, back.Y})
	assert.NotEqual(t, wa.Actor, back.Actor, "under a new ActorID")
	_, ok = srv.Kept("alice")
	assert.False(t, ok, "handed back")

	// ...and both to a server started from the save.
	opts.LoadFrom = dir
	loaded, err := throng.New(opts)
	require.NoError(t, err)
	defer loaded.Close()
	assert.Equal(t, 0, loaded.World().Len(), "players' actors wait for their players")
	for _, c := range []struct {
		name  string
		x, y  float32
		crate uint32
	}{{"alice", 900, 700, 77}, {"carol", 1300, 200, 5}} {
		_, w := join(t, loaded, c.name)
		assert.Equal(t, [2]float32{c.x, c.y}, [2]float32{w.X, w.Y}, c.name)
		e, ok := loaded.World().Entity(components.ActorID{ID: w.Actor})
		require.True(t, ok)
		crates := ark.NewMap[Crate](loaded.World().Ark())
		require.True(t, crates.Has(e), "%s's crate comes back", c.name)
		assert.Equal(t, Crate{Contents: c.crate, Open: true}, *crates.Get(e), c.name)
	}
	_, w := join(t, loaded, "guest")
	assert.Equal(t, [2]float32{500, 500}, [2]float32{w.X, w.Y}, "a guest starts at the spawn")
}

// TestASaveIsAPictureOfOneTickBoundary saves while props cross chunk
// borders every tick and named players keep joining, and ticks on while
// the save is written: the file holds the world as it stood at the
// boundary the save was taken at, every prop and player where it stood.
func TestASaveIsAPictureOfOneTickBoundary(t *testing.T) {
	dir := t.TempDir()
	opts := throng.Options{SavedTypes: savedTypes, Admit: func(h wire.Hello) (throng.Entry, error) {
		var i int
		fmt.Sscanf(string(h.Token), "p-%d", &i)
		return throng.Entry{Player: string(h.Token), Spawn: components.Transform{X: float32(i%30) * 97, Y: 300}}, nil
	}}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	defer srv.Close()
	w := srv.World()
	var props []components.ActorID
	for i := range 200 {
		props = append(props, w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i) * 61, Y: float32(i%7) * 250}}))
	}
	w.Apply(nil)
	joined, ticks := 0, 0
	step := func() {
		ticks++
		for i, id := range props {
			tr := components.Transform{X: float32(i)*61 + float32(ticks)*37, Y: float32(i%7) * 250}
			w.Teleport(id, tr)
		}
		for range 3 {
			c := srv.Mem().Dial()
			hello, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p-%d", joined)})
			require.NoError(t, err)
			require.NoError(t, c.Send(hello))
			joined++
		}
		srv.Tick()
	}
	for range 10 {
		step()
	}
	// The boundary: every actor where it stands now.
	want := map[uint32]components.Transform{}
	players := 0
	for _, v := range w.Snapshot(nil) {
		for r, id := range v.IDs {
			want[id.ID] = v.Transforms[r]
			if v.Clients[r].Session != 0 {
				players++
			}
		}
	}
	require.Greater(t, players, 10)
	p, err := srv.Save(dir)
	require.NoError(t, err)
	for range 5 { // the world moves on while the save is written
		step()
	}
	rep, err := p.Wait()
	require.NoError(t, err)
	assert.Equal(t, 200, rep.Actors)
	assert.Equal(t, players, rep.Players)

	f, err := save.Read(dir)
	require.NoError(t, err)
	loaded := ecs.NewWorld(w.ChunkSize())
	require.NoError(t, f.Restore(loaded, savedTypes))
	got := 0
	for _, v := range loaded.Snapshot(nil) {
		for r, id := range v.IDs {
			assert.Equal(t, want[id.ID], v.Transforms[r], "prop %d", id.ID)
			got++
		}
	}
	assert.Equal(t, 200, got)
	kept, err := f.Kept(savedTypes)
	require.NoError(t, err)
	require.Len(t, kept, players)
	for _, k := range kept {
		assert.Equal(t, want[k.ID.ID], k.Transform, "player %s", k.Player)
	}
}

// worldProp is what a player would notice of a prop: where it stands, its
// chunk, its animation flags and its crate.
type worldProp struct {
	Key       grid.AreaKey
	Transform components.Transform
	Flags     uint16
	Crate     *Crate
}

// worldProps returns w's props by ID, as PropsIn lists them chunk by
// chunk, and checks that Snapshot holds none of them.
func worldProps(t *testing.T, w *ecs.World) map[uint32]worldProp {
	t.Helper()
	crates := ark.NewMap[Crate](w.Ark())
	actors := map[uint32]bool{}
	for _, v := range w.Snapshot(nil) {
		for _, id := range v.IDs {
			actors[id.ID] = true
		}
	}
	out := map[uint32]worldProp{}
	for _, v := range w.PropSnapshot(nil) {
		inChunk := map[uint32]bool{}
		for _, pv := range w.PropsIn(v.Key, nil) {
			for _, id := range pv.IDs {
				inChunk[id.ID] = true
			}
		}
		for r, id := range v.IDs {
			assert.True(t, inChunk[id.ID], "PropsIn lists prop %d in its chunk", id.ID)
			p := worldProp{Key: v.Key, Transform: v.Transforms[r], Flags: v.Animations[r].Flags}
			if crates.Has(v.Entities[r]) {
				p.Crate = crates.Get(v.Entities[r])
			}
			out[id.ID] = p
			assert.False(t, actors[id.ID], "prop %d is in Snapshot", id.ID)
		}
	}
	require.Len(t, out, w.Props())
	return out
}

// TestAServerLoadedFromASaveHasTheSameProps: a server whose world holds
// players, NPCs and props (some crates, some with animation flags, one
// pushed into another chunk) saves and restarts from the save: the same
// props come back as props, with their IDs, places, flags, chunks and
// crates; the NPCs come back as actors and the named player waits.
func TestAServerLoadedFromASaveHasTheSameProps(t *testing.T) {
	dir := t.TempDir()
	opts := throng.Options{SavedTypes: savedTypes, Admit: func(h wire.Hello) (throng.Entry, error) {
		return throng.Entry{Player: string(h.Token), Spawn: components.Transform{X: 500, Y: 500}}, nil
	}}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	defer srv.Close()
	join(t, srv, "alice")
	w := srv.World()
	var npcs, props []components.ActorID
	for i := range 50 {
		npcs = append(npcs, w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i) * 90, Y: 700}}))
	}
	for i := range 80 {
		props = append(props, w.Spawn(ecs.ActorSpec{
			Transform: components.Transform{X: float32(i%10) * 1100, Y: float32(i/10) * 900, Yaw: float32(i)},
			Animation: components.Animation{Flags: uint16(i % 4)},
			Prop:      true,
		}))
	}
	w.Apply(nil)
	crates := ark.NewMap[Crate](w.Ark())
	for i, id := range props {
		if i%3 == 0 {
			e, _ := w.Entity(id)
			crates.Add(e, &Crate{Contents: uint32(i), Open: i%2 == 0})
		}
	}
	pushed := props[5]
	e, _ := w.Entity(pushed)
	ark.NewMap[components.Transform](w.Ark()).Get(e).X += 5000
	w.Update(pushed)
	srv.Tick()
	want := worldProps(t, w)
	require.Len(t, want, 80)
	rep := saveNow(t, srv, dir)
	assert.Equal(t, 50+80, rep.Actors, "NPCs and props")
	assert.Equal(t, 80, rep.Props)
	assert.Equal(t, 1, rep.Players)

	opts.LoadFrom = dir
	loaded, err := throng.New(opts)
	require.NoError(t, err)
	defer loaded.Close()
	lw := loaded.World()
	assert.Equal(t, 50+80, lw.Len())
	assert.Equal(t, 80, lw.Props())
	assert.Equal(t, want, worldProps(t, lw))
	assert.Equal(t, lw.KeyOf(components.Transform{X: 5*1100 + 5000}), worldProps(t, lw)[pushed.ID].Key)
	var actors []components.ActorID
	for _, v := range lw.Snapshot(nil) {
		actors = append(actors, v.IDs...)
	}
	assert.ElementsMatch(t, npcs, actors, "the NPCs are back as actors, alice's actor waits")
	_, ok := loaded.Kept("alice")
	assert.True(t, ok, "alice waits for her return")
}

// TestAServerLoadsAVersion2Save: a save written before props were
// saved (format version 2) still starts a server, with no props.
func TestAServerLoadsAVersion2Save(t *testing.T) {
	type health struct {
		Points, Max int32
		Poisoned    bool
	}
	chunk := float32(64)
	srv, err := throng.New(throng.Options{
		ChunkSize: &chunk,
		LoadFrom:  filepath.Join("ecs", "save", "testdata", "world-v2.save"),
		SavedTypes: []save.Type{
			save.Plain[health]("game.health", 1),
			save.Coded[string]("game.label", 2, textCodec{}),
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	assert.Equal(t, 53, srv.World().Len())
	assert.Zero(t, srv.World().Props())
	_, ok := srv.Kept("away")
	assert.True(t, ok)
}

// textCodec saves a string as its bytes.
type textCodec struct{}

func (textCodec) Append(dst []byte, v *string) []byte { return append(dst, *v...) }
func (textCodec) Decode(src []byte, v *string) error  { *v = string(src); return nil }

// TestAReturningPlayerKeepsItsClass: a player whose actor the game moved
// into a class of its own ("rider") leaves; the actor kept for it, in the
// server and in a save, holds the class, and the player returns as a
// rider, to the same server and to one started from the save.
func TestAReturningPlayerKeepsItsClass(t *testing.T) {
	dir := t.TempDir()
	opts := throng.Options{Classes: []throng.ClassOptions{{Name: "rider"}}, Admit: func(h wire.Hello) (throng.Entry, error) {
		return throng.Entry{Player: string(h.Token)}, nil
	}}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	defer srv.Close()
	rider, ok := srv.Class("rider")
	require.True(t, ok)
	classOf := func(srv *throng.Server, actor uint32) uint8 {
		e, ok := srv.World().Entity(components.ActorID{ID: actor})
		require.True(t, ok)
		return ark.NewMap[components.Client](srv.World().Ark()).Get(e).Class
	}
	ann, w := join(t, srv, "ann")
	e, ok := srv.World().Entity(components.ActorID{ID: w.Actor})
	require.True(t, ok)
	ark.NewMap[components.Client](srv.World().Ark()).Get(e).Class = rider // the game mounts her
	ann.Close()
	srv.Tick()
	k, ok := srv.Kept("ann")
	require.True(t, ok)
	assert.Equal(t, rider, k.Class, "kept with her class")
	saveNow(t, srv, dir)

	_, back := join(t, srv, "ann")
	assert.Equal(t, rider, classOf(srv, back.Actor), "back as a rider")

	opts.LoadFrom = dir
	loaded, err := throng.New(opts)
	require.NoError(t, err)
	defer loaded.Close()
	_, back = join(t, loaded, "ann")
	assert.Equal(t, rider, classOf(loaded, back.Actor), "back as a rider from the save")
}
