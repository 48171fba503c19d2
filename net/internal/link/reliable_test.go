package link

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/net/wire"
)

// session is the state a transport's sends hand to a Reliable.
type session struct {
	rel     Reliable
	mu      sync.Mutex
	closing bool
	wake    chan struct{}
	n       Counts
}

func newSession() *session { return &session{wake: make(chan struct{}, 1)} }

func (s *session) post(frame []byte, limit int) bool {
	return s.rel.Post(&s.mu, &s.closing, s.wake, frame, 100, limit, &s.n)
}

func (s *session) postBatch(frames []byte, limit int) bool {
	return s.rel.PostBatch(&s.mu, &s.closing, s.wake, frames, 100, limit, &s.n)
}

// queued takes what the writer would and returns its frames.
func (s *session) queued() []string {
	var got []string
	wire.EachStreamFrame(s.rel.Take(nil), func(f []byte) { got = append(got, string(f)) })
	return got
}

func appear(actor uint32) []byte { return wire.AppendAppear(nil, wire.Appear{Actor: actor}) }

// stream lays frames back to back behind their prefixes, as a batch
// arrives; a frame may be of any length up to MaxStreamFrame.
func stream(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = append(b, byte(len(f)), byte(len(f)>>8))
		b = append(b, f...)
	}
	return b
}

func TestABatchQueuesWhatPostingEachFrameWould(t *testing.T) {
	tooLong := slices.Concat(appear(3), make([]byte, 100))
	frames := [][]byte{appear(1), {wire.Version}, appear(2), tooLong, nil, appear(4)}
	one, batch := newSession(), newSession()
	for _, f := range frames {
		assert.False(t, one.post(f, 10))
	}
	assert.False(t, batch.postBatch(stream(frames...), 10))

	want := []string{string(appear(1)), string(appear(2)), string(appear(4))}
	assert.Equal(t, want, one.queued())
	assert.Equal(t, want, batch.queued())
	assert.Equal(t, one.n.Stats(), batch.n.Stats())
	assert.Equal(t, wire.Stats{ReliableOut: 3, ReliableBytesOut: 3 * wire.AppearSize, DroppedReliable: 3}, batch.n.Stats())
	assert.Len(t, batch.wake, 1, "the writer is woken")

	cut := stream(appear(5), appear(6))
	assert.False(t, batch.postBatch(cut[:len(cut)-1], 10))
	assert.Equal(t, []string{string(appear(5))}, batch.queued(), "sent up to the last whole frame")
	assert.Equal(t, uint64(4), batch.n.DroppedRel.Load(), "the cut-short tail is one frame dropped")

	quiet := newSession()
	assert.False(t, quiet.postBatch(nil, 10))
	assert.False(t, quiet.postBatch(stream(nil), 10))
	assert.Empty(t, quiet.wake, "nothing queued, nothing to wake for")
	assert.Equal(t, uint64(1), quiet.n.DroppedRel.Load())
}

func TestABatchThatOverflowsTheQueueDropsWhatDoesNotFit(t *testing.T) {
	s := newSession()
	assert.False(t, s.post(appear(1), 3))
	assert.True(t, s.postBatch(stream(appear(2), appear(3), appear(4), appear(5)), 3))
	assert.Equal(t, []string{string(appear(1)), string(appear(2)), string(appear(3))}, s.queued())
	assert.Equal(t, uint64(3), s.n.ReliableOut.Load())
	assert.Equal(t, uint64(2), s.n.DroppedRel.Load(), "the frame that found the queue full and the one after")

	assert.True(t, s.post(appear(6), 0), "a single frame overflows the same way")

	s.closing = true
	assert.False(t, s.postBatch(stream(appear(7), appear(8)), 3), "a closing session drops without overflowing")
	assert.Equal(t, uint64(5), s.n.DroppedRel.Load())
}

func TestARefuseInsideABatchSetsTheClose(t *testing.T) {
	refuse := wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("busy")})
	refused := newSession()
	refused.postBatch(stream(appear(1), refuse, wire.AppendWelcome(nil, wire.Welcome{})), 10)
	assert.Equal(t, Refusal{Refused: true, Code: wire.RefuseBusy, Reason: "busy"}, refused.rel.Refusal)
	refused.queued()
	assert.True(t, refused.rel.Refusal.Refused, "taking the frames keeps the refusal")

	welcomed := newSession()
	welcomed.postBatch(stream(wire.AppendWelcome(nil, wire.Welcome{}), refuse), 10)
	assert.Equal(t, Refusal{Welcomed: true}, welcomed.rel.Refusal)
}

func TestABatchForNoSessionCountsEachFrameDropped(t *testing.T) {
	var n Counts
	DropReliable(stream(appear(1), appear(2), nil), &n)
	assert.Equal(t, uint64(3), n.DroppedRel.Load())
	DropReliable(stream(appear(3))[:4], &n)
	assert.Equal(t, uint64(4), n.DroppedRel.Load(), "a cut-short tail is one")
	DropReliable(nil, &n)
	assert.Equal(t, uint64(4), n.DroppedRel.Load())
	assert.Equal(t, 2, BatchLen(stream(appear(1), appear(2))))
}

func TestPostingAndTakingAllocateNothingInSteadyState(t *testing.T) {
	s := newSession()
	batch := stream(appear(1), appear(2), appear(3))
	var spare []byte
	steady := func() {
		s.post(nil, 10) // dropped, for the count
		s.postBatch(batch, 10)
		s.post(batch[2:2+wire.AppearSize], 10)
		spare = s.rel.Take(spare)
		<-s.wake
	}
	steady()
	steady()
	assert.Zero(t, testing.AllocsPerRun(100, steady))
}
