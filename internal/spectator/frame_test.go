package spectator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/systems"
)

func TestAFrameReadsBackAsWritten(t *testing.T) {
	sp := &systems.Spectacle{
		Tick:     77,
		Actors:   []systems.SpectatedActor{{ID: 1, X: 10, Y: -20, Kind: systems.KindPlayer}, {ID: 9, X: 4096.5, Y: 3, Kind: systems.KindNPC}},
		Chunks:   []systems.SpectatedChunk{{Key: grid.AreaKey{WorldOrCell: 2, X: -1, Y: 3}, Actors: 2, Cluster: 0, Shard: 1, Relays: 5}},
		Clusters: 1, Shards: 2, Watched: 1, Sent: []uint32{9}, Owed: []uint32{4, 5},
	}
	f := &Frame{Paused: true, TickRate: 30, Hz: 29.5, Systems: []System{{"relay", 1.5}}, Tiers: []float32{4200, 7000}, Spectacle: sp}
	d, err := Decode(Append(nil, f))
	require.NoError(t, err)
	assert.True(t, d.Paused)
	assert.Equal(t, uint32(77), d.Tick)
	assert.Equal(t, 30, d.TickRate)
	assert.Equal(t, []string{"relay"}, d.Systems)
	assert.Equal(t, []float32{4200, 7000}, d.Tiers)
	assert.Equal(t, sp.Actors, d.Actors)
	assert.Equal(t, sp.Chunks, d.Chunks)
	assert.Equal(t, uint32(1), d.Watched)
	assert.Equal(t, []uint32{9}, d.Sent)
	assert.Equal(t, []uint32{4, 5}, d.Owed)

	b := Append(nil, f)
	for _, n := range []int{0, 1, 10, len(b) - 1} {
		_, err := Decode(b[:n])
		assert.Error(t, err, "cut at %d", n)
	}
}

// TestFramesComeAtTheirRate: at 10 frames a second beside a 30 Hz tick,
// every third tick has one, not every fourth.
func TestFramesComeAtTheirRate(t *testing.T) {
	h := NewHub("", 10)
	start := time.Unix(1000, 0)
	assert.False(t, h.Due(start), "no spectator, no frame")
	h.clients.Store(1)
	frames := 0
	for i := range 300 { // ten seconds of ticks
		if h.Due(start.Add(time.Duration(i) * time.Second / 30)) {
			frames++
		}
	}
	assert.Equal(t, 100, frames)
}
