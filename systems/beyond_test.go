package systems

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// beyondEdgeOneByOne is beyondEdge's rule, one sender at a time.
func beyondEdgeOneByOne(xs, ys, zs []float32, rx, ry, rz, edge float32) uint64 {
	var bits uint64
	for i, x := range xs {
		dx, dy, dz := x-rx, ys[i]-ry, zs[i]-rz
		if dx*dx+dy*dy+dz*dz >= edge {
			bits |= 1 << i
		}
	}
	return bits
}

// TestBeyondEdgeDecidesLikeThePairs: beyondEdge (eight senders an
// instruction where the CPU has AVX2) sets exactly the bits the pair rule
// does, for cells of 0 to 64 senders, half of the cases with the edge at
// one sender's exact squared distance, where a different rounding would
// show.
func TestBeyondEdgeDecidesLikeThePairs(t *testing.T) {
	t.Logf("AVX2: %v", useAVX2)
	r := rand.New(rand.NewPCG(1, 2))
	for it := range 100000 {
		n := r.IntN(maskActors + 1)
		xs, ys, zs := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range n {
			xs[i], ys[i], zs[i] = r.Float32()*8192-2048, r.Float32()*8192-2048, r.Float32()*200
		}
		rx, ry, rz := r.Float32()*4096, r.Float32()*4096, r.Float32()*100
		edge := float32(2048 * 2048)
		if it%2 == 0 && n > 0 {
			k := r.IntN(n)
			dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
			edge = dx*dx + dy*dy + dz*dz
		}
		require.Equal(t, beyondEdgeOneByOne(xs, ys, zs, rx, ry, rz, edge), beyondEdge(xs, ys, zs, rx, ry, rz, edge), "case %d, %d senders", it, n)
	}
}

// BenchmarkBeyondEdge decides a cell of 16 senders (a 5 x 5 grid's at 400
// players) against one recipient.
//
//	go test -run '^$' -bench BenchmarkBeyondEdge ./systems
func BenchmarkBeyondEdge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 16
	xs, ys, zs := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		xs[i], ys[i], zs[i] = r.Float32()*4096, r.Float32()*4096, r.Float32()*10
	}
	var bits uint64
	for b.Loop() {
		bits ^= beyondEdge(xs, ys, zs, 2000, 2000, 5, 2048*2048)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/sender")
	if bits == 1<<63 {
		b.Log(bits) // keeps the calls
	}
}
