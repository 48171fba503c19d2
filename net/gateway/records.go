package gateway

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/net/wire"
)

// Movement batches by reference.
//
// A zone server sends each of its players a batch of movement records a
// tick, and most of a crowd's records go to many players: the server
// encodes a sender's record once a tick and copies the same bytes into
// every batch that carries it. Between a zone server and a gateway each
// such record goes once per message instead: a batch entry carries the
// batch's header, then per record its index in the message's table, then
// the records new to the message (fresh), which join the table in order
// after those of the entries before it. The gateway puts the datagram
// back together byte for byte before its client sees it. At ten thousand
// players along the borders of four zones this is less than half the
// bytes of copying every batch whole, on NATS and in both processes'
// reads and writes.
//
// A batch entry's payload: the batch header (wire.BatchHeaderSize bytes,
// its count the number of records), count table indices (u16), then the
// fresh records. A message holds at most maxTable records.

// maxTable is the most records a message's table holds: an index is a u16.
const maxTable = math.MaxUint16 + 1

// recordTable finds, among the records a message holds, one by its actor
// id: an open addressing index of the message's records by actor id,
// each slot holding a copy of its record, so that a look-up and the
// comparison of the record read one cache line. Slots of an older
// generation are empty, so clearing it for the next message is one
// increment.
type recordTable struct {
	n     int // records in the table
	slots []recordSlot
	gen   uint32
}

// recordSlot is one slot of recordTable's index: the table index of the
// latest record of its actor (the record's first four bytes) and the
// record, if gen is the table's. Padded to 32 bytes, so that no slot
// straddles two cache lines: a look-up is one line.
type recordSlot struct {
	gen, index uint32
	record     [wire.RecordSize]byte
	_          [32 - 8 - wire.RecordSize]byte
}

// clear empties t for the next message.
func (t *recordTable) clear() {
	t.n = 0
	t.gen++
	if t.gen == 0 { // wrapped: slots of generation 0 must not read as current
		clear(t.slots)
		t.gen = 1
	}
}

// home is where actor's probe starts in t's index.
func (t *recordTable) home(actor uint32) uint32 {
	return (actor * 0x9e3779b1) & uint32(len(t.slots)-1)
}

// slotOf returns where actor's slot is or would go in t's index.
func (t *recordTable) slotOf(actor uint32) *recordSlot {
	mask := uint32(len(t.slots) - 1)
	for h := t.home(actor); ; h = (h + 1) & mask {
		if s := &t.slots[h]; s.gen != t.gen || binary.LittleEndian.Uint32(s.record[:]) == actor {
			return s
		}
	}
}

// reserve makes room in t's index for k more records: at most half of
// the slots used, so that probes stay short.
func (t *recordTable) reserve(k int) {
	need := 2 * (t.n + k)
	if need <= len(t.slots) {
		return
	}
	size := 1024
	for size < need {
		size *= 2
	}
	old := t.slots
	t.slots = make([]recordSlot, size)
	for _, s := range old {
		if s.gen == t.gen {
			*t.slotOf(binary.LittleEndian.Uint32(s.record[:])) = s
		}
	}
	if t.gen == 0 {
		t.gen = 1
	}
}

// batchRecords reports whether datagram d is a movement batch whose
// header's count matches its records, and how many it holds.
func batchRecords(d []byte) (int, bool) {
	if len(d) < wire.BatchHeaderSize || d[1] != byte(wire.TypeBatch) {
		return 0, false
	}
	body := len(d) - wire.BatchHeaderSize
	k := int(binary.LittleEndian.Uint16(d[wire.HeaderSize+4:]))
	return k, body == k*wire.RecordSize
}

// addDatagram appends datagram d for session s: a movement batch, where
// m has a limit, as a batch entry by reference; anything else whole.
func (m *message) addDatagram(s uint64, d []byte) {
	k, ok := batchRecords(d)
	if m.limit <= 0 || !ok {
		m.add(datagram, s, d)
		return
	}
	worst := entryHead + wire.BatchHeaderSize + 2*k + k*wire.RecordSize // every record fresh
	if !m.room(worst) {
		return
	}
	if m.table.n+k > maxTable {
		m.seal()
	}
	m.table.reserve(k)
	le := binary.LittleEndian
	m.n++
	start := len(m.b)
	m.b = append(m.b, byte(batch))
	m.b = le.AppendUint64(m.b, s)
	m.b = append(m.b, 0, 0, 0, 0) // the payload's length, written below
	m.b = append(m.b, d[:wire.BatchHeaderSize]...)
	refs := len(m.b)
	m.b = append(m.b, make([]byte, 2*k)...) // written as found, then the fresh records
	if cacheline.Claiming {
		// The slots of a batch's actors lie anywhere in the index, and a
		// tick's other work has pushed them out of the cache: ask for
		// them all before the loop waits on each in turn.
		for off := wire.BatchHeaderSize; off < len(d); off += wire.RecordSize {
			cacheline.ClaimOne(&m.table.slots[m.table.home(le.Uint32(d[off:]))])
		}
	}
	fresh := m.fresh[:0]
	for off := wire.BatchHeaderSize; off < len(d); off += wire.RecordSize {
		r := (*[wire.RecordSize]byte)(d[off:])
		slot := m.table.slotOf(le.Uint32(r[:]))
		if slot.gen != m.table.gen || !sameRecord(&slot.record, r) {
			// New to the message, or the actor's record differs from the
			// one it holds: the record joins the table.
			*slot = recordSlot{gen: m.table.gen, index: uint32(m.table.n), record: *r}
			m.table.n++
			fresh = append(fresh, r[:]...)
		}
		le.PutUint16(m.b[refs:], uint16(slot.index))
		refs += 2
	}
	m.b = append(m.b, fresh...)
	m.fresh = fresh
	le.PutUint32(m.b[start+9:], uint32(len(m.b)-start-entryHead))
}

// sameRecord reports whether two records are the same bytes, as three
// loads each rather than a call to the runtime's comparison.
func sameRecord(a, b *[wire.RecordSize]byte) bool {
	le := binary.LittleEndian
	return le.Uint64(a[:]) == le.Uint64(b[:]) && le.Uint64(a[8:]) == le.Uint64(b[8:]) && le.Uint32(a[16:]) == le.Uint32(b[16:])
}

// checkBatch checks batch entry payload p of a message whose table holds
// table records before it, and returns how many it adds.
func checkBatch(p []byte, table int) (int, error) {
	if len(p) < wire.BatchHeaderSize || p[1] != byte(wire.TypeBatch) {
		return 0, fmt.Errorf("%w: a batch entry without its header", errMalformed)
	}
	refs := 2 * int(binary.LittleEndian.Uint16(p[wire.HeaderSize+4:]))
	rest := len(p) - wire.BatchHeaderSize - refs
	if rest < 0 || rest%wire.RecordSize != 0 {
		return 0, fmt.Errorf("%w: a batch entry of %d records in %d bytes", errMalformed, refs/2, len(p))
	}
	fresh := rest / wire.RecordSize
	for i := wire.BatchHeaderSize; i < wire.BatchHeaderSize+refs; i += 2 {
		if ref := int(binary.LittleEndian.Uint16(p[i:])); ref >= table+fresh {
			return 0, fmt.Errorf("%w: a reference to record %d of %d", errMalformed, ref, table+fresh)
		}
	}
	return fresh, nil
}

// batches puts a message's batch entries back together: the records the
// message's table holds so far, and the datagram last rebuilt.
type batches struct {
	table []byte
	out   []byte
}

// reset starts the next message's table.
func (b *batches) reset() { b.table = b.table[:0] }

// datagram returns the movement batch that entry payload p (decode
// checked it) stands for, after taking its fresh records into the table.
// The result is b's, valid until the next call.
func (b *batches) datagram(p []byte) []byte {
	refs := p[wire.BatchHeaderSize : wire.BatchHeaderSize+2*int(binary.LittleEndian.Uint16(p[wire.HeaderSize+4:]))]
	b.table = append(b.table, p[wire.BatchHeaderSize+len(refs):]...)
	b.out = append(b.out[:0], p[:wire.BatchHeaderSize]...)
	for ; len(refs) > 0; refs = refs[2:] {
		at := int(binary.LittleEndian.Uint16(refs)) * wire.RecordSize
		b.out = append(b.out, b.table[at:at+wire.RecordSize]...)
	}
	return b.out
}
