//go:build !amd64 || purego

package systems

import "github.com/throng-go/throng/interest"

// useAVX2 is false: the relay's Go loops do the work (see simd_amd64.go).
const useAVX2 = false

func beyondEdge8(xs, ys, zs *float32, n int, rx, ry, rz, edge float32) uint64 {
	panic("systems: beyondEdge8 without AVX2")
}

func pointBands8(b *cellBoxes, n int, rx, ry, rz float32) (near, far uint64) {
	panic("systems: pointBands8 without AVX2")
}

func chooseByTiers8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int {
	panic("systems: chooseByTiers8 without AVX2")
}

func chooseThrottled8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int {
	panic("systems: chooseThrottled8 without AVX2")
}

func copyRecords(dst, recs *byte, set uint64, lo, k int) uint64 {
	panic("systems: copyRecords without AVX2")
}

func copyRecordsAt(dst, recs *byte, sel *int32, k int) {
	panic("systems: copyRecordsAt without AVX2")
}

func chooseBased8(sel *int32, k *baseKernel, n int) int {
	panic("systems: chooseBased8 without AVX2")
}

func denseDue8(masks *byte, xs, ys, zs *float32, keys *uint32, n int, k *denseKernel) {
	panic("systems: denseDue8 without AVX2")
}

func denseDueBytes8(masks *byte, xs, ys, zs *float32, keys *uint32, ranks *uint8, n int, k *denseKernel) {
	panic("systems: denseDueBytes8 without AVX2")
}

// useAVX512 is false: the relay's Go loops do the work.
const useAVX512 = false

func denseCopy8(k *denseKernel) {
	panic("systems: denseCopy8 without AVX2")
}

func denseCopy16(k *denseKernel) {
	panic("systems: denseCopy16 without AVX-512")
}

func denseBytes16(k *denseKernel) {
	panic("systems: denseBytes16 without AVX-512")
}

func chooseBased16(sel *int32, k *baseKernel, n int) int {
	panic("systems: chooseBased16 without AVX-512")
}

func newsDue8(masks *byte, groups *newsGroup, n int, k *newsKernel) {
	panic("systems: newsDue8 without AVX2")
}

func mergeSorted16(dst, a *int32, m int, b *int32, n int) {
	panic("systems: mergeSorted16 without AVX-512")
}
