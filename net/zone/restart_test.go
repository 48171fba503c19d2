package zone_test

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/zone"
)

// restartFromSave saves zone id's server, closes it and its zone server
// as if its process died, and starts new ones from the save, under the
// same name, in their place.
func (w *zones) restartFromSave(id zone.ID) (*throng.Server, *zone.Server) {
	t := w.t
	dir := t.TempDir()
	pending, err := w.servers[id].srv.Save(dir)
	require.NoError(t, err)
	_, err = pending.Wait()
	require.NoError(t, err)
	w.servers[id].z.Close()
	require.NoError(t, w.servers[id].srv.Close())
	srv, err := throng.New(throng.Options{Parallelism: throng.Parallelism{Enabled: new(false)}, LoadFrom: dir, SavedTypes: gameTypes,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	owner, _ := w.mapForRound().Zone(id)
	nc, _ := connect(t, w.url)
	// A context without a deadline, as a process that runs until it is
	// stopped has: New bounds its own waits.
	z, err := zone.New(context.Background(), srv, nc, zone.Options{Zone: id, Name: owner.Owner})
	require.NoError(t, err)
	t.Cleanup(z.Close)
	w.servers[id] = &member{srv: srv, z: z, moves: ark.NewMap[components.Transform](srv.World().Ark())}
	return srv, z
}

// TestAZoneRestartedFromItsSaveHoldsItsOwnActorsOnly: zone 1 is saved
// while it holds a ghost of zone 2's NPC, then restarted from that save.
// Its own NPC is back, once; the ghost that went into the save is not
// taken for an actor of its own: the restarted zone lends its neighbour
// only its own NPC, offers it nothing, and holds zone 2's NPC once, as a
// ghost lent again.
func TestAZoneRestartedFromItsSaveHoldsItsOwnActorsOnly(t *testing.T) {
	w := startZones(t, twoZones)
	own := w.spawn(1, 7000, 100)
	w.spawn(2, 8300, 100)
	for range 3 {
		w.round()
	}
	require.Equal(t, 1, w.servers[1].z.Stats().Ghosts)
	srv, z := w.restartFromSave(1)
	require.Equal(t, 2, srv.World().Len(), "the save holds zone 1's NPC and the ghost")
	// The restarted server ticks on from the save's tick, which zone 2's
	// last round was: both are a tick further after this.
	for _, id := range w.order {
		w.servers[id].srv.Tick()
	}
	w.tick++
	listed := w.spy()
	// Zone 2's NPC stands, so its records leave out every field: zone 1,
	// which never heard it whole, asks zone 2 for a keyframe.
	rounds := 0
	for rounds < 3 || z.Stats().Ghosts == 0 && rounds < zone.GhostKeyEvery {
		w.round()
		rounds++
	}
	assert.LessOrEqual(t, rounds, 6, "a keyframe asked for, not one of every GhostKeyEvery ticks")
	assert.Equal(t, []components.ActorID{own}, w.npcs(1), "zone 1's own NPC, once")
	assert.Equal(t, 1, z.Stats().Ghosts, "zone 2's NPC, lent again")
	assert.Equal(t, 2, srv.World().Len())
	// (Listed each round; the spy may also catch the batch of the tick
	// before it subscribed, so the rounds are not counted.)
	assert.Equal(t, []uint32{own.ID}, slices.Sorted(maps.Keys(listed()[1])), "zone 1 lends its own NPC (by the border) alone")
	assert.Zero(t, z.Stats().Handoffs.Started, "the old ghost is not offered to zone 2 as zone 1's")
}
