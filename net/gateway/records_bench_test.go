package gateway

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAddDatagram: a zone tick's batches to one gateway, 2,500
// sessions each hearing 30 of 3,000 actors, by reference.
func BenchmarkAddDatagram(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const sessions, heard, actors = 2500, 30, 3000
	batches := make([][]byte, sessions)
	for s := range batches {
		base := uint32(rng.IntN(actors - heard))
		ids := make([]uint32, heard)
		for i := range ids {
			ids[i] = 1 + base + uint32(i)
		}
		batches[s] = batchOf(0, ids...)
	}
	var m message
	m.reset("gw")
	m.limit = 1 << 20
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m.clear()
		clear(m.sealed)
		m.sealed = m.sealed[:0]
		for s, d := range batches {
			m.addDatagram(uint64(s+1), d)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*sessions*heard), "ns/record")
}
