package grid_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/grid"
)

// relayReach is how many chunks an actor's records travel within one tick:
// one chunk of movement plus the one-chunk visibility stencil.
const relayReach = 2

// populations is how many randomized populations the property tests check.
const populations = 500

// randomPopulation returns the chunk of every actor of a random population,
// in submission order: a few clumps (crowds of up to 80, some spanning
// several chunks) and scattered loners over several worldOrCells, around the
// origin so that negative coordinates are common.
func randomPopulation(r *rand.Rand) []grid.AreaKey {
	worldPool := []uint32{0, 60, 0x0001_F00D, math.MaxUint32}
	worlds := worldPool[:1+r.IntN(len(worldPool))]
	const chunk = grid.DefaultChunkSize
	var keys []grid.AreaKey
	for range r.IntN(6) {
		w := worlds[r.IntN(len(worlds))]
		cx := (r.Float64()*60 - 30) * chunk
		cy := (r.Float64()*60 - 30) * chunk
		spread := (0.05 + r.Float64()*3) * chunk
		for range 1 + r.IntN(80) {
			x := float32(cx + r.NormFloat64()*spread)
			y := float32(cy + r.NormFloat64()*spread)
			keys = append(keys, grid.KeyOf(w, x, y, chunk))
		}
	}
	for range r.IntN(50) {
		w := worlds[r.IntN(len(worlds))]
		x := float32((r.Float64()*120 - 60) * chunk)
		y := float32((r.Float64()*120 - 60) * chunk)
		keys = append(keys, grid.KeyOf(w, x, y, chunk))
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

// forEachPopulation calls check with a reproducible random population and
// separation for each seed; a failure message should name the seed.
func forEachPopulation(t *testing.T, check func(seed uint64, r *rand.Rand, keys []grid.AreaKey, separation int)) {
	t.Helper()
	separations := []int{3, 3, 4, 4, 5, 6, 9}
	for seed := range uint64(populations) {
		r := rand.New(rand.NewPCG(seed, 0x7468726f6e67))
		keys := randomPopulation(r)
		check(seed, r, keys, separations[r.IntN(len(separations))])
		if t.Failed() {
			return
		}
	}
}

// clusterOfKey maps each chunk to the index of the cluster holding its
// views, failing if two views of one chunk were split.
func clusterOfKey(t *testing.T, seed uint64, keys []grid.AreaKey, clusters []grid.Cluster) map[grid.AreaKey]int {
	t.Helper()
	of := make(map[grid.AreaKey]int)
	for c, cl := range clusters {
		for _, m := range cl.Members {
			k := keys[m]
			if prev, ok := of[k]; ok && prev != c {
				t.Fatalf("seed %d: views of chunk %v are in clusters %d and %d", seed, k, prev, c)
			}
			of[k] = c
		}
	}
	return of
}

// keySets returns each cluster as its set of distinct chunks sorted by
// grid.Less, in cluster order: the partition with input indices forgotten.
func keySets(keys []grid.AreaKey, clusters []grid.Cluster) [][]grid.AreaKey {
	sets := make([][]grid.AreaKey, 0, len(clusters))
	for _, cl := range clusters {
		var set []grid.AreaKey
		for _, m := range cl.Members {
			set = append(set, keys[m])
		}
		set = sortedDistinct(set)
		sets = append(sets, set)
	}
	return sets
}

func sortedDistinct(keys []grid.AreaKey) []grid.AreaKey {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, func(a, b grid.AreaKey) int {
		switch {
		case grid.Less(a, b):
			return -1
		case grid.Less(b, a):
			return 1
		}
		return 0
	})
	return slices.Compact(keys)
}

// bruteForceComponents is the definition, computed the slow way: flood fill
// over every pair of distinct chunks, components in order of their lowest
// chunk.
func bruteForceComponents(keys []grid.AreaKey, separation int) [][]grid.AreaKey {
	chunks := sortedDistinct(keys)
	label := make([]int, len(chunks))
	for i := range label {
		label[i] = -1
	}
	comps := [][]grid.AreaKey{}
	for start := range chunks {
		if label[start] >= 0 {
			continue
		}
		c := len(comps)
		label[start] = c
		stack := []int{start}
		var comp []grid.AreaKey
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			comp = append(comp, chunks[i])
			for j := range chunks {
				if label[j] < 0 && grid.Chebyshev(chunks[i], chunks[j]) <= int64(separation) {
					label[j] = c
					stack = append(stack, j)
				}
			}
		}
		comps = append(comps, sortedDistinct(comp))
	}
	return comps
}

// copyClusters deep-copies a result so it survives the next Partition call.
func copyClusters(clusters []grid.Cluster) []grid.Cluster {
	out := make([]grid.Cluster, len(clusters))
	for i, c := range clusters {
		out[i] = grid.Cluster{Lowest: c.Lowest, Members: slices.Clone(c.Members)}
	}
	return out
}

func TestClustersNeverShareRelayRange(t *testing.T) {
	var p grid.Partitioner
	forEachPopulation(t, func(seed uint64, _ *rand.Rand, keys []grid.AreaKey, s int) {
		of := clusterOfKey(t, seed, keys, p.Partition(keys, s))
		chunks := sortedDistinct(keys)
		cluster := make([]int, len(chunks))
		for i, k := range chunks {
			cluster[i] = of[k]
		}
		for i, a := range chunks {
			for j := i + 1; j < len(chunks); j++ {
				if cluster[i] == cluster[j] {
					continue
				}
				b := chunks[j]
				if d := grid.Chebyshev(a, b); d <= relayReach || d <= int64(s) {
					t.Fatalf("seed %d, S=%d: chunks %v and %v are %d apart but in clusters %d and %d",
						seed, s, a, b, d, cluster[i], cluster[j])
				}
			}
		}
	})
}

func TestClustersAreExactlyTheConnectedComponents(t *testing.T) {
	var p grid.Partitioner
	forEachPopulation(t, func(seed uint64, _ *rand.Rand, keys []grid.AreaKey, s int) {
		got := keySets(keys, p.Partition(keys, s))
		want := bruteForceComponents(keys, s)
		require.Equal(t, want, got, "seed %d, S=%d: clusters differ from the brute-force components", seed, s)
	})
}

func TestPartitionDoesNotDependOnInputOrder(t *testing.T) {
	var p grid.Partitioner
	forEachPopulation(t, func(seed uint64, r *rand.Rand, keys []grid.AreaKey, s int) {
		want := keySets(keys, p.Partition(keys, s))
		shuffled := slices.Clone(keys)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		clusters := p.Partition(shuffled, s)
		got := keySets(shuffled, clusters)
		require.Equal(t, want, got, "seed %d, S=%d: shuffling the input changed the clusters", seed, s)
		for i, c := range clusters {
			require.Equal(t, want[i][0], c.Lowest, "seed %d: cluster %d's lowest chunk", seed, i)
		}
	})
}

func TestSeparationBelowMinimumActsAsMinimum(t *testing.T) {
	require.Equal(t, 3, grid.MinSeparation, "the relay-safety argument is written for 3")
	var p grid.Partitioner
	forEachPopulation(t, func(seed uint64, _ *rand.Rand, keys []grid.AreaKey, _ int) {
		want := copyClusters(p.Partition(keys, grid.MinSeparation))
		for _, s := range []int{2, 1, 0, -1, -4096, math.MinInt} {
			got := p.Partition(keys, s)
			require.Equal(t, want, copyClusters(got), "seed %d: S=%d differs from S=%d", seed, s, grid.MinSeparation)
		}
	})
}

func TestMembersAscendAndClustersAreOrderedByLowest(t *testing.T) {
	var p grid.Partitioner
	forEachPopulation(t, func(seed uint64, _ *rand.Rand, keys []grid.AreaKey, s int) {
		clusters := p.Partition(keys, s)
		seen := make([]bool, len(keys))
		for c, cl := range clusters {
			require.NotEmpty(t, cl.Members, "seed %d: cluster %d is empty", seed, c)
			require.True(t, slices.IsSorted(cl.Members), "seed %d: cluster %d members are not in submission order", seed, c)
			lowest := keys[cl.Members[0]]
			for _, m := range cl.Members {
				require.False(t, seen[m], "seed %d: view %d is in two clusters", seed, m)
				seen[m] = true
				if grid.Less(keys[m], lowest) {
					lowest = keys[m]
				}
			}
			require.Equal(t, lowest, cl.Lowest, "seed %d: cluster %d's Lowest is not its lowest chunk", seed, c)
			if c > 0 {
				require.True(t, grid.Less(clusters[c-1].Lowest, cl.Lowest), "seed %d: clusters %d and %d are out of order", seed, c-1, c)
			}
		}
		require.NotContains(t, seen, false, "seed %d: a view is in no cluster", seed)
	})
}

func TestViewsOfOneChunkShareACluster(t *testing.T) {
	a := grid.AreaKey{WorldOrCell: 60, X: -1, Y: -1}
	far := grid.AreaKey{WorldOrCell: 60, X: 40, Y: 40}
	keys := []grid.AreaKey{a, far, a, far, a}
	var p grid.Partitioner
	clusters := p.Partition(keys, 4)
	require.Len(t, clusters, 2)
	assert.Equal(t, grid.Cluster{Lowest: a, Members: []int32{0, 2, 4}}, clusters[0])
	assert.Equal(t, grid.Cluster{Lowest: far, Members: []int32{1, 3}}, clusters[1])
}

func TestChunkLinksBothEndsOfTheNextRowsWindow(t *testing.T) {
	// (0,0) reaches (-3,1) and (3,1), which are 6 apart and so not linked
	// along their row: only (0,0) joins them.
	keys := []grid.AreaKey{{X: -3, Y: 1}, {X: 3, Y: 1}, {X: 0, Y: 0}}
	var p grid.Partitioner
	clusters := p.Partition(keys, 3)
	require.Len(t, clusters, 1)
	assert.Equal(t, []int32{0, 1, 2}, clusters[0].Members)
	assert.Equal(t, grid.AreaKey{X: 0, Y: 0}, clusters[0].Lowest)

	keys = append(keys, grid.AreaKey{X: 7, Y: 1})
	clusters = p.Partition(keys, 3)
	require.Len(t, clusters, 2, "(7,1) is 4 from (3,1) and 7 from (0,0)")
	assert.Equal(t, []int32{3}, clusters[1].Members)
}

// TestRowRunsLinkOnlyThroughNearChunks: chunks of a row no more than the
// separation apart form one run, linked to a run of a nearby row only if
// some chunk of each is within the separation of the other.
func TestRowRunsLinkOnlyThroughNearChunks(t *testing.T) {
	row := []grid.AreaKey{{X: 0, Y: 0}, {X: 3, Y: 0}, {X: 6, Y: 0}} // one run at separation 3
	var p grid.Partitioner
	clusters := p.Partition(append(row, grid.AreaKey{X: 9, Y: 3}), 3)
	require.Len(t, clusters, 1, "(9,3) is 3 from (6,0)")
	clusters = p.Partition(append(row, grid.AreaKey{X: 10, Y: 1}, grid.AreaKey{X: -4, Y: 2}), 3)
	require.Len(t, clusters, 3, "(10,1) is 4 from (6,0), (-4,2) 4 from (0,0)")

	// Two chunks of the next row just out of a lone chunk's reach, on
	// either side, stay apart from it and from each other.
	keys := []grid.AreaKey{{X: 0, Y: 0}, {X: -4, Y: 1}, {X: 4, Y: 1}}
	clusters = p.Partition(keys, 3)
	require.Len(t, clusters, 3)
	assert.Equal(t, []int32{0}, clusters[0].Members)
	assert.Equal(t, []int32{1}, clusters[1].Members)
	assert.Equal(t, []int32{2}, clusters[2].Members)
}

func TestPartitionOfNoViewsIsEmpty(t *testing.T) {
	var p grid.Partitioner
	assert.Empty(t, p.Partition(nil, 4))
	p.Partition([]grid.AreaKey{{X: 1}}, 4)
	assert.Empty(t, p.Partition([]grid.AreaKey{}, 4), "a reused partitioner forgets the previous population")
}

func TestPartitionDoesNotWrapAtInt32Edges(t *testing.T) {
	const maxC, minC = math.MaxInt32, math.MinInt32
	keys := []grid.AreaKey{
		{WorldOrCell: math.MaxUint32, X: maxC, Y: maxC},
		{WorldOrCell: math.MaxUint32, X: minC, Y: minC},
		{WorldOrCell: math.MaxUint32, X: maxC - 3, Y: maxC - 3},
		{WorldOrCell: math.MaxUint32, X: minC, Y: maxC},
	}
	var p grid.Partitioner
	clusters := copyClusters(p.Partition(keys, 3))
	assert.Equal(t, []grid.Cluster{
		{Lowest: keys[1], Members: []int32{1}},
		{Lowest: keys[2], Members: []int32{0, 2}},
		{Lowest: keys[3], Members: []int32{3}},
	}, clusters)
}

func TestHugeSeparationJoinsEachWorld(t *testing.T) {
	keys := []grid.AreaKey{
		{WorldOrCell: 1, X: math.MinInt32, Y: math.MinInt32},
		{WorldOrCell: 2, X: 0, Y: 0},
		{WorldOrCell: 1, X: math.MaxInt32, Y: math.MaxInt32},
	}
	var p grid.Partitioner
	clusters := p.Partition(keys, math.MaxInt)
	require.Len(t, clusters, 2, "worlds never join, whatever the separation")
	assert.Equal(t, []int32{0, 2}, clusters[0].Members)
	assert.Equal(t, []int32{1}, clusters[1].Members)
}

// worldViews returns n actor chunks spread uniformly over a side x side chunk
// world with negative and positive coordinates.
func worldViews(n, side int, seed uint64) []grid.AreaKey {
	r := rand.New(rand.NewPCG(seed, 1))
	keys := make([]grid.AreaKey, n)
	half := float64(side) / 2 * grid.DefaultChunkSize
	for i := range keys {
		x := float32(r.Float64()*2*half - half)
		y := float32(r.Float64()*2*half - half)
		keys[i] = grid.KeyOf(60, x, y, grid.DefaultChunkSize)
	}
	return keys
}

func TestSteadyStatePartitionAllocatesNothing(t *testing.T) {
	big := worldViews(10_000, 64, 1)
	small := worldViews(500, 64, 2)
	var p grid.Partitioner
	p.Partition(big, 4)
	assert.Zero(t, testing.AllocsPerRun(10, func() { p.Partition(big, 4) }), "same population")
	assert.Zero(t, testing.AllocsPerRun(10, func() { p.Partition(small, 4) }), "a smaller population")
	assert.Zero(t, testing.AllocsPerRun(10, func() { p.Partition(big, 9) }), "a wider separation")
}

func BenchmarkPartition(b *testing.B) {
	full := make([]grid.AreaKey, 0, 64*64)
	for y := range int32(64) {
		for x := range int32(64) {
			full = append(full, grid.AreaKey{WorldOrCell: 60, X: x - 32, Y: y - 32})
		}
	}
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(full), func(i, j int) { full[i], full[j] = full[j], full[i] })
	cases := []struct {
		name string
		keys []grid.AreaKey
	}{
		{"chunks=4096", full},
		{"views=10000", worldViews(10_000, 64, 4)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var p grid.Partitioner
			clusters := len(p.Partition(c.keys, 4))
			for b.Loop() {
				p.Partition(c.keys, 4)
			}
			b.ReportMetric(float64(clusters), "clusters")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(c.keys)), "ns/view")
		})
	}
}
