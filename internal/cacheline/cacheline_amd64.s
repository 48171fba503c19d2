//go:build amd64 && !purego

#include "textflag.h"

// EACH_LINE runs OP with SI at every cache line of p[:n] (the arguments of
// prefetchWrite and prefetchRead), n > 0, and returns.
#define EACH_LINE(OP) \
	MOVQ p+0(FP), SI; \
	MOVQ n+8(FP), CX; \
	ADDQ SI, CX; \
	ANDQ $~63, SI; \
line: \
	OP; \
	ADDQ $64, SI; \
	CMPQ SI, CX; \
	JLT  line; \
	RET

// func prefetchWrite(p *byte, n int)
//
// PREFETCHW every cache line of p[:n] (n > 0): asks for the lines in
// exclusive state, all at once, ahead of the stores that need them.
TEXT ·prefetchWrite(SB), NOSPLIT, $0-16
	EACH_LINE(BYTE $0x0F; BYTE $0x0D; BYTE $0x0E) // PREFETCHW (SI); Go's assembler lacks the mnemonic

// func prefetchRead(p *byte, n int)
//
// PREFETCHT0 every cache line of p[:n] (n > 0): asks for the lines, shared,
// all at once, ahead of the loads that need them.
TEXT ·prefetchRead(SB), NOSPLIT, $0-16
	EACH_LINE(PREFETCHT0 (SI))

// func cpuidECX(leaf uint32) uint32
TEXT ·cpuidECX(SB), NOSPLIT, $0-12
	MOVL leaf+0(FP), AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+8(FP)
	RET
