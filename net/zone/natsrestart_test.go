package zone_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

// TestZonesSurviveARestartOfTheNATSServer: the NATS server restarts
// under two ticking zones (every connection dropped, the same port and
// JetStream store after). The zones' connections come back by
// themselves: a player of zone 1 sees zone 2's NPC walk across the border
// again, and a map written after the restart reaches both servers (the
// map's watch is re-made): the zone given to another owner stops.
func TestZonesSurviveARestartOfTheNATSServer(t *testing.T) {
	w := startZones(t, twoZones)
	npc := w.spawn(2, 8300, 100)
	p := w.join(1, 8000, 100)
	for range 3 {
		w.round()
		p.read()
	}
	require.Len(t, p.others(), 1)

	w.nats.Restart()
	heard := w.servers[1].z.Heard(2)
	require.Eventually(t, func() bool {
		for _, id := range w.order {
			w.tick = w.servers[id].srv.Tick().Tick
		}
		p.read()
		return w.servers[1].z.Heard(2) > heard && w.servers[2].z.Heard(1) > heard
	}, 15*time.Second, 10*time.Millisecond, "the zones never heard each other again")
	w.round()
	p.read()
	seen := p.xs[p.others()[0]]
	for _, x := range []float32{8350, 8400, 8450} {
		w.walk(2, npc, x)
		w.round()
		p.read()
	}
	w.round()
	p.read()
	got := p.xs[p.others()[0]]
	require.Greater(t, len(got), len(seen))
	assert.True(t, slices.Contains(got[len(seen):], 8450), "the ghost walked again: %v", got[len(seen):])

	moved := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	moved.Zones[1].Owner = "b2"
	rev, err := zone.PublishMap(testContext(t), w.js, "", moved)
	require.NoError(t, err)
	for _, id := range w.order {
		require.Eventually(t, func() bool { r, _ := w.servers[id].z.Revision(); return r == rev }, 10*time.Second, 10*time.Millisecond,
			"zone %d never read the map written after the restart", id)
	}
	_, holds := w.servers[2].z.Revision()
	assert.False(t, holds)
}
