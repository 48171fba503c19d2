package systems

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// TestEveryWriterThinsAlike: a batch writer thinning (batchOut.thin) keeps
// the same records, in the same datagrams, whichever of its writes is
// given the senders (a block of records, a list of senders, bit sets, one
// at a time, the dense walk): the bytes of a writer given only the kept
// records, unthinned. The nearest are kept whatever the rotation says; a
// batch whose last kept record fills a datagram, followed by dropped
// ones, opens no empty one.
func TestEveryWriterThinsAlike(t *testing.T) {
	const n, tick = 400, 7_000
	rng := rand.New(rand.NewPCG(5, 6))
	records := make([]byte, n*wire.RecordSize, n*wire.RecordSize+recordOverrun)
	ids := make([]uint32, n)
	for a := range n {
		ids[a] = rng.Uint32()
		rec := records[a*wire.RecordSize:]
		binary.LittleEndian.PutUint32(rec, ids[a])
		for i := 4; i < wire.RecordSize; i++ {
			rec[i] = byte(rng.Uint32())
		}
	}
	const rid, keep = 12345, 128
	var th thinFilter
	th.th = newThinner(rid, tick, keep)
	for a := 0; a < n; a += 40 { // the nearest: every 40th sender
		th.near = append(th.near, ids[a])
		th.mark.add(ids[a])
	}
	keeps := func(a int32) bool { return thinKept(ids[a], rid, tick, keep) || slices.Contains(th.near, ids[a]) }
	keptAll := func(senders []int32) []int32 {
		var kept []int32
		for _, a := range senders {
			if keeps(a) {
				kept = append(kept, a)
			}
		}
		return kept
	}
	all := make([]int32, n)
	for a := range all {
		all[a] = int32(a)
	}
	// Senders up to the datagram's worth kept, then five dropped.
	var upToFull []int32
	kept := 0
	for a := 0; kept < wire.MaxRecordsPerBatch; a++ {
		upToFull = append(upToFull, int32(a))
		kept += b2i(keeps(int32(a)))
	}
	for a, dropped := upToFull[len(upToFull)-1]+1, 0; dropped < 5; a++ {
		if !keeps(a) {
			upToFull = append(upToFull, a)
			dropped++
		}
	}
	kept = len(keptAll(all))
	require.Greater(t, kept, wire.MaxRecordsPerBatch*2, "the batch spans datagrams")
	require.Less(t, kept, n, "some are dropped")

	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	require.NoError(t, err)
	bands := bandsOf(&tiers)
	var masks []byte
	buf := func() []byte { return make([]byte, 0, (n/wire.MaxRecordsPerBatch+2)*datagramSize+denseOverrun) }
	want := func(senders []int32) []byte {
		w := newBatchOut(buf(), records, tick)
		w.write(keptAll(senders))
		return w.finish()
	}
	writers := map[string]func(w *batchOut, senders []int32){
		"block": func(w *batchOut, senders []int32) {
			// Consecutive senders as blocks of records, of 1 to 70.
			for i := 0; i < len(senders); {
				j := i + 1
				for j < len(senders) && j-i < 1+i%70 && senders[j] == senders[j-1]+1 {
					j++
				}
				w.block(records, senders[i], senders[j-1]+1)
				i = j
			}
		},
		"list": func(w *batchOut, senders []int32) {
			for i := 0; i < len(senders); i += 33 {
				w.write(senders[i:min(i+33, len(senders))])
			}
		},
		"bit sets": func(w *batchOut, senders []int32) {
			for i := 0; i < len(senders); {
				lo, set := senders[i], uint64(0)
				for ; i < len(senders) && senders[i]-lo < 64; i++ {
					set |= 1 << (senders[i] - lo)
				}
				w.writeSet(set, lo)
			}
		},
		"one by one": func(w *batchOut, senders []int32) {
			for _, a := range senders {
				w.one(a)
			}
		},
		"dense walk": func(w *batchOut, senders []int32) {
			// Every sender due (every key bit wanted, no cut), runs of
			// consecutive senders a call.
			for i := 0; i < len(senders); {
				j := i + 1
				for j < len(senders) && senders[j] == senders[j-1]+1 {
					j++
				}
				lo, hi := senders[i], senders[j-1]+1
				xs := padded([]float32(nil), int(hi-lo))
				keys := padded([]uint32(nil), int(hi-lo))
				for k := range keys {
					keys[k] = ^uint32(0)
				}
				k := denseKernel{bands: &bands, limits: int64(finiteLimits(&bands)), cut: float32(math.Inf(1)), lut: &widenLUT,
					want: [8]uint32{1, 1, 1, 1, 1, 1, 1, 1}}
				masks = w.writeDense(&k, xs, xs, xs, keys, lo, -1, masks, bestDensePass)
				i = j
			}
		},
	}
	for _, batch := range []struct {
		name    string
		senders []int32
	}{{"every sender", all}, {"to a full datagram, then dropped", upToFull}} {
		for name, write := range writers {
			t.Run(fmt.Sprintf("%s/%s", batch.name, name), func(t *testing.T) {
				w := newBatchOut(buf(), records, tick)
				w.thin = &th
				write(&w, batch.senders)
				w.thin = nil
				require.Equal(t, want(batch.senders), w.finish())
			})
		}
	}
}

// BenchmarkThinning thins blocks of due records as a recipient at ten
// thousand in a square does each tick: 39 records from the due lists (of
// 10,000), kept at 210/256, with twenty nearest.
//
//	go test -run '^$' -bench BenchmarkThinning ./systems
func BenchmarkThinning(b *testing.B) {
	const n, block = 10_000, 39
	rng := rand.New(rand.NewPCG(5, 6))
	records := make([]byte, n*wire.RecordSize, n*wire.RecordSize+recordOverrun)
	for a := range n {
		binary.LittleEndian.PutUint32(records[a*wire.RecordSize:], rng.Uint32())
	}
	var th thinFilter
	th.th = newThinner(12345, 7_000, 210)
	for range 20 {
		id := binary.LittleEndian.Uint32(records[rng.IntN(n)*wire.RecordSize:])
		th.near = append(th.near, id)
		th.mark.add(id)
	}
	buf := make([]byte, 0, 2*datagramSize)
	at, kept := 0, 0
	for b.Loop() {
		at = (at + 7919) % (n - block) // another recipient's residue: another block
		w := newBatchOut(buf, records, 7_000)
		w.thin = &th
		w.run(records[at*wire.RecordSize : (at+block)*wire.RecordSize])
		kept += int(w.count)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/block, "ns/record")
	b.ReportMetric(float64(kept)/float64(b.N), "kept")
}
