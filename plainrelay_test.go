package throng_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// plainActor is one actor as the plain relay reads it.
type plainActor struct {
	id      uint32
	key     grid.AreaKey // its chunk at the start of the tick
	pos     [3]float32   // where it stands after this tick's moves
	changed uint64       // the tick of its last accepted update; 0: none yet
	record  [wire.RecordSize]byte
}

// plainRelay is the relay's rule written the straightforward way, with
// none of the server's blocks, lists or vector kernels: for every recipient
// and every sender, the stencil, the distance's period from the tier table
// and the pair's phase, each computed afresh, and the record of each
// sender due appended to the recipient's datagrams (a new one every
// MaxRecordsPerBatch records). It is the oracle the server's relay is held
// to (relayMatchesBruteForce) and the baseline its speed is measured
// against (BenchmarkPlainRelay). batches[r] is reused.
func plainRelay(actors []plainActor, tiers *interest.Tiers, tick uint64, batches [][]byte) [][]byte {
	if len(batches) < len(actors) {
		batches = append(batches, make([][]byte, len(actors)-len(batches))...)
	}
	batches = batches[:len(actors)]
	for r := range actors {
		rec := &actors[r]
		b := batches[r][:0]
		head, count := -1, 0
		for s := range actors {
			snd := &actors[s]
			if s == r || snd.changed == 0 || !grid.Visible(rec.key, snd.key) {
				continue
			}
			dx, dy, dz := snd.pos[0]-rec.pos[0], snd.pos[1]-rec.pos[1], snd.pos[2]-rec.pos[2]
			period := tiers.PeriodSq(dx*dx + dy*dy + dz*dz)
			if snd.changed+uint64(period) <= tick || !interest.Sends(interest.Phase(snd.id, rec.id), tick, period) {
				continue
			}
			if head < 0 || count == wire.MaxRecordsPerBatch {
				if head >= 0 {
					wire.SetBatchCount(b[head:], count)
				}
				head, count = len(b), 0
				b = wire.AppendBatchHeader(b, uint32(tick), 0)
			}
			b = append(b, snd.record[:]...)
			count++
		}
		if head >= 0 {
			wire.SetBatchCount(b[head:], count)
		}
		batches[r] = b
	}
	return batches
}

// plainSenders returns the actor ids in a recipient's plain batches.
func plainSenders(tb testing.TB, b []byte) map[uint32]int {
	got := map[uint32]int{}
	for len(b) > 0 {
		count := int(binary.LittleEndian.Uint16(b[wire.BatchHeaderSize-2:]))
		size := wire.BatchHeaderSize + count*wire.RecordSize
		batch, err := wire.DecodeBatch(b[:size])
		require.NoError(tb, err)
		for i := range batch.Len() {
			got[batch.At(i).Actor] = 1
		}
		b = b[size:]
	}
	return got
}

// serverTiers is the tier table a server with settings par relays by.
func serverTiers(tb testing.TB, par throng.ParallelSettings) interest.Tiers {
	steps := make([]interest.Step, len(par.InterestTiers))
	for i, t := range par.InterestTiers {
		steps[i] = interest.Step{BeyondUnits: t.BeyondUnits, Period: uint8(t.Period)}
	}
	tiers, err := interest.NewTiers(steps, par.MaxInterestSkipTicks)
	require.NoError(tb, err)
	return tiers
}

// BenchmarkPlainRelay is plainRelay on the state of a BenchmarkTick crowd
// after its warm-up: every recipient's batches from every pair, one op a
// tick. Run it beside BenchmarkTick in one run to compare:
//
//	go test -run '^$' -bench 'Benchmark(PlainRelay|Tick)/scenario=square/players=400/' -benchtime 100x .
func BenchmarkPlainRelay(b *testing.B) {
	for _, n := range []int{400, 1000} {
		b.Run(fmt.Sprintf("scenario=square/players=%d", n), func(b *testing.B) {
			c := newBenchCrowd(b, "square", n, modeNamed("inline+interest"))
			tiers := serverTiers(b, c.srv.Settings().Parallelism)
			w := c.srv.World()
			tick := c.srv.Stats().Tick
			var actors []plainActor
			for _, v := range w.Snapshot(nil) {
				for i := range v.Len() {
					t := v.Transforms[i]
					a := plainActor{id: v.IDs[i].ID, key: v.Key, pos: [3]float32{t.X, t.Y, t.Z}, changed: v.Inputs[i].ChangedTick}
					wire.PutRecord(a.record[:], wire.Record{Actor: a.id, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, Flags: v.Animations[i].Flags})
					actors = append(actors, a)
				}
			}
			var batches [][]byte
			records := 0
			for b.Loop() {
				batches = plainRelay(actors, &tiers, tick, batches)
			}
			for _, bt := range batches {
				records += len(plainSenders(b, bt))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/tick")
			b.ReportMetric(float64(records), "relays/tick")
		})
	}
}
