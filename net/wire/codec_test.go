package wire

import (
	"encoding/hex"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	require.NoError(t, err)
	return b
}

// Float32 bit patterns used below, little-endian on the wire:
// 1 = 0000803f, 2 = 00000040, -3 = 000040c0, 0.5 = 0000003f,
// 100 = 0000c842, 1.5 = 0000c03f.

func goldenRecords() []Record {
	return []Record{
		{Actor: 5, X: 1, Y: 2, Z: -3, Yaw: math.Pi / 2, Flags: 3},
		{Actor: 6, X: 0.5, Y: 100, Z: 1.5, Yaw: -math.Pi / 2, Flags: 0},
	}
}

// goldenFrames is every frame type with its exact bytes, written out by hand
// from the layout in doc.go.
func goldenFrames(t testing.TB) []struct {
	name    string
	encoded []byte
	want    string
} {
	hello, err := AppendHello(nil, Hello{Protocol: 0x0203, Token: []byte("bob")})
	require.NoError(t, err)
	batch := AppendBatchHeader(nil, 0x0a0b0c0d, 2)
	for _, r := range goldenRecords() {
		batch = AppendRecord(batch, r)
	}
	return []struct {
		name    string
		encoded []byte
		want    string
	}{
		{"Hello", hello, "01 01 0302 03 626f62"},
		{"Move", AppendMove(nil, Move{Seq: 7, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c, Flags: 0x0102}),
			"01 02 07000000 0000803f 00000040 000040c0 0000003f 3c000000 0201"},
		{"Welcome", AppendWelcome(nil, Welcome{Actor: 42, TickRate: 30, Tick: 0x01020304, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c}),
			"01 10 2a000000 1e00 04030201 0000803f 00000040 000040c0 0000003f 3c000000"},
		{"Appear", AppendAppear(nil, Appear{Actor: 42, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c, Flags: 0x0102}),
			"01 11 2a000000 0000803f 00000040 000040c0 0000003f 3c000000 0201"},
		{"Disappear", AppendDisappear(nil, Disappear{Actor: 0xdeadbeef}), "01 12 efbeadde"},
		{"Prop", AppendProp(nil, Prop{Actor: 42, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c, Flags: 0x0102}),
			"01 17 2a000000 0000803f 00000040 000040c0 0000003f 3c000000 0201"},
		{"Correction", AppendCorrection(nil, Correction{Seq: 9, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c}),
			"01 13 09000000 0000803f 00000040 000040c0 0000003f 3c000000"},
		{"Refuse", AppendRefuse(nil, Refuse{Code: RefuseBusy, Reason: []byte("busy")}), "01 14 01 04 62757379"},
		{"Batch", batch, "01 20 0d0c0b0a 0200" +
			"05000000 0000803f 00000040 000040c0 0040 0300" +
			"06000000 0000003f 0000c842 0000c03f 00c0 0000"},
	}
}

func TestEveryFrameTypeEncodesToItsGoldenBytes(t *testing.T) {
	for _, g := range goldenFrames(t) {
		t.Run(g.name, func(t *testing.T) {
			assert.Equal(t, unhex(t, g.want), g.encoded)
		})
	}
}

func TestGoldenBytesDecodeToTheEncodedValues(t *testing.T) {
	want := map[Type]any{
		TypeHello:      Hello{Protocol: 0x0203, Token: []byte("bob")},
		TypeMove:       Move{Seq: 7, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c, Flags: 0x0102},
		TypeWelcome:    Welcome{Actor: 42, TickRate: 30, Tick: 0x01020304, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c},
		TypeAppear:     Appear{Actor: 42, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c, Flags: 0x0102},
		TypeDisappear:  Disappear{Actor: 0xdeadbeef},
		TypeCorrection: Correction{Seq: 9, X: 1, Y: 2, Z: -3, Yaw: 0.5, WorldOrCell: 0x3c},
		TypeRefuse:     Refuse{Code: RefuseBusy, Reason: []byte("busy")},
	}
	for _, g := range goldenFrames(t) {
		var f Frame
		require.NoError(t, Decode(unhex(t, g.want), &f), g.name)
		assert.Equal(t, g.name, f.Type.String())
		switch f.Type {
		case TypeHello:
			assert.Equal(t, want[f.Type], f.Hello)
		case TypeMove:
			assert.Equal(t, want[f.Type], f.Move)
		case TypeWelcome:
			assert.Equal(t, want[f.Type], f.Welcome)
		case TypeAppear:
			assert.Equal(t, want[f.Type], f.Appear)
		case TypeDisappear:
			assert.Equal(t, want[f.Type], f.Disappear)
		case TypeCorrection:
			assert.Equal(t, want[f.Type], f.Correction)
		case TypeRefuse:
			assert.Equal(t, want[f.Type], f.Refuse)
		case TypeBatch:
			assert.Equal(t, uint32(0x0a0b0c0d), f.Batch.Tick)
			require.Equal(t, 2, f.Batch.Len())
			// Yaw comes back as the quantized angle in [0, 2*pi).
			assert.Equal(t, Record{Actor: 5, X: 1, Y: 2, Z: -3, Yaw: math.Pi / 2, Flags: 3}, f.Batch.At(0))
			assert.Equal(t, Record{Actor: 6, X: 0.5, Y: 100, Z: 1.5, Yaw: 3 * math.Pi / 2}, f.Batch.At(1))
		}
	}
}

func randF32(r *rand.Rand) float32 { return math.Float32frombits(r.Uint32()) }

// TestRandomFramesSurviveTheRoundTrip encodes random values of every frame
// type (any float bit pattern, NaNs included), decodes them, re-encodes the
// result and expects the same bytes.
func TestRandomFramesSurviveTheRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		token := make([]byte, r.IntN(MaxTokenLen+1))
		for i := range token {
			token[i] = byte(r.Uint32())
		}
		reason := []byte(strings.Repeat("x", r.IntN(MaxReasonLen+1)))
		hello, err := AppendHello(nil, Hello{Protocol: uint16(r.Uint32()), Token: token})
		require.NoError(t, err)
		batch := AppendBatchHeader(nil, r.Uint32(), 0)
		n := r.IntN(MaxRecordsPerBatch + 1)
		for range n {
			batch = AppendRecord(batch, Record{Actor: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), Flags: uint16(r.Uint32())})
		}
		SetBatchCount(batch, n)
		frames := [][]byte{
			hello,
			AppendMove(nil, Move{Seq: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), WorldOrCell: r.Uint32(), Flags: uint16(r.Uint32())}),
			AppendWelcome(nil, Welcome{Actor: r.Uint32(), TickRate: uint16(r.Uint32()), Tick: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), WorldOrCell: r.Uint32()}),
			AppendAppear(nil, Appear{Actor: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), WorldOrCell: r.Uint32(), Flags: uint16(r.Uint32())}),
			AppendDisappear(nil, Disappear{Actor: r.Uint32()}),
			AppendProp(nil, Prop{Actor: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), WorldOrCell: r.Uint32(), Flags: uint16(r.Uint32())}),
			AppendCorrection(nil, Correction{Seq: r.Uint32(), X: randF32(r), Y: randF32(r), Z: randF32(r), Yaw: randF32(r), WorldOrCell: r.Uint32()}),
			AppendRefuse(nil, Refuse{Code: RefuseCode(r.Uint32()), Reason: reason}),
			AppendCommand(nil, token),
			AppendEvent(nil, reason),
			AppendRate(nil, Rate{Nominal: uint16(r.Uint32()), Centihertz: uint16(r.Uint32())}),
			batch,
		}
		for _, b := range frames {
			var f Frame
			require.NoError(t, Decode(b, &f))
			assert.Equal(t, b, reencode(t, &f))
		}
	}
}

// reencode writes a decoded frame back to bytes.
func reencode(t testing.TB, f *Frame) []byte {
	switch f.Type {
	case TypeHello:
		b, err := AppendHello(nil, f.Hello)
		require.NoError(t, err)
		return b
	case TypeMove:
		return AppendMove(nil, f.Move)
	case TypeWelcome:
		return AppendWelcome(nil, f.Welcome)
	case TypeAppear:
		return AppendAppear(nil, f.Appear)
	case TypeDisappear:
		return AppendDisappear(nil, f.Disappear)
	case TypeProp:
		return AppendProp(nil, f.Prop)
	case TypeCorrection:
		return AppendCorrection(nil, f.Correction)
	case TypeRefuse:
		return AppendRefuse(nil, f.Refuse)
	case TypeCommand:
		return AppendCommand(nil, f.Payload)
	case TypeEvent:
		return AppendEvent(nil, f.Payload)
	case TypeRate:
		return AppendRate(nil, f.Rate)
	case TypeBatch:
		b := AppendBatchHeader(nil, f.Batch.Tick, uint16(f.Batch.Len()))
		for i := range f.Batch.Len() {
			b = AppendRecord(b, f.Batch.At(i))
		}
		return b
	}
	t.Fatalf("reencode: frame type %v", f.Type)
	return nil
}

func TestMalformedFramesAreRejectedWithTheReason(t *testing.T) {
	move := AppendMove(nil, Move{Seq: 1})
	cases := []struct {
		name string
		in   []byte
		want CodecError
	}{
		{"empty", nil, ErrShort},
		{"version only", []byte{Version}, ErrShort},
		{"wrong version", append([]byte{2}, move[1:]...), ErrVersion},
		{"version 0", append([]byte{0}, move[1:]...), ErrVersion},
		{"unknown type", []byte{Version, 0x7f, 0, 0}, ErrUnknownType},
		{"move cut short", move[:MoveSize-1], ErrShort},
		{"move with trailing byte", append(append([]byte{}, move...), 0), ErrTrailing},
		{"hello without token length", unhex(t, "01 01 0302"), ErrShort},
		{"hello token cut short", unhex(t, "01 01 0302 03 6f62"), ErrShort},
		{"hello token with trailing byte", unhex(t, "01 01 0302 01 6f 62"), ErrTrailing},
		{"hello token longer than 64", append(unhex(t, "01 01 0000 41"), make([]byte, 65)...), ErrTokenTooLong},
		{"refuse reason cut short", unhex(t, "01 14 01 05 62757379"), ErrShort},
		{"refuse trailing byte", unhex(t, "01 14 01 00 62"), ErrTrailing},
		{"batch header cut short", unhex(t, "01 20 00000000 00"), ErrShort},
		{"batch count above records", unhex(t, "01 20 00000000 0100"), ErrBatchCount},
		{"batch count below records", append(unhex(t, "01 20 00000000 0000"), make([]byte, RecordSize)...), ErrBatchCount},
		{"batch with a partial record", append(unhex(t, "01 20 00000000 0100"), make([]byte, RecordSize+1)...), ErrBatchCount},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f Frame
			f.Type = TypeMove
			err := Decode(c.in, &f)
			assert.Equal(t, c.want, err)
			assert.Equal(t, Type(0), f.Type, "a failed Decode leaves no type set")
			assert.True(t, strings.HasPrefix(err.Error(), "wire: "), err.Error())
		})
	}
}

func TestPerTypeDecoderRejectsOtherFrameTypes(t *testing.T) {
	welcome := AppendWelcome(nil, Welcome{Actor: 1})
	_, err := DecodeMove(welcome)
	assert.Equal(t, ErrWrongType, err)
	_, err = DecodeBatch(AppendDisappear(nil, Disappear{}))
	assert.Equal(t, ErrWrongType, err)
	_, err = DecodeRefuse(welcome)
	assert.Equal(t, ErrWrongType, err)
}

func TestRefuseIsReadableFromAnyWireVersion(t *testing.T) {
	// A refusal from a server of a future version, to an old client.
	b := unhex(t, "07 14 02 0a 6f6c6420636c69656e74")
	r, err := DecodeRefuse(b)
	require.NoError(t, err)
	assert.Equal(t, RefuseProtocol, r.Code)
	assert.Equal(t, "old client", string(r.Reason))
	var f Frame
	require.NoError(t, Decode(b, &f))
	assert.Equal(t, TypeRefuse, f.Type)
	// Every other frame of another version is rejected.
	_, err = DecodeDisappear(unhex(t, "07 12 01000000"))
	assert.Equal(t, ErrVersion, err)
}

func TestAppendHelloRejectsTokensLongerThan64Bytes(t *testing.T) {
	dst := []byte("keep")
	out, err := AppendHello(dst, Hello{Token: make([]byte, MaxTokenLen+1)})
	assert.Equal(t, ErrTokenTooLong, err)
	assert.Equal(t, "keep", string(out))
	out, err = AppendHello(nil, Hello{Token: make([]byte, MaxTokenLen)})
	require.NoError(t, err)
	assert.Len(t, out, 5+MaxTokenLen)
}

func TestAppendRefuseCutsLongReasonsAtACharacterBoundary(t *testing.T) {
	// 254 ASCII bytes then a 3-byte character: the character would straddle
	// byte 255, so it is dropped whole.
	reason := strings.Repeat("a", 254) + "\u20ac" + "tail"
	r, err := DecodeRefuse(AppendRefuse(nil, Refuse{Code: RefuseBusy, Reason: []byte(reason)}))
	require.NoError(t, err)
	assert.Equal(t, strings.Repeat("a", 254), string(r.Reason))

	exact := strings.Repeat("b", MaxReasonLen)
	r, err = DecodeRefuse(AppendRefuse(nil, Refuse{Reason: []byte(exact)}))
	require.NoError(t, err)
	assert.Equal(t, exact, string(r.Reason))
}

func TestPeekTypeNamesEveryFrameType(t *testing.T) {
	for _, g := range goldenFrames(t) {
		typ, err := PeekType(g.encoded)
		require.NoError(t, err)
		assert.Equal(t, g.name, typ.String())
	}
	assert.Equal(t, "Type(0x7f)", Type(0x7f).String())
}

// TestDecodeNeverPanicsOnDamagedFrames feeds every prefix and every
// single-byte corruption of every golden frame, plus random bytes, to
// Decode. Truncations must be rejected; nothing may panic.
func TestDecodeNeverPanicsOnDamagedFrames(t *testing.T) {
	var f Frame
	for _, g := range goldenFrames(t) {
		for n := range len(g.encoded) {
			assert.Error(t, Decode(g.encoded[:n], &f), "%s cut to %d bytes", g.name, n)
		}
		for i := range g.encoded {
			for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff} {
				b := append([]byte{}, g.encoded...)
				b[i] = v
				_ = Decode(b, &f)
			}
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, r.IntN(80))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if len(b) > 1 && r.IntN(2) == 0 {
			b[0] = Version
		}
		if err := Decode(b, &f); err == nil {
			assert.Equal(t, canonical(b), reencode(t, &f))
		}
	}
}

func TestDecodingAFrameAllocatesNothing(t *testing.T) {
	for _, g := range goldenFrames(t) {
		var f Frame
		allocs := testing.AllocsPerRun(100, func() {
			if err := Decode(g.encoded, &f); err != nil {
				t.Fatal(err)
			}
			for i := range f.Batch.Len() {
				_ = f.Batch.At(i)
			}
		})
		assert.Zero(t, allocs, g.name)
	}
	bad := []byte{Version, 0x7f}
	var f Frame
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = Decode(bad, &f) }), "errors")
	move := AppendMove(nil, Move{Seq: 1})
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = DecodeMove(move) }), "DecodeMove")
}

func TestEncodingAllocatesNothingIntoABigEnoughBuffer(t *testing.T) {
	flat := make([]byte, 64*RecordSize)
	batch := make([]byte, 0, MaxBatchPayload)
	frame := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		for i := range 64 {
			PutRecord(flat[i*RecordSize:], Record{Actor: uint32(i), X: 1, Yaw: 2})
		}
		batch = AppendBatchHeader(batch[:0], 9, 0)
		for i := range MaxRecordsPerBatch {
			batch = append(batch, flat[i*RecordSize:(i+1)*RecordSize]...)
		}
		SetBatchCount(batch, MaxRecordsPerBatch)
		batch = AppendRecord(batch[:BatchHeaderSize], Record{Actor: 1})
		frame = AppendMove(frame[:0], Move{Seq: 1})
		frame = AppendCorrection(frame[:0], Correction{Seq: 1})
		frame = AppendAppear(frame[:0], Appear{Actor: 1})
	})
	assert.Zero(t, allocs)
}
