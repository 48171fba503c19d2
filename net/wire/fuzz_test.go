package wire

import (
	"bytes"
	"testing"
)

// canonical returns the bytes a decoded frame re-encodes to: b itself,
// except that a Refuse of any wire version is re-encoded with Version.
func canonical(b []byte) []byte {
	if len(b) >= HeaderSize && Type(b[1]) == TypeRefuse {
		c := append([]byte{}, b...)
		c[0] = Version
		return c
	}
	return b
}

// FuzzDecode checks that Decode never panics, fails only with a CodecError,
// and accepts only canonical frames: whatever it accepts re-encodes to the
// same bytes. The seed corpus in testdata/fuzz/FuzzDecode holds one frame of
// each type and a few damaged ones; plain `go test` runs it.
func FuzzDecode(f *testing.F) {
	for _, g := range goldenFrames(f) {
		f.Add(g.encoded)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var fr Frame
		err := Decode(b, &fr)
		if err != nil {
			if _, ok := err.(CodecError); !ok {
				t.Fatalf("Decode returned %T %v, want a CodecError", err, err)
			}
			if fr.Type != 0 {
				t.Fatalf("failed Decode left Type %v", fr.Type)
			}
			return
		}
		if got := reencode(t, &fr); !bytes.Equal(got, canonical(b)) {
			t.Fatalf("%v frame re-encodes differently:\n in  %x\n out %x", fr.Type, b, got)
		}
	})
}

// FuzzStreamReader checks that a stream cut at arbitrary points yields the
// same frames (or the same error) as the stream fed whole.
func FuzzStreamReader(f *testing.F) {
	f.Add(AppendStreamFrame(AppendStreamFrame(nil, []byte{1, 2, 3}), []byte{4, 5}), uint64(1))
	f.Add([]byte{0xff, 0xff, 1, 1}, uint64(2))
	f.Add([]byte{1, 0, 9}, uint64(3))
	f.Fuzz(func(t *testing.T, stream []byte, cuts uint64) {
		whole, wholeErr := readAll(NewStreamReader(64), [][]byte{stream})
		split, splitErr := readAll(NewStreamReader(64), splitAt(stream, cuts))
		if wholeErr != splitErr {
			t.Fatalf("error %v whole, %v split", wholeErr, splitErr)
		}
		if len(whole) != len(split) {
			t.Fatalf("%d frames whole, %d split", len(whole), len(split))
		}
		for i := range whole {
			if !bytes.Equal(whole[i], split[i]) {
				t.Fatalf("frame %d: %x whole, %x split", i, whole[i], split[i])
			}
		}
	})
}
