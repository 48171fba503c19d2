package throng_test

import (
	"fmt"
	"strings"

	"github.com/throng-go/throng"
)

func ExampleLoadOptions() {
	settings := `{
		"tickRate": 60,
		"parallelism": {
			"workerThreads": 8,
			"clusterSeparationChunks": 2,
			"metricsLogIntervalTicks": 600
		}
	}`
	opts, err := throng.LoadOptions(strings.NewReader(settings))
	if err != nil {
		fmt.Println(err)
		return
	}
	s, adjustments, err := opts.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range adjustments {
		fmt.Println("adjusted:", a)
	}
	p := s.Parallelism
	fmt.Println("tick:", s.TickRate, "Hz, every", s.TickPeriod())
	fmt.Println("chunk size:", s.ChunkSize, "(default)")
	fmt.Println("workers:", p.Workers(), "separation:", p.ClusterSeparationChunks)
	fmt.Println("offload from:", p.MinActorsToOffload, "actors (default)")
	// Output:
	// adjusted: parallelism.clusterSeparationChunks: 2 raised to 3 (closer clusters could share recipients)
	// tick: 60 Hz, every 16.666666ms
	// chunk size: 4096 (default)
	// workers: 8 separation: 3
	// offload from: 300 actors (default)
}

func ExampleLoadOptions_unknownKey() {
	_, err := throng.LoadOptions(strings.NewReader(`{"parallelism": {"workerThread": 8}}`))
	fmt.Println(err)
	// Output:
	// throng: options: parallelism.workerThread: unknown key (did you mean "parallelism.workerThreads"?)
}

func ExampleOptions() {
	// Pointer fields are set inline with new; nil means the default.
	opts := throng.Options{
		TickRate: new(120),
		Parallelism: throng.Parallelism{
			MinActorsToOffload: new(0), // always offload, unlike nil (300)
			InterestTiers:      throng.CrowdTiers(70),
			AdaptiveThrottling: new(false),
		},
	}
	s, _, err := opts.Resolve()
	if err != nil {
		fmt.Println(err)
		return
	}
	p := s.Parallelism
	fmt.Println(s.TickRate, p.MinActorsToOffload, p.AdaptiveThrottling, p.InterestManagement)
	for _, tier := range p.InterestTiers {
		fmt.Printf("from %v units: 1 in %d ticks\n", tier.BeyondUnits, tier.Period)
	}
	// Output:
	// 120 0 false true
	// from 4200 units: 1 in 3 ticks
	// from 7000 units: 1 in 5 ticks
	// from 9800 units: 1 in 10 ticks
}
