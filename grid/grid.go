package grid

import (
	"cmp"
	"math"
)

// DefaultChunkSize is the edge length of a chunk in world units when a
// server does not configure one.
const DefaultChunkSize = 4096

// AreaKey names one chunk: a square of chunkSize units inside one
// worldOrCell (a worldspace or an interior cell id). The zero value is chunk
// (0, 0) of worldOrCell 0. AreaKey is comparable and is used as a map key.
type AreaKey struct {
	WorldOrCell uint32
	X, Y        int32
}

// ChunkCoord returns floor(pos / chunkSize) as a chunk coordinate. It is
// correct for negative positions (-1 is in chunk -1, not 0) and saturates at
// the int32 range; NaN maps to 0 (validation rejects NaN before it gets here).
// chunkSize must be positive.
func ChunkCoord(pos, chunkSize float32) int32 {
	c := math.Floor(float64(pos) / float64(chunkSize))
	switch {
	case c != c: // NaN
		return 0
	case c >= math.MaxInt32:
		return math.MaxInt32
	case c <= math.MinInt32:
		return math.MinInt32
	}
	return int32(c)
}

// KeyOf returns the chunk holding position (x, y) in worldOrCell.
func KeyOf(worldOrCell uint32, x, y, chunkSize float32) AreaKey {
	return AreaKey{WorldOrCell: worldOrCell, X: ChunkCoord(x, chunkSize), Y: ChunkCoord(y, chunkSize)}
}

// Holds reports whether position (x, y) in worldOrCell lies in chunk k,
// exactly as KeyOf(worldOrCell, x, y, chunkSize) == k, but by comparing
// the position with the chunk's edges where KeyOf divides: the tick asks
// it of every actor, and most stay where they were.
//
// The edges k.X*chunkSize and (k.X+1)*chunkSize are exact in float64 for
// chunk coordinates within ±2^28, and between them the float64 quotient of
// two float32s floors to k.X: a float32 position below an edge lies
// further from it, relative to the edge, than the quotient's rounding can
// cross. Outside that range, or outside the edges, it asks KeyOf.
func (k AreaKey) Holds(worldOrCell uint32, x, y, chunkSize float32) bool {
	if worldOrCell != k.WorldOrCell {
		return false
	}
	if inExactRange(k.X) && inExactRange(k.Y) && chunkSize > 0 && chunkSize <= math.MaxFloat32 {
		s, x64, y64 := float64(chunkSize), float64(x), float64(y)
		if float64(k.X)*s <= x64 && x64 < float64(k.X+1)*s && float64(k.Y)*s <= y64 && y64 < float64(k.Y+1)*s {
			return true
		}
	}
	return KeyOf(worldOrCell, x, y, chunkSize) == k
}

// inExactRange reports whether chunk coordinate c is within ±2^28, where
// its edges are exact in float64 (Holds).
func inExactRange(c int32) bool { return c > -1<<28 && c < 1<<28 }

// Unreachable is the distance Chebyshev reports between chunks of different
// worldOrCells: they never see each other at any distance.
const Unreachable = math.MaxInt64

// Chebyshev returns the chessboard distance max(|dx|, |dy|) between two
// chunks, or Unreachable when they lie in different worldOrCells.
func Chebyshev(a, b AreaKey) int64 {
	if a.WorldOrCell != b.WorldOrCell {
		return Unreachable
	}
	return max(abs64(int64(a.X)-int64(b.X)), abs64(int64(a.Y)-int64(b.Y)))
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// Visible reports whether an actor in chunk a sees an actor in chunk b: the
// same worldOrCell and Chebyshev distance at most 1 (the 3x3 stencil).
func Visible(a, b AreaKey) bool {
	return Chebyshev(a, b) <= 1
}

// Stencil returns the 3x3 block of chunks centred on k, row by row from
// (X-1, Y-1) to (X+1, Y+1); the centre is element 4. Coordinates at the
// int32 edge wrap, which no validated position reaches.
func Stencil(k AreaKey) [9]AreaKey {
	var s [9]AreaKey
	i := 0
	for dy := int32(-1); dy <= 1; dy++ {
		for dx := int32(-1); dx <= 1; dx++ {
			s[i] = AreaKey{WorldOrCell: k.WorldOrCell, X: k.X + dx, Y: k.Y + dy}
			i++
		}
	}
	return s
}

// Compare orders keys as [Less] does (worldOrCell, then Y, then X),
// returning -1, 0 or +1, for sorting and binary searches: it compares each
// field once, where a comparison built on Less calls it twice for keys
// that are not less.
func Compare(a, b AreaKey) int {
	if a.WorldOrCell != b.WorldOrCell {
		return cmp.Compare(a.WorldOrCell, b.WorldOrCell)
	}
	if a.Y != b.Y {
		return cmp.Compare(a.Y, b.Y)
	}
	return cmp.Compare(a.X, b.X)
}

// Less orders chunks by worldOrCell, then Y, then X. It is the "lowest chunk
// coordinate" order clusters are sorted by.
func Less(a, b AreaKey) bool {
	if a.WorldOrCell != b.WorldOrCell {
		return a.WorldOrCell < b.WorldOrCell
	}
	if a.Y != b.Y {
		return a.Y < b.Y
	}
	return a.X < b.X
}
