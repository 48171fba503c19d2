package scheduler_test

import (
	"fmt"

	"github.com/throng-go/throng/scheduler"
)

// Stamina is a user's component. In a server it lives in the Ark world; the
// scheduler only needs its type, to know who touches it.
type Stamina struct{ Points int }

// Regen is a user's parallel system: it restores stamina in blocks of
// regenBlock actors, one work unit per block.
type Regen struct {
	stamina []Stamina // stands in for an Ark query's column
	gain    int
}

const regenBlock = 256

func (r *Regen) Name() string { return "Regen" }

func (r *Regen) Access() scheduler.Access { return scheduler.Uses(scheduler.Write[Stamina]()) }

func (r *Regen) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	for lo := 0; lo < len(r.stamina); lo += regenBlock {
		n := min(regenBlock, len(r.stamina)-lo)
		units = append(units, scheduler.Unit{Key: uint64(lo/regenBlock) + 1, Cost: float64(n)})
	}
	return units
}

func (r *Regen) RunUnit(i int) {
	block := r.stamina[i*regenBlock : min((i+1)*regenBlock, len(r.stamina))]
	for k := range block {
		block[k].Points = min(block[k].Points+r.gain, 100)
	}
}

// Tired is a user's serial system: it reports who is below half stamina.
type Tired struct{ stamina []Stamina }

func (s *Tired) Name() string { return "Tired" }

func (s *Tired) Access() scheduler.Access { return scheduler.Uses(scheduler.Read[Stamina]()) }

func (s *Tired) RunSerial(t *scheduler.Tick) {
	tired := 0
	for _, st := range s.stamina {
		if st.Points < 50 {
			tired++
		}
	}
	fmt.Printf("tick %d: %d tired\n", t.Number, tired)
}

func Example() {
	stamina := make([]Stamina, 1000)
	for i := range stamina {
		stamina[i].Points = i % 100
	}

	// Register the systems (Tired reads what Regen writes, so it runs
	// after it; the pin only makes that explicit) and build the schedule
	// once.
	sched, err := scheduler.NewBuilder().
		Add(&Regen{stamina: stamina, gain: 10}).
		Add(&Tired{stamina: stamina}, scheduler.After("Regen")).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(sched)

	// Run it every tick on a pool sized to the machine.
	pool := scheduler.NewPool(0)
	defer pool.Close()
	for n := range uint64(3) {
		stats := sched.Run(pool, &scheduler.Tick{Number: n})
		fmt.Printf("tick %d: %d units\n", n, stats.Units)
	}
	// Output:
	// stage 0
	//   Regen (parallel): writes scheduler_test.Stamina
	// stage 1
	//   Tired (serial): reads scheduler_test.Stamina
	//     pinned after Regen
	// tick 0: 400 tired
	// tick 0: 4 units
	// tick 1: 300 tired
	// tick 1: 4 units
	// tick 2: 200 tired
	// tick 2: 4 units
}

// Ranks is a user's parallel system whose units need a pass of its own
// first: each unit numbers the exhausted actors of its block (0 stamina)
// in actor order, so it must know how many the blocks before it hold.
// Plan counts them per block on the pool, sums the counts, and returns
// the numbering units.
type Ranks struct {
	stamina []Stamina
	rank    []int // per actor: its number among the exhausted, or -1
	count   []int // per block: its exhausted actors
	first   []int // per block: the number of its first exhausted actor
	counter scheduler.Job
}

func (r *Ranks) Name() string { return "Ranks" }

func (r *Ranks) Access() scheduler.Access { return scheduler.Uses(scheduler.Read[Stamina]()) }

func (r *Ranks) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	for lo := 0; lo < len(r.stamina); lo += regenBlock {
		units = append(units, scheduler.Unit{Key: uint64(lo/regenBlock) + 1, Cost: regenBlock})
	}
	t.Parallel(r.counter, units) // on the pool, done when it returns
	at := 0
	for b, n := range r.count {
		r.first[b] = at
		at += n
	}
	return units
}

func (r *Ranks) block(i int) []Stamina {
	return r.stamina[i*regenBlock : min((i+1)*regenBlock, len(r.stamina))]
}

func (r *Ranks) RunUnit(i int) {
	next := r.first[i]
	for k, st := range r.block(i) {
		r.rank[i*regenBlock+k] = -1
		if st.Points == 0 {
			r.rank[i*regenBlock+k] = next
			next++
		}
	}
}

// countExhausted is Ranks' first pass: unit i counts block i.
type countExhausted struct{ r *Ranks }

func (c countExhausted) RunUnit(i int) {
	n := 0
	for _, st := range c.r.block(i) {
		if st.Points == 0 {
			n++
		}
	}
	c.r.count[i] = n
}

func ExampleTick_Parallel() {
	stamina := make([]Stamina, 1000)
	for i := range stamina {
		stamina[i].Points = i % 100
	}
	blocks := (len(stamina) + regenBlock - 1) / regenBlock
	ranks := &Ranks{stamina: stamina, rank: make([]int, len(stamina)), count: make([]int, blocks), first: make([]int, blocks)}
	ranks.counter = countExhausted{ranks}
	sched, err := scheduler.NewBuilder().Add(ranks).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	pool := scheduler.NewPool(0)
	defer pool.Close()
	stats := sched.Run(pool, &scheduler.Tick{})
	fmt.Println("units, the pass's included:", stats.Units)
	fmt.Println("actor 900 is exhausted number", ranks.rank[900], "of", ranks.first[blocks-1]+ranks.count[blocks-1])
	// Output:
	// units, the pass's included: 8
	// actor 900 is exhausted number 9 of 10
}
