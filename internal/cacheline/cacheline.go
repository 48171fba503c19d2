// Package cacheline asks the CPU for cache lines ahead of the code that
// needs them. Where a loop walks memory in an order the hardware
// prefetcher cannot guess (rows of a table in another order than their
// own, the state of sessions another core last wrote), each access is a
// miss waited for one after another; asked for a few steps ahead, the
// misses overlap with the work between them.
//
// Both calls are hints: they never fault, never change memory, and do
// nothing on CPUs and builds without the instructions (see [Claiming]).
package cacheline

import "unsafe"

// Size is the size of a cache line on amd64 and most arm64: the unit in
// which cores contend when they write nearby memory.
const Size = 64

// Claim asks for the cache lines of s in exclusive state, as a store
// would: the other cores' copies are invalidated now, all at once,
// instead of at each store in turn.
func Claim[T any](s []T) {
	if len(s) > 0 && Claiming {
		prefetchWrite((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
	}
}

// ClaimOne is Claim of the lines of *p.
func ClaimOne[T any](p *T) {
	if Claiming {
		prefetchWrite((*byte)(unsafe.Pointer(p)), int(unsafe.Sizeof(*p)))
	}
}

// Read asks for the cache lines of s, to be read.
func Read[T any](s []T) {
	if len(s) > 0 && Claiming {
		prefetchRead((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
	}
}
