package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

// TestCornerActorsAreLentToAllThreeNeighboursAndNeverLentOn: four zones
// in a 2 x 2 grid, a player in each at the shared corner and an NPC of
// zone 4 there too: every player sees the other three players and the
// NPC, and each zone's batches list only actors of its own, never the
// ghosts it holds.
func TestCornerActorsAreLentToAllThreeNeighboursAndNeverLentOn(t *testing.T) {
	w := startZones(t, grid2x2())
	listed := w.spy()
	npc := w.spawn(4, 8400, 8400)
	players := map[zone.ID]*viewer{
		1: w.join(1, 8000, 8000), 2: w.join(2, 8300, 8000),
		3: w.join(3, 8000, 8300), 4: w.join(4, 8300, 8300),
	}
	for range 3 {
		w.round()
		for _, p := range players {
			p.read()
		}
	}
	for id, p := range players {
		assert.Len(t, p.others(), 4, "zone %d's player sees three players and the NPC", id)
		want := 4 // the three other players and the NPC
		if id == 4 {
			want = 3 // the NPC is its own
		}
		assert.Equal(t, want, w.servers[id].z.Stats().Ghosts, "zone %d", id)
	}
	got := listed()
	for id, p := range players {
		own := map[uint32]bool{p.self: true}
		if id == 4 {
			own[npc.ID] = true
		}
		for actor := range got[id] {
			assert.True(t, own[actor], "zone %d listed %d, which is not its own", id, actor)
		}
		assert.Len(t, got[id], len(own), "zone %d lists each of its own", id)
	}
}

// TestMalformedGhostBatchesAreDroppedAndCounted: garbage on a zone's
// ghost subject, and a well-formed batch from a zone that does not
// border it, change nothing a player sees; the server keeps ticking.
func TestMalformedGhostBatchesAreDroppedAndCounted(t *testing.T) {
	w := startZones(t, twoZones)
	p := w.join(1, 8000, 100)
	w.round()
	p.read()
	nc, _ := connect(t, w.url)
	subject := zone.GhostSubject("throng", 1)
	require.NoError(t, nc.Publish(subject, []byte("not a batch")))
	require.NoError(t, nc.Publish(subject, sampleBatch()[:30]))
	stranger := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 9, Revision: 1 << 40, Tick: 1 << 40}, 1)
	stranger = zone.AppendGhost(stranger, zone.Ghost{ID: 5, X: 8100, Y: 100})
	require.NoError(t, nc.Publish(subject, stranger))
	require.NoError(t, nc.Flush())
	a := w.servers[1].z
	require.Eventually(t, func() bool { return a.Stats().Dropped == 2 && a.Heard(9) != 0 },
		5*time.Second, time.Millisecond)
	for range 3 {
		w.round()
		p.read()
	}
	st := a.Stats()
	assert.Equal(t, uint64(2), st.Dropped)
	assert.Equal(t, uint64(1), st.Refused, "zone 9 is no neighbour of zone 1")
	assert.Zero(t, st.Ghosts)
	assert.Empty(t, p.others())
	assert.Equal(t, uint64(4), w.tick)
}

// TestAZoneGivenToAnotherOwnerStopsActingAsIts: once the map in the
// bucket gives zone 2 to another server, zone 2's old holder publishes
// nothing more, its neighbour drops the ghosts it had lent (the player
// sees them disappear), and a batch the old holder sent as of the old
// revision is refused.
func TestAZoneGivenToAnotherOwnerStopsActingAsIts(t *testing.T) {
	w := startZones(t, twoZones)
	w.spawn(2, 8300, 100)
	p := w.join(1, 8000, 100)
	for range 2 {
		w.round()
		p.read()
	}
	require.Len(t, p.others(), 1)
	a, b := w.servers[1].z, w.servers[2].z
	oldRev, holds := b.Revision()
	require.True(t, holds)

	moved := zone.Map{Zones: append([]zone.Zone(nil), twoZones.Zones...)}
	moved.Zones[1].Owner = "b2"
	newRev, err := zone.PublishMap(testContext(t), w.js, "", moved)
	require.NoError(t, err)
	for _, s := range []*zone.Server{a, b} {
		require.Eventually(t, func() bool { rev, _ := s.Revision(); return rev == newRev }, 5*time.Second, time.Millisecond)
	}
	_, holds = b.Revision()
	assert.False(t, holds, "the map names b2 now")
	sent := b.Stats().BatchesSent

	w.round()
	p.read()
	ghost := p.events[0][len("appear "):]
	assert.Equal(t, []string{"disappear " + ghost}, p.events[1:], "the old owner's ghost is gone")
	for range 3 {
		w.round()
		p.read()
	}
	st := b.Stats()
	assert.Equal(t, sent, st.BatchesSent, "the old owner publishes nothing")
	assert.False(t, st.Holds)
	assert.Equal(t, uint64(4), st.FencedTicks)

	// A batch sent as of the old revision, as by an owner that has not
	// heard yet: refused by a neighbour that has.
	nc, _ := connect(t, w.url)
	late := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 2, Revision: oldRev, Tick: 1000}, 1)
	late = zone.AppendGhost(late, zone.Ghost{ID: 1, X: 8300, Y: 100})
	require.NoError(t, nc.Publish(zone.GhostSubject("throng", 1), late))
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool { return a.Heard(2) == 1000 }, 5*time.Second, time.Millisecond)
	refused := a.Stats().Refused
	w.round()
	p.read()
	assert.Equal(t, refused+1, a.Stats().Refused)
	assert.Empty(t, p.others())
	assert.Zero(t, a.Stats().Ghosts)
}
