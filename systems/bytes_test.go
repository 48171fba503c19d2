package systems

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
)

// TestDueBytesWriteLikeThePairs: a batch written by the dense walk from due
// bytes (denseDueBytes8 with AVX2, its Go loop, by every pass writeDense
// has) holds the same bytes as the records of the pairs whose band's byte
// of the sender's key equals the recipient's residue for the sender's rank
// and band, within the cut, one at a time: tables of one to four bands,
// senders of ranks 0 and 1 on a band's exact limit, at positions that are
// not numbers or are infinite, keys of 0xFF bytes (not changed within the
// period), runs of any length crossing datagrams, the recipient in the run
// or not.
func TestDueBytesWriteLikeThePairs(t *testing.T) {
	passes := densePasses()
	r := rand.New(rand.NewPCG(21, 22))
	const senders = 700
	records := randomRecords(rand.New(rand.NewPCG(5, 6)), senders, denseOverrun)
	xs, ys, zs := padded([]float32(nil), senders), padded([]float32(nil), senders), padded([]float32(nil), senders)
	keys, ranks := padded([]uint32(nil), senders), padded([]uint8(nil), senders)
	for it := range 3000 {
		tiers, err := interest.NewTiers(interest.DefaultSteps(float32(500+r.IntN(3000)), 1+r.IntN(4)), 16)
		require.NoError(t, err)
		bands := bandsOf(&tiers)
		lim, _ := tiers.Bands()
		nb := finiteLimits(&bands) + 1
		require.LessOrEqual(t, nb, byteBands)
		k := denseKernel{bands: &bands, limits: int64(nb - 1), cut: float32(math.Inf(1)), lut: &widenLUT, bytes: true}
		if it%3 == 0 {
			k.cut = float32(r.IntN(6000) * r.IntN(6000))
		}
		// The recipient's residues: one byte a band and rank, 0 past the
		// table's bands (where every key's byte is 0xFF).
		for rank := range 2 {
			for b := range nb {
				k.bwant[rank*byteBands+b] = uint32(r.IntN(4)) << (8 * b)
			}
		}
		k.rx, k.ry, k.rz = r.Float32()*4096, r.Float32()*4096, r.Float32()*50
		if it%50 == 7 {
			k.rx = float32(math.Inf(1))
		}
		for i := range cap(xs) {
			xs[:cap(xs)][i], ys[:cap(ys)][i], zs[:cap(zs)][i] = randomSender(r, &k, 40)
			ranks[:cap(ranks)][i] = uint8(r.IntN(2))
			var key uint32
			for b := range byteBands {
				v := uint32(r.IntN(4)) // a residue the recipient may want
				if b >= nb || r.IntN(5) == 0 {
					v = 0xFF // not changed within the band's period, or past the bands
				}
				key |= v << (8 * b)
			}
			keys[:cap(keys)][i] = key
		}
		before, lo, hi, rcp := randomRun(r, senders)
		a, b := batchPair(records, senders, before, uint64(it))
		for i := lo; i < hi; i++ {
			d, band := plainBand(&k, lim[1:], xs[i], ys[i], zs[i])
			band = min(band, byteBands-1)
			got, want := byte(keys[i]>>(8*band)), byte(k.bwant[int(ranks[i])*byteBands+band]>>(8*band))
			if i != rcp && got == want && d < k.cut {
				b.one(i)
			}
		}
		k.ranks = ranks[lo:hi:cap(ranks)]
		a.writeDense(&k, xs[lo:hi], ys[lo:hi], zs[lo:hi], keys[lo:hi], lo, rcp, nil, passes[it%len(passes)])
		want, got := b.finish(), a.finish()
		require.True(t, bytes.Equal(want, got), "case %d: %d before, senders %d to %d, recipient %d, %d bands", it, before, lo, hi, rcp, nb)
	}
}
