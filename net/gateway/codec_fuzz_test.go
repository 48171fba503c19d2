package gateway

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/wire"
)

// FuzzDecodeMessage: no input panics decode or makes it allocate more
// than the input accounts for (an entry's length of 2^32-1 must fail
// before anything is read or allocated by it); a message it accepts is
// built again, entry by entry, into the same bytes; and every batch
// entry in it can be rebuilt into a whole movement batch, as the gateway
// does without checking again.
func FuzzDecodeMessage(f *testing.F) {
	var m message
	m.reset("gw")
	m.add(opened, 3, nil)
	m.add(frame, 3, []byte{wire.Version, byte(wire.TypeCommand)})
	m.add(closed, 3, []byte("bye"))
	m.add(datagram, math.MaxUint64, []byte{1, 2, 3})
	m.add(reliable, 4, []byte{wire.Version, byte(wire.TypeEvent), 9})
	m.add(disconnect, 4, nil)
	m.add(moved, 5, binary.LittleEndian.AppendUint32(nil, 2))
	m.add(unknown, 6, nil)
	m.add(shadow, 7, append(binary.LittleEndian.AppendUint32(nil, math.MaxUint32), "resume"...))
	m.add(unshadow, 7, []byte("no move"))
	good := slices.Clone(m.b)
	f.Add(good)

	// Batches by reference, one of no records, one that only refers.
	m.reset("zone-server")
	m.limit = 1 << 20
	m.addDatagram(1, batchOf(0, 1, 2, 3))
	m.addDatagram(2, batchOf(0, 2, 3, 4))
	m.addDatagram(3, batchOf(0))
	m.addDatagram(4, batchOf(0, 4, 1))
	batched := slices.Clone(m.b)
	f.Add(batched)

	m.reset(strings.Repeat("g", math.MaxUint8)) // the longest name, no entries
	f.Add(slices.Clone(m.b))

	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(batched[:len(batched)-1])
	huge := slices.Clone(good[:len("gw")+2+entryHead])
	binary.LittleEndian.PutUint32(huge[len(huge)-4:], math.MaxUint32)
	f.Add(huge)
	f.Add([]byte{version, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var name string
		var entries []byte
		var err error
		if n := nettest.HeapAllocated(func() { name, entries, err = decode(b) }); n > 64<<10+16*uint64(len(b)) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(b), n)
		}
		if err != nil {
			return
		}
		var again message
		again.reset(name)
		var rebuilt batches
		eachEntry(entries, func(k kind, s uint64, p []byte) {
			again.add(k, s, p)
			if k == batch {
				d := rebuilt.datagram(p)
				records := int(binary.LittleEndian.Uint16(d[wire.HeaderSize+4:]))
				if len(d) != wire.BatchHeaderSize+records*wire.RecordSize {
					t.Fatalf("batch entry %x of %x rebuilt as %x, of %d records", p, b, d, records)
				}
			}
		})
		if !bytes.Equal(again.b, b) {
			t.Fatalf("accepted %x, which is built again as %x", b, again.b)
		}
	})
}
