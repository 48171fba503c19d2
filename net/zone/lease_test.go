package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

// TestAZoneThatCannotReadTheMapStopsActingWhenItsLeaseRunsOut: the NATS
// server comes back from a restart without JetStream (where the map
// lives): core NATS carries the ghost batches again, the map cannot be
// read. Once the lease has run out, neither zone holds its zone (it could
// have been given away meanwhile): zone 1 stops showing its player zone
// 2's NPC, and zone 2 lends it no more. With JetStream back, both read the
// map again and act again: the player sees the NPC once more.
func TestAZoneThatCannotReadTheMapStopsActingWhenItsLeaseRunsOut(t *testing.T) {
	const lease = 2 * time.Second
	w := startZonesWith(t, twoZones, zone.Options{Lease: lease})
	w.spawn(2, 8300, 100)
	p := w.join(1, 8000, 100)
	for range 3 {
		w.round()
		p.read()
	}
	require.Len(t, p.others(), 1, "zone 2's NPC, across the border")
	a, b := w.servers[1].z, w.servers[2].z
	tick := func() {
		for _, id := range w.order {
			w.tick = w.servers[id].srv.Tick().Tick
		}
		p.read()
		time.Sleep(10 * time.Millisecond)
	}

	w.nats.RestartWithoutJetStream()
	stopped := time.Now()
	heard := a.Heard(2)
	require.Eventually(t, func() bool { tick(); return a.Heard(2) > heard }, 15*time.Second, time.Millisecond,
		"core NATS carries zone 2's batches again")
	// The last check that read the map was at most a second before the
	// restart.
	for time.Since(stopped) < lease+1500*time.Millisecond {
		tick()
	}
	for _, s := range []*zone.Server{a, b} {
		st := s.Stats()
		assert.True(t, st.Lapsed)
		assert.False(t, st.Holds)
		_, holds := s.Revision()
		assert.False(t, holds)
	}
	assert.Empty(t, p.others(), "zone 1, its lease run out, shows no ghost")
	sent := b.Stats().BatchesSent
	tick()
	assert.Equal(t, sent, b.Stats().BatchesSent, "zone 2 lends nothing")

	w.nats.Restart()
	require.Eventually(t, func() bool {
		tick()
		_, ha := a.Revision()
		_, hb := b.Revision()
		return ha && hb
	}, 15*time.Second, time.Millisecond, "both read the map again")
	require.Eventually(t, func() bool { tick(); return len(p.others()) == 1 }, 5*time.Second, time.Millisecond,
		"the NPC is shown again")
	assert.False(t, a.Stats().Lapsed)
}
