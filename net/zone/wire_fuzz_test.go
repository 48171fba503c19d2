package zone_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/zone"
)

// The fuzz tests below hold two things of each decoder that reads bytes
// another process sent over NATS: no input panics it or makes it allocate
// memory the input cannot account for (a count field read as 2^32 must
// fail before it allocates), and what it accepts encodes back to exactly
// the bytes it was given, so that no two messages mean one thing.

// allocBudget is the most heap a decoder may allocate for an input of n
// bytes: a few copies of what the input holds, and slack for errors and
// small values.
func allocBudget(n int) uint64 { return 64<<10 + 16*uint64(n) }

// checkAllocated fails t when decoding b took more heap than b accounts for.
func checkAllocated(t *testing.T, b []byte, decode func()) {
	t.Helper()
	if n := nettest.HeapAllocated(decode); n > allocBudget(len(b)) {
		t.Fatalf("decoding %d bytes allocated %d bytes", len(b), n)
	}
}

// withByte returns a copy of b with b[i] set to v.
func withByte(b []byte, i int, v byte) []byte {
	c := slices.Clone(b)
	c[i] = v
	return c
}

// FuzzDecodeHandoffRequest: no input panics DecodeHandoffRequest or makes
// it allocate more than the input accounts for, and a request it accepts
// encodes back to the same bytes. Bytes can be compared: a place that is
// not finite, NaN's many encodings among them, is refused.
func FuzzDecodeHandoffRequest(f *testing.F) {
	good := zone.AppendHandoffRequest(nil, sampleCommit())
	f.Add(good)
	f.Add(zone.AppendHandoffRequest(nil, zone.HandoffRequest{Kind: zone.Prepare, Zone: 1, Actor: 1}))
	edge := zone.HandoffRequest{Kind: zone.Commit, Zone: math.MaxUint16, Revision: math.MaxUint64, Seq: math.MaxUint64, Actor: math.MaxUint32,
		Transform: components.Transform{X: -math.MaxFloat32, Y: float32(math.Copysign(0, -1)), Z: math.SmallestNonzeroFloat32,
			Yaw: math.MaxFloat32, WorldOrCell: math.MaxUint32},
		Animation: components.Animation{Flags: math.MaxUint16},
		Input:     components.MoveInput{Seq: math.MaxUint32, WorldOrCell: math.MaxUint32, Flags: math.MaxUint16},
		Class:     components.MaxClasses - 1, Phase: math.MaxUint32, Client: true, Applied: math.MaxUint32, LetGoAt: math.MinInt64,
		Player: strings.Repeat("p", math.MaxUint16), Carried: []byte{0}}
	f.Add(zone.AppendHandoffRequest(nil, edge))
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(good[:91])                // the fixed part alone
	f.Add(withByte(good, 74, 2))    // a client flag of 2
	f.Add(withByte(good, 27, 0x7f)) // a NaN x
	f.Fuzz(func(t *testing.T, b []byte) {
		var r zone.HandoffRequest
		var err error
		checkAllocated(t, b, func() { r, err = zone.DecodeHandoffRequest(b) })
		if err != nil {
			return
		}
		if again := zone.AppendHandoffRequest(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}

// FuzzDecodeHandoffAnswer: no input panics DecodeHandoffAnswer or makes
// it allocate more than the input accounts for, and an answer it accepts
// encodes back to the same bytes.
func FuzzDecodeHandoffAnswer(f *testing.F) {
	good := zone.AppendHandoffAnswer(nil, zone.HandoffAnswer{Kind: zone.Committed, Zone: 3, Seq: 8, Actor: 11, Local: 40, Tick: 900})
	f.Add(good)
	f.Add(zone.AppendHandoffAnswer(nil, zone.HandoffAnswer{Kind: zone.Ready, Zone: 1, Actor: 1, Local: 1}))
	f.Add(zone.AppendHandoffAnswer(nil, zone.HandoffAnswer{Kind: zone.Refused, Zone: 2, Actor: 5}))
	f.Add(zone.AppendHandoffAnswer(nil, zone.HandoffAnswer{Kind: zone.Committed, Zone: math.MaxUint16, Seq: math.MaxUint64,
		Actor: math.MaxUint32, Local: math.MaxUint32, Tick: math.MaxUint64}))
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(withByte(good, 1, zone.Refused+1))
	f.Add(withByte(good, 2, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a zone.HandoffAnswer
		var err error
		checkAllocated(t, b, func() { a, err = zone.DecodeHandoffAnswer(b) })
		if err != nil {
			return
		}
		if again := zone.AppendHandoffAnswer(nil, a); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}

// FuzzDecodeLoadReport: no input panics DecodeLoadReport or makes it
// allocate more than the input accounts for (a rectangle's corners are
// checked against the message's length before any count is read), a
// report it accepts encodes back to the same bytes, and decoding it again
// into the report it filled gives the same report.
func FuzzDecodeLoadReport(f *testing.F) {
	good := zone.AppendLoadReport(nil, zone.LoadReport{Zone: 3, Revision: 9, Tick: 77, Actors: 12, Pairs: 1 << 40, Work: 1234 * time.Microsecond,
		Chunks:  zone.Rect{MinX: -1, MinY: 4, MaxX: 1, MaxY: 5},
		Columns: []uint32{1, 2, 3}, Rows: []uint32{4, 5}, ColumnPairs: []uint64{6, 7, 1 << 40}, RowPairs: []uint64{9, 10}})
	f.Add(good)
	// One chunk, nothing in it.
	f.Add(zone.AppendLoadReport(nil, zone.LoadReport{Zone: 1, Columns: []uint32{0}, Rows: []uint32{0}}))
	// The longest side a report may have, at the far corner of the map.
	long := zone.LoadReport{Zone: math.MaxUint16, Revision: math.MaxUint64, Tick: math.MaxUint64, Actors: math.MaxUint32, Pairs: math.MaxUint64,
		Work:    math.MaxUint32 * time.Microsecond,
		Chunks:  zone.Rect{MinX: math.MaxInt32 - (1<<14 - 1), MinY: math.MinInt32, MaxX: math.MaxInt32, MaxY: math.MinInt32},
		Columns: make([]uint32, 1<<14), Rows: []uint32{math.MaxUint32}, ColumnPairs: make([]uint64, 1<<14), RowPairs: []uint64{math.MaxUint64}}
	f.Add(zone.AppendLoadReport(nil, long))
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(good[:51])
	// The widest rectangle the corners can name, and the widest a report
	// may have, with no counts after them.
	for _, c := range []zone.Rect{{MinX: math.MinInt32, MinY: math.MinInt32, MaxX: math.MaxInt32, MaxY: math.MaxInt32},
		{MaxX: 1<<14 - 1, MaxY: 1<<14 - 1}} {
		header := slices.Clone(good[:51])
		for i, v := range []int32{c.MinX, c.MinY, c.MaxX, c.MaxY} {
			binary.LittleEndian.PutUint32(header[35+4*i:], uint32(v))
		}
		f.Add(header)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var r zone.LoadReport
		var err error
		// Into a new report each run: decoding into the one filled
		// before reuses its room.
		checkAllocated(t, b, func() { r = zone.LoadReport{}; err = zone.DecodeLoadReport(b, &r) })
		if err != nil {
			return
		}
		if again := zone.AppendLoadReport(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
		first := r
		first.Columns, first.Rows = slices.Clone(r.Columns), slices.Clone(r.Rows)
		first.ColumnPairs, first.RowPairs = slices.Clone(r.ColumnPairs), slices.Clone(r.RowPairs)
		if err := zone.DecodeLoadReport(b, &r); err != nil || !reflect.DeepEqual(r, first) {
			t.Fatalf("decoded %x again into its own report: %v, %+v, want %+v", b, err, r, first)
		}
	})
}

// FuzzDecodeMap: no input panics DecodeMap or makes it allocate more than
// the input accounts for, and a map it accepts is valid, was one JSON
// value and nothing after it, and comes back the same through its JSON
// encoding. JSON spells one map many ways (spacing, key order, key case,
// escapes), so the maps are compared, not the bytes.
func FuzzDecodeMap(f *testing.F) {
	good, err := json.Marshal(grid2x2())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"zones":[]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"zones":[{"id":65535,"owner":"a","worldOrCell":4294967295,` +
		`"chunks":{"minX":-2147483648,"minY":-2147483648,"maxX":2147483647,"maxY":2147483647}}]}`))
	f.Add([]byte(` {"zones" : [ {"ID":1, "owner":"\u00e9", "chunks":{}} ] } ` + "\n"))
	f.Add(good[:len(good)-1])
	f.Add(append(slices.Clone(good), good...))
	f.Add([]byte(`{"zones":[{"id":1,"owner":"a","colour":"red"}]}`))
	f.Add([]byte(`{"zones":[{"id":1,"owner":"a"},{"id":1,"owner":"b","worldOrCell":1}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m zone.Map
		var err error
		checkAllocated(t, b, func() { m, err = zone.DecodeMap(b) })
		if err != nil {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted %q, which is not one JSON value", b)
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted %q, which does not validate: %v", b, err)
		}
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back, err := zone.DecodeMap(again)
		if err != nil || !reflect.DeepEqual(back, m) {
			t.Fatalf("accepted %q as %+v, which encodes as %s and decodes back as %+v, %v", b, m, again, back, err)
		}
	})
}
