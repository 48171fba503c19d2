package zone

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/throng-go/throng/components"
)

// These decoders keep fields of the message unexported, so their fuzz
// tests live inside the package. Both read a fixed header and alias the
// rest, so they must allocate nothing at all.

// checkNoAllocs fails t when decode allocates.
func checkNoAllocs(t *testing.T, b []byte, decode func()) {
	t.Helper()
	if n := testing.AllocsPerRun(1, decode); n != 0 {
		t.Fatalf("decoding %d bytes allocated %v times", len(b), n)
	}
}

// FuzzDecodeCommand: no input panics DecodeCommand or makes it allocate,
// and a command it accepts encodes back to the same bytes.
func FuzzDecodeCommand(f *testing.F) {
	good := AppendCommand(nil, 3, 17, RemoteCommand{Origin: 2, From: 5, Actor: components.ActorID{ID: 9}, Payload: []byte("hi")}, 1)
	f.Add(good)
	f.Add(AppendCommand(nil, 1, 0, RemoteCommand{Origin: 1, Actor: components.ActorID{ID: 1}}, 0))
	f.Add(AppendCommand(nil, math.MaxUint16, math.MaxUint64, RemoteCommand{Origin: math.MaxUint16, From: math.MaxUint32,
		Actor: components.ActorID{ID: math.MaxUint32}, Payload: bytes.Repeat([]byte{0xff}, MaxCommandPayload)}, math.MaxUint8))
	f.Add(AppendCommand(nil, 3, 1, RemoteCommand{Origin: 2, Actor: components.ActorID{ID: 9}, Payload: make([]byte, MaxCommandPayload+1)}, 0))
	f.Add(good[:commandHeaderSize-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(append([]byte{CommandVersion + 1}, good[1:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c RemoteCommand
		var err error
		checkNoAllocs(t, b, func() { c, err = DecodeCommand(b) })
		if err != nil {
			return
		}
		if again := AppendCommand(nil, c.zone, c.rev, c, c.hops); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}

// FuzzDecodeResume: no input panics decodeResume or makes it allocate,
// and a payload it accepts encodes back to the same bytes.
func FuzzDecodeResume(f *testing.F) {
	good := appendResume(nil, resumeOf{remote{2, 11}, 3})
	f.Add(good)
	f.Add(appendResume(nil, resumeOf{}))
	f.Add(appendResume(nil, resumeOf{remote{math.MaxUint16, math.MaxUint32}, math.MaxUint64}))
	f.Add([]byte{})
	f.Add(good[:resumeSize-1])
	f.Add(append(slices.Clone(good), 0))
	f.Add(append([]byte{resumeVersion - 1}, good[1:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r resumeOf
		var err error
		checkNoAllocs(t, b, func() { r, err = decodeResume(b) })
		if err != nil {
			return
		}
		if again := appendResume(nil, r); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}
