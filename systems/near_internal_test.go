package systems

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectNearestTakesTheKBest: selectNearest returns the k candidates
// a full sort by distance, then frame index, puts first, whatever the
// order they came in, ties of distance included.
func TestSelectNearestTakesTheKBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 2000 {
		n := 1 + rng.IntN(80)
		k := 1 + rng.IntN(n)
		c := make([]nearCand, n)
		for i := range c {
			// Few distinct distances, so that ties decide often.
			c[i] = makeNearCand(float32(rng.IntN(12)), int32(i))
		}
		rng.Shuffle(n, func(i, j int) { c[i], c[j] = c[j], c[i] })
		want := slices.Clone(c)
		slices.SortFunc(want, func(x, y nearCand) int {
			if x.before(y) {
				return -1
			}
			return 1
		})
		got := slices.Clone(selectNearest(c, k, make([]nearCand, n+k)))
		slices.SortFunc(got, func(x, y nearCand) int {
			if x.before(y) {
				return -1
			}
			return 1
		})
		if !slices.Equal(want[:k], got) {
			t.Fatalf("round %d: n=%d k=%d: got %v, want %v", round, n, k, got, want[:k])
		}
	}
}
