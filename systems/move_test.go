package systems

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// BenchmarkMove is the Move phase alone, on one goroutine, for 1,000
// players walking in one chunk: each tick some cross a cell's border, which
// reorders the frame (its canonical order is by cell). us/move is Move's
// units a tick; the rest of the tick (ingest, prepare, the relay and join)
// runs outside it.
//
//	go test -run '^$' -bench BenchmarkMove ./systems
func BenchmarkMove(b *testing.B) {
	spawns := oneChunkCrowd(rand.New(rand.NewPCG(7, 8)), 1000)
	r := newRig(b, Config{Tiers: defaultTiers(b)}, spawns)
	rng := rand.New(rand.NewPCG(1, 2))
	pos := append(spawns[:0:0], spawns...)
	p := r.p
	var msg []byte
	var moving time.Duration
	ticks := 0
	for b.Loop() {
		for i := range pos {
			pos[i].X = min(max(pos[i].X+rng.Float32()*6-3, 1), 4095)
			pos[i].Y = min(max(pos[i].Y+rng.Float32()*6-3, 1), 4095)
			r.seq[i]++
			msg = wire.AppendMove(msg[:0], wire.Move{Seq: r.seq[i], X: pos[i].X, Y: pos[i].Y})
			require.NoError(b, r.clients[i].Send(msg))
		}
		r.tick++
		p.ingest(r.tick)
		p.prepare(&scheduler.Tick{Number: r.tick})
		p.world.Guard()
		start := time.Now()
		for i := range p.frame.shards {
			p.move.RunUnit(i)
		}
		moving += time.Since(start)
		ticks++
		p.world.Release()
		p.join(&scheduler.Tick{Number: r.tick})
		for _, c := range r.clients {
			c.DrainReliable(func([]byte) {})
		}
	}
	b.ReportMetric(float64(moving.Nanoseconds())/1e3/float64(ticks), "us/move")
	b.ReportMetric(float64(moving.Nanoseconds())/float64(ticks)/float64(len(spawns)), "ns/actor")
}
