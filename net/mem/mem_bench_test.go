package mem

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/throng-go/throng/net/wire"
)

// BenchmarkMemCountOnlySend is the cost of one server send to a CountOnly
// Transport the way the relay makes them: as many clients as the server
// benchmark has, each written by one worker that walks its own contiguous
// range of sessions (a shard), every worker on its own core. One op is one
// send.
// The timed sends include each client's first, as a server's first ticks
// do, so whatever a send sets up per client is paid for here too.
func BenchmarkMemCountOnlySend(b *testing.B) {
	const clients = 10000
	datagram := make([]byte, wire.BatchHeaderSize+wire.MaxRecordsPerBatch*wire.RecordSize) // a full batch
	frame := wire.AppendDisappear(nil, wire.Disappear{Actor: 1})
	for _, bc := range []struct {
		name    string
		payload []byte
		send    func(*Transport, wire.SessionID, []byte)
	}{
		{"unreliable", datagram, (*Transport).SendUnreliable},
		{"reliable", frame, (*Transport).SendReliable},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := New(Options{CountOnly: true})
			sessions := make([]wire.SessionID, clients)
			for i := range sessions {
				sessions[i] = m.Dial().Session()
			}
			workers := runtime.GOMAXPROCS(0) // RunParallel's goroutines, by default
			var next atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				w := int(next.Add(1) - 1)
				shard := sessions[w*clients/workers : (w+1)*clients/workers]
				i := 0
				for pb.Next() {
					bc.send(m, shard[i], bc.payload)
					if i++; i == len(shard) {
						i = 0
					}
				}
			})
			b.StopTimer()
			if st := m.Stats(); st.DroppedDatagrams+st.DroppedReliable != 0 {
				b.Fatalf("dropped sends: %+v", st)
			}
		})
	}
}

// BenchmarkMemTick is one tick of traffic through a CountOnly Transport: every
// client sends a move, the server receives and decodes them all and sends
// each client a full batch and a reliable frame.
func BenchmarkMemTick(b *testing.B) {
	for _, clients := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			m := New(Options{CountOnly: true})
			cs := make([]*Client, clients)
			for i := range cs {
				cs[i] = m.Dial()
			}
			frame := wire.AppendMove(nil, wire.Move{Seq: 1})
			batch := wire.AppendBatchHeader(nil, 1, wire.MaxRecordsPerBatch)
			batch = append(batch, make([]byte, wire.MaxRecordsPerBatch*wire.RecordSize)...)
			inbox := make([]wire.Inbound, 0, 2*clients)
			for range 2 { // grow both of the Mem's inbox buffers
				inbox = steadyTick(m, cs, frame, batch, inbox)
			}
			before := m.Stats()
			for b.Loop() {
				inbox = steadyTick(m, cs, frame, batch, inbox)
			}
			after := m.Stats()
			sent := after.DatagramBytesOut + after.ReliableBytesOut - before.DatagramBytesOut - before.ReliableBytesOut
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/tick")
			b.ReportMetric(float64(sent)/float64(b.N), "bytes/tick")
		})
	}
}
