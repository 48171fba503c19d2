package ecs

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
)

// TestRankingAllocatesNothingOnceGrown: merging a new chunk into the chunk
// order, and dropping a removed one, reuse the World's slices. Creating a
// chunk allocates in Ark (a new table), so this drives rankChunks directly:
// it takes a chunk out of the order and has it merged back in, as if just
// created, and it puts a stale entry into the order, as if its chunk had
// just been let go.
func TestRankingAllocatesNothingOnceGrown(t *testing.T) {
	w := NewWorld(1)
	for y := range 40 {
		for x := range 40 {
			w.Spawn(ActorSpec{Transform: components.Transform{X: float32(x - 20), Y: float32(y - 20), WorldOrCell: uint32(x % 3)}})
		}
	}
	w.Apply(nil)
	w.Snapshot(nil)
	want := slices.Clone(w.ranked)
	rank := 0
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		c := w.ranked[rank]
		w.ranked = slices.Delete(w.ranked, rank, rank+1)
		w.unranked = append(w.unranked, c)
		w.rankChunks()
		rank = (rank + 331) % len(w.ranked)
	}), "merging one new chunk")
	require.Equal(t, want, w.ranked)

	assert.Zero(t, testing.AllocsPerRun(100, func() {
		stale := w.ranked[rank]
		stale.gen-- // its entity let go and given this chunk again since
		w.ranked = slices.Insert(w.ranked, rank, stale)
		w.chunksRemoved = true
		w.rankChunks()
		rank = (rank + 331) % len(w.ranked)
	}), "dropping one removed chunk")
	require.Equal(t, want, w.ranked)
	for rank, c := range w.ranked {
		require.Equal(t, int32(rank), w.rankOf[c.entity.ID()])
	}
}
