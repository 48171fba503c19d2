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
