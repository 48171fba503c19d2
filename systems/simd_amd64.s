//go:build amd64 && !purego

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

// BAND_AXIS adds to Y9 and Y10 the squares of the least and the greatest
// distance along one axis from the recipient's coordinate R (broadcast)
// to the boxes' ends at minoff and maxoff in cellBoxes: lo and hi, the
// ends minus the coordinate; the least is max(lo, -hi, 0), the greatest
// max(hi, -lo). Y14 is zero; Y3 to Y8 and R8, R9 are scratch.
#define BAND_AXIS(minoff, maxoff, R) \
	MOVQ minoff(R11), R8; \
	MOVQ maxoff(R11), R9; \
	VMOVUPS (R8)(CX*4), Y3; \
	VSUBPS  R, Y3, Y3; \
	VMOVUPS (R9)(CX*4), Y4; \
	VSUBPS  R, Y4, Y4; \
	VSUBPS  Y4, Y14, Y5; \
	VSUBPS  Y3, Y14, Y6; \
	VMAXPS  Y5, Y3, Y7; \
	VMAXPS  Y14, Y7, Y7; \
	VMAXPS  Y6, Y4, Y8; \
	VMULPS  Y7, Y7, Y7; \
	VMULPS  Y8, Y8, Y8; \
	VADDPS  Y7, Y9, Y9; \
	VADDPS  Y8, Y10, Y10

// func pointBands8(b *cellBoxes, n int, rx, ry, rz float32) (near, far uint64)
//
// For each of the first n (a multiple of 8) boxes, the least and greatest
// squared distance from (rx, ry, rz) as pointPeriod computes them (per
// axis: the box's ends minus the recipient's coordinate, the nearer end
// or 0 inside, the farther end; then x, y and z squared and summed in that
// order), compared with the box's edge: bit i of near is set when the
// greatest is below the edge, of far when the least is at or past it.
TEXT ·pointBands8(SB), NOSPLIT, $0-48
	MOVQ b+0(FP), R11
	MOVQ n+8(FP), R10
	VBROADCASTSS rx+16(FP), Y0
	VBROADCASTSS ry+20(FP), Y1
	VBROADCASTSS rz+24(FP), Y2
	VXORPS Y14, Y14, Y14
	XORQ AX, AX
	XORQ BX, BX
	XORQ CX, CX

loop:
	CMPQ CX, R10
	JGE  done
	// The squares summed x, then y, then z, from +0: as pointPeriod adds
	// them (+0 plus a square is the square). cellBoxes: minx at 0, maxx
	// at 24, miny 48, maxy 72, minz 96, maxz 120, edge 144.
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	BAND_AXIS(0, 24, Y0)
	BAND_AXIS(48, 72, Y1)
	BAND_AXIS(96, 120, Y2)
	MOVQ 144(R11), R8
	VMOVUPS (R8)(CX*4), Y11
	VCMPPS  $0x01, Y11, Y10, Y12
	VCMPPS  $0x0D, Y11, Y9, Y13
	VMOVMSKPS Y12, R8
	SHLQ    CX, R8
	ORQ     R8, AX
	VMOVMSKPS Y13, R9
	SHLQ    CX, R9
	ORQ     R9, BX
	ADDQ    $8, CX
	JMP     loop

done:
	VZEROUPPER
	MOVQ AX, near+32(FP)
	MOVQ BX, far+40(FP)
	RET

// func copyRecords(dst, recs *byte, set uint64, lo, k int) uint64
//
// Copies the records (net.RecordSize bytes, 20) of senders lo+i for the k
// lowest set bits i of set, ascending, back to back from dst, one 32-byte
// move each: 12 bytes past each record are written (and overwritten by
// the next), and read past each source record. Returns set without those k
// bits. k must be at most the bits set.
TEXT ·copyRecords(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ recs+8(FP), SI
	MOVQ set+16(FP), AX
	MOVQ lo+24(FP), R8
	MOVQ k+32(FP), CX
	TESTQ CX, CX
	JZ   copied

next:
	BSFQ AX, DX
	ADDQ R8, DX
	LEAQ (DX)(DX*4), DX
	VMOVDQU (SI)(DX*4), Y0
	VMOVDQU Y0, (DI)
	ADDQ $20, DI
	LEAQ -1(AX), R9
	ANDQ R9, AX
	DECQ CX
	JNZ  next
	VZEROUPPER

copied:
	MOVQ AX, ret+40(FP)
	RET

// func copyRecordsAt(dst, recs *byte, sel *int32, k int)
//
// copyRecords for the senders sel[0], ..., sel[k-1].
TEXT ·copyRecordsAt(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ recs+8(FP), SI
	MOVQ sel+16(FP), BX
	MOVQ k+24(FP), CX
	TESTQ CX, CX
	JZ   done

next:
	MOVLQSX (BX), DX
	LEAQ (DX)(DX*4), DX
	VMOVDQU (SI)(DX*4), Y0
	VMOVDQU Y0, (DI)
	ADDQ $20, DI
	ADDQ $4, BX
	DECQ CX
	JNZ  next
	VZEROUPPER

done:
	RET

// func prefetchWrite(p *byte, n int)
//
// PREFETCHW every cache line of p[:n] (n > 0): asks for the lines in
// exclusive state, all at once, ahead of the stores that need them.
TEXT ·prefetchWrite(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	ADDQ SI, CX
	ANDQ $~63, SI

line:
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0E // PREFETCHW (SI); Go's assembler lacks the mnemonic
	ADDQ $64, SI
	CMPQ SI, CX
	JLT  line
	RET

// func cpuidECX(leaf uint32) uint32
TEXT ·cpuidECX(SB), NOSPLIT, $0-12
	MOVL leaf+0(FP), AX
	XORL CX, CX
	CPUID
	MOVL CX, ret+8(FP)
	RET
