package gateway

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/wire"
)

// BenchmarkRelaySends is a zone tick's relay sending to one gateway's
// 2,000 sessions, each hearing 40 of 2,400 actors, from eight relay units
// run by GOMAXPROCS goroutines, then the tick's Flush: mode=lanes each
// unit in its own lane (SendUnreliableBatchLane), mode=shared every unit
// through the one message (SendUnreliableBatch), as the relay sent before
// lanes.
//
//	go test -run '^$' -bench BenchmarkRelaySends -cpu 1,2 ./net/gateway
func BenchmarkRelaySends(b *testing.B) {
	nc, err := nats.Connect(nettest.StartNATS(b))
	require.NoError(b, err)
	defer nc.Close()
	t, err := NewTransport(TransportConfig{Conn: nc, Zone: 1})
	require.NoError(b, err)
	defer t.Close()
	const sessions, heard, actors, units = 2000, 40, 2400, 8
	var open message
	open.reset("gw")
	for s := range uint64(sessions) {
		open.add(opened, s+1, nil)
	}
	require.NoError(b, nc.Publish(zoneSubject("throng", 1), open.b))
	require.NoError(b, nc.Flush())
	var ids []wire.SessionID
	for deadline := time.Now().Add(5 * time.Second); len(ids) < sessions; {
		require.True(b, time.Now().Before(deadline), "sessions opened: %d", len(ids))
		for _, in := range t.Receive(nil) {
			if in.Kind == wire.SessionOpened {
				ids = append(ids, in.Session)
			}
		}
		time.Sleep(time.Millisecond)
	}
	batches := make([][]byte, sessions)
	for s := range batches {
		hears := make([]uint32, heard)
		for i := range hears {
			hears[i] = 1 + uint32((s*7+i*actors/heard)%actors)
		}
		batches[s] = batchOf(float32(s), hears...)
	}
	size := len(batches[0])
	for _, mode := range []string{"shared", "lanes"} {
		b.Run("mode="+mode, func(b *testing.B) {
			workers := runtime.GOMAXPROCS(0)
			for b.Loop() {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for u := w; u < units; u += workers {
							for s := u * sessions / units; s < (u+1)*sessions/units; s++ {
								if mode == "lanes" {
									t.SendUnreliableBatchLane(u, ids[s], batches[s], size)
								} else {
									t.SendUnreliableBatch(ids[s], batches[s], size)
								}
							}
						}
					})
				}
				wg.Wait()
				t.Flush()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sessions), "ns/session")
		})
	}
}
