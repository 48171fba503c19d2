package throng_test

import (
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

// TestNPCsMovedByASystemReachThePlayers: an actor without a client moves
// when a server system writes its Transform or Animation; the players
// near it get its record in the tick it moved, nothing while it stands,
// and it changes chunks like any actor.
func TestNPCsMovedByASystemReachThePlayers(t *testing.T) {
	srv, err := throng.New(throng.Options{Admit: func(wire.Hello) (throng.Entry, error) {
		return throng.Entry{Spawn: components.Transform{X: 3900, Y: 100}}, nil
	}})
	require.NoError(t, err)
	defer srv.Close()
	world := srv.World()
	npc := world.Spawn(ecs.ActorSpec{Transform: components.Transform{X: 4000, Y: 100}})
	drive := &npcDriver{
		world: world, npc: npc,
		transforms: ark.NewMap[components.Transform](world.Ark()),
		animations: ark.NewMap[components.Animation](world.Ark()),
	}
	require.NoError(t, srv.AddSystem(drive, scheduler.Before(systems.MoveName)))
	player := srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
	require.NoError(t, err)
	require.NoError(t, player.Send(hello))
	srv.Tick()
	srv.Tick()
	player.DrainDatagrams(func([]byte) {})

	// records returns the NPC's records the player got in one tick.
	records := func() []wire.Record {
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
