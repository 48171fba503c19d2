package save_test

import (
	"fmt"
	"testing"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

// Stock and Owner are the components of a game's own of freezeWorld, the
// root package's BenchmarkSave's.
type Stock struct {
	Items [4]uint16
	Gold  uint32
}

type Owner struct{ Guild, Player uint32 }

// freezeWorld returns a world of n actors without clients, about a
// hundred a chunk, each with a Stock and an Owner: BenchmarkSave's world,
// without a server.
func freezeWorld(n int) *ecs.World {
	w := ecs.NewWorld(64)
	side := 1
	for side*side*100 < n {
		side++
	}
	chunk := w.ChunkSize()
	for i := range n {
		c := i / 100
		x := (float32(c%side) + float32(i%10)/10) * chunk
		y := (float32(c/side) + float32(i/10%10)/10) * chunk
		w.Spawn(ecs.ActorSpec{
			Transform: components.Transform{X: x, Y: y, Yaw: float32(i)},
			Animation: components.Animation{Flags: uint16(i)},
			Init: func(aw *ark.World, e ark.Entity) {
				ark.NewMap[Stock](aw).Add(e, &Stock{Items: [4]uint16{uint16(i), 1, 2, 3}, Gold: uint32(i)})
				ark.NewMap[Owner](aw).Add(e, &Owner{Guild: uint32(i % 97), Player: uint32(i)})
			},
		})
	}
	w.Apply(nil)
	return w
}

// BenchmarkFreeze times the freeze alone, Begin and every CopyUnit on one
// goroutine, in steady state (after a first save sized the buffers): what
// the pool shares out in a server, without the pool's spread.
func BenchmarkFreeze(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("actors=%d", n), func(b *testing.B) {
			w := freezeWorld(n)
			s, err := save.NewSaver(w, []save.Type{save.Plain[Stock]("bench.stock", 1), save.Plain[Owner]("bench.owner", 1)})
			if err != nil {
				b.Fatal(err)
			}
			dir := b.TempDir()
			freeze := func() {
				units, err := s.Begin(1, save.Players{})
				if err != nil {
					b.Fatal(err)
				}
				for u := range units {
					s.CopyUnit(u)
				}
			}
			write := func() {
				if _, err := s.Write(dir, 1).Wait(); err != nil {
					b.Fatal(err)
				}
			}
			freeze()
			write()
			for b.Loop() {
				freeze()
				b.StopTimer()
				write()
				b.StartTimer()
			}
		})
	}
}
