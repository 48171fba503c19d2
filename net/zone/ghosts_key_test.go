package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

// TestAGhostThatChangedUnheardIsSetRightAtOnce: a ghost record carries
// only what changed in the sender's last GhostRepeat ticks, so a standing
// NPC costs MinGhostSize bytes a batch. Zone 2's NPC steps once and
// stands while zone 2 ticks GhostRepeat+2 times before zone 1 next ticks:
// zone 1 takes only the newest of those batches, whose record leaves the
// step out. Its ghost stays where it was, zone 1 counts the record and
// asks zone 2 for a keyframe, and zone 2's next batch puts the ghost where
// the NPC stands, long before a keyframe would come by itself.
func TestAGhostThatChangedUnheardIsSetRightAtOnce(t *testing.T) {
	w := startZones(t, twoZones)
	npc := w.spawn(2, 8300, 100)
	for range zone.GhostRepeat + 1 { // a new actor is sent whole for GhostRepeat ticks
		w.round()
	}
	ghost := w.ghostOf(1, 2, npc)
	x := func() float32 {
		e, ok := w.servers[1].srv.World().Entity(ghost)
		require.True(t, ok, "zone 1 still shows zone 2's NPC")
		return w.servers[1].moves.Get(e).X
	}
	require.Equal(t, float32(8300), x())
	sent := w.servers[2].z.Stats()
	w.round()
	after := w.servers[2].z.Stats()
	require.Equal(t, sent.BatchesSent+1, after.BatchesSent)
	assert.Equal(t, uint64(27+zone.MinGhostSize), after.BytesSent-sent.BytesSent, "a standing NPC: its id and a byte")

	w.walk(2, npc, 8350)
	z1, z2 := w.servers[1], w.servers[2]
	tick2 := w.tick
	for range zone.GhostRepeat + 2 {
		tick2++
		require.Equal(t, tick2, z2.srv.Tick().Tick)
	}
	require.Eventually(t, func() bool { return z1.z.Heard(2) >= tick2 }, 5*time.Second, time.Millisecond)
	z1.srv.Tick()
	assert.Equal(t, float32(8300), x(), "the step was in batches zone 1 did not take")
	assert.Positive(t, z1.z.Stats().Unkeyed)
	assert.Positive(t, z1.z.Stats().KeyRequests)
	require.Eventually(t, func() bool { return z2.z.Stats().KeyframesAsked > 0 }, 5*time.Second, time.Millisecond)

	tick2++
	require.Equal(t, tick2, z2.srv.Tick().Tick)
	require.Less(t, tick2, uint64(zone.GhostKeyEvery), "a keyframe asked for, not one of every GhostKeyEvery ticks")
	require.Eventually(t, func() bool { return z1.z.Heard(2) >= tick2 }, 5*time.Second, time.Millisecond)
	z1.srv.Tick()
	assert.Equal(t, float32(8350), x(), "the keyframe's whole record")
}
