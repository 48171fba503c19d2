//go:build !amd64

package systems

const useAVX2 = false

func beyondEdge8(xs, ys, zs *float32, n int, rx, ry, rz, edge float32) uint64 {
	panic("systems: beyondEdge8 without AVX2")
}
