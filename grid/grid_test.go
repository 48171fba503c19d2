package grid_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/grid"
)

func TestChunkCoordFloorsNegativePositions(t *testing.T) {
	cases := []struct {
		pos  float32
		want int32
	}{
		{-1, -1},
		{-0.001, -1},
		{-4096, -1},
		{-4097, -2},
		{-8192, -2},
		{0, 0},
		{float32(math.Copysign(0, -1)), 0},
		{4095.9, 0},
		{4096, 1},
		{8191, 1},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, grid.ChunkCoord(c.pos, grid.DefaultChunkSize), "ChunkCoord(%v)", c.pos)
	}
	assert.Equal(t, int32(-3), grid.ChunkCoord(-250, 100), "other chunk sizes floor too")
}

func TestChunkCoordSaturatesAtInt32Range(t *testing.T) {
	assert.Equal(t, int32(math.MaxInt32), grid.ChunkCoord(math.MaxFloat32, 1))
	assert.Equal(t, int32(math.MinInt32), grid.ChunkCoord(-math.MaxFloat32, 1))
	assert.Equal(t, int32(math.MaxInt32), grid.ChunkCoord(float32(math.Inf(1)), grid.DefaultChunkSize))
	assert.Equal(t, int32(math.MinInt32), grid.ChunkCoord(float32(math.Inf(-1)), grid.DefaultChunkSize))
	assert.Equal(t, int32(math.MaxInt32), grid.ChunkCoord(1e20, grid.DefaultChunkSize))
	assert.Equal(t, int32(math.MinInt32), grid.ChunkCoord(-1e20, grid.DefaultChunkSize))
	assert.Equal(t, int32(0), grid.ChunkCoord(float32(math.NaN()), grid.DefaultChunkSize))
}

func TestKeyOfPlacesBothAxes(t *testing.T) {
	got := grid.KeyOf(60, -1, 4096, grid.DefaultChunkSize)
	assert.Equal(t, grid.AreaKey{WorldOrCell: 60, X: -1, Y: 1}, got)
}

func TestChebyshevIsChessboardDistance(t *testing.T) {
	a := grid.AreaKey{WorldOrCell: 1, X: -3, Y: 2}
	b := grid.AreaKey{WorldOrCell: 1, X: 2, Y: -1}
	assert.Equal(t, int64(5), grid.Chebyshev(a, b))
	assert.Equal(t, int64(5), grid.Chebyshev(b, a))
	assert.Equal(t, int64(0), grid.Chebyshev(a, a))

	lo := grid.AreaKey{X: math.MinInt32, Y: math.MinInt32}
	hi := grid.AreaKey{X: math.MaxInt32, Y: 0}
	assert.Equal(t, int64(math.MaxUint32), grid.Chebyshev(lo, hi), "no overflow at the int32 edges")
}

func TestChebyshevAcrossWorldsIsUnreachable(t *testing.T) {
	a := grid.AreaKey{WorldOrCell: 1}
	b := grid.AreaKey{WorldOrCell: 2}
	assert.Equal(t, int64(grid.Unreachable), grid.Chebyshev(a, b))
	assert.False(t, grid.Visible(a, b), "same coordinates in different worlds never see each other")
}

func TestVisibleIsTheThreeByThreeStencil(t *testing.T) {
	c := grid.AreaKey{WorldOrCell: 7, X: -1, Y: -1}
	for dy := int32(-2); dy <= 2; dy++ {
		for dx := int32(-2); dx <= 2; dx++ {
			k := grid.AreaKey{WorldOrCell: 7, X: c.X + dx, Y: c.Y + dy}
			want := dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1
			assert.Equal(t, want, grid.Visible(c, k), "offset (%d, %d)", dx, dy)
		}
	}
}

func TestStencilHasNineDistinctKeysCentredAtFour(t *testing.T) {
	c := grid.AreaKey{WorldOrCell: 3, X: -1, Y: 0}
	s := grid.Stencil(c)
	assert.Equal(t, c, s[4])
	seen := make(map[grid.AreaKey]bool)
	for i, k := range s {
		assert.False(t, seen[k], "key %d repeats: %v", i, k)
		seen[k] = true
		assert.True(t, grid.Visible(c, k), "key %d is outside the stencil: %v", i, k)
		if i > 0 {
			assert.True(t, grid.Less(s[i-1], k), "keys are listed row by row")
		}
	}
	assert.Len(t, seen, 9)
}

func TestLessOrdersByWorldThenRowThenColumn(t *testing.T) {
	ordered := []grid.AreaKey{
		{WorldOrCell: 0, X: 5, Y: -2},
		{WorldOrCell: 0, X: -5, Y: 0},
		{WorldOrCell: 0, X: 3, Y: 0},
		{WorldOrCell: 0, X: math.MinInt32, Y: 1},
		{WorldOrCell: 1, X: math.MinInt32, Y: math.MinInt32},
	}
	for i, a := range ordered {
		assert.False(t, grid.Less(a, a), "Less is irreflexive")
		for j, b := range ordered {
			assert.Equal(t, i < j, grid.Less(a, b), "Less(%v, %v)", a, b)
		}
	}
}

// TestCompareAgreesWithLess pins Compare to Less, which
// defines the order, on every pair of keys built from the extremes of each
// field and the values around zero.
func TestCompareAgreesWithLess(t *testing.T) {
	coords := []int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, math.MaxInt32 - 1, math.MaxInt32}
	var keys []grid.AreaKey
	for _, world := range []uint32{0, 1, math.MaxUint32} {
		for _, y := range coords {
			for _, x := range coords {
				keys = append(keys, grid.AreaKey{WorldOrCell: world, X: x, Y: y})
			}
		}
	}
	for _, a := range keys {
		for _, b := range keys {
			want := 0
			if grid.Less(a, b) {
				want = -1
			} else if grid.Less(b, a) {
				want = 1
			}
			if got := grid.Compare(a, b); got != want {
				t.Fatalf("Compare(%v, %v) = %d, Less says %d", a, b, got, want)
			}
		}
	}
}

// Holds must agree with KeyOf for every position, in particular those a
// float32 step either side of a chunk's edges, where rounding the
// quotient decides; and for chunks far enough out that their edges are no
// longer exact, and positions that are not numbers.
func TestHoldsAgreesWithKeyOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var positions []float32
	for _, s := range []float32{4096, 64, 100, 3.3, 0.001, 777_777, 1e30} {
		for _, k := range []float64{0, 1, -1, 2, -2, 37, -37, 1e6, -1e6, 1<<28 - 1, -(1<<28 - 1), 1 << 28, 1 << 30, -1 << 31} {
			edge := float32(k * float64(s))
			x := edge
			for range 4 {
				x = math.Nextafter32(x, float32(math.Inf(-1)))
			}
			for range 9 {
				positions = append(positions, x)
				x = math.Nextafter32(x, float32(math.Inf(1)))
			}
			positions = append(positions, edge+s*rng.Float32())
		}
	}
	positions = append(positions, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)))
	checked := 0
	for _, s := range []float32{4096, 64, 100, 3.3, 0.001, 777_777, 1e30} {
		for i, x := range positions {
			y := positions[(i*7+3)%len(positions)]
			at := grid.KeyOf(5, x, y, s)
			for _, k := range []grid.AreaKey{at, {5, at.X + 1, at.Y}, {5, at.X - 1, at.Y}, {5, at.X, at.Y + 1}, {5, at.X, at.Y - 1}, {6, at.X, at.Y}} {
				require.Equal(t, grid.KeyOf(5, x, y, s) == k, k.Holds(5, x, y, s), "chunk %v, position (%v, %v), size %v", k, x, y, s)
				checked++
			}
		}
	}
	require.Greater(t, checked, 10_000)
}
