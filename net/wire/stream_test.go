package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll feeds chunks to r in order and collects copies of every frame,
// stopping at the first error.
func readAll(r *StreamReader, chunks [][]byte) ([][]byte, error) {
	var frames [][]byte
	for _, c := range chunks {
		r.Feed(c)
		for {
			f, err := r.Next()
			if err != nil {
				return frames, err
			}
			if f == nil {
				break
			}
			frames = append(frames, append([]byte{}, f...))
		}
	}
	return frames, nil
}

// splitAt cuts b into chunks of 0 to 9 bytes chosen by seed.
func splitAt(b []byte, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	var chunks [][]byte
	for len(b) > 0 {
		n := min(r.IntN(10), len(b))
		chunks = append(chunks, b[:n])
		b = b[n:]
	}
	return chunks
}

func goldenStream(t testing.TB) ([]byte, [][]byte) {
	var stream []byte
	var frames [][]byte
	for _, g := range goldenFrames(t) {
		stream = AppendStreamFrame(stream, g.encoded)
		frames = append(frames, g.encoded)
	}
	return stream, frames
}

func TestStreamReaderYieldsTheSameFramesHoweverTheStreamIsCut(t *testing.T) {
	stream, want := goldenStream(t)

	got, err := readAll(NewStreamReader(0), [][]byte{stream})
	require.NoError(t, err)
	assert.Equal(t, want, got, "whole")

	var bytewise [][]byte
	for i := range stream {
		bytewise = append(bytewise, stream[i:i+1])
	}
	got, err = readAll(NewStreamReader(0), bytewise)
	require.NoError(t, err)
	assert.Equal(t, want, got, "byte by byte")

	for seed := range uint64(200) {
		r := NewStreamReader(0)
		got, err = readAll(r, splitAt(stream, seed))
		require.NoError(t, err)
		require.Equal(t, want, got, "split with seed %d", seed)
		assert.False(t, r.Partial())
	}
}

func TestStreamReaderRejectsLengthsOutsideItsLimitForGood(t *testing.T) {
	frame := AppendMove(nil, Move{})
	cases := map[string][]byte{
		"over the limit":   AppendStreamFrame(nil, make([]byte, 65)),
		"zero length":      {0, 0},
		"below the header": {1, 0, Version},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewStreamReader(64)
			stream := append(AppendStreamFrame(nil, frame), bad...)
			stream = AppendStreamFrame(stream, frame)
			got, err := readAll(r, [][]byte{stream})
			assert.Equal(t, ErrStreamLength, err)
			assert.Equal(t, [][]byte{frame}, got, "frames before the bad prefix still arrive")
			r.Feed(AppendStreamFrame(nil, frame))
			_, err = r.Next()
			assert.Equal(t, ErrStreamLength, err, "sticky")
		})
	}
	exact, err := readAll(NewStreamReader(64), [][]byte{AppendStreamFrame(nil, make([]byte, 64))})
	require.NoError(t, err)
	assert.Len(t, exact, 1)
}

func TestStreamReaderReportsAStreamCutInsideAFrame(t *testing.T) {
	stream := AppendStreamFrame(nil, AppendDisappear(nil, Disappear{Actor: 1}))
	for cut := 1; cut < len(stream); cut++ {
		r := NewStreamReader(0)
		got, err := readAll(r, [][]byte{stream[:cut]})
		require.NoError(t, err)
		assert.Empty(t, got)
		assert.True(t, r.Partial(), "cut at %d", cut)
	}
}

func TestStreamReaderFeedBeforeDrainingPanics(t *testing.T) {
	r := NewStreamReader(0)
	r.Feed(AppendStreamFrame(nil, []byte{1, 2}))
	assert.Panics(t, func() { r.Feed([]byte{1}) })
}

func TestAppendStreamFramePanicsOnUnframeableLengths(t *testing.T) {
	assert.Panics(t, func() { AppendStreamFrame(nil, []byte{1}) })
	assert.Panics(t, func() { AppendStreamFrame(nil, make([]byte, MaxStreamFrame+1)) })
	assert.Len(t, AppendStreamFrame(nil, make([]byte, MaxStreamFrame)), MaxStreamFrame+StreamPrefixSize)
}

func TestStreamReaderAllocatesNothingOnceWarm(t *testing.T) {
	stream, _ := goldenStream(t)
	chunks := splitAt(stream, 42)
	r := NewStreamReader(0)
	read := func() {
		for _, c := range chunks {
			r.Feed(c)
			for {
				f, err := r.Next()
				if err != nil {
					t.Fatal(err)
				}
				if f == nil {
					break
				}
			}
		}
	}
	read() // grows the reassembly buffer once
	assert.Zero(t, testing.AllocsPerRun(100, read))
}
