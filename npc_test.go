package throng_test

import (
	"math"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// npcDriver is a user's system that moves an NPC by writing its Transform
// and Animation, the way game logic drives actors without a client.
type npcDriver struct {
	world      *ecs.World
	transforms *ark.Map[components.Transform]
	animations *ark.Map[components.Animation]
	npc        components.ActorID
	step       float32 // added to X each tick
	flags      uint16
}

func (d *npcDriver) Name() string { return "npc-driver" }
func (d *npcDriver) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform](), scheduler.Write[components.Animation]())
}
func (d *npcDriver) RunSerial(*scheduler.Tick) {
	if e, ok := d.world.Entity(d.npc); ok {
		d.transforms.Get(e).X += d.step
		d.animations.Get(e).Flags = d.flags
	}
}

// npcServer returns a server whose players spawn at (3900, 100), with an
// NPC at (4000, 100), closed when t ends.
func npcServer(t *testing.T) (*throng.Server, components.ActorID) {
	srv, err := throng.New(throng.Options{Admit: func(wire.Hello) (throng.Entry, error) {
		return throng.Entry{Spawn: components.Transform{X: 3900, Y: 100}}, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv, srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: 4000, Y: 100}})
}

// watchNPC joins a player on the in-memory transport and returns a func
// that ticks the server once and returns the NPC's records the player got.
func watchNPC(t *testing.T, srv *throng.Server, npc components.ActorID) func() []wire.Record {
	player := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
	require.NoError(t, err)
	require.NoError(t, player.Send(hello))
	srv.Tick()
	srv.Tick()
	player.DrainDatagrams(func([]byte) {})
	return func() []wire.Record {
		srv.Tick()
		var got []wire.Record
		player.DrainDatagrams(func(d []byte) {
			b, err := wire.DecodeBatch(d)
			require.NoError(t, err)
			for i := range b.Len() {
				if r := b.At(i); r.Actor == npc.ID {
					got = append(got, r)
				}
			}
		})
		return got
	}
}

// TestNPCsMovedByASystemReachThePlayers: an actor without a client moves
// when a server system writes its Transform or Animation; the players
// near it get its record in the tick it moved, nothing while it stands,
// and it changes chunks like any actor.
func TestNPCsMovedByASystemReachThePlayers(t *testing.T) {
	srv, npc := npcServer(t)
	world := srv.World()
	drive := &npcDriver{
		world: world, npc: npc,
		transforms: ark.NewMap[components.Transform](world.Ark()),
		animations: ark.NewMap[components.Animation](world.Ark()),
	}
	require.NoError(t, srv.AddSystem(drive, scheduler.Before(systems.MoveName)))
	records := watchNPC(t, srv, npc)
	assert.Empty(t, records(), "an NPC standing where it spawned is not relayed")

	drive.step = 50
	chunk := world.ChunkSize()
	for x := float32(4050); x <= 4250; x += 50 { // across the border at one chunk (4096)
		got := records()
		require.Len(t, got, 1, "the NPC's record in the tick it moved to %v", x)
		assert.Equal(t, x, got[0].X)
	}
	key, _ := world.Key(npc)
	assert.Equal(t, grid.KeyOf(0, 4250, 100, chunk), key, "the NPC changed chunks")

	drive.step = 0
	assert.Empty(t, records(), "standing still again")
	drive.flags = 3
	got := records()
	require.Len(t, got, 1, "a new animation is an update too")
	assert.Equal(t, uint16(3), got[0].Flags)
	assert.Equal(t, float32(4250), got[0].X)
	assert.Empty(t, records())
}

// lateWriter is a user's system after the relay that writes an NPC's
// Transform once.
type lateWriter struct {
	world      *ecs.World
	transforms *ark.Map[components.Transform]
	npc        components.ActorID
	write      *components.Transform
}

func (l *lateWriter) Name() string { return "late-writer" }
func (l *lateWriter) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform]())
}
func (l *lateWriter) RunSerial(*scheduler.Tick) {
	if e, ok := l.world.Entity(l.npc); ok && l.write != nil {
		*l.transforms.Get(e) = *l.write
		l.write = nil
	}
}

// TestAnNPCSentToNoPlaceStaysWhereItWas: a system that writes NaN or an
// infinity into an NPC's Transform, before Move or after the relay, does
// not make the NPC vanish: the players get no record of a place that is
// no place, the NPC goes on from where it was last relayed, and the
// server counts each (Stats.NonFinite).
func TestAnNPCSentToNoPlaceStaysWhereItWas(t *testing.T) {
	srv, npc := npcServer(t)
	world := srv.World()
	transforms := ark.NewMap[components.Transform](world.Ark())
	before := &npcDriver{world: world, npc: npc, transforms: transforms, animations: ark.NewMap[components.Animation](world.Ark())}
	require.NoError(t, srv.AddSystem(before, scheduler.Before(systems.MoveName)))
	late := &lateWriter{world: world, transforms: transforms, npc: npc}
	require.NoError(t, srv.AddSystem(late, scheduler.After(systems.RelayName), scheduler.Before(systems.JoinName)))
	records := watchNPC(t, srv, npc)

	before.step = float32(math.NaN())
	assert.Empty(t, records(), "nothing relayed of a place that is no place")
	assert.Equal(t, uint64(1), srv.Stats().NonFinite)
	before.step = 50
	got := records()
	require.Len(t, got, 1)
	assert.Equal(t, float32(4050), got[0].X, "the NPC goes on from where it was")

	before.step = 0
	late.write = &components.Transform{X: float32(math.Inf(1)), Y: 100}
	assert.Empty(t, records(), "written after the relay")
	assert.Empty(t, records())
	assert.Equal(t, uint64(2), srv.Stats().NonFinite, "the next Move put back what a system wrote after the relay")
	before.step = 50
	got = records()
	require.Len(t, got, 1)
	assert.Equal(t, float32(4100), got[0].X)
	key, _ := world.Key(npc)
	assert.Equal(t, grid.KeyOf(0, 4100, 100, world.ChunkSize()), key, "still in its chunk")
}

// TestAnNPCWhoseInitGaveNoPlaceStandsWhereItSpawned: an ActorSpec.Init
// that writes NaN into the new NPC's Transform, after Spawn's check, is
// met by Move as a system's write: the NPC stands where it was spawned,
// and the server counts it.
func TestAnNPCWhoseInitGaveNoPlaceStandsWhereItSpawned(t *testing.T) {
	srv, _ := npcServer(t)
	world := srv.World()
	transforms := ark.NewMap[components.Transform](world.Ark())
	npc := world.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 4020, Y: 100}, Init: func(_ *ark.World, e ark.Entity) {
		transforms.Get(e).X = float32(math.NaN())
	}})
	records := watchNPC(t, srv, npc)
	assert.Empty(t, records())
	e, ok := world.Entity(npc)
	require.True(t, ok)
	assert.Equal(t, components.Transform{X: 4020, Y: 100}, *transforms.Get(e))
	assert.Equal(t, uint64(1), srv.Stats().NonFinite)
}
