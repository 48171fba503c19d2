package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// eachFrame collects copies of the frames EachStreamFrame yields, and
// what it left over.
func eachFrame(frames []byte) ([]string, int) {
	var got []string
	rest := EachStreamFrame(frames, func(f []byte) { got = append(got, string(f)) })
	return got, rest
}

func TestEachStreamFrameYieldsTheFramesAppendStreamFrameLaidDown(t *testing.T) {
	appear := AppendAppear(nil, Appear{Actor: 7})
	prop := AppendProp(nil, Prop{Actor: 8, Flags: 1})
	refuse := AppendRefuse(nil, Refuse{Code: RefuseBusy, Reason: []byte("busy")})
	batch := AppendStreamFrame(AppendStreamFrame(AppendStreamFrame(nil, appear), prop), refuse)

	got, rest := eachFrame(batch)
	assert.Equal(t, []string{string(appear), string(prop), string(refuse)}, got)
	assert.Zero(t, rest)

	// The reader on the other end of a stream sees the same frames.
	r := NewStreamReader(0)
	frames, err := readAll(r, [][]byte{batch})
	assert.NoError(t, err)
	assert.Len(t, frames, 3)
	assert.False(t, r.Partial())
}

func TestEachStreamFrameStopsAtACutShortTail(t *testing.T) {
	appear := AppendAppear(nil, Appear{Actor: 7})
	whole := AppendStreamFrame(nil, appear)
	batch := AppendStreamFrame(whole, appear)
	for cut := range len(whole) {
		got, rest := eachFrame(batch[:len(whole)+cut])
		assert.Equal(t, []string{string(appear)}, got, "cut %d bytes into the second frame", cut)
		assert.Equal(t, cut, rest, "the bytes of the second frame are left over")
	}

	// A prefix that claims more than the whole batch holds.
	got, rest := eachFrame([]byte{0xff, 0xff, Version, byte(TypeAppear)})
	assert.Empty(t, got)
	assert.Equal(t, 4, rest)
}

func TestEachStreamFrameOnNothingCallsNothing(t *testing.T) {
	for _, frames := range [][]byte{nil, {}} {
		got, rest := eachFrame(frames)
		assert.Empty(t, got)
		assert.Zero(t, rest)
	}
	// A zero length prefix is a frame of no bytes: the caller's size check
	// drops it, as it drops any frame shorter than a header.
	got, rest := eachFrame([]byte{0, 0})
	assert.Equal(t, []string{""}, got)
	assert.Zero(t, rest)
}
