#include "textflag.h"

// func beyondEdge8(xs, ys, zs *float32, n int, rx, ry, rz, edge float32) uint64
TEXT ·beyondEdge8(SB), NOSPLIT, $0-56
	MOVQ xs+0(FP), SI
	MOVQ ys+8(FP), DI
	MOVQ zs+16(FP), DX
	MOVQ n+24(FP), R10
	VBROADCASTSS rx+32(FP), Y0
	VBROADCASTSS ry+36(FP), Y1
	VBROADCASTSS rz+40(FP), Y2
	VBROADCASTSS edge+44(FP), Y3
	XORQ AX, AX
	XORQ CX, CX

loop:
	CMPQ CX, R10
	JGE  done
	VMOVUPS (SI)(CX*4), Y4
	VSUBPS  Y0, Y4, Y4
	VMULPS  Y4, Y4, Y4
	VMOVUPS (DI)(CX*4), Y5
	VSUBPS  Y1, Y5, Y5
	VMULPS  Y5, Y5, Y5
	VADDPS  Y5, Y4, Y4
	VMOVUPS (DX)(CX*4), Y6
	VSUBPS  Y2, Y6, Y6
	VMULPS  Y6, Y6, Y6
	VADDPS  Y6, Y4, Y4
	VCMPPS  $0x0D, Y3, Y4, Y4
	VMOVMSKPS Y4, R9
	SHLQ    CX, R9
	ORQ     R9, AX
	ADDQ    $8, CX
	JMP     loop

done:
	VZEROUPPER
	MOVQ AX, ret+48(FP)
	RET
