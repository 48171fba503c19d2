package interest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/throng-go/throng/interest"
)

// Squared distances of random pairs in a 3x3 stencil, so that every tier
// band (and every branch of the search) is exercised.
func pairDistances(n int) []float32 {
	r := rand.New(rand.NewPCG(11, 12))
	d := make([]float32, n)
	for i := range d {
		x, y := r.Float32()*12288-6144, r.Float32()*12288-6144
		d[i] = x*x + y*y
	}
	return d
}

func BenchmarkPeriodSq(b *testing.B) {
	tiers := defaultTiers(b)
	d := pairDistances(4096)
	var sum int
	for b.Loop() {
		for _, v := range d {
			sum += int(tiers.PeriodSq(v))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(d)), "ns/pair")
	_ = sum
}

func BenchmarkRatesPeriodSq(b *testing.B) {
	rates := rates3(b)
	d := pairDistances(4096)
	var sum int
	for b.Loop() {
		for _, v := range d {
			sum += int(rates.PeriodSq(v, 2))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(d)), "ns/pair")
	_ = sum
}

// The send rule over random phases and periods 2..16: the definition with
// `%` against the Clock's reciprocal form.
func BenchmarkSends(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	const n = 4096
	phases := make([]uint32, n)
	periods := make([]uint8, n)
	for i := range phases {
		phases[i], periods[i] = r.Uint32(), uint8(2+r.IntN(15))
	}
	const tick = 123456789
	b.Run("form=naive", func(b *testing.B) {
		sends := 0
		for b.Loop() {
			for i, ph := range phases {
				if interest.Sends(ph, tick, periods[i]) {
					sends++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pair")
	})
	b.Run("form=clock", func(b *testing.B) {
		clock := interest.NewClock(tick)
		sends := 0
		for b.Loop() {
			for i, ph := range phases {
				if clock.Sends(ph, periods[i]) {
					sends++
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/pair")
	})
}

func BenchmarkPhase(b *testing.B) {
	var sum uint32
	for b.Loop() {
		for s := uint32(0); s < 4096; s++ {
			sum += interest.Phase(s, 77)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4096), "ns/pair")
	_ = sum
}

// Once per tick, before the relay.
func BenchmarkClockSet(b *testing.B) {
	clock := interest.NewClock(0)
	tick := uint64(0)
	for b.Loop() {
		tick++
		clock.Set(tick)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/tick")
}

// One recipient, 400 senders in view, 100 records fit: the cut path.
func BenchmarkBacklogTake(b *testing.B) {
	var bl interest.Backlog
	batch := make([]uint32, 0, 400)
	tick := uint64(0)
	for b.Loop() {
		tick++
		for s := uint32(0); s < 400; s++ {
			bl.Offer(s*7919%400, uint8(1+s%4), (uint64(s)+tick)%4 != 0)
		}
		batch = bl.Take(100, batch[:0])
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*400), "ns/offer")
}
