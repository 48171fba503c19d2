//go:build amd64 && !purego

package systems

import (
	"golang.org/x/sys/cpu"

	"github.com/throng-go/throng/interest"
)

// useAVX2 says the relay may use its AVX2 routines (simd_amd64.s): the
// band-edge and point checks eight at a time, records copied one 32-byte
// move each (finding the next with BMI1's TZCNT and BLSR). Each has a Go
// loop beside it, which other CPUs and architectures run, and builds with
// the purego tag.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasBMI1

// beyondEdge8 is beyondEdge on the first n senders, n a multiple of 8 (at
// most 64), eight at a time with AVX2: the same float32 steps in the same
// order (difference, square, sum of x, y then z; no fused multiply-add),
// so the same bits.
//
//go:noescape
func beyondEdge8(xs, ys, zs *float32, n int, rx, ry, rz, edge float32) uint64

// pointBands8 is pointPeriod's test for the first n boxes of b (n a
// multiple of 8, at most 64), eight at a time with AVX2: bit i of near is
// set when every pair with box i is in its class's near band, of far when
// every one is in the far band. The same float32 steps as pointPeriod.
//
//go:noescape
func pointBands8(b *cellBoxes, n int, rx, ry, rz float32) (near, far uint64)

// copyRecords writes the records of senders lo+i for the k lowest set bits
// i of set, ascending, from dst on, with one 32-byte move each (see
// batchOut.writeSet for the room it needs past both ends), and returns set
// without those bits.
//
//go:noescape
func copyRecords(dst, recs *byte, set uint64, lo, k int) uint64

// copyRecordsAt is copyRecords for the senders sel[0], ..., sel[k-1].
//
//go:noescape
func copyRecordsAt(dst, recs *byte, sel *int32, k int)

// chooseByTiers8 is chooseByTiers for senders 0 to n-1 of the slices
// whose first elements it is given, eight at a time with AVX2, reading
// whole groups of eight (the capacity must hold them, and one more
// residue) and writing whole groups to sel; it returns how many senders
// it chose. The same float32 steps and comparisons as the Go loop, so the
// same senders.
//
//go:noescape
func chooseByTiers8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int

// chooseThrottled8 is chooseThrottled for senders 0 to n-1, as
// chooseByTiers8 is chooseByTiers, while every period is short
// (tierKernel.aimThrottled); the pairs throttling alone held back are
// added to k.held.
//
//go:noescape
func chooseThrottled8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int

// chooseBased8 is chooseBasedOneByOne for the n candidates k points at,
// eight at a time with AVX2, reading whole groups of eight (the columns
// are padded for it) and writing whole groups to sel; it returns how many
// it chose, or -1, having chosen none, when a candidate's class has no
// periods (the Go loop then decides them by the tier table). The same
// float32 steps and comparisons as the Go loop, so the same senders.
//
//go:noescape
func chooseBased8(sel *int32, k *baseKernel, n int) int

// denseDue8 is denseDue for senders 0 to n-1 (n a multiple of eight),
// eight at a time with AVX2, a byte of masks a group: the same float32
// steps and comparisons as the Go loop, so the same senders.
//
//go:noescape
func denseDue8(masks *byte, xs, ys, zs *float32, keys *uint32, n int, k *denseKernel)

// denseDueBytes8 is denseDueBytes for senders 0 to n-1 (n a multiple of
// eight), eight at a time with AVX2, a byte of masks a group: the same
// float32 steps and comparisons as the Go loop, so the same senders.
//
//go:noescape
func denseDueBytes8(masks *byte, xs, ys, zs *float32, keys *uint32, ranks *uint8, n int, k *denseKernel)

// denseCopy8 packs the records of the run k holds into its batch by the
// bit sets denseDue wrote (k.masks), a group of eight senders at a time,
// with AVX2 (see simd_amd64.s).
//
//go:noescape
func denseCopy8(k *denseKernel)

// useAVX512 says the relay may use its AVX-512 routines: the dense walk's
// decisions and copies in one pass (denseCopy16).
var useAVX512 = useAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasBMI2 && cpu.X86.HasPOPCNT

// denseCopy16 is denseDue followed by copyRecords for the run and batch k
// holds, sixteen senders a group with AVX-512 (see simd_amd64.s).
//
//go:noescape
func denseCopy16(k *denseKernel)

// denseBytes16 is denseCopy16 for due bytes (k.bytes): each lane due as
// denseDueBytes decides it, by the sender's key, rank and band.
//
//go:noescape
func denseBytes16(k *denseKernel)

// chooseBased16 is the base-list candidates of a run of one table due to
// k's recipient (chooseBased), sixteen a group with AVX-512, each pair's
// tier period from its distance by k.steps (baseKernel.aimTable): the same
// float32 steps and comparisons as the Go loops, so the same senders. It
// reads whole groups past n and writes up to sixteen entries past the
// last it chose; it returns how many it chose.
//
//go:noescape
func chooseBased16(sel *int32, k *baseKernel, n int) int

// newsDue8 is decideNews for the n groups from groups (n at least 1),
// eight entries an instruction with AVX2, for a kernel whose nudges'
// phases are decided by residues (k.fast) and whose kinds are below eight.
//
//go:noescape
func newsDue8(masks *byte, groups *newsGroup, n int, k *newsKernel)

// mergeSorted16 is mergeAscending of a[:m] and b[:n] into dst, for m+n
// at most 64, with AVX-512 (see simd_amd64.s). It reads sixteen entries
// past m in a and past n in b, and writes whole groups of sixteen to dst.
//
//go:noescape
func mergeSorted16(dst, a *int32, m int, b *int32, n int)
