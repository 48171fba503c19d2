package systems

import (
	"encoding/binary"

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

// thinBatch drops from the first count records of sc.batch (the fast
// path's, in canonical order) those a recipient thinning at keep does not
// keep this tick, and returns the batch writer holding the rest, in
// order. The nearest (sc.near, when nearing) are kept.
func (p *Pipeline) thinBatch(r int32, count int32, keep int, nearing bool, sc *relayScratch) batchOut {
	f := &p.frame
	rid, tick := f.id[r], f.Tick
	sc.nearIDs = sc.nearIDs[:0]
	var mark idMark // the nearest's ids: most senders are told apart from them by one bit
	if nearing {
		for _, a := range sc.near {
			sc.nearIDs = append(sc.nearIDs, f.id[a])
			mark.add(f.id[a])
		}
	}
	// Every record is copied and the end moved past it only if kept: which
	// are kept is a coin toss a branch would mispredict half the time.
	th := newThinner(rid, tick, keep)
	recs := resizeSlice(sc.thinRecs, int(count)*wire.RecordSize)
	n := 0
	for d := int32(0); d*wire.MaxRecordsPerBatch < count; d++ { // datagram by datagram
		k := min(count-d*wire.MaxRecordsPerBatch, wire.MaxRecordsPerBatch)
		at := int(d)*datagramSize + wire.BatchHeaderSize
		n = thinRecords(recs, n, sc.batch[at:at+int(k)*wire.RecordSize], th, &mark, sc.nearIDs)
	}
	sc.thinRecs = recs[:n]
	w := newBatchOut(reserve(sc.batch, f.stencilSenders(&f.groups[f.group[r]])), f.records, tick)
	w.run(sc.thinRecs)
	return w
}

// thinRecords copies to recs from byte n on the records of src (back to
// back) that th keeps, and those of the ids in near (marked in mark), and
// returns where the last one copied ends. Each record is read as words,
// its sender's id the low half of the first: read again for the id, its
// bytes were loaded one at a time (the compiler combines byte loads into a
// word only where each byte has one use), which made the loop four times
// as slow.
func thinRecords(recs []byte, n int, src []byte, th thinner, mark *idMark, near []uint32) int {
	for ; len(src) >= wire.RecordSize; src = src[wire.RecordSize:] {
		a, b := binary.LittleEndian.Uint64(src), binary.LittleEndian.Uint64(src[8:])
		c := binary.LittleEndian.Uint32(src[16:])
		out := recs[n : n+wire.RecordSize]
		binary.LittleEndian.PutUint64(out, a)
		binary.LittleEndian.PutUint64(out[8:], b)
		binary.LittleEndian.PutUint32(out[16:], c)
		sid := uint32(a)
		kept := th.kept(sid)
		if mark.may(sid) && !kept {
			kept = containsID(near, sid)
		}
		n += wire.RecordSize * b2i(kept)
	}
	return n
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
