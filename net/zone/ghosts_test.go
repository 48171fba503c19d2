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
	b = zone.AppendGhost(b, zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, Flags: 0x0102, Class: 5})
	b = zone.AppendGhost(b, zone.Ghost{ID: 10, X: 1, Y: 2})
	zone.SetGhostCount(b, 2)
	return b
}

func TestGhostBatchesRoundTrip(t *testing.T) {
	b := sampleBatch()
	assert.Len(t, b, 27+2*zone.GhostSize)
	got, err := zone.DecodeGhosts(b)
	require.NoError(t, err)
	assert.Equal(t, zone.GhostHeader{Zone: 3, Revision: 7, Tick: 1234, WorldOrCell: 60}, got.GhostHeader)
	require.Equal(t, 2, got.Len())
	assert.Equal(t, zone.Ghost{ID: 9, X: 8100, Y: -5.5, Z: 12, Yaw: 1.25, WorldOrCell: 60, Flags: 0x0102, Class: 5}, got.At(0))
	assert.Equal(t, zone.Ghost{ID: 10, X: 1, Y: 2, WorldOrCell: 60}, got.At(1), "every actor stands in its batch's worldOrCell")

	empty := zone.AppendGhostHeader(nil, zone.GhostHeader{Zone: 1, Tick: 1}, 0)
	got, err = zone.DecodeGhosts(empty)
	require.NoError(t, err, "an empty batch says the sender lends nothing")
	assert.Zero(t, got.Len())
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
		"class":      {with(func(b []byte) []byte { b[27+zone.GhostSize-1] = 16; return b }), zone.ErrGhostClass},
		"record cut": {good[:len(good)-1], zone.ErrGhostLength},
		"extra byte": {append(append([]byte(nil), good...), 0), zone.ErrGhostLength},
		"huge count": {with(func(b []byte) []byte { zone.SetGhostCount(b, math.MaxUint32); return b }), zone.ErrGhostLength},
		"zone 0":     {with(func(b []byte) []byte { b[1], b[2] = 0, 0; return b }), zone.ErrGhostZone},
		"actor 0":    {with(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[27:], 0); return b }), zone.ErrGhostActor},
		"NaN position": {with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[27+4:], math.Float32bits(float32(math.NaN())))
			return b
		}), zone.ErrGhostPosition},
		"infinite yaw": {with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[27+zone.GhostSize+16:], math.Float32bits(float32(math.Inf(-1))))
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
		if err != nil || got.At(1).ID != 10 {
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
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := zone.DecodeGhosts(b)
		if err != nil {
			return
		}
		again := zone.AppendGhostHeader(nil, got.GhostHeader, got.Len())
		for i := range got.Len() {
			again = zone.AppendGhost(again, got.At(i))
		}
		if string(again) != string(b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}
