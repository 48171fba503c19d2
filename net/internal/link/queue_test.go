package link

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/net/wire"
)

// post offers one datagram to m as a transport's send does.
type post struct {
	m       Mailbox
	mu      sync.Mutex
	closing bool
	wake    chan struct{}
	n       Counts
}

func (p *post) send(d []byte) bool {
	return p.m.PostBatch(&p.mu, &p.closing, p.wake, d, 0, wire.MaxBatchPayload, &p.n) == 1
}

// ticks lists the ticks of the datagrams waiting in the mailbox.
func (p *post) ticks() []uint32 {
	var ticks []uint32
	p.m.Each(func(d []byte) { ticks = append(ticks, BatchTick(d)) })
	return ticks
}

func TestMailboxKeepsOnlyTheNewestTicksDatagrams(t *testing.T) {
	dgram := func(tick uint32) []byte { return wire.AppendBatchHeader(nil, tick, 0) }
	p := &post{wake: make(chan struct{}, 1)}

	assert.True(t, p.send(dgram(5)))
	assert.True(t, p.send(dgram(5)), "a second datagram of the same tick joins the first")
	assert.Equal(t, []uint32{5, 5}, p.ticks())
	assert.Len(t, p.wake, 1, "the writer is woken")

	assert.True(t, p.send(dgram(6)))
	assert.Equal(t, []uint32{6}, p.ticks(), "a newer tick replaces the whole slot")
	assert.Equal(t, uint64(2), p.n.Replaced.Load())
	assert.Equal(t, uint64(2), p.n.DroppedDatagrams.Load())

	assert.False(t, p.send(dgram(4)), "an older tick never replaces a newer one")
	assert.Equal(t, []uint32{6}, p.ticks())
	assert.Equal(t, uint64(3), p.n.DroppedDatagrams.Load())

	wrap := &post{wake: make(chan struct{}, 1)}
	assert.True(t, wrap.send(dgram(1<<32-1)))
	assert.True(t, wrap.send(dgram(0)), "the tick counter wraps: tick 0 follows tick 2^32-1")
	assert.Equal(t, []uint32{0}, wrap.ticks())
	assert.False(t, wrap.send(dgram(1<<32-2)))

	wrap.closing = true
	assert.False(t, wrap.send(dgram(1)), "a closing session takes nothing")
	assert.False(t, wrap.send([]byte{wire.Version}), "nor a datagram shorter than a batch header")
	assert.Equal(t, []uint32{0}, wrap.ticks())
}

func TestABatchIsPostedDatagramByDatagram(t *testing.T) {
	p := &post{wake: make(chan struct{}, 1)}
	one := wire.AppendRecord(wire.AppendBatchHeader(nil, 9, 1), wire.Record{Actor: 1})
	batch := append(append(append([]byte{}, one...), one...), one[:4]...) // two whole, one cut short
	assert.Equal(t, 2, p.m.PostBatch(&p.mu, &p.closing, p.wake, batch, len(one), wire.MaxBatchPayload, &p.n))
	assert.Equal(t, []uint32{9, 9}, p.ticks())
	assert.Equal(t, uint64(1), p.n.DroppedDatagrams.Load(), "the short one is dropped and counted")

	var gone Counts
	DropBatch(batch, len(one), &gone)
	assert.Equal(t, uint64(3), gone.DroppedDatagrams.Load(), "a batch for no session is dropped whole")
}
