package gateway

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/wire"
)

// TestMessagesDecodeToTheirEntriesAndBadOnesWhole: a message's entries
// come back as added; a message broken anywhere is refused whole.
func TestMessagesDecodeToTheirEntriesAndBadOnesWhole(t *testing.T) {
	var m message
	m.reset("gw")
	require.True(t, m.empty())
	m.add(opened, 3, nil)
	m.add(frame, 3, []byte{1, 2, 3})
	m.add(closed, 3, []byte("bye"))
	name, entries, err := decode(m.b)
	require.NoError(t, err)
	assert.Equal(t, "gw", name)
	type entry struct {
		k kind
		s uint64
		p string
	}
	var got []entry
	eachEntry(entries, func(k kind, s uint64, p []byte) { got = append(got, entry{k, s, string(p)}) })
	assert.Equal(t, []entry{{opened, 3, ""}, {frame, 3, "\x01\x02\x03"}, {closed, 3, "bye"}}, got)

	good := m.b
	spoil := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	at := len("gw") + 2 // the first entry
	for name, bad := range map[string][]byte{
		"empty":               nil,
		"another version":     spoil(func(b []byte) []byte { b[0] = 2; return b }),
		"no name":             spoil(func(b []byte) []byte { b[1] = 0; return b }),
		"a name too long":     spoil(func(b []byte) []byte { b[1] = 200; return b }),
		"an unknown kind":     spoil(func(b []byte) []byte { b[at] = byte(unshadow) + 1; return b }),
		"a shadow to no zone": spoil(func(b []byte) []byte { b[at] = byte(shadow); return b }),
		"session 0":           spoil(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at+1:], 0); return b }),
		"cut short":           good[:len(good)-1],
		"a stray byte":        append(append([]byte(nil), good...), 0),
		"a frame too short": spoil(func(b []byte) []byte {
			e := at + entryHead // the frame entry
			binary.LittleEndian.PutUint32(b[e+9:], 1)
			return b[:e+entryHead+1]
		}),
	} {
		_, _, err := decode(bad)
		assert.ErrorIs(t, err, errMalformed, name)
	}
}

// sent is one datagram a zone server sent a session.
type sent struct {
	s uint64
	d string
}

// batchOf returns a movement batch of tick 5 holding the records of
// actors, each at x.
func batchOf(x float32, actors ...uint32) []byte {
	d := wire.AppendBatchHeader(nil, 5, uint16(len(actors)))
	for _, a := range actors {
		d = wire.AppendRecord(d, wire.Record{Actor: a, X: x + float32(a), Y: 2, Z: 3, Yaw: 1, Flags: uint16(a)})
	}
	return d
}

// rebuilt returns the datagrams messages carry, in order, each decoded
// alone as a gateway does.
func rebuilt(t *testing.T, messages ...[]byte) []sent {
	t.Helper()
	var got []sent
	var b batches
	for _, msg := range messages {
		_, entries, err := decode(msg)
		require.NoError(t, err)
		b.reset()
		eachEntry(entries, func(k kind, s uint64, p []byte) {
			switch k {
			case datagram:
				got = append(got, sent{s, string(p)})
			case batch:
				got = append(got, sent{s, string(b.datagram(p))})
			}
		})
	}
	return got
}

// TestMovementBatchesCrossByReferenceAndArriveByteForByte: a zone
// server's batches for three sessions that share most of their records
// come out of the gateway's decoding byte for byte, a record that changed
// within the message included, and take well under the bytes of sending
// each batch whole; a datagram that is not a movement batch goes whole.
func TestMovementBatchesCrossByReferenceAndArriveByteForByte(t *testing.T) {
	var m message
	m.reset("gw")
	m.limit = 1 << 20
	var want []sent
	send := func(s uint64, d []byte) {
		m.addDatagram(s, d)
		want = append(want, sent{s, string(d)})
	}
	ids := func(lo, hi uint32) (a []uint32) {
		for i := lo; i <= hi; i++ {
			a = append(a, i)
		}
		return a
	}
	send(1, batchOf(0, ids(1, 40)...))
	send(2, batchOf(0, ids(1, 40)...))
	send(3, batchOf(0, ids(10, 50)...))
	send(4, batchOf(7, 5))    // actor 5 as another record says it
	send(4, batchOf(0, 5, 6)) // and as the first did
	prop := []byte{wire.Version, byte(wire.TypeProp), 1, 2, 3, 4, 5, 6, 7}
	send(5, prop) // not a batch
	assert.Equal(t, want, rebuilt(t, m.b))
	// The records of actors 1 to 50 once, 5's other, and 5's first
	// again (the table finds an actor's latest record); per batch its
	// header and a 2-byte reference a record.
	size := m.head + 52*wire.RecordSize + entryHead + len(prop)
	whole := m.head + entryHead + len(prop)
	for _, k := range []int{40, 40, 41, 1, 2} {
		size += entryHead + wire.BatchHeaderSize + 2*k
		whole += entryHead + wire.BatchHeaderSize + k*wire.RecordSize
	}
	assert.Equal(t, size, len(m.b), "the records shared by batches go once (%d bytes whole)", whole)
}

// TestAZoneMessagePastItsLimitIsCutIntoWholeMessages: past the message
// limit, the builder seals what it holds and begins a new message whose
// records start afresh: each message decodes alone, none is over the
// limit, and together they carry every datagram in order.
func TestAZoneMessagePastItsLimitIsCutIntoWholeMessages(t *testing.T) {
	var m message
	m.reset("gw")
	m.limit = 300
	var want []sent
	for s := uint64(1); s <= 12; s++ {
		d := batchOf(0, 1, 2, 3, uint32(s+10))
		m.addDatagram(s, d)
		want = append(want, sent{s, string(d)})
	}
	require.Greater(t, len(m.sealed), 1)
	all := append(append([][]byte(nil), m.sealed...), m.b)
	for _, msg := range all {
		assert.LessOrEqual(t, len(msg), m.limit)
	}
	assert.Equal(t, want, rebuilt(t, all...))
}

// TestABrokenBatchEntryIsRefusedWhole: a batch entry that refers past
// the records its message holds, or whose references do not match its
// count, or that is cut short, makes the message undecodable.
func TestABrokenBatchEntryIsRefusedWhole(t *testing.T) {
	var m message
	m.reset("gw")
	m.limit = 1 << 20
	m.addDatagram(1, batchOf(0, 1, 2))
	m.addDatagram(2, batchOf(0, 2, 3))
	good := append([]byte(nil), m.b...)
	_, _, err := decode(good)
	require.NoError(t, err)
	at := len("gw") + 2
	second := at + entryHead + int(binary.LittleEndian.Uint32(good[at+9:])) // the second entry
	p := second + entryHead                                                 // its payload: the header, 2 references, 1 fresh record
	refs := p + wire.BatchHeaderSize
	spoil := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for name, bad := range map[string][]byte{
		"a reference past the table": spoil(func(b []byte) []byte { binary.LittleEndian.PutUint16(b[refs+2:], 3); return b }),
		"a count above its references": spoil(func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[p+wire.HeaderSize+4:], 3)
			return b
		}),
		"not a batch header": spoil(func(b []byte) []byte { b[p+1] = byte(wire.TypeProp); return b }),
		"a record cut short": spoil(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[second+9:], binary.LittleEndian.Uint32(b[second+9:])-1)
			return b[:len(b)-1]
		}),
		"cut short": spoil(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[second+9:], 1)
			return b[:second+entryHead+1]
		}),
	} {
		_, _, err := decode(bad)
		assert.ErrorIs(t, err, errMalformed, name)
	}
}
