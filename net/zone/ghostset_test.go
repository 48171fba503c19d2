package zone

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/components"
)

// TestAGhostSetFindsAndWalksItsGhosts: ghosts put under owners' ids far
// apart are found by them, a second put replaces the first, and a walk
// that drops some of what it is given sees every ghost once and leaves
// exactly the others, still found.
func TestAGhostSetFindsAndWalksItsGhosts(t *testing.T) {
	var s ghostSet
	ids := []uint32{3, 1 << 20, 77, 5000, 1<<31 + 9, 12}
	for _, id := range ids {
		s.put(id, &ghost{local: components.ActorID{ID: id + 1}})
	}
	again := &ghost{local: components.ActorID{ID: 999}}
	s.put(77, again)
	assert.Same(t, again, s.get(77), "the second put replaces the first")
	assert.Nil(t, s.get(78))
	seen := map[uint32]int{}
	s.each(func(id uint32, gh *ghost) {
		seen[id]++
		assert.Same(t, gh, s.get(id))
		if id%2 == 1 {
			s.drop(id)
		}
	})
	assert.Equal(t, map[uint32]int{3: 1, 1 << 20: 1, 77: 1, 5000: 1, 1<<31 + 9: 1, 12: 1}, seen, "every ghost once")
	for _, id := range ids {
		if id%2 == 1 {
			assert.Nil(t, s.get(id), "%d dropped", id)
		} else {
			assert.NotNil(t, s.get(id), "%d kept", id)
		}
	}
	left := map[uint32]bool{}
	s.each(func(id uint32, _ *ghost) { left[id] = true })
	assert.Equal(t, map[uint32]bool{1 << 20: true, 5000: true, 12: true}, left)
	s.drop(12)
	s.drop(12)
	assert.Len(t, s.all, 2)
}
