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

// propBatch is n Prop frames laid back to back behind their length
// prefixes, as the join hands a session its props of a tick.
func propBatch(n int) []byte {
	var b []byte
	for a := range uint32(n) {
		b = wire.AppendStreamFrame(b, wire.AppendProp(nil, wire.Prop{Actor: a, Flags: 1}))
	}
	return b
}

// BenchmarkMemReliableBatch is the cost of handing one session 100 Prop
// frames: one SendReliable each, or one SendReliableBatch, in CountOnly
// mode and queuing (drained after every op, as a client reads). One op is
// the 100 frames.
func BenchmarkMemReliableBatch(b *testing.B) {
	const frames = 100
	batch := propBatch(frames)
	each := func(m *Transport, s wire.SessionID) {
		wire.EachStreamFrame(batch, func(f []byte) { m.SendReliable(s, f) })
	}
	batched := func(m *Transport, s wire.SessionID) { m.SendReliableBatch(s, batch) }
	for _, countOnly := range []bool{true, false} {
		for _, bc := range []struct {
			name string
			send func(*Transport, wire.SessionID)
		}{{"each", each}, {"batch", batched}} {
			b.Run(fmt.Sprintf("countOnly=%v/%s", countOnly, bc.name), func(b *testing.B) {
				m := New(Options{CountOnly: countOnly})
				c := m.Dial()
				s := c.Session()
				for b.Loop() {
					bc.send(m, s)
					c.DrainReliable(func([]byte) {})
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
				if st := m.Stats(); st.DroppedReliable != 0 || st.ReliableOut != uint64(b.N*frames) {
					b.Fatalf("sent %d frames, dropped %d", st.ReliableOut, st.DroppedReliable)
				}
			})
		}
	}
}
