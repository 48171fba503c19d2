//go:build amd64 && !purego

#include "textflag.h"
#include "go_asm.h"

// Every instruction that touches an X or Y register here is VEX-encoded
// (VMOVQ, never MOVQ, into an X register): a legacy SSE instruction while
// the upper halves of the Y registers hold data makes some CPUs save and
// restore them, hundreds of cycles each time, ten times the work of a
// whole kernel call. TestKernelsUseVEXOnly holds the file to it.

// KERNEL_ENTRY loads the arguments of chooseByTiers8 and chooseThrottled8
// and the kernel's per-recipient vectors: the recipient's position (Y0,
// Y1, Y2), band k's period and residue (Y4, Y5), the recipient's index
// among the senders and the first sender's actor (Y6, Y7), the lanes'
// sender indices (Y10) and n (Y11); CX, the group's first sender, is 0.
#define KERNEL_ENTRY \
	MOVQ sel+0(FP), DI; \
	MOVQ changed+8(FP), R8; \
	MOVQ xs+16(FP), SI; \
	MOVQ ys+24(FP), R9; \
	MOVQ zs+32(FP), R10; \
	MOVQ res+40(FP), R11; \
	MOVQ k+56(FP), R13; \
	MOVQ tierKernel_lut(R13), AX; \
	VBROADCASTSS tierKernel_rx(R13), Y0; \
	VBROADCASTSS tierKernel_ry(R13), Y1; \
	VBROADCASTSS tierKernel_rz(R13), Y2; \
	VMOVDQU tierKernel_period(R13), Y4; \
	VMOVDQU tierKernel_want(R13), Y5; \
	VPBROADCASTD tierKernel_self(R13), Y6; \
	VPBROADCASTD tierKernel_lo(R13), Y7; \
	VMOVDQU tierKernel_lane(R13), Y10; \
	MOVQ n+48(FP), DX; \
	VMOVQ DX, X11; \
	VPBROADCASTD X11, Y11; \
	XORQ CX, CX

// KERNEL_EXIT returns how many senders were stored from sel on.
#define KERNEL_EXIT \
	VZEROUPPER; \
	MOVQ sel+0(FP), DX; \
	SUBQ DX, DI; \
	SHRQ $2, DI; \
	MOVQ DI, ret+64(FP); \
	RET


// SQUARED_DISTANCE leaves in D the squared distances from the recipient
// (Y0, Y1, Y2: x, y and z, broadcast) to the eight senders from index CX
// of the float32 arrays at XS, YS and ZS: the differences, squared, x plus
// y then plus z, with no fused multiply-add, as the Go loops compute them.
// T is scratch.
#define SQUARED_DISTANCE(XS, YS, ZS, D, T) \
	VMOVUPS (XS)(CX*4), D; \
	VSUBPS  Y0, D, D; \
	VMULPS  D, D, D; \
	VMOVUPS (YS)(CX*4), T; \
	VSUBPS  Y1, T, T; \
	VMULPS  T, T, T; \
	VADDPS  T, D, D; \
	VMOVUPS (ZS)(CX*4), T; \
	VSUBPS  Y2, T, T; \
	VMULPS  T, T, T; \
	VADDPS  T, D, D

// SQUARED_DISTANCE16 is SQUARED_DISTANCE for the sixteen senders from
// index CX plus OFF/4 (OFF in bytes), the recipient in Z0, Z1 and Z2, with
// the subtrahends read from memory: the recipient less the sender, whose
// square is the same.
#define SQUARED_DISTANCE16(OFF, XS, YS, ZS, D, T) \
	VSUBPS OFF(XS)(CX*4), Z0, D; \
	VMULPS D, D, D; \
	VSUBPS OFF(YS)(CX*4), Z1, T; \
	VMULPS T, T, T; \
	VADDPS T, D, D; \
	VSUBPS OFF(ZS)(CX*4), Z2, T; \
	VMULPS T, T, T; \
	VADDPS T, D, D

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
	SQUARED_DISTANCE(SI, DI, DX, Y4, Y5)
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

// BAND leaves in Y14 the band of the squared distances in Y12: how many
// of the seven limits at R12 (tierBands) they have reached, each
// comparison -1 where it has; the limits never decrease, so it is the
// band the table's search finds. Y13 is scratch.
#define BAND \
	VCMPPS  $0x0D, (tierBands_limSq+0)(R12), Y12, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+32)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+64)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+96)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+128)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+160)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, (tierBands_limSq+192)(R12), Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VPXOR   Y13, Y13, Y13; \
	VPSUBD  Y14, Y13, Y14

// RESIDUES_MATCH leaves in D, per lane, -1 where the sender's residue at
// the period in P (the byte at R11 + lane * size + period, gathered four
// bytes at a time, the low one kept) equals the recipient's in W. I and M
// are scratch; D, I and M are distinct.
#define RESIDUES_MATCH(P, W, D, I, M) \
	VPADDD  tierKernel_laneRes(R13), P, I; \
	VPCMPEQD M, M, M; \
	VPXOR   D, D, D; \
	VPGATHERDD M, (R11)(I*1), D; \
	VPAND   tierKernel_low(R13), D, D; \
	VPCMPEQD W, D, D

// TICKS_DUE leaves in DX the 4-bit mask of the four senders from index
// CX+OFF/8 changed after the recipient's oldest tick and within their
// period of the tick: c > oldest and c + period > tick, compared unsigned
// through the kernel's bias. P holds the four periods as 64-bit lanes;
// C and T are scratch.
#define TICKS_DUE(OFF, P, C, T) \
	VMOVDQU OFF(R8)(CX*8), C; \
	VPADDQ  P, C, T; \
	VPXOR   tierKernel_sign(R13), T, T; \
	VPCMPGTQ tierKernel_tick(R13), T, T; \
	VPXOR   tierKernel_sign(R13), C, C; \
	VPCMPGTQ tierKernel_oldest(R13), C, C; \
	VPAND   C, T, T; \
	VMOVMSKPD T, DX

// TICKS_MASK clears in OUT the bits of the group's senders not changed
// after the oldest tick or not within their period of the tick, for the
// eight periods in YP (XP its low half), four senders at a time.
#define TICKS_MASK(XP, YP, OUT) \
	VPMOVZXDQ XP, Y14; \
	TICKS_DUE(0, Y14, Y12, Y13); \
	ORQ     $0xF0, DX; \
	ANDQ    DX, OUT; \
	VEXTRACTI128 $1, YP, X14; \
	VPMOVZXDQ X14, Y14; \
	TICKS_DUE(32, Y14, Y12, Y13); \
	SHLQ    $4, DX; \
	ORQ     $0x0F, DX; \
	ANDQ    DX, OUT

// PACK_AND_ADVANCE packs the senders of the lanes set in BX to the front
// (lo plus their index, by the permute compressLUT gives the mask),
// stores all eight at DI, moves DI on by their count, and moves the lanes
// to the next group.
#define PACK_AND_ADVANCE \
	MOVQ    (AX)(BX*8), DX; \
	VMOVQ   DX, X12; \
	VPMOVZXBD X12, Y12; \
	VPADDD  Y7, Y10, Y13; \
	VPERMD  Y13, Y12, Y13; \
	VMOVDQU Y13, (DI); \
	POPCNTL BX, BX; \
	LEAQ    (DI)(BX*4), DI; \
	VPADDD  tierKernel_eight(R13), Y10, Y10; \
	ADDQ    tierKernel_groupRes(R13), R11; \
	ADDQ    $8, CX

// func chooseByTiers8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int
//
// chooseByTiers for senders 0 to n-1, eight a group, reading whole groups
// (the caller makes sure there is room). Per lane, as the Go loop: the
// squared distance (differences, squares, x plus y then plus z; no fused
// multiply-add), the band by counting the limits reached, the band's
// period and the recipient's residue at it (permutes of the kernel's
// tables), the sender's residue at it (a gather of four bytes, the low one
// kept), and the ticks compared as unsigned through the bias. The chosen
// lanes' senders (lo plus their index) are packed to the front of eight
// values by a permute from the kernel's lut and stored at sel; sel moves on by
// their count.
TEXT ·chooseByTiers8(SB), NOSPLIT, $0-72
	KERNEL_ENTRY
	MOVQ tierKernel_bands(R13), R12

group:
	CMPQ CX, n+48(FP)
	JGE  done
	SQUARED_DISTANCE(SI, R9, R10, Y12, Y13)
	BAND
	// The period (Y15) and the recipient's residue at it (Y8).
	VPERMD  Y4, Y14, Y15
	VPERMD  Y5, Y14, Y8
	// The senders' residues at it: bytes lane*size+period from R11.
	VPADDD  tierKernel_laneRes(R13), Y15, Y14
	VPCMPEQD Y12, Y12, Y12
	VPXOR   Y9, Y9, Y9
	VPGATHERDD Y12, (R11)(Y14*1), Y9
	VPAND   tierKernel_low(R13), Y9, Y9
	VPCMPEQD Y8, Y9, Y9
	// Not the recipient, and a sender (index below n).
	VPCMPEQD Y6, Y10, Y13
	VPANDN  Y9, Y13, Y9
	VPCMPGTD Y10, Y11, Y13
	VPAND   Y13, Y9, Y9
	VMOVMSKPS Y9, BX
	// Changed after oldest and within its period of the tick, four
	// senders at a time: c > oldest and c + period > tick, unsigned.
	TICKS_MASK(X15, Y15, BX)
	// Pack the chosen lanes' senders to the front and store all eight.
	PACK_AND_ADVANCE
	JMP     group

done:
	KERNEL_EXIT

// func chooseThrottled8(sel *int32, changed *uint64, xs, ys, zs *float32, res *interest.Residues, n int, k *tierKernel) int
//
// chooseThrottled for senders 0 to n-1, eight a group, while every period
// is below interest.FastPeriods (tierKernel.aimThrottled): as
// chooseByTiers8, with a pair's period its band's interest period, or, at
// or past the throttle distance, the band's far period (combined with the
// throttle's); the pairs due at their interest period but not sent are
// counted into k.held.
TEXT ·chooseThrottled8(SB), NOSPLIT, $0-72
	KERNEL_ENTRY

throttledGroup:
	CMPQ CX, n+48(FP)
	JGE  throttledDone
	MOVQ tierKernel_bands(R13), R12
	SQUARED_DISTANCE(SI, R9, R10, Y12, Y13)
	BAND
	// Y15: the interest period, Y12: the recipient's residue at it; Y8:
	// the period, the far one at or past the throttle distance; Y9: the
	// recipient's residue at that.
	VCMPPS  $0x0D, tierKernel_nearSq(R13), Y12, Y13
	VPERMD  Y4, Y14, Y15
	VPERMD  tierKernel_farPeriod(R13), Y14, Y8
	VBLENDVPS Y13, Y8, Y15, Y8
	VPERMD  tierKernel_farWant(R13), Y14, Y9
	VPERMD  Y5, Y14, Y12
	VBLENDVPS Y13, Y9, Y12, Y9
	// Y3: residues match at the period; Y9: at the interest period.
	RESIDUES_MATCH(Y8, Y9, Y3, Y14, Y13)
	RESIDUES_MATCH(Y15, Y12, Y9, Y14, Y13)
	// Y14: not the recipient, and a sender (index below n).
	VPCMPEQD Y6, Y10, Y13
	VPCMPGTD Y10, Y11, Y14
	VPANDN  Y14, Y13, Y14
	VPAND   Y14, Y3, Y3
	VMOVMSKPS Y3, BX
	VPAND   Y14, Y9, Y9
	VMOVMSKPS Y9, R12
	// Sent (BX): due at the period and changed within it.
	TICKS_MASK(X8, Y8, BX)
	// Held (R12): due at the interest period, changed within it, not sent.
	TICKS_MASK(X15, Y15, R12)
	MOVQ    BX, DX
	NOTQ    DX
	ANDQ    DX, R12
	POPCNTL R12, R12
	ADDQ    R12, tierKernel_held(R13)
	// Pack the sent lanes' senders to the front and store all eight.
	PACK_AND_ADVANCE
	JMP     throttledGroup

throttledDone:
	KERNEL_EXIT

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
	LEAQ (R8)(R8*4), R8
	LEAQ (SI)(R8*4), SI

next:
	TZCNTQ AX, DX
	LEAQ (DX)(DX*4), DX
	VMOVDQU (SI)(DX*4), Y0
	VMOVDQU Y0, (DI)
	ADDQ $20, DI
	BLSRQ AX, AX
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

// func chooseBased8(sel *int32, k *baseKernel, n int) int
//
// chooseBasedOneByOne for the n candidates at k's columns, eight a group,
// reading whole groups (the columns are padded for it). Per lane, as the
// Go loop: the candidate's class (gathered by its cell less the run's
// first, times the class's size: its first four bytes, whose low two are
// the near and far periods, and its edge), the squared distance
// (differences, squares, x plus y then plus z; no fused multiply-add),
// the tier period (the far one at or past the edge), its stretched
// period (k.bperiod's entry by a permute), changed within it (age below
// it), on its phase (bit quot of the tier period's quotients due, k.bdue's
// entry by a permute), and not the recipient. A lane whose class has no
// periods ends the call with -1.
// The chosen lanes' senders are packed to the front of eight values by a
// permute from k.lut and stored at sel; sel moves on by their count.
TEXT ·chooseBased8(SB), NOSPLIT, $0-32
	MOVQ sel+0(FP), DI
	MOVQ k+8(FP), R13
	MOVQ baseKernel_picks(R13), R8
	MOVQ baseKernel_x(R13), SI
	MOVQ baseKernel_y(R13), R9
	MOVQ baseKernel_z(R13), R10
	MOVQ baseKernel_cell(R13), R11
	MOVQ baseKernel_classes(R13), R12
	LEAQ baseKernel_bdue(R13), AX
	VBROADCASTSS baseKernel_rx(R13), Y0
	VBROADCASTSS baseKernel_ry(R13), Y1
	VBROADCASTSS baseKernel_rz(R13), Y2
	VPBROADCASTD baseKernel_self(R13), Y3
	VPBROADCASTD baseKernel_first(R13), Y4
	VPBROADCASTD baseKernel_class(R13), Y6
	MOVQ n+16(FP), DX
	VMOVQ DX, X7
	VPBROADCASTD X7, Y7
	VMOVDQU baseKernel_lane(R13), Y10
	VMOVDQU baseKernel_low(R13), Y11
	XORQ CX, CX

baseGroup:
	CMPQ CX, n+16(FP)
	JGE  baseDone
	// Y15: the lanes that hold a candidate (index below n).
	VPCMPGTD Y10, Y7, Y15
	// Y13: each candidate's class, in bytes from the run's first.
	VMOVDQU (R11)(CX*4), Y13
	VPSUBD  Y4, Y13, Y13
	VPMULLD Y6, Y13, Y13
	// Y8: the class's first four bytes (near, far), Y9: its edge.
	VMOVDQA Y15, Y14
	VPXOR   Y8, Y8, Y8
	VPGATHERDD Y14, cellClass_near(R12)(Y13*1), Y8
	VMOVDQA Y15, Y14
	VPXOR   Y9, Y9, Y9
	VPGATHERDD Y14, cellClass_edge(R12)(Y13*1), Y9
	SQUARED_DISTANCE(SI, R9, R10, Y12, Y13)
	// Y8: the tier period, the far one at or past the edge.
	VCMPPS  $0x0D, Y9, Y12, Y13
	VPSRLD  $8, Y8, Y9
	VPAND   Y11, Y9, Y9
	VPAND   Y11, Y8, Y8
	VBLENDVPS Y13, Y9, Y8, Y8
	// A class without periods: the Go loop decides the run.
	VPXOR   Y12, Y12, Y12
	VPCMPEQD Y12, Y8, Y12
	VPAND   Y15, Y12, Y12
	VPTEST  Y12, Y12
	JNZ     baseBail
	// Y15: changed within the stretched period (bperiod[tier period - 1],
	// a permute of the eight by the index's low three bits, as below).
	VPSUBD  baseKernel_one(R13), Y8, Y14
	VPERMD  baseKernel_bperiod(R13), Y14, Y9
	MOVQ    baseKernel_age(R13), DX
	VPMOVZXBD (DX)(CX*1), Y12
	VPCMPGTD Y12, Y9, Y12
	VPAND   Y12, Y15, Y15
	// Y9: on its phase, in the sign bit: bit quot of bdue[tier period -
	// 1], a permute of the eight (the index's low three bits).
	VPERMD  (AX), Y14, Y9
	MOVQ    baseKernel_quot(R13), DX
	VPMOVZXBD (DX)(CX*1), Y12
	VPSRLVD Y12, Y9, Y9
	VPSLLD  $31, Y9, Y9
	VPAND   Y15, Y9, Y9
	// Not the recipient.
	VMOVDQU (R8)(CX*4), Y12
	VPCMPEQD Y3, Y12, Y13
	VPANDN  Y9, Y13, Y9
	VMOVMSKPS Y9, BX
	// Pack the chosen lanes' senders to the front and store all eight.
	MOVQ    baseKernel_lut(R13), DX
	MOVQ    (DX)(BX*8), DX
	VMOVQ   DX, X13
	VPMOVZXBD X13, Y13
	VPERMD  Y12, Y13, Y12
	VMOVDQU Y12, (DI)
	POPCNTL BX, BX
	LEAQ    (DI)(BX*4), DI
	VPADDD  baseKernel_eight(R13), Y10, Y10
	ADDQ    $8, CX
	JMP     baseGroup

baseDone:
	VZEROUPPER
	MOVQ sel+0(FP), DX
	SUBQ DX, DI
	SHRQ $2, DI
	MOVQ DI, ret+24(FP)
	RET

baseBail:
	VZEROUPPER
	MOVQ $-1, ret+24(FP)
	RET

// DENSE_MASK decides the eight senders from index CX: the squared
// distance, the band from the LIMITS macro (Y14, as BAND leaves it), the
// recipient's bit for its period (a permute of Y3) against the senders'
// due keys at R11, and within the cut (Y4). It leaves the lanes due in
// BX; Y8, Y12 to Y14 are scratch.
#define DENSE_MASK(LIMITS) \
	SQUARED_DISTANCE(SI, R9, R10, Y12, Y13); \
	LIMITS; \
	VPERMD  Y3, Y14, Y8; \
	VPAND   (R11)(CX*4), Y8, Y8; \
	VPCMPEQD Y15, Y8, Y8; \
	VCMPPS  $0x01, Y4, Y12, Y13; \
	VPANDN  Y13, Y8, Y8; \
	VMOVMSKPS Y8, BX

// DENSE_GROUP is DENSE_MASK storing the lanes due as one byte at DI and
// moving on to the next group.
#define DENSE_GROUP(LIMITS) \
	DENSE_MASK(LIMITS); \
	MOVB    BX, (DI); \
	INCQ    DI; \
	ADDQ    $8, CX

// DENSE_LIMITS3 is BAND for a table of at most three finite limits, held
// in Y5, Y6 and Y7.
#define DENSE_LIMITS3 \
	VCMPPS  $0x0D, Y5, Y12, Y14; \
	VCMPPS  $0x0D, Y6, Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VCMPPS  $0x0D, Y7, Y12, Y13; \
	VPADDD  Y13, Y14, Y14; \
	VPSUBD  Y14, Y15, Y14

// DENSE_LOAD loads the kernel at R13 for DENSE_MASK with DENSE_LIMITS3:
// the recipient (Y0 to Y2), its bits (Y3), the cut (Y4), the limits (Y5
// to Y7, through R12) and zero (Y15).
#define DENSE_LOAD \
	MOVQ denseKernel_bands(R13), R12; \
	VBROADCASTSS denseKernel_rx(R13), Y0; \
	VBROADCASTSS denseKernel_ry(R13), Y1; \
	VBROADCASTSS denseKernel_rz(R13), Y2; \
	VMOVDQU denseKernel_want(R13), Y3; \
	VBROADCASTSS denseKernel_cut(R13), Y4; \
	VMOVUPS (tierBands_limSq+0)(R12), Y5; \
	VMOVUPS (tierBands_limSq+32)(R12), Y6; \
	VMOVUPS (tierBands_limSq+64)(R12), Y7; \
	VPXOR   Y15, Y15, Y15

// func denseDue8(masks *byte, xs, ys, zs *float32, keys *uint32, n int, k *denseKernel)
//
// denseDue for senders 0 to n-1 (n a multiple of eight), a byte of masks
// a group: per lane, as the Go loop, the squared distance (differences,
// squares, x plus y then plus z; no fused multiply-add), the band by
// counting the limits reached, the recipient's bit for the band's period
// (k.want, by a permute) ANDed with the sender's due key, nonzero, and the
// distance below the cut.
TEXT ·denseDue8(SB), NOSPLIT, $0-56
	MOVQ masks+0(FP), DI
	MOVQ xs+8(FP), SI
	MOVQ ys+16(FP), R9
	MOVQ zs+24(FP), R10
	MOVQ keys+32(FP), R11
	MOVQ n+40(FP), DX
	MOVQ k+48(FP), R13
	DENSE_LOAD
	XORQ    CX, CX
	CMPQ    denseKernel_limits(R13), $3
	JGT     wideGroup

denseGroup:
	CMPQ CX, DX
	JGE  denseDone
	DENSE_GROUP(DENSE_LIMITS3)
	JMP  denseGroup

wideGroup:
	CMPQ CX, DX
	JGE  denseDone
	DENSE_GROUP(BAND)
	JMP  wideGroup

denseDone:
	VZEROUPPER
	RET

// func denseDueBytes8(masks *byte, xs, ys, zs *float32, keys *uint32, ranks *uint8, n int, k *denseKernel)
//
// denseDue for due bytes (relay_bytes.go), senders 0 to n-1 (n a multiple
// of eight), a byte of masks a group: per lane, as the Go loop, the
// squared distance, the band by the three limits (DENSE_LIMITS3), the
// recipient's residue for the lane's rank and band (k.bwant, by a permute
// of rank*4 + band) XORed with the sender's key and masked to the band's
// byte (byteMasks, by a permute of the band), zero, and the distance
// below the cut.
TEXT ·denseDueBytes8(SB), NOSPLIT, $0-64
	MOVQ masks+0(FP), DI
	MOVQ xs+8(FP), SI
	MOVQ ys+16(FP), R9
	MOVQ zs+24(FP), R10
	MOVQ keys+32(FP), R11
	MOVQ ranks+40(FP), R8
	MOVQ n+48(FP), DX
	MOVQ k+56(FP), R13
	DENSE_LOAD
	VMOVDQU denseKernel_bwant(R13), Y3
	VMOVDQU ·byteMasks(SB), Y11
	XORQ    CX, CX

bytesGroup:
	CMPQ CX, DX
	JGE  bytesDone
	SQUARED_DISTANCE(SI, R9, R10, Y12, Y13)
	DENSE_LIMITS3
	VPMOVZXBD (R8)(CX*1), Y9
	VPSLLD    $2, Y9, Y9
	VPADDD    Y14, Y9, Y9
	VPERMD    Y3, Y9, Y8
	VPXOR     (R11)(CX*4), Y8, Y8
	VPERMD    Y11, Y14, Y9
	VPAND     Y9, Y8, Y8
	VPCMPEQD  Y15, Y8, Y8
	VCMPPS    $0x01, Y4, Y12, Y13
	VPAND     Y13, Y8, Y8
	VMOVMSKPS Y8, BX
	MOVB      BX, (DI)
	INCQ      DI
	ADDQ      $8, CX
	JMP       bytesGroup

bytesDone:
	VZEROUPPER
	RET

// COMPRESS8 stores, from DI on, the dwords of the 32-byte block at
// R14+OFF whose bits are set in AL, packed to the front by the permute
// compressLUT (at BX) gives those bits, all eight dwords, and moves DI on
// by the dwords kept. DX, Y9 and Y10 are scratch.
#define COMPRESS8(OFF) \
	MOVBLZX AL, DX; \
	VPMOVZXBD (BX)(DX*8), Y9; \
	VPERMD  OFF(R14), Y9, Y10; \
	VMOVDQU Y10, (DI); \
	POPCNTL DX, DX; \
	LEAQ    (DI)(DX*4), DI

// COMPRESS_GROUP stores, from DI on, the records (five dwords each) of
// the group's lanes set in BX, from the group's records at R14: each of
// the five 32-byte blocks compressed by its byte of the lanes widened a
// bit to five (widenLUT), stored after the dwords kept before it; up to
// 32 bytes past the last record are written. AX, BX, DX, Y9 and Y10 are
// scratch.
#define COMPRESS_GROUP \
	MOVQ  denseKernel_lut(R13), DX; \
	MOVQ  (DX)(BX*8), AX; \
	MOVQ  denseKernel_clut(R13), BX; \
	COMPRESS8(0); \
	SHRQ  $8, AX; \
	COMPRESS8(32); \
	SHRQ  $8, AX; \
	COMPRESS8(64); \
	SHRQ  $8, AX; \
	COMPRESS8(96); \
	SHRQ  $8, AX; \
	COMPRESS8(128)

// func denseCopy8(k *denseKernel)
//
// The copy of the due senders' records with AVX2, after denseDue8 has
// decided them into k.masks (a byte a group of eight, the recipient's lane
// dropped): the group's mask is read from memory, so a branch on it is
// settled at once (deciding and copying in one pass, each branch waited
// for the group's distances, and its mispredictions cost more than the
// pass). A group all due is stored as it is (160 bytes), another by
// COMPRESS_GROUP. A group whose records would pass the datagram's end
// (k.end) is split there: the lanes whose records fit (lowLUT), a full
// datagram's header (k.header), the rest; the next datagram's records end
// 57 records on. Reads the records a whole group past k.n, and writes up
// to 32 bytes past the last record.
TEXT ·denseCopy8(SB), NOSPLIT, $0-8
	MOVQ k+0(FP), R13
	MOVQ denseKernel_masks(R13), SI
	MOVQ denseKernel_recs(R13), R12
	MOVQ denseKernel_dst(R13), DI
	MOVQ denseKernel_end(R13), R8
	XORQ CX, CX

copy8Group:
	CMPQ    CX, denseKernel_n(R13)
	JGE     copy8Done
	MOVBLZX (SI), BX
	INCQ    SI
	TESTL   BX, BX
	JZ      next8
	// R14: the group's records; DX: DI past the records due.
	LEAQ    (CX)(CX*4), R14
	LEAQ    (R12)(R14*4), R14
	POPCNTL BX, AX
	LEAQ    (AX)(AX*4), DX
	LEAQ    (DI)(DX*4), DX
	CMPQ    DX, R8
	JHI     split8
	CMPL    BX, $0xFF
	JEQ     whole8
	COMPRESS_GROUP

next8:
	ADDQ $8, CX
	JMP  copy8Group

whole8:
	VMOVDQU 0(R14), Y8
	VMOVDQU 32(R14), Y9
	VMOVDQU 64(R14), Y10
	VMOVDQU 96(R14), Y11
	VMOVDQU 128(R14), Y12
	VMOVDQU Y8, 0(DI)
	VMOVDQU Y9, 32(DI)
	VMOVDQU Y10, 64(DI)
	VMOVDQU Y11, 96(DI)
	VMOVDQU Y12, 128(DI)
	ADDQ    $160, DI
	JMP     next8

split8:
	// AX: the records that fit, (end - DI) / 20 (exact for multiples of
	// 20 below 2^16), then the lowest AX lanes set (lowLUT); R9: the rest.
	MOVQ    R8, AX
	SUBQ    DI, AX
	IMULQ   $3277, AX
	SHRQ    $16, AX
	MOVQ    denseKernel_low(R13), DX
	LEAQ    (DX)(BX*8), DX
	MOVBLZX (DX)(AX*1), AX
	MOVL    BX, R9
	XORL    AX, R9
	MOVL    AX, BX
	COMPRESS_GROUP
	MOVQ    denseKernel_header(R13), AX
	MOVQ    AX, (DI)
	ADDQ    $8, DI
	ADDQ    $const_datagramSize, R8
	MOVL    R9, BX
	COMPRESS_GROUP
	JMP     next8

copy8Done:
	MOVQ DI, denseKernel_dst(R13)
	MOVQ R8, denseKernel_end(R13)
	VZEROUPPER
	RET

// SHIFTED_AT stores the block Z, which was stored at A, eight bytes on,
// without its bytes that lie before R8 (they stay where they are): a
// byte mask from R8 - A, clamped to 0 to 64. AX and BX are scratch.
#define SHIFTED_AT(Z, A) \
	MOVQ    R8, AX; \
	SUBQ    A, AX; \
	XORQ    BX, BX; \
	TESTQ   AX, AX; \
	CMOVQLT BX, AX; \
	MOVQ    $64, BX; \
	CMPQ    AX, BX; \
	CMOVQGT BX, AX; \
	MOVQ    $-1, BX; \
	BZHIQ   AX, BX, BX; \
	NOTQ    BX; \
	KMOVQ   BX, K1; \
	VMOVDQU8 Z, K1, 8(A)

// DUE16 leaves in K the lanes due of the sixteen senders from index CX
// plus OFF/4 (OFF in bytes: 64 a group on): their squared distances from
// the recipient (SQUARED_DISTANCE16 of the columns at SI, R9 and R10), the
// recipient's bit for the band each falls in (the first band's, Z3,
// replaced by each next step's, Z9 to Z12, where the distance has reached
// its limit, Z5, Z6, Z7 and Z4), ANDed with the senders' due keys (R11).
// Z16 to Z18 and K1 are scratch.
#define DUE16(OFF, K) \
	SQUARED_DISTANCE16(OFF, SI, R9, R10, Z16, Z17); \
	VPCMPUD $5, Z5, Z16, K1; \
	VPBLENDMD Z9, Z3, K1, Z18; \
	VPCMPUD $5, Z6, Z16, K1; \
	VPBLENDMD Z10, Z18, K1, Z18; \
	VPCMPUD $5, Z7, Z16, K1; \
	VPBLENDMD Z11, Z18, K1, Z18; \
	VPCMPUD $5, Z4, Z16, K1; \
	VPBLENDMD Z12, Z18, K1, Z18; \
	VPTESTMD OFF(R11)(CX*4), Z18, K

// func denseCopy16(k *denseKernel)
//
// denseDue and the copy of the due senders' records in one pass, sixteen
// senders a group with AVX-512. Per lane, as the Go loop: the squared
// distance (differences, squares, x plus y then plus z; no fused
// multiply-add), then the recipient's bit for the band the distance falls
// in: the first band's (k.steps[0].want), replaced by each next step's
// where the distance has reached its limit (k.steps[1:], the band limits
// then the cut, whose bit is 0 and whose test also holds where the
// distance is not a number), ANDed with the sender's due key. The lanes of
// the group holding the recipient (k.selfAt) and of the last group past
// k.n (k.tailAt) are dropped by k.drop's masks. The due senders' records
// (five dwords each, the group's 320 bytes) are packed by five
// compressions of sixteen dwords, each by the group's mask widened a bit
// to five (k.lut), and stored from k.dst on. When a group's records pass
// the end of the datagram (k.end), those past it move up by the header's
// eight bytes and a full datagram's header (k.header) goes in between;
// the next datagram's records end 57 records on. Reads whole groups past
// k.n, and writes up to 320 bytes past the last record.
//
// Each group's lanes are decided three groups ahead of its copy (K0, K2
// and K3 carry them): the branches on a group's mask (none due, all due,
// the datagram's end) then wait on a decision made turns before, and one
// the CPU mispredicts throws away a copy, not the distances of the groups
// after it, which the copy's branches used to wait for.
//
// DENSE_COPY16 is the function's body, with the decision of a group's
// lanes (DUE16) and what it loads past the steps (NO_LOAD) as parameters:
// denseBytes16 is the same body deciding by due bytes (DUE16B, BYTES_LOAD).
#define DENSE_COPY16(DUE, LOAD) \
	MOVQ k+0(FP), R13; \
	VBROADCASTSS denseKernel_rx(R13), Z0; \
	VBROADCASTSS denseKernel_ry(R13), Z1; \
	VBROADCASTSS denseKernel_rz(R13), Z2; \
	VPBROADCASTD (denseKernel_steps+4)(R13), Z3; \
	VBROADCASTSS (denseKernel_steps+8)(R13), Z5; \
	VPBROADCASTD (denseKernel_steps+12)(R13), Z9; \
	VBROADCASTSS (denseKernel_steps+16)(R13), Z6; \
	VPBROADCASTD (denseKernel_steps+20)(R13), Z10; \
	VBROADCASTSS (denseKernel_steps+24)(R13), Z7; \
	VPBROADCASTD (denseKernel_steps+28)(R13), Z11; \
	VBROADCASTSS (denseKernel_steps+32)(R13), Z4; \
	VPBROADCASTD (denseKernel_steps+36)(R13), Z12; \
	MOVQ denseKernel_xs(R13), SI; \
	MOVQ denseKernel_ys(R13), R9; \
	MOVQ denseKernel_zs(R13), R10; \
	MOVQ denseKernel_keys(R13), R11; \
	MOVQ denseKernel_recs(R13), R12; \
	MOVQ denseKernel_dst(R13), DI; \
	MOVQ denseKernel_end(R13), R8; \
	LOAD; \
	XORQ CX, CX; \
	/* The first three groups' lanes due: K3, K2 and K0, where there are. */ \
	CMPQ CX, denseKernel_n(R13); \
	JGE  copyDone; \
	DUE(0, K3); \
	CMPQ    denseKernel_n(R13), $16; \
	JLE     copyGroup; \
	DUE(64, K2); \
	CMPQ    denseKernel_n(R13), $32; \
	JLE     copyGroup; \
	DUE(128, K0); \
copyGroup: \
	/* BX takes the lanes due of the group from CX (K3), the next two move */ \
	/* up, and the group three on is decided into K0. */ \
	KMOVW   K3, BX; \
	KMOVW   K2, K3; \
	KMOVW   K0, K2; \
	LEAQ    48(CX), AX; \
	CMPQ    AX, denseKernel_n(R13); \
	JGE     lastGroup; \
	DUE(192, K0); \
lastGroup: \
	CMPQ    CX, denseKernel_selfAt(R13); \
	JEQ     dropSelf; \
	CMPQ    CX, denseKernel_tailAt(R13); \
	JEQ     dropTail; \
kept: \
	TESTL   BX, BX; \
	JZ      nextGroup; \
	CMPL    BX, $0xFFFF; \
	JEQ     wholeGroup; \
	/* The group's mask a bit to five dwords: R14 bits 0 to 63, AX 64 to 79. */ \
	MOVQ    denseKernel_lut(R13), DX; \
	MOVBLZX BL, AX; \
	MOVQ    (DX)(AX*8), R14; \
	SHRL    $8, BX; \
	MOVQ    (DX)(BX*8), AX; \
	MOVQ    AX, DX; \
	SHLQ    $40, DX; \
	ORQ     DX, R14; \
	SHRQ    $24, AX; \
	/* The group's records from DX = R12 + CX*20, sixteen dwords at a time, */ \
	/* each stored after the dwords kept before it. */ \
	LEAQ    (CX)(CX*4), DX; \
	LEAQ    (R12)(DX*4), DX; \
	KMOVQ   R14, K4; \
	VMOVDQU32 0(DX), Z20; \
	VPCOMPRESSD Z20, K4, Z20; \
	VMOVDQU32 Z20, (DI); \
	KSHIFTRQ $16, K4, K5; \
	VMOVDQU32 64(DX), Z21; \
	VPCOMPRESSD Z21, K5, Z21; \
	MOVWQZX R14, BX; \
	POPCNTQ BX, BX; \
	VMOVDQU32 Z21, (DI)(BX*4); \
	KSHIFTRQ $32, K4, K6; \
	VMOVDQU32 128(DX), Z22; \
	VPCOMPRESSD Z22, K6, Z22; \
	MOVL    R14, BX; \
	POPCNTQ BX, BX; \
	VMOVDQU32 Z22, (DI)(BX*4); \
	KSHIFTRQ $48, K4, K7; \
	VMOVDQU32 192(DX), Z23; \
	VPCOMPRESSD Z23, K7, Z23; \
	MOVQ    R14, BX; \
	SHLQ    $16, BX; \
	POPCNTQ BX, BX; \
	VMOVDQU32 Z23, (DI)(BX*4); \
	KMOVW   AX, K1; \
	VMOVDQU32 256(DX), Z24; \
	VPCOMPRESSD Z24, K1, Z24; \
	POPCNTQ R14, BX; \
	VMOVDQU32 Z24, (DI)(BX*4); \
	POPCNTQ AX, AX; \
	ADDQ    AX, BX; \
	LEAQ    (DI)(BX*4), DI; \
groupStored: \
	/* Past the datagram's end: open the next one. The group's blocks */ \
	/* are stored again eight bytes on, each without its bytes before the */ \
	/* end (which stay where they are), and the header goes between: from */ \
	/* the registers, as reading back what was just stored would wait for */ \
	/* the stores. */ \
	CMPQ    DI, R8; \
	JLS     nextGroup; \
	MOVQ    CX, denseKernel_saved(R13); \
	MOVQ    DI, DX; \
	SHLQ    $2, BX; \
	SUBQ    BX, DX; \
	MOVQ    DX, CX; \
	SHIFTED_AT(Z20, CX); \
	MOVWQZX R14, BX; \
	POPCNTQ BX, BX; \
	LEAQ    (DX)(BX*4), CX; \
	SHIFTED_AT(Z21, CX); \
	MOVL    R14, BX; \
	POPCNTQ BX, BX; \
	LEAQ    (DX)(BX*4), CX; \
	SHIFTED_AT(Z22, CX); \
	MOVQ    R14, BX; \
	SHLQ    $16, BX; \
	POPCNTQ BX, BX; \
	LEAQ    (DX)(BX*4), CX; \
	SHIFTED_AT(Z23, CX); \
	POPCNTQ R14, BX; \
	LEAQ    (DX)(BX*4), CX; \
	SHIFTED_AT(Z24, CX); \
	MOVQ    denseKernel_saved(R13), CX; \
	MOVQ    denseKernel_header(R13), BX; \
	MOVQ    BX, (R8); \
	ADDQ    $8, DI; \
	ADDQ    $const_datagramSize, R8; \
nextGroup: \
	ADDQ    $16, CX; \
	CMPQ    CX, denseKernel_n(R13); \
	JLT     copyGroup; \
	JMP     copyDone; \
wholeGroup: \
	/* Every sender of the group due: its records as they are, and the */ \
	/* masks and count the end's check reads. */ \
	LEAQ      (CX)(CX*4), DX; \
	LEAQ      (R12)(DX*4), DX; \
	VMOVDQU32 0(DX), Z20; \
	VMOVDQU32 64(DX), Z21; \
	VMOVDQU32 128(DX), Z22; \
	VMOVDQU32 192(DX), Z23; \
	VMOVDQU32 256(DX), Z24; \
	VMOVDQU32 Z20, (DI); \
	VMOVDQU32 Z21, 64(DI); \
	VMOVDQU32 Z22, 128(DI); \
	VMOVDQU32 Z23, 192(DI); \
	VMOVDQU32 Z24, 256(DI); \
	MOVQ      $-1, R14; \
	MOVQ      $80, BX; \
	ADDQ      $320, DI; \
	JMP       groupStored; \
dropSelf: \
	ANDL    denseKernel_selfDrop(R13), BX; \
	CMPQ    CX, denseKernel_tailAt(R13); \
	JNE     kept; \
dropTail: \
	ANDL    denseKernel_tailDrop(R13), BX; \
	JMP     kept; \
copyDone: \
	MOVQ    DI, denseKernel_dst(R13); \
	MOVQ    R8, denseKernel_end(R13); \
	VZEROUPPER; \
	RET

// NO_LOAD: denseCopy16 needs nothing past the steps.
#define NO_LOAD

TEXT ·denseCopy16(SB), NOSPLIT, $0-8
	DENSE_COPY16(DUE16, NO_LOAD)

// DUE16B is DUE16 for due bytes (relay_bytes.go), as denseDueBytes8 decides
// them, sixteen lanes: the band counted from the limits (Z5 to Z7, unsigned
// compares of the bits as DUE16's; a distance that is not a number reaches
// band 3, and the cut drops it), the recipient's residue for the lane's
// rank (its byte, ANDed with 1) and band (k.bwant by a permute of rank*4 +
// band, in Z25) XORed with the sender's key and masked to the band's byte
// (byteMasks by a permute of the band, in Z26), zero; and the distance
// below the cut (Z4). Z27 holds ones; DX is scratch.
#define DUE16B(OFF, K) \
	SQUARED_DISTANCE16(OFF, SI, R9, R10, Z16, Z17); \
	VPXORD    Z18, Z18, Z18; \
	VPCMPUD   $5, Z5, Z16, K1; \
	VPADDD    Z27, Z18, K1, Z18; \
	VPCMPUD   $5, Z6, Z16, K1; \
	VPADDD    Z27, Z18, K1, Z18; \
	VPCMPUD   $5, Z7, Z16, K1; \
	VPADDD    Z27, Z18, K1, Z18; \
	MOVQ      denseKernel_ranks(R13), DX; \
	VPMOVZXBD (OFF/4)(DX)(CX*1), Z19; \
	VPANDD    Z27, Z19, Z19; \
	VPSLLD    $2, Z19, Z19; \
	VPADDD    Z18, Z19, Z19; \
	VPERMD    Z25, Z19, Z19; \
	VPXORD    OFF(R11)(CX*4), Z19, Z19; \
	VPERMD    Z26, Z18, Z18; \
	VPTESTNMD Z18, Z19, K; \
	VPCMPUD   $1, Z4, Z16, K1; \
	KANDW     K1, K, K

// BYTES_LOAD loads what DUE16B reads past the steps: the recipient's
// residues (Z25, the upper eight lanes zero), the bands' byte masks (Z26)
// and ones (Z27).
#define BYTES_LOAD \
	VMOVDQU32  denseKernel_bwant(R13), Y25; \
	VMOVDQU32  ·byteMasks(SB), Y26; \
	VPTERNLOGD $0xff, Z27, Z27, Z27; \
	VPSRLD     $31, Z27, Z27

// func denseBytes16(k *denseKernel)
//
// denseCopy16 for due bytes (k.bytes): the lanes decided by DUE16B, the
// records packed and stored as denseCopy16 packs and stores them. Reads
// the ranks (k.ranks) a whole group past k.n too.
TEXT ·denseBytes16(SB), NOSPLIT, $0-8
	DENSE_COPY16(DUE16B, BYTES_LOAD)

// func chooseBased16(sel *int32, k *baseKernel, n int) int
//
// The base-list candidates due, sixteen a group with AVX-512, for a run
// of cells of one table, which k.steps lays out (baseKernel.aimTable):
// per lane, as the Go loop, the squared distance (differences, squares, x
// plus y then plus z; no fused multiply-add), then the first band's
// quotients due and stretched period, replaced by each next step's where
// the distance has reached its limit (unsigned compares of the bits: a
// squared distance is never negative, and one that is not a number
// passes every limit, so the cut, whose quotients due are none, drops
// it); due where the candidate's age is below the period, bit quot of the
// quotients is set, and it is not the recipient. The chosen lanes'
// senders are packed by a compression and stored, all sixteen, at sel,
// which moves on by their count. Reads whole groups past n; writes up to
// sixteen entries past the last chosen.
TEXT ·chooseBased16(SB), NOSPLIT, $0-32
	MOVQ sel+0(FP), DI
	MOVQ k+8(FP), R13
	MOVQ n+16(FP), DX
	MOVQ baseKernel_picks(R13), R8
	MOVQ baseKernel_x(R13), SI
	MOVQ baseKernel_y(R13), R9
	MOVQ baseKernel_z(R13), R10
	MOVQ baseKernel_age(R13), R11
	MOVQ baseKernel_quot(R13), R12
	VBROADCASTSS baseKernel_rx(R13), Z0
	VBROADCASTSS baseKernel_ry(R13), Z1
	VBROADCASTSS baseKernel_rz(R13), Z2
	VPBROADCASTD baseKernel_self(R13), Z3
	VPBROADCASTD (baseKernel_steps+4)(R13), Z4
	VPBROADCASTD (baseKernel_steps+8)(R13), Z5
	VBROADCASTSS (baseKernel_steps+12)(R13), Z6
	VPBROADCASTD (baseKernel_steps+16)(R13), Z7
	VPBROADCASTD (baseKernel_steps+20)(R13), Z8
	VBROADCASTSS (baseKernel_steps+24)(R13), Z9
	VPBROADCASTD (baseKernel_steps+28)(R13), Z10
	VPBROADCASTD (baseKernel_steps+32)(R13), Z11
	VBROADCASTSS (baseKernel_steps+36)(R13), Z12
	VPBROADCASTD (baseKernel_steps+40)(R13), Z13
	VPBROADCASTD (baseKernel_steps+44)(R13), Z14
	VBROADCASTSS (baseKernel_steps+48)(R13), Z15
	VPXORD       Z16, Z16, Z16
	MOVL         $1, AX
	VPBROADCASTD AX, Z17
	XORQ CX, CX

base16Group:
	CMPQ CX, DX
	JGE  base16Done
	SQUARED_DISTANCE16(0, SI, R9, R10, Z18, Z19)
	// Z21: the band's quotients due, Z22: its stretched period.
	VPCMPUD   $5, Z6, Z18, K1
	VPBLENDMD Z7, Z4, K1, Z21
	VPBLENDMD Z8, Z5, K1, Z22
	VPCMPUD   $5, Z9, Z18, K1
	VPBLENDMD Z10, Z21, K1, Z21
	VPBLENDMD Z11, Z22, K1, Z22
	VPCMPUD   $5, Z12, Z18, K1
	VPBLENDMD Z13, Z21, K1, Z21
	VPBLENDMD Z14, Z22, K1, Z22
	VPCMPUD   $5, Z15, Z18, K1
	VPBLENDMD Z16, Z21, K1, Z21
	// K2: changed within the period, on its phase, not the recipient.
	VPMOVZXBD (R11)(CX*1), Z23
	VPCMPUD   $1, Z22, Z23, K2
	VPMOVZXBD (R12)(CX*1), Z24
	VPSRLVD   Z24, Z21, Z21
	VPTESTMD  Z17, Z21, K2, K2
	VMOVDQU32 (R8)(CX*4), Z25
	VPCMPUD   $4, Z3, Z25, K2, K2
	// The lanes past n, in the last group, dropped.
	MOVQ  DX, AX
	SUBQ  CX, AX
	CMPQ  AX, $16
	JGE   base16Store
	MOVL  $-1, BX
	BZHIL AX, BX, BX
	KMOVW BX, K3
	KANDW K3, K2, K2

base16Store:
	VPCOMPRESSD Z25, K2, Z26
	VMOVDQU32   Z26, (DI)
	KMOVW       K2, BX
	POPCNTL     BX, BX
	LEAQ        (DI)(BX*4), DI
	ADDQ        $16, CX
	JMP         base16Group

base16Done:
	VZEROUPPER
	MOVQ sel+0(FP), DX
	SUBQ DX, DI
	SHRQ $2, DI
	MOVQ DI, ret+24(FP)
	RET

// NEWS_SQUARED sets D to the squared distance of the group's places at
// the fields FX and FY (of the group at SI) from the viewer (Y0, Y1):
// differences, squares, x plus y. Y4 is scratch.
#define NEWS_SQUARED(FX, FY, D) \
	VMOVUPS FX(SI), D; \
	VSUBPS  Y0, D, D; \
	VMOVUPS FY(SI), Y4; \
	VSUBPS  Y1, Y4, Y4; \
	VMULPS  D, D, D; \
	VMULPS  Y4, Y4, Y4; \
	VADDPS  Y4, D, D

// NEWS_WITHIN sets OUT where the squared distance D is within the reach
// squared at field R2 and the world at field W is the viewer's (Y2). Y4
// is scratch.
#define NEWS_WITHIN(R2, W, D, OUT) \
	VCMPPS   $0x02, R2(SI), D, OUT; \
	VPCMPEQD W(SI), Y2, Y4; \
	VPAND    Y4, OUT, OUT

// func newsDue8(masks *byte, groups *newsGroup, n int, k *newsKernel)
//
// decideNews for n groups of eight entries, two bytes of masks a group
// (told, then lost). Per lane, as the Go loop: the squared distances of
// the place before and the place now from the viewer (differences,
// squares, x plus y; no fused multiply-add) within their reach squared
// (-1 for a place the news has not) and in the viewer's world: seen and
// sees; the band of the distance now by counting the limits it reached
// (k.lims, a row a limit, permuted by the lane's kind; the first
// k.limits rows); due where the news' residue of the band (resLo for
// bands 0 to 3, resHi for 4 to 7, the band's byte) equals the viewer's
// want for the kind and band (wantLo, wantHi, permuted by kind). Told:
// sees, and always, due or not seen; lost: seen and not sees.
TEXT ·newsDue8(SB), NOSPLIT, $0-32
	MOVQ masks+0(FP), DI
	MOVQ groups+8(FP), SI
	MOVQ n+16(FP), DX
	MOVQ k+24(FP), R13
	VBROADCASTSS newsKernel_x(R13), Y0
	VBROADCASTSS newsKernel_y(R13), Y1
	VPBROADCASTD newsKernel_world(R13), Y2
	VPCMPEQD     Y15, Y15, Y15
	VPSRLD       $30, Y15, Y14 // 3
	VPSRLD       $24, Y15, Y15 // 0xFF
	VPXOR        Y11, Y11, Y11
	MOVQ         newsKernel_lims(R13), R8
	MOVQ         newsKernel_limits(R13), R9

newsGroup:
	// Seen (Y3); the squared distance now (Y5), sees (Y6).
	NEWS_SQUARED(newsGroup_wasX, newsGroup_wasY, Y3)
	NEWS_WITHIN(newsGroup_wasR2, newsGroup_wasW, Y3, Y3)
	NEWS_SQUARED(newsGroup_nowX, newsGroup_nowY, Y5)
	NEWS_WITHIN(newsGroup_nowR2, newsGroup_nowW, Y5, Y6)

	// The band (Y7): the limits reached, by the lane's kind (Y8).
	VMOVDQU newsGroup_kind(SI), Y8
	VPXOR   Y7, Y7, Y7
	MOVQ    R8, AX
	MOVQ    R9, BX

newsLimit:
	TESTQ   BX, BX
	JZ      newsBanded
	VPERMPS (AX), Y8, Y9
	VCMPPS  $0x0D, Y9, Y5, Y9
	VPSUBD  Y9, Y7, Y7
	ADDQ    $32, AX
	DECQ    BX
	JMP     newsLimit

newsBanded:
	// Due (Y9): the band's byte of the residues XOR the wants, zero.
	VPERMD    newsKernel_wantLo(R13), Y8, Y9
	VPXOR     newsGroup_resLo(SI), Y9, Y9
	VPERMD    newsKernel_wantHi(R13), Y8, Y10
	VPXOR     newsGroup_resHi(SI), Y10, Y10
	VPCMPGTD  Y14, Y7, Y4
	VPBLENDVB Y4, Y10, Y9, Y9
	VPAND     Y14, Y7, Y4
	VPSLLD    $3, Y4, Y4
	VPSRLVD   Y4, Y9, Y9
	VPAND     Y15, Y9, Y9
	VPCMPEQD  Y11, Y9, Y9

	// Told (Y9): sees and not (seen and not (always or due)); lost (Y4):
	// seen and not sees.
	VPOR      newsGroup_always(SI), Y9, Y9
	VPANDN    Y3, Y9, Y9
	VPANDN    Y6, Y9, Y9
	VPANDN    Y3, Y6, Y4
	VMOVMSKPS Y9, AX
	VMOVMSKPS Y4, BX
	MOVB      AX, (DI)
	MOVB      BX, 1(DI)
	ADDQ      $2, DI
	ADDQ      $newsGroup__size, SI
	DECQ      DX
	JNZ       newsGroup
	VZEROUPPER
	RET

// func mergeSorted16(dst, a *int32, m int, b *int32, n int)
//
// mergeAscending into dst, for m+n at most 64, with AVX-512. a's four
// vectors are loaded once, the lanes past m holding the largest int32, so
// that no sender is above them; each of b finds its place as its rank
// among them (the lanes below it, counted) plus its own index, a bit set
// in BX. Each sixteen places of dst then take the next of b where the bit
// is set and the next of a where it is not (two expansions). Reads a and
// b sixteen entries past m and n; writes whole vectors of sixteen.
TEXT ·mergeSorted16(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ m+16(FP), CX
	MOVQ b+24(FP), DX
	MOVQ n+32(FP), R8
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z0
	VMOVDQA32    Z0, Z1
	VMOVDQA32    Z0, Z2
	VMOVDQA32    Z0, Z3
	MOVQ  $-1, AX
	BZHIQ CX, AX, AX
	KMOVQ AX, K1
	VMOVDQU32 (SI), K1, Z0
	KSHIFTRQ  $16, K1, K2
	VMOVDQU32 64(SI), K2, Z1
	KSHIFTRQ  $32, K1, K2
	VMOVDQU32 128(SI), K2, Z2
	KSHIFTRQ  $48, K1, K2
	VMOVDQU32 192(SI), K2, Z3
	XORQ R9, R9  // j
	XORQ BX, BX  // the places of b

rank:
	CMPQ R9, R8
	JGE  placed
	VPBROADCASTD (DX)(R9*4), Z8
	VPCMPD   $1, Z8, Z0, K2
	KMOVW    K2, AX
	POPCNTL  AX, R10
	VPCMPD   $1, Z8, Z1, K2
	KMOVW    K2, AX
	POPCNTL  AX, AX
	ADDQ     AX, R10
	VPCMPD   $1, Z8, Z2, K2
	KMOVW    K2, AX
	POPCNTL  AX, AX
	ADDQ     AX, R10
	VPCMPD   $1, Z8, Z3, K2
	KMOVW    K2, AX
	POPCNTL  AX, AX
	ADDQ     AX, R10
	ADDQ     R9, R10
	BTSQ     R10, BX
	INCQ     R9
	JMP      rank

placed:
	ADDQ CX, R8  // the places in all
	XORQ R9, R9  // the next of a
	XORQ R10, R10 // the next of b

out:
	TESTQ R8, R8
	JLE   done
	// K2: this vector's places of b; K3: those of a (the rest, below R8).
	MOVQ  $-1, AX
	BZHIQ R8, AX, AX
	ANDQ  $0xFFFF, AX
	MOVWQZX BX, R11
	ANDNQ AX, R11, R12
	KMOVW R11, K2
	KMOVW R12, K3
	VMOVDQU32 (SI)(R9*4), Z4
	VPEXPANDD Z4, K3, Z9
	VMOVDQU32 (DX)(R10*4), Z5
	VPEXPANDD Z5, K2, Z9
	VMOVDQU32 Z9, (DI)
	POPCNTQ R12, R12
	ADDQ    R12, R9
	POPCNTQ R11, R11
	ADDQ    R11, R10
	ADDQ    $64, DI
	SHRQ    $16, BX
	SUBQ    $16, R8
	JMP     out

done:
	VZEROUPPER
	RET
