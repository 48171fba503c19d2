package net

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkMemCountOnlySend is the cost of one server send to a CountOnly
// Mem the way the relay makes them: as many clients as the server
// benchmark has, each written by one worker that walks its own contiguous
// range of sessions (a shard), every worker on its own core. One op is one
// send.
// The timed sends include each client's first, as a server's first ticks
// do, so whatever a send sets up per client is paid for here too.
func BenchmarkMemCountOnlySend(b *testing.B) {
	const clients = 10000
	datagram := make([]byte, BatchHeaderSize+MaxRecordsPerBatch*RecordSize) // a full batch
	frame := AppendDisappear(nil, Disappear{Actor: 1})
	for _, bc := range []struct {
		name    string
		payload []byte
		send    func(*Mem, SessionID, []byte)
	}{
		{"unreliable", datagram, (*Mem).SendUnreliable},
		{"reliable", frame, (*Mem).SendReliable},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := NewMem(MemOptions{CountOnly: true})
			sessions := make([]SessionID, clients)
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
