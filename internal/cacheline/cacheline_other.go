//go:build !amd64 || purego

package cacheline

// Claiming is false: no prefetch instructions in this build.
const Claiming = false

func prefetchWrite(*byte, int) {}

func prefetchRead(*byte, int) {}
