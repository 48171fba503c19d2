package ecs_test

import (
	"math/rand/v2"
	"testing"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// BenchmarkSnapshotWorld measures the prepare phase's snapshot on the
// "world" scenario: 10,000 actors spread over 64 x 64 chunks.
func BenchmarkSnapshotWorld(b *testing.B) {
	w := ecs.NewWorld(grid.DefaultChunkSize)
	rng := rand.New(rand.NewPCG(1, 2))
	const side = 64 * grid.DefaultChunkSize
	for range 10_000 {
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: rng.Float32() * side, Y: rng.Float32() * side}})
	}
	w.Apply(nil)
	views := w.Snapshot(nil)
	b.ReportAllocs()
	for b.Loop() {
		views = w.Snapshot(views)
	}
	b.ReportMetric(float64(len(views)), "views")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/snapshot")
}
