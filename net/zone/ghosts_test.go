package zone_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

func sampleBatch() []byte {
	b := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 3, Revision: 7, Tick: 1234, WorldOrCell: 60}, 0)
	b = zone.AppendGhost(b, zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, Flags: 0x0102, Class: 5, Phase: 0xdeadbeef})
	b = zone.AppendGhost(b, zone.Ghost{ID: 10, X: 1, Y: 2})
	zone.SetGhostCount(b, 2)
	return b
}

// appendSince appends g's record carrying what changed since base.
func appendSince(dst []byte, g, base zone.Ghost) []byte {
	return zone.AppendGhostRecord(dst, zone.GhostRecord{Ghost: g, Fields: g.Changed(base)})
}

// records reads every record of b.
func records(b zone.GhostBatch) []zone.GhostRecord {
	var out []zone.GhostRecord
	for c := b.Records(); ; {
		r, ok := c.Next()
		if !ok {
			return out
		}
		out = append(out, r)
	}
}

func TestGhostBatchesRoundTrip(t *testing.T) {
	b := sampleBatch()
	assert.Len(t, b, 27+2*zone.GhostSize)
	got, err := zone.DecodeGhosts(b)
	require.NoError(t, err)
	assert.Equal(t, zone.GhostHeader{Zone: 3, Revision: 7, Tick: 1234, WorldOrCell: 60}, got.GhostHeader)
	require.Equal(t, 2, got.Len())
	rs := records(got)
	require.Len(t, rs, 2)
	assert.Equal(t, zone.GhostRecord{Ghost: zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, WorldOrCell: 60, Flags: 0x0102, Class: 5, Phase: 0xdeadbeef}, Fields: zone.GhostAll}, rs[0])
	assert.Equal(t, zone.Ghost{ID: 10, X: 1, Y: 2, WorldOrCell: 60}, rs[1].Ghost, "every actor stands in its batch's worldOrCell")

	empty := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 1, Tick: 1}, 0)
	got, err = zone.DecodeGhosts(empty)
	require.NoError(t, err, "an empty batch says the sender lends nothing")
	assert.Zero(t, got.Len())
	assert.Empty(t, records(got))
}

// TestAGhostRecordCarriesWhatChanged: a record written since a base
// carries the id and the fields that differ from it, bit for bit, and
// read over the same base gives the actor exactly; an actor unchanged
// costs MinGhostSize bytes, one walking its x and y besides.
func TestAGhostRecordCarriesWhatChanged(t *testing.T) {
	base := zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, Flags: 0x0102, Class: 5, Phase: 77}
	negZero := float32(math.Copysign(0, -1))
	for name, c := range map[string]struct {
		g      zone.Ghost
		fields zone.GhostFields
		size   int
	}{
		"standing": {base, 0, zone.MinGhostSize},
		"walking":  {zone.Ghost{ID: 9, X: 8101.5, Y: -6, Z: 12, Yaw: 1.25, Flags: 0x0102, Class: 5, Phase: 77}, zone.GhostX | zone.GhostY, zone.MinGhostSize + 8},
		"turning":  {zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 2, Flags: 0x0102, Class: 5, Phase: 77}, zone.GhostYaw, zone.MinGhostSize + 4},
		"flags and class": {zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, Flags: 1, Class: 0, Phase: 77},
			zone.GhostFlags | zone.GhostClass, zone.MinGhostSize + 3},
		"a phase key from a hand-off": {zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, Flags: 0x0102, Class: 5, Phase: 4},
			zone.GhostPhase, zone.MinGhostSize + 4},
		"minus zero": {zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: negZero, Yaw: 1.25, Flags: 0x0102, Class: 5, Phase: 77}, zone.GhostZ, zone.MinGhostSize + 4},
	} {
		b := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 3, Tick: 2, WorldOrCell: 60}, 1)
		b = appendSince(b, c.g, base)
		assert.Len(t, b, 27+c.size, name)
		got, err := zone.DecodeGhosts(b)
		require.NoError(t, err, name)
		rs := records(got)
		require.Len(t, rs, 1, name)
		assert.Equal(t, c.fields, rs[0].Fields, name)
		want := c.g
		want.WorldOrCell = 60
		over := rs[0].Over(base)
		assert.Equal(t, want, over, name)
		assert.Equal(t, math.Float32bits(c.g.Z), math.Float32bits(over.Z), name)
	}
}

func TestMalformedGhostBatchesAreRefusedWithTheReason(t *testing.T) {
	good := sampleBatch()
	with := func(edit func(b []byte) []byte) []byte { return edit(append([]byte(nil), good...)) }
	for name, c := range map[string]struct {
		b    []byte
		want error
	}{
		"empty":      {nil, zone.ErrGhostShort},
		"header cut": {good[:26], zone.ErrGhostShort},
		"version":    {with(func(b []byte) []byte { b[0] = 1; return b }), zone.ErrGhostVersion},
		"class":      {with(func(b []byte) []byte { b[27+zone.GhostSize-5] = 16; return b }), zone.ErrGhostClass},
		"record cut": {good[:len(good)-1], zone.ErrGhostLength},
		"extra byte": {append(append([]byte(nil), good...), 0), zone.ErrGhostLength},
		"huge count": {with(func(b []byte) []byte { zone.SetGhostCount(b, math.MaxUint32); return b }), zone.ErrGhostLength},
		"count one more": {with(func(b []byte) []byte {
			zone.SetGhostCount(b, 3)
			return b
		}), zone.ErrGhostLength},
		"zone 0":        {with(func(b []byte) []byte { b[1], b[2] = 0, 0; return b }), zone.ErrGhostZone},
		"actor 0":       {with(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[27:], 0); return b }), zone.ErrGhostActor},
		"unknown field": {with(func(b []byte) []byte { b[27+4] |= 0x80; return b }), zone.ErrGhostFields},
		"fewer fields":  {with(func(b []byte) []byte { b[27+4] = uint8(zone.GhostX); return b }), zone.ErrGhostLength},
		"NaN position": {with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[27+5:], math.Float32bits(float32(math.NaN())))
			return b
		}), zone.ErrGhostPosition},
		"infinite yaw": {with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[27+zone.GhostSize+5+12:], math.Float32bits(float32(math.Inf(-1))))
			return b
		}), zone.ErrGhostPosition},
	} {
		_, err := zone.DecodeGhosts(c.b)
		assert.ErrorIs(t, err, c.want, name)
	}
}

func TestDecodingGhostsAllocatesNothing(t *testing.T) {
	b := sampleBatch()
	allocs := testing.AllocsPerRun(100, func() {
		got, err := zone.DecodeGhosts(b)
		if err != nil {
			t.Fatal("decode failed")
		}
		c := got.Records()
		c.Next()
		if r, ok := c.Next(); !ok || r.ID != 10 {
			t.Fatal("decode failed")
		}
	})
	assert.Zero(t, allocs)
}

// FuzzDecodeGhosts: no input panics the decoder, and what it accepts
// encodes back to the same bytes.
func FuzzDecodeGhosts(f *testing.F) {
	f.Add(sampleBatch())
	f.Add(zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 1}, 0))
	f.Add([]byte{zone.GhostVersion})
	delta := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 2, Tick: 9}, 2)
	delta = appendSince(delta, zone.Ghost{ID: 4, X: 3, Y: 1}, zone.Ghost{ID: 4, X: 2, Y: 1})
	delta = appendSince(delta, zone.Ghost{ID: 5}, zone.Ghost{ID: 5})
	f.Add(delta)
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := zone.DecodeGhosts(b)
		if err != nil {
			return
		}
		again := zone.AppendGhostHeader(nil, got.GhostHeader, got.Len())
		for _, r := range records(got) {
			again = zone.AppendGhostRecord(again, r)
		}
		if string(again) != string(b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}
