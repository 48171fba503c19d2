//go:build amd64 && !purego

package cacheline

// Claiming says the CPU has PREFETCHW (CPUID 0x80000001, ECX bit 8), and
// so that Claim and Read do anything; a caller may skip working out what
// to ask for when it is false.
var Claiming = cpuidECX(0x80000001)&(1<<8) != 0

// prefetchWrite asks for every cache line of p[:n] (n > 0) in exclusive
// state at once.
//
//go:noescape
func prefetchWrite(p *byte, n int)

// prefetchRead asks for every cache line of p[:n] (n > 0), to be read.
//
//go:noescape
func prefetchRead(p *byte, n int)

func cpuidECX(leaf uint32) uint32
