package throng_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

// Stock and Owner are the benchmark world's components of a game's own.
type Stock struct {
	Items [4]uint16
	Gold  uint32
}

type Owner struct {
	Guild, Player uint32
}

var benchSavedTypes = []save.Type{save.Plain[Stock]("bench.stock", 1), save.Plain[Owner]("bench.owner", 1)}

// savedWorld returns a server whose world holds n props, each with a
// Transform, an Animation, a Stock and an Owner, spread over about a
// hundred actors a chunk. The caller closes it.
func savedWorld(b *testing.B, n int) *throng.Server {
	srv, err := throng.New(throng.Options{SavedTypes: benchSavedTypes})
	require.NoError(b, err)
	w := srv.World()
	side := 1
	for side*side*100 < n {
		side++
	}
	chunk := w.ChunkSize()
	ids := make([]components.ActorID, n)
	for i := range n {
		c := i / 100
		x := (float32(c%side) + float32(i%10)/10) * chunk
		y := (float32(c/side) + float32(i/10%10)/10) * chunk
		ids[i] = w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: x, Y: y, Yaw: float32(i)}, Animation: components.Animation{Flags: uint16(i)}})
	}
	w.Apply(nil)
	stock := ark.NewMap[Stock](w.Ark())
	owner := ark.NewMap[Owner](w.Ark())
	for i, id := range ids {
		e, _ := w.Entity(id)
		stock.Add(e, &Stock{Items: [4]uint16{uint16(i), 1, 2, 3}, Gold: uint32(i)})
		owner.Add(e, &Owner{Guild: uint32(i % 97), Player: uint32(i)})
	}
	srv.Tick()
	return srv
}

// BenchmarkSave saves worlds of props: freeze-ms is the tick goroutine's
// pause (the copy of the columns, on the pool), write-MB/s the background
// write's rate (encoding, checksums, writing and fsync).
func BenchmarkSave(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("actors=%d", n), func(b *testing.B) {
			srv := savedWorld(b, n)
			b.Cleanup(func() { srv.Close() })
			dir := b.TempDir()
			// A first save sizes the buffers, as a running server's
			// earlier saves do.
			p, err := srv.Save(dir)
			require.NoError(b, err)
			_, err = p.Wait()
			require.NoError(b, err)
			var freeze, write time.Duration
			var bytes int64
			saves := 0
			for b.Loop() {
				p, err := srv.Save(dir)
				require.NoError(b, err)
				rep, err := p.Wait()
				require.NoError(b, err)
				freeze += rep.Freeze
				write += rep.Write
				bytes += rep.Bytes
				saves++
			}
			b.ReportMetric(float64(freeze)/float64(time.Millisecond)/float64(saves), "freeze-ms")
			b.ReportMetric(float64(bytes)/1e6/write.Seconds(), "write-MB/s")
			b.ReportMetric(float64(bytes)/float64(saves), "bytes/save")
		})
	}
}

// BenchmarkLoad starts servers from a save of a world of props: actors/s
// counts the actors read, checked and placed a second.
func BenchmarkLoad(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("actors=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			saving := savedWorld(b, n)
			p, err := saving.Save(dir)
			require.NoError(b, err)
			_, err = p.Wait()
			require.NoError(b, err)
			// A server loads as it starts, in a process that holds
			// nothing else yet: nothing refers to the saving server
			// once it is closed.
			saving.Close()
			var took time.Duration
			loads := 0
			for b.Loop() {
				runtime.GC()
				start := time.Now()
				srv, err := throng.New(throng.Options{LoadFrom: dir, SavedTypes: benchSavedTypes})
				took += time.Since(start)
				require.NoError(b, err)
				require.Equal(b, n, srv.World().Len())
				srv.Close()
				loads++
			}
			b.ReportMetric(float64(n*loads)/took.Seconds(), "actors/s")
		})
	}
}
