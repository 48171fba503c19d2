package systems

import "golang.org/x/sys/cpu"

// useAVX2 says beyondEdge may decide eight senders an instruction.
var useAVX2 = cpu.X86.HasAVX2

// beyondEdge8 is beyondEdge on the first n senders, n a multiple of 8 (at
// most 64), eight at a time with AVX2: the same float32 steps in the same
// order (difference, square, sum of x, y then z; no fused multiply-add),
// so the same bits.
//
//go:noescape
func beyondEdge8(xs, ys, zs *float32, n int, rx, ry, rz, edge float32) uint64
