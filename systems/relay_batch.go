package systems

import (
	"encoding/binary"
	"math/bits"

	"github.com/throng-go/throng/net/wire"
)

// batchOut writes a recipient's batch: datagrams of at most
// MaxRecordsPerBatch records, each behind its header. Its buffer has room
// for every record the recipient could get (Frame.reserve), so writing
// never allocates.
type batchOut struct {
	buf     []byte
	records []byte
	n, head int
	left    int   // room in the current datagram
	count   int32 // records written
	tick    uint32
	header  uint64 // fullHeader, once a vector pass has needed it (0 before)
	// thin, when set, drops the records a thinning recipient does not
	// keep (thinFilter) from every write: the records it keeps are
	// written, in order, as though they were all that was written.
	thin *thinFilter
}

// newBatchOut starts writing into buf, whose capacity Frame.reserve made
// large enough for every record the recipient could get.
func newBatchOut(buf, records []byte, tick uint64) batchOut {
	return batchOut{buf: buf[:cap(buf)], records: records, tick: uint32(tick)}
}

// open starts a new datagram once the current one is full.
func (w *batchOut) open() {
	if w.count > 0 {
		wire.SetBatchCount(w.buf[w.head:], wire.MaxRecordsPerBatch)
	}
	w.head = w.n
	wire.AppendBatchHeader(w.buf[w.n:w.n], w.tick, 0) // writes in place: the capacity is there
	w.n += wire.BatchHeaderSize
	w.left = wire.MaxRecordsPerBatch
}

// write appends the records of the chosen senders (with AVX2 one 32-byte
// move a record where there is room: roomFor32).
func (w *batchOut) write(sel []int32) {
	if w.thin != nil {
		for _, a := range sel {
			w.writeSet(1, a)
		}
		return
	}
	for len(sel) > 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(len(sel), w.left)
		if w.roomFor32(k) {
			copyRecordsAt(&w.buf[w.n], &w.records[0], &sel[0], k)
		} else {
			n, buf, recs := w.n, w.buf, w.records
			for _, a := range sel[:k] {
				o := int(a) * wire.RecordSize
				copyRecord(buf[n:n+wire.RecordSize], recs[o:o+wire.RecordSize])
				n += wire.RecordSize
			}
		}
		w.wrote(k)
		sel = sel[k:]
	}
}

// recordOverrun is how far past a record copyRecords reads and writes.
const recordOverrun = 32 - wire.RecordSize

// roomFor32 reports whether the next k records may be copied with one
// 32-byte move each (copyRecords, copyRecordsAt): the CPU has AVX2, and
// the batch and the records have room for the moves' overrun.
func (w *batchOut) roomFor32(k int) bool {
	return useAVX2 && cap(w.buf) >= w.n+k*wire.RecordSize+recordOverrun && cap(w.records) >= len(w.records)+recordOverrun
}

// roomForDense reports whether denseCopy16 or denseCopy8 may write the
// records of n senders, the last of them end-1: the batch has room for
// them and its overrun past the last record (denseOverrun), and the
// records room to be read a group past the last sender.
func (w *batchOut) roomForDense(n, end int) bool {
	return cap(w.buf) >= w.n+n*wire.RecordSize+(n/wire.MaxRecordsPerBatch+2)*wire.BatchHeaderSize+denseOverrun &&
		cap(w.records) >= end*wire.RecordSize+denseOverrun
}

// denseOverrun is how far past the last record denseCopy16 and
// denseCopy8 read and write: a group of sixteen senders' records and a
// header.
const denseOverrun = 16*wire.RecordSize + 64

// fullHeader returns the header of a full datagram of this batch as
// eight little-endian bytes.
func (w *batchOut) fullHeader() uint64 {
	var h [wire.BatchHeaderSize]byte
	wire.AppendBatchHeader(h[:0], w.tick, wire.MaxRecordsPerBatch)
	return binary.LittleEndian.Uint64(h[:])
}

// wrote counts k records just written at w.n.
func (w *batchOut) wrote(k int) {
	w.n += k * wire.RecordSize
	w.left -= k
	w.count += int32(k)
}

// writeSet appends the records of senders lo+i for the set bits i of set,
// ascending: with AVX2 one 32-byte move a record where there is room
// (roomFor32).
func (w *batchOut) writeSet(set uint64, lo int32) {
	recs := w.records[int(lo)*wire.RecordSize:]
	if w.thin != nil {
		set = w.thin.keep(set, recs)
	}
	if set != 0 {
		w.writeRecs(set, recs)
	}
}

// writeRecs appends the records of recs (packed back to back) at the set
// bits of set, ascending: with AVX2 one 32-byte move a record where there
// is room (recs readable 12 bytes past the end, as the frame's records
// are: see roomFor32).
func (w *batchOut) writeRecs(set uint64, recs []byte) {
	for set != 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(bits.OnesCount64(set), w.left)
		if useAVX2 && cap(w.buf) >= w.n+k*wire.RecordSize+recordOverrun && cap(recs) >= len(recs)+recordOverrun {
			set = copyRecords(&w.buf[w.n], &recs[0], set, 0, k)
		} else {
			n, buf := w.n, w.buf
			for range k {
				o := bits.TrailingZeros64(set) * wire.RecordSize
				copyRecord(buf[n:n+wire.RecordSize], recs[o:o+wire.RecordSize])
				n += wire.RecordSize
				set &= set - 1
			}
		}
		w.wrote(k)
	}
}

// one appends sender a's record.
func (w *batchOut) one(a int32) {
	if w.thin != nil {
		w.writeSet(1, a)
		return
	}
	if w.left == 0 {
		w.open()
	}
	o := int(a) * wire.RecordSize
	copyRecord(w.buf[w.n:w.n+wire.RecordSize], w.records[o:o+wire.RecordSize])
	w.n += wire.RecordSize
	w.left--
	w.count++
}

// block appends records lo to hi-1 of packed, if any.
func (w *batchOut) block(packed []byte, lo, hi int32) {
	if hi > lo {
		w.run(packed[lo*wire.RecordSize : hi*wire.RecordSize])
	}
}

// run appends records packed back to back, a datagram at a time.
func (w *batchOut) run(recs []byte) {
	if w.thin != nil {
		w.thinRun(recs)
		return
	}
	for len(recs) > 0 {
		if w.left == 0 {
			w.open()
		}
		k := min(len(recs)/wire.RecordSize, w.left)
		n := copy(w.buf[w.n:], recs[:k*wire.RecordSize])
		w.n += n
		w.left -= k
		w.count += int32(k)
		recs = recs[n:]
	}
}

// thinRun appends the records packed back to back in recs that w.thin
// keeps, 64 a round (thinFilter.keep), each round's kept copied as
// writeSet copies a set.
func (w *batchOut) thinRun(recs []byte) {
	for len(recs) >= wire.RecordSize {
		k := min(len(recs)/wire.RecordSize, 64)
		w.writeRecs(w.thin.keep(1<<k-1, recs), recs)
		recs = recs[k*wire.RecordSize:]
	}
}

// copyRecord copies one record as three register moves. A copy of a
// [wire.RecordSize]byte array would do the same work through a call to
// runtime.memmove (the compiler cannot rule out overlap), and that call
// and the spills around it were a quarter of the relay's time.
func copyRecord(dst, src []byte) {
	_, _ = dst[19], src[19]
	binary.LittleEndian.PutUint64(dst, binary.LittleEndian.Uint64(src))
	binary.LittleEndian.PutUint64(dst[8:], binary.LittleEndian.Uint64(src[8:]))
	binary.LittleEndian.PutUint32(dst[16:], binary.LittleEndian.Uint32(src[16:]))
}

// copyRecord moves exactly 20 bytes: this fails to compile if the record size changes.
var _ [wire.RecordSize - 20]struct{}
var _ [20 - wire.RecordSize]struct{}

// batchRecord returns record i of a batch batchOut wrote: datagrams of
// MaxRecordsPerBatch records, each behind its header.
func batchRecord(batch []byte, i int32) []byte {
	off := int(i/wire.MaxRecordsPerBatch+1)*wire.BatchHeaderSize + int(i)*wire.RecordSize
	return batch[off : off+wire.RecordSize]
}

// finish writes the last datagram's record count and returns the batch.
func (w *batchOut) finish() []byte {
	if w.count > 0 {
		wire.SetBatchCount(w.buf[w.head:], int((w.count-1)%wire.MaxRecordsPerBatch+1))
	}
	return w.buf[:w.n]
}
