package systems

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// BenchmarkMove is the Move phase alone, on one goroutine, for 1,000 and
// for 8,000 players walking in one chunk: each tick some cross a cell's
// border, which reorders the frame (its canonical order is by cell), and
// at 8,000 a table's rows no longer fit the nearer caches. us/move is Move's
// units a tick; the rest of the tick (ingest, prepare, the relay and join)
// runs outside it.
//
//	go test -run '^$' -bench BenchmarkMove ./systems
func BenchmarkMove(b *testing.B) {
	for _, n := range []int{1000, 8000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchmarkMove(b, n) })
	}
}

func benchmarkMove(b *testing.B, n int) {
	spawns := oneChunkCrowd(rand.New(rand.NewPCG(7, 8)), n)
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

// TestValidateTakesAClientsPlaceWhereTheServerLostIt: an update with a
// number that is not finite, or into another worldOrCell, is refused; a
// step of a chunk is refused from a place, but an actor whose Transform a
// system left not finite takes its client's finite update as its place.
func TestValidateTakesAClientsPlaceWhereTheServerLostIt(t *testing.T) {
	nan := float32(math.NaN())
	at := components.Transform{X: 100, Y: 100}
	lost := components.Transform{X: nan, Y: 100}
	far := components.MoveInput{X: 100 + 5000, Y: 100}
	assert.Equal(t, RejectTooFar, validate(&at, &far, 4096))
	assert.Equal(t, Accepted, validate(&lost, &far, 4096), "no place to step from: the client's is taken")
	assert.Equal(t, RejectNotFinite, validate(&lost, &components.MoveInput{X: nan, Y: 100}, 4096))
	assert.Equal(t, RejectWorldChange, validate(&lost, &components.MoveInput{X: 1, Y: 1, WorldOrCell: 2}, 4096))
}

// TestPhasesFollowTheirActors: every actor's phase in the frame (its
// sender half, residues and due key) is the one its id and phase key
// give, tick after tick, while the crowd walks across cells (shifting
// the canonical indices of everyone between), players leave (Ark moves a
// table's last row into the gap), and the game gives an actor a phase of
// its own.
func TestPhasesFollowTheirActors(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	spawns := make([]components.Transform, 300)
	for i := range spawns {
		spawns[i] = components.Transform{X: rng.Float32() * 4096, Y: rng.Float32() * 4096}
	}
	cfg := Config{Tiers: defaultTiers(t)}
	r := newRig(t, cfg, spawns)
	p := r.p
	left := map[int]bool{}
	checked, shifted := 0, 0
	var lastID []uint32
	r.afterRelay = func() {
		f := &p.frame
		for a := range f.Len() {
			v := &f.views[f.view[a]]
			key := components.PhaseKey(v.IDs[f.row[a]], v.Clients[f.row[a]])
			half := interest.SenderHalf(key)
			res := interest.HalfResidues(half)
			require.Equal(t, half, f.half[a], "actor %d", f.id[a])
			require.Equal(t, res, f.res[a], "actor %d", f.id[a])
			want := p.dense.dueKey(p.dense.resKey(f.due.tierPeriods, &res), v.Inputs[f.row[a]].ChangedTick, f.Tick)
			require.Equal(t, want, f.dueKey[a], "actor %d", f.id[a])
			if a < len(lastID) && lastID[a] != f.id[a] {
				shifted++
			}
			checked++
		}
		lastID = append(lastID[:0], f.id...)
	}
	for tick := range 60 {
		for i, c := range r.clients {
			if left[i] {
				continue
			}
			r.seq[i]++
			s := &r.spawns[i]
			s.X = min(max(s.X+rng.Float32()*600-300, 1), 4095)
			s.Y = min(max(s.Y+rng.Float32()*600-300, 1), 4095)
			require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: s.X, Y: s.Y})))
		}
		switch {
		case tick%10 == 3: // a few leave
			for range 5 {
				i := rng.IntN(len(r.clients))
				if !left[i] {
					r.clients[i].Close()
					left[i] = true
				}
			}
		case tick%10 == 7: // the game gives a few actors phases of their own
			f := &p.frame
			for range 5 {
				a := rng.IntN(f.Len())
				e := f.views[f.view[a]].Entities[f.row[a]]
				p.clients.Get(e).Phase = rng.Uint32() | 1
			}
		}
		r.step()
	}
	require.Greater(t, checked, 10_000)
	require.Greater(t, shifted, 1_000, "the crowd's indices changed hands")
}
