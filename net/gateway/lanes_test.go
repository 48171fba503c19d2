package gateway_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/wire"
)

// TestRelayLanesReachTheGatewayInTheOrderSent: relay units sending at
// once, each in its own lane (SendUnreliableBatchLane), get every
// datagram to its session once, in the order each unit sent it; what the
// tick sent a session before the lanes (a plain SendUnreliable) arrives
// ahead of them, and what it sent after (a Disconnect) behind them, so
// that the session hears its last datagrams before it is closed.
func TestRelayLanesReachTheGatewayInTheOrderSent(t *testing.T) {
	w := newWorld(t, nil)
	a, b := w.joinTwo()
	for range 3 {
		w.round()
	}
	a.read(t)
	b.read(t)
	before := w.zone.Stats()

	datagram := func(actor uint32) []byte {
		d := wire.AppendBatchHeader(nil, 1, 1)
		return wire.AppendRecord(d, wire.Record{Actor: actor, X: 1, Y: 2})
	}
	size := len(datagram(0))
	// The transport numbered a's session 1 and b's 2.
	w.zone.SendUnreliable(2, datagram(999)) // before the lanes
	const batches = 300
	var wg sync.WaitGroup
	for lane, s := range []wire.SessionID{1, 2} {
		wg.Go(func() {
			for i := range uint32(batches) {
				base := uint32(lane+1)*10000 + 2*i
				w.zone.SendUnreliableBatchLane(lane, s, append(datagram(base), datagram(base+1)...), size)
			}
		})
	}
	wg.Wait()
	w.zone.Disconnect(2, "after the lanes")
	w.zone.Flush()
	require.NoError(t, w.nc.Flush())

	heard := func(p *player, n int) []uint32 {
		var got []uint32
		w.until("every datagram", func() bool {
			p.c.DrainDatagrams(func(d []byte) {
				batch, err := wire.DecodeBatch(d)
				require.NoError(t, err)
				for i := range batch.Len() {
					got = append(got, batch.At(i).Actor)
				}
			})
			return len(got) >= n
		})
		return got
	}
	wantA := make([]uint32, 0, 2*batches)
	wantB := []uint32{999}
	for i := range uint32(2 * batches) {
		wantA = append(wantA, 10000+i)
		wantB = append(wantB, 20000+i)
	}
	assert.Equal(t, wantA, heard(a, len(wantA)), "a: its unit's datagrams, in order")
	assert.Equal(t, wantB, heard(b, len(wantB)), "b: the datagram sent before the lanes, then its unit's, before the close")
	// The close is the last message's: the gateway may still be handling
	// it as the datagrams before it are read. (Sent ahead of them, it
	// would have kept them from b.)
	w.until("b is disconnected after the lanes", func() bool { _, closed := b.c.CloseReason(); return closed })
	reason, _ := b.c.CloseReason()
	assert.Equal(t, "after the lanes", reason)
	st := w.zone.Stats()
	assert.Equal(t, before.DatagramsOut+1+4*batches, st.DatagramsOut, "every datagram counted, from the lanes too")
	assert.Equal(t, before.DroppedDatagrams, st.DroppedDatagrams)
}
