package throng

import (
	"testing"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

// BenchmarkSpectatorFrame builds the spectator's frame of a world of
// 10,000 actors over 64 x 64 chunks: the work a spectator adds to the
// tick goroutine, framesPerSecond times a second.
func BenchmarkSpectatorFrame(b *testing.B) {
	s, err := New(Options{Debug: Debug{Listen: "127.0.0.1:0"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := s.World()
	chunk := w.ChunkSize()
	for i := range 10_000 {
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i%64)*chunk + float32(i%7)*100, Y: float32(i/64%64)*chunk + float32(i%5)*100}})
	}
	w.Apply(nil)
	s.Tick()
	s.sendFrame()
	b.ReportAllocs()
	for b.Loop() {
		s.sendFrame()
	}
	b.ReportMetric(float64(len(s.spect.buf)), "bytes/frame")
}
