package systems

import (
	"cmp"
	"math"
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

// TestNearestInFrameOrderKeepsTheKBest: kthNearest and inFrameOrder
// together give the k candidates a full sort puts first, in ascending
// frame index, a few more candidates than k or many more, their bound on
// distance tight, loose or none, ties of distance included.
func TestNearestInFrameOrderKeepsTheKBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sc := relayScratch{nearBits: make([]uint64, 15000/64+1)} // room for every frame index, as nearestOf makes
	for round := range 3000 {
		n := 1 + rng.IntN(90)
		k := 1 + rng.IntN(n)
		if round%2 == 0 { // a few more than k, as a recipient's search gathers
			k = max(1, n-rng.IntN(9))
		}
		c := make([]nearCand, n)
		for i, at := range rng.Perm(4 * n)[:n] { // distinct frame indices, spread out
			c[i] = makeNearCand(float32(rng.IntN(12)), int32(at+rng.IntN(3)*5000))
		}
		slices.SortFunc(c, func(x, y nearCand) int { return cmp.Compare(x.idx(), y.idx()) })
		c = slices.CompactFunc(c, func(x, y nearCand) bool { return x.idx() == y.idx() })
		k = min(k, len(c))
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		byDist := slices.Clone(c)
		slices.Sort(byDist)
		var want []int32
		for _, v := range byDist[:k] {
			want = append(want, v.idx())
		}
		slices.Sort(want)

		last, from := nearCand(^uint64(0)), c
		if len(c) > k {
			h := []float32{11, 11 + 40*rng.Float32(), float32(math.Inf(1))}[rng.IntN(3)] // at least every distance
			last, from = kthNearest(c, k, h, make([]nearCand, 2*(len(c)+k)))
		}
		if len(c) > k && last != byDist[k-1] {
			t.Fatalf("round %d: n=%d k=%d: k-th best %v, want %v", round, len(c), k, last, byDist[k-1])
		}
		if got := sc.inFrameOrder(from, last); !slices.Equal(got, want) {
			t.Fatalf("round %d: n=%d k=%d: got %v, want %v", round, len(c), k, got, want)
		}
	}
}
