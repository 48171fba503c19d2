package systems

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net"
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
		room := n + r.IntN(8) // senders past the cell, read and dropped where there is room
		xs, ys, zs := make([]float32, room), make([]float32, room), make([]float32, room)
		for i := range room {
			xs[i], ys[i], zs[i] = r.Float32()*8192-2048, r.Float32()*8192-2048, r.Float32()*200
		}
		xs, ys, zs = xs[:n], ys[:n], zs[:n]
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

// TestPointBandsDecideLikePointPeriod: pointBands8 (AVX2) puts every box
// in the band pointPeriod does, for random boxes around and away from the
// recipient, half of them with the edge at one of the box's exact bounds,
// where a different rounding would show.
func TestPointBandsDecideLikePointPeriod(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: pointPeriod decides every box")
	}
	r := rand.New(rand.NewPCG(5, 6))
	var b cellBoxes
	for it := range 20000 {
		n := 1 + r.IntN(maskActors)
		cells := make([]int32, n)
		classes := make([]cellClass, n)
		f := &Frame{cells: make([]cell, n)}
		rx, ry, rz := r.Float32()*4096, r.Float32()*4096, r.Float32()*100
		for i := range n {
			c := &f.cells[i]
			for k := range 3 {
				a, z := r.Float32()*8192-2048, r.Float32()*1024
				c.min[k], c.max[k] = a, a+z
			}
			cells[i] = int32(i)
			classes[i] = cellClass{near: 1, far: 2, edge: float32(2048 * 2048)}
			if r.IntN(2) == 0 { // the edge at the box's own nearest or farthest bound
				nx, fx := axisSpan(c.min[0]-rx, c.max[0]-rx)
				ny, fy := axisSpan(c.min[1]-ry, c.max[1]-ry)
				nz, fz := axisSpan(c.min[2]-rz, c.max[2]-rz)
				classes[i].edge = nx*nx + ny*ny + nz*nz
				if r.IntN(2) == 0 {
					classes[i].edge = fx*fx + fy*fy + fz*fz
				}
			}
		}
		b.fill(f, cells, classes)
		near, far := pointBands8(&b, b.n, rx, ry, rz)
		for i := range n {
			want := pointPeriod(rx, ry, rz, &f.cells[i], classes[i])
			got := uint8(0)
			switch {
			case near>>i&1 != 0:
				got = classes[i].near
			case far>>i&1 != 0:
				got = classes[i].far
			}
			require.Equal(t, want, got, "case %d, box %d of %d", it, i, n)
		}
	}
}

// TestWriteSetWritesLikeOneByOne: a batch written set by set and list by
// list (writeSet, write: 32-byte moves with AVX2, where there is room)
// holds the same bytes, datagram headers included, as one written a record
// at a time, over sets that cross datagram boundaries and buffers with and
// without room to spare.
func TestWriteSetWritesLikeOneByOne(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const senders = 300
	records := make([]byte, senders*net.RecordSize, senders*net.RecordSize+recordOverrun)
	for i := range records {
		records[i] = byte(r.Uint32())
	}
	for it := range 2000 {
		var sets []uint64
		var los []int32
		total := 0
		for range 1 + r.IntN(12) {
			set := r.Uint64() & r.Uint64()
			lo := int32(r.IntN(senders - 64))
			sets, los = append(sets, set), append(los, lo)
			total += bits.OnesCount64(set)
		}
		datagrams := (total + net.MaxRecordsPerBatch - 1) / net.MaxRecordsPerBatch
		room := max(datagrams, 1)*datagramSize + r.IntN(2)*recordOverrun
		a := newBatchOut(make([]byte, 0, room), records, uint64(it))
		b := newBatchOut(make([]byte, 0, room), records, uint64(it))
		for k, set := range sets {
			var sel []int32
			for s := set; s != 0; s &= s - 1 {
				sel = append(sel, los[k]+int32(bits.TrailingZeros64(s)))
				b.one(sel[len(sel)-1])
			}
			if k%2 == 0 {
				a.writeSet(set, los[k])
			} else if len(sel) > 0 {
				a.write(sel)
			}
		}
		require.Equal(t, b.finish(), a.finish(), "case %d", it)
	}
}
