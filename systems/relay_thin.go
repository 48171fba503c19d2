package systems

import (
	"encoding/binary"
	"math/bits"

	"github.com/throng-go/throng/net/wire"
)

// Thinning: past the longest spread.
//
// A spread stretches no period past 255 ticks, so a recipient that sees
// N senders gets about N/255 records due a tick at the longest spread. In
// a crowd of ten thousand that is about 39, more than one datagram holds
// beside twenty nearest senders (relay_near.go). Rather than owe the rest
// every tick (the backlog decides then, sender by sender, which is the
// slowest path the relay has), a recipient at the longest spread whose
// due records still pass its budget thins them: of each sender's due
// ticks (one in 255) it keeps a share, keep/256, in steps of thinStep,
// chosen as the spread is, to fill seven eighths of the budget. Which due
// ticks are kept is a rotation per pair: the count of 255-tick blocks
// since tick 0 times keep, plus an offset hashed from the two ids, taken
// modulo 256, is below keep. A pair at period 255 is due once in every
// block, so that count grows by one from each of its due ticks to the
// next: the rotation moves by keep each period, cannot step over the
// window of keep values, and keeps every pair at least once in any
// ceil(256/keep) of its periods (at most 8, 2,040 ticks). The count does
// not depend on the pair, so a sender costs one multiplication. The
// nearest are never thinned.

// thinStep is the step of a recipient's thinning, in 256ths.
const thinStep = 32

// thinKept reports whether a thinned recipient (rid) keeps sender sid's
// due tick, of a pair at the longest period (255), keeping keep/256.
func thinKept(sid, rid uint32, tick uint64, keep int) bool {
	return newThinner(rid, tick, keep).kept(sid)
}

// thinner is thinKept for one recipient on one tick: the parts that do not
// depend on the sender, computed once.
type thinner struct {
	base uint64 // the tick's block times keep
	roff uint64 // the recipient's part of the offset
	keep uint64
}

func newThinner(rid uint32, tick uint64, keep int) thinner {
	return thinner{base: tick / 255 * uint64(keep), roff: uint64(rid) * 0xc2b2ae3d27d4eb4f, keep: uint64(keep)}
}

// kept is thinKept(sid, rid, tick, keep) for the thinner's rid, tick and
// keep.
func (t thinner) kept(sid uint32) bool {
	offset := (uint64(sid)*0x9e3779b97f4a7c15 ^ t.roff) >> 56
	return (t.base+offset)&255 < t.keep
}

// keepOf is the share of due ticks a session's thinning keeps, in 256ths.
func keepOf(thin uint8) int { return 256 - int(thin) }

// adjustThin follows the spread past its longest step: on a tick when a
// recipient at the longest spread has more records due (due, before
// thinning and not counting the nearest) than budget, its keep jumps to
// the step at which they would fill seven eighths of it; it rises a step
// after spreadReleaseTicks ticks in a row in which they would have fitted
// three quarters of it at the step above. Below the longest spread
// nothing is thinned.
func (s *session) adjustThin(due, budget int) {
	if s.spread < 255 {
		s.thin, s.thinCalm = 0, 0
		return
	}
	keep := keepOf(s.thin)
	switch {
	case due*keep > budget*256:
		s.thinCalm = 0
		target := budget * 7 * 256 / (8 * due)
		keep = max(thinStep, min(keep-thinStep, target/thinStep*thinStep))
	case keep < 256 && due*(keep+thinStep) < budget*3*256/4:
		if s.thinCalm++; s.thinCalm >= spreadReleaseTicks {
			s.thinCalm = 0
			keep += thinStep
		}
	default:
		s.thinCalm = 0
	}
	s.thin = uint8(256 - keep)
}

// thinFilter is what a recipient thinning this tick keeps of its due
// records (thinner), and the ids of its nearest (near, marked in mark),
// which it keeps whatever the rotation says. The relay's batch writer
// applies it to every record the fast path writes (batchOut.thin,
// keep), so a due record is read once, from where the fast path reads
// it, and written only if kept: thinning the written batch after the fast
// path wrote every due record, read each back and wrote the kept ones
// twice more.
type thinFilter struct {
	th   thinner
	mark idMark // the nearest's ids: most senders are told apart from them by one bit
	near []uint32
}

// aim sets the filter for recipient r at keep (keepOf), with r's nearest
// (near) when nearing.
func (t *thinFilter) aim(f *Frame, r int32, keep int, nearing bool, near []int32) {
	t.th = newThinner(f.id[r], f.Tick, keep)
	t.mark = idMark{}
	t.near = t.near[:0]
	if nearing {
		for _, a := range near {
			t.near = append(t.near, f.id[a])
			t.mark.add(f.id[a])
		}
	}
}

// keep returns the bits i of set whose records (recs from byte
// 20i, i below 64) the filter keeps: the rotation's hash of each sender's
// id, then the nearest looked for among those it drops. Deciding a round
// of records before copying any, the nearest looked for only among the
// dropped, thinning took a third less than record by record
// (BenchmarkThinning).
func (t *thinFilter) keep(set uint64, recs []byte) uint64 {
	if set == 0 {
		return 0
	}
	// Every record to the last of set, no branch on set: each record's
	// bit enters kept from the top (no shift by a count, which would take
	// the register the loop needs), the rotation's terms in registers.
	n := 64 - bits.LeadingZeros64(set)
	ids := recs[:(n-1)*wire.RecordSize+4]
	th := t.th
	var kept uint64
	for o := 0; o+4 <= len(ids); o += wire.RecordSize {
		kept = kept>>1 | uint64(b2i(th.kept(binary.LittleEndian.Uint32(ids[o:o+4]))))<<63
	}
	kept >>= 64 - n
	if len(t.near) > 0 {
		for drop := set &^ kept; drop != 0; drop &= drop - 1 {
			i := bits.TrailingZeros64(drop)
			if sid := binary.LittleEndian.Uint32(recs[i*wire.RecordSize:]); t.mark.may(sid) && containsID(t.near, sid) {
				kept |= 1 << i
			}
		}
	}
	return kept & set
}

// idMark is a set of a few ids, as 256 bits: one per hash of an id. may
// is true for every id added, and for about n/256 of the others when n
// were added: a filter before looking through the ids themselves.
type idMark [4]uint64

func idBit(id uint32) uint32 { return id * 0x9e3779b1 >> 24 }

func (m *idMark) add(id uint32) { b := idBit(id); m[b>>6] |= 1 << (b & 63) }

func (m *idMark) may(id uint32) bool { b := idBit(id); return m[b>>6]>>(b&63)&1 != 0 }

// containsID reports whether id is in the short list ids.
func containsID(ids []uint32, id uint32) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}
