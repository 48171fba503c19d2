package interest_test

import (
	"fmt"

	"github.com/throng-go/throng/interest"
)

// The default interest table: full rate within 2048 units, then one step
// down per further 2048 units, capped at period 4.
func ExampleTiers() {
	tiers, err := interest.NewTiers(interest.DefaultSteps(2048, 4), 4)
	if err != nil {
		panic(err)
	}
	for _, d := range []float32{1000, 2048, 5000, 7000, 20000} {
		fmt.Printf("%5.0f units: period %d\n", d, tiers.PeriodSq(d*d))
	}
	// Output:
	//  1000 units: period 1
	//  2048 units: period 2
	//  5000 units: period 3
	//  7000 units: period 4
	// 20000 units: period 4
}

// Metre-based crowd tiers in a world of 70 units a metre.
func ExampleCrowdSteps() {
	const unitsPerMetre = 70
	tiers, err := interest.NewTiers(interest.CrowdSteps(unitsPerMetre), 10)
	if err != nil {
		panic(err)
	}
	for _, m := range []float32{40, 60, 100, 150} {
		d := m * unitsPerMetre
		fmt.Printf("%3.0f m: one update in %d ticks\n", m, tiers.PeriodSq(d*d))
	}
	// Output:
	//  40 m: one update in 1 ticks
	//  60 m: one update in 3 ticks
	// 100 m: one update in 5 ticks
	// 150 m: one update in 10 ticks
}

// The send rule: a pair with period 3 sends on exactly one tick of every
// three, on a tick set by its hashed phase.
func ExampleClock() {
	phase := interest.Phase(7, 42) // sender 7 -> recipient 42
	clock := interest.NewClock(0)
	for tick := uint64(0); tick < 9; tick++ {
		clock.Set(tick)
		if clock.Sends(phase, 3) {
			fmt.Print("X")
		} else {
			fmt.Print(".")
		}
	}
	fmt.Println()
	// The definition, with a division, agrees.
	for tick := uint64(0); tick < 9; tick++ {
		if interest.Sends(phase, tick, 3) {
			fmt.Print("X")
		} else {
			fmt.Print(".")
		}
	}
	fmt.Println()
	// Output:
	// .X..X..X.
	// .X..X..X.
}

// Interest and throttle periods combine by the larger, never the product.
func ExampleCombine() {
	fmt.Println(interest.Combine(4, 3))
	// Output: 4
}

// A cluster's pressure rises while its smoothed cost is over its share of
// the budget, and falls again a step at a time once the load is clearly gone:
// the smoothed cost needs three ticks to drop under 80% of the share, then
// each further three calm ticks lower the level by one.
func ExamplePressure() {
	rule := interest.PressureRule{MaxLevel: 2, ReleaseTicks: 3}
	var cost interest.EWMA
	var p interest.Pressure
	for _, us := range []float64{9000, 9000, 9000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000, 2000} {
		cost.Observe(us)
		fmt.Print(p.Update(rule, cost.Value(), 8000), " ")
	}
	fmt.Println()
	// Output: 1 2 2 2 2 2 2 1 1 1 0 0
}

// A recipient's datagram fits two records; four senders are due. The two
// that did not fit are owed and go out next tick.
func ExampleBacklog() {
	var b interest.Backlog
	var batch []uint32
	for _, s := range []uint32{11, 12, 13, 14} {
		b.Offer(s, 1, true)
	}
	batch = b.Take(2, batch[:0])
	fmt.Println(batch, "owed:", b.Owed())
	for _, s := range []uint32{11, 12, 13, 14} {
		b.Offer(s, 1, false) // in view, not due this tick
	}
	batch = b.Take(2, batch[:0])
	fmt.Println(batch, "owed:", b.Owed())
	// Output:
	// [11 12] owed: 2
	// [13 14] owed: 0
}
