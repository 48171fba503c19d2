package systems

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// TestDenseWritesLikeThePairs: a batch written by the dense walk's
// kernels (denseCopy16 with AVX-512, denseCopy8 with AVX2) holds the same
// bytes, datagram headers included, as the records of the pairs the tier
// table and the due keys say are due, one at a time: over runs that
// start a batch or continue one at any fill, cross datagram boundaries,
// hold the recipient or not, tables of one to eight bands (denseCopy16
// takes up to four, denseCopy8 any), senders on a band's exact
// limit and at positions that are not numbers or are infinite. It also
// holds the bit sets (denseDue, and its Go loop) to the same pairs.
func TestDenseWritesLikeThePairs(t *testing.T) {
	passes := densePasses()
	t.Logf("AVX2: %v, AVX-512: %v: passes %v", useAVX2, useAVX512, passes)
	r := rand.New(rand.NewPCG(11, 12))
	const senders = 700
	records := make([]byte, senders*wire.RecordSize, senders*wire.RecordSize+denseOverrun)
	// Records with bytes in them, as a tick's have.
	fill := rand.New(rand.NewPCG(3, 4))
	for i := range records {
		records[i] = byte(fill.Uint32())
	}
	xs, ys, zs := padded([]float32(nil), senders), padded([]float32(nil), senders), padded([]float32(nil), senders)
	keys := padded([]uint32(nil), senders)
	for it := range 3000 {
		tiers := tiersForTest(t, r)
		if it%2 == 0 { // the default table's shape, at a random scale
			var err error
			tiers, err = interest.NewTiers(interest.DefaultSteps(float32(500+r.IntN(3000)), 1+r.IntN(4)), 16)
			require.NoError(t, err)
		}
		bands := bandsOf(&tiers)
		lim, _ := tiers.Bands()
		k := denseKernel{bands: &bands, limits: int64(finiteLimits(&bands)), cut: float32(math.Inf(1)), lut: &widenLUT}
		if it%3 == 0 {
			k.cut = float32(r.IntN(6000) * r.IntN(6000))
		}
		for b := range k.want {
			k.want[b] = 1 << r.IntN(10)
		}
		k.rx, k.ry, k.rz = r.Float32()*4096, r.Float32()*4096, r.Float32()*50
		inf := float32(math.Inf(1))
		if it%50 == 7 { // a recipient at infinity: infinity less infinity is the CPU's own NaN, negative
			k.rx = inf
		}
		// Every sender due but the odd one: whole groups.
		whole := it%6 == 1
		odds := 40
		if whole {
			odds, k.cut = 800, inf
		}
		for i := range cap(xs) {
			xs[:cap(xs)][i], ys[:cap(ys)][i], zs[:cap(zs)][i] = randomSender(r, &k, odds)
			keys[:cap(keys)][i] = r.Uint32() & r.Uint32() & 0x3FF
			if whole {
				keys[:cap(keys)][i] = 0x3FF
			}
		}
		before, lo, hi, rcp := randomRun(r, senders)
		a, b := batchPair(records, senders, before, uint64(it))
		for i := lo; i < hi; i++ {
			d, band := plainBand(&k, lim[1:], xs[i], ys[i], zs[i])
			if i != rcp && keys[i]&k.want[band] != 0 && d < k.cut {
				b.one(i)
			}
		}
		a.writeDense(&k, xs[lo:hi], ys[lo:hi], zs[lo:hi], keys[lo:hi], lo, rcp, nil, passes[it%len(passes)])
		if it%5 == 0 {
			a.one(3)
			b.one(3)
		}
		want, got := b.finish(), a.finish()
		if !bytes.Equal(want, got) {
			t.Logf("want %d bytes, got %d\nwant % x\ngot  % x", len(want), len(got), want[max(0, len(want)-80):], got[max(0, len(got)-80):])
		}
		require.True(t, bytes.Equal(want, got), "case %d: %d before, senders %d to %d, recipient %d, %d limits", it, before, lo, hi, rcp, k.limits)
	}
}

// densePasses returns the ways writeDense can write on this CPU: bit sets
// always, the kernels where the CPU has them.
func densePasses() []densePass {
	passes := []densePass{denseBits}
	if useAVX2 {
		passes = append(passes, densePass8)
	}
	if useAVX512 {
		passes = append(passes, densePass16)
	}
	return passes
}

// BenchmarkDenseWrite writes one recipient's batch from a square of 400
// or 1,000 senders in 5 x 5 cells to each of them in turn (the default
// tiers, about 73% of them due, the squares' share), by each kernel
// (vector16, vector8) the CPU has and by bit sets (masks).
//
//	go test -run '^$' -bench BenchmarkDenseWrite ./systems
func BenchmarkDenseWrite(b *testing.B) {
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("senders=%d", n), func(b *testing.B) { benchmarkDenseWrite(b, n) })
	}
}

func benchmarkDenseWrite(b *testing.B, n int) {
	r := rand.New(rand.NewPCG(1, 2))
	records := make([]byte, n*wire.RecordSize, n*wire.RecordSize+denseOverrun)
	xs, ys, zs := padded([]float32(nil), n), padded([]float32(nil), n), padded([]float32(nil), n)
	keys := padded([]uint32(nil), n)
	for i := range records {
		records[i] = byte(r.Uint32())
	}
	for i := range n {
		// Cell by cell, as the frame holds them, in 5 x 5 cells.
		c := i / (n / 25)
		xs[i], ys[i], zs[i] = float32(c%5)*819+r.Float32()*819, float32(c/5)*819+r.Float32()*819, r.Float32()*10
		keys[i] = 1 | 1<<(1+r.IntN(2)) | 1<<(3+r.IntN(3)) | 1<<(6+r.IntN(4))
	}
	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	require.NoError(b, err)
	bands := bandsOf(&tiers)
	k := denseKernel{bands: &bands, limits: int64(finiteLimits(&bands)), cut: float32(math.Inf(1)), lut: &widenLUT,
		want: [8]uint32{1, 1 << 1, 1 << 3, 1 << 6, 1 << 6, 1 << 6, 1 << 6, 1 << 6}, rz: 5}
	buf := make([]byte, 0, (n/wire.MaxRecordsPerBatch+1)*datagramSize+denseOverrun)
	var masks []byte
	for _, pass := range densePasses() {
		name := map[densePass]string{denseBits: "masks", densePass8: "vector8", densePass16: "vector16"}[pass]
		b.Run(name, func(b *testing.B) {
			written, i := 0, 0
			for b.Loop() {
				// The recipient moves on each time, as in a tick: the
				// branches cannot learn one recipient's groups.
				i = (i + 37) % n
				k.rx, k.ry = xs[i], ys[i]
				w := newBatchOut(buf, records, 1)
				masks = w.writeDense(&k, xs, ys, zs, keys, 0, int32(i), masks, pass)
				written += int(w.count)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/sender")
			b.ReportMetric(float64(written)/float64(b.N), "records")
		})
	}
}

// TestStencilColumnsWriteLikeTheirRuns: a stencil of short runs decided
// as one run of columns (stencilCols, writeCols) writes the bytes its
// runs write one by one (writeDense, which TestDenseWritesLikeThePairs
// holds to the pairs): runs of one sender to more than the 56 a bit set
// takes, the recipient in one of them or in none, into a batch already
// part full, across datagrams.
func TestStencilColumnsWriteLikeTheirRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const senders = 600
	records := randomRecords(r, senders, denseOverrun)
	xs, ys, zs := padded([]float32(nil), senders), padded([]float32(nil), senders), padded([]float32(nil), senders)
	keys := padded([]uint32(nil), senders)
	for i := range senders {
		xs[i], ys[i], zs[i] = r.Float32()*8192-2048, r.Float32()*8192-2048, r.Float32()*100
		keys[i] = r.Uint32() & 0x3FF
	}
	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	require.NoError(t, err)
	bands := bandsOf(&tiers)
	var cols stencilCols
	var runs []int32
	var masks []byte
	for it := range 2000 {
		k := denseKernel{bands: &bands, limits: int64(finiteLimits(&bands)), cut: float32(math.Inf(1)), lut: &widenLUT}
		for b := range k.want {
			k.want[b] = 1 << r.IntN(10)
		}
		k.rx, k.ry, k.rz = r.Float32()*4096, r.Float32()*4096, r.Float32()*50
		// Two to nine runs, ascending, apart or touching, of 1 to 70
		// senders, at most maxColsStencil in all.
		runs = runs[:0]
		n, at := 0, int32(r.IntN(50))
		for range 2 + r.IntN(8) {
			size := int32(1 + r.IntN(70))
			if r.IntN(3) > 0 {
				size = int32(1 + r.IntN(10))
			}
			if n+int(size) > maxColsStencil || int(at+size) > senders {
				break
			}
			runs = append(runs, at, at+size, 0)
			n += int(size)
			at += size + int32(r.IntN(3)*r.IntN(40))
		}
		rcp := int32(r.IntN(int(at) + 1)) // in a run, between two, or past them
		cols.fill(runs, n, xs, ys, zs, keys)
		before := r.IntN(150)
		a, b := batchPair(records, senders, before, uint64(it))
		masks = a.writeCols(&k, &cols, runs, rcp, masks)
		for j := 0; j+2 < len(runs); j += 3 {
			lo, hi := runs[j], runs[j+1]
			b.writeDense(&k, xs[lo:hi], ys[lo:hi], zs[lo:hi], keys[lo:hi], lo, rcp, nil, bestDensePass)
		}
		require.Equal(t, b.count, a.count, "case %d: runs %v, recipient %d", it, runs, rcp)
		require.True(t, bytes.Equal(b.finish(), a.finish()), "case %d: runs %v, recipient %d, %d before", it, runs, rcp, before)
	}
}

// randomRecords returns n records of random bytes, with overrun bytes of
// room past them for the kernels' reads.
func randomRecords(r *rand.Rand, n, overrun int) []byte {
	records := make([]byte, n*wire.RecordSize, n*wire.RecordSize+overrun)
	for i := range records {
		records[i] = byte(r.Uint32())
	}
	return records
}

// randomSender returns a sender's position around k's recipient: at
// random, or, about one in odds each, not a number, at an infinity, or
// on one of k's band limits exactly (where a strict comparison would
// show).
func randomSender(r *rand.Rand, k *denseKernel, odds int) (x, y, z float32) {
	x, y, z = r.Float32()*8192-2048, r.Float32()*8192-2048, r.Float32()*100
	switch r.IntN(odds) {
	case 0:
		x = float32(math.NaN())
	case 1:
		y = float32(math.Inf(-1))
	case 3:
		x = float32(math.Inf(1))
	case 2:
		x, y, z = k.rx, k.ry, k.rz
		if l := k.limits; l > 0 {
			x += float32(math.Sqrt(float64(k.bands.limSq[r.IntN(int(l))][0])))
		}
	}
	return x, y, z
}

// plainBand returns the squared distance of a sender at x, y, z from k's
// recipient, and its band: the limits (of a table's, from the first band's
// end on) it has reached, counted one by one.
func plainBand(k *denseKernel, limits []float32, x, y, z float32) (d float32, band int) {
	dx, dy, dz := x-k.rx, y-k.ry, z-k.rz
	d = dx*dx + dy*dy + dz*dz
	for _, l := range limits {
		band += b2i(d >= l)
	}
	return d, band
}

// randomRun returns a run of senders (lo to hi, of senders) to write after
// before records already in the batch, and its recipient: in the run, or
// just before it.
func randomRun(r *rand.Rand, senders int) (before int, lo, hi, rcp int32) {
	before = r.IntN(200)
	lo = int32(r.IntN(senders))
	hi = lo + int32(r.IntN(int(senders-int(lo))+1))
	rcp = lo + int32(r.IntN(int(hi-lo)+1)) - 1
	return before, lo, hi, rcp
}

// batchPair returns two batches of records, each with the same first
// before records (of senders) in it and room for senders more: one for
// the writer under test, one for the way it is held to.
func batchPair(records []byte, senders, before int, tick uint64) (a, b batchOut) {
	room := (before+senders)/wire.MaxRecordsPerBatch*datagramSize + 2*datagramSize + denseOverrun
	a = newBatchOut(make([]byte, 0, room), records, tick)
	b = newBatchOut(make([]byte, 0, room), records, tick)
	for i := range before {
		a.one(int32(i % senders))
		b.one(int32(i % senders))
	}
	return a, b
}
