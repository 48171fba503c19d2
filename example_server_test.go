package throng_test

import (
	"fmt"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// headcount is a user's serial system: after each join it counts the actors
// standing east of x = 0, with an Ark query of its own.
type headcount struct {
	filter *ark.Filter1[components.Transform]
	east   int
}

func (h *headcount) Name() string { return "headcount" }

func (h *headcount) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.Transform]())
}

func (h *headcount) RunSerial(*scheduler.Tick) {
	h.east = 0
	q := h.filter.Query()
	for q.Next() {
		if q.Get().X > 0 {
			h.east++
		}
	}
}

// A user's own system joins the tick at a named place.
func ExampleServer_AddSystem() {
	srv, err := throng.New(throng.Options{
		Admit: func(h wire.Hello) (throng.Entry, error) {
			return throng.Entry{Spawn: components.Transform{X: float32(len(h.Token)*100 - 300)}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	count := &headcount{filter: ark.NewFilter1[components.Transform](srv.World().Ark())}
	if err := srv.AddSystem(count, scheduler.After(systems.JoinName)); err != nil {
		panic(err)
	}
	for _, name := range []string{"al", "bea", "chris", "dominique"} {
		hello, _ := wire.AppendHello(nil, wire.Hello{Token: []byte(name)})
		srv.Mem().Dial().Send(hello)
	}
	srv.Tick()
	sched, _ := srv.Schedule()
	fmt.Println(sched.Stages())
	fmt.Println("actors east of 0:", count.east)
	// Output:
	// [[ingest] [prepare] [move] [relay] [join] [headcount]]
	// actors east of 0: 2
}

// Fatigue is a user's own component: how tired an actor is.
type Fatigue struct{ Level int }

// fatigue is a user's parallel system: each tick it raises the Fatigue of
// every actor whose move the server accepted this tick and lets the others
// rest. Plan, on the tick goroutine, takes the columns of the Ark tables
// holding both components and cuts them into units; RunUnit, on any core,
// walks its tables' rows. It reads MoveInput, which Move writes, and
// writes only Fatigue, so the scheduler runs it after Move, beside the
// relay.
type fatigue struct {
	filter *ark.Filter2[components.MoveInput, Fatigue]
	tick   uint64
	tables []fatigueTable
}

type fatigueTable struct {
	inputs  []components.MoveInput
	fatigue []Fatigue
}

func (f *fatigue) Name() string { return "fatigue" }

func (f *fatigue) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.MoveInput](), scheduler.Write[Fatigue]())
}

func (f *fatigue) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	f.tick = t.Number
	f.tables = f.tables[:0]
	q := f.filter.Query()
	for q.NextTable() {
		inputs, fatigue := q.GetColumns()
		f.tables = append(f.tables, fatigueTable{inputs, fatigue})
		units = append(units, scheduler.Unit{Cost: float64(len(inputs))})
	}
	return units
}

func (f *fatigue) RunUnit(i int) {
	tb := f.tables[i]
	for r := range tb.inputs {
		if tb.inputs[r].ChangedTick == f.tick {
			tb.fatigue[r].Level++
		} else if tb.fatigue[r].Level > 0 {
			tb.fatigue[r].Level--
		}
	}
}

// A user's parallel system declares what it reads and writes, and the
// scheduler places it where that allows: here in the relay's stage.
func ExampleServer_AddSystem_parallel() {
	srv, err := throng.New(throng.Options{
		Admit: func(wire.Hello) (throng.Entry, error) {
			return throng.Entry{Spawn: components.Transform{X: 10, Y: 10}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	world := srv.World().Ark()
	tired := &fatigue{filter: ark.NewFilter2[components.MoveInput, Fatigue](world)}
	// After Move, whose MoveInput it reads, and before the join, which
	// changes the tables: the stage between holds the relay.
	if err := srv.AddSystem(tired, scheduler.After(systems.MoveName), scheduler.Before(systems.JoinName)); err != nil {
		panic(err)
	}
	runner, sitter := srv.Mem().Dial(), srv.Mem().Dial()
	for i, c := range []*mem.Client{runner, sitter} {
		hello, _ := wire.AppendHello(nil, wire.Hello{Token: []byte{'a' + byte(i)}})
		c.Send(hello)
	}
	srv.Tick() // both join

	// Give every actor a Fatigue, between ticks (a structural change).
	give := ark.NewMap[Fatigue](world)
	var actors []ark.Entity
	q := ark.NewFilter1[components.ActorID](world).Without(ark.C[Fatigue]()).Query()
	for q.Next() {
		actors = append(actors, q.Entity())
	}
	for _, e := range actors {
		give.Add(e, &Fatigue{})
	}

	for seq := range uint32(3) { // the runner runs three ticks, the sitter sits
		runner.Send(wire.AppendMove(nil, wire.Move{Seq: seq + 1, X: 10 + float32(seq+1), Y: 10}))
		srv.Tick()
	}
	srv.Tick() // and both rest one

	sched, _ := srv.Schedule()
	fmt.Println(sched.Stages())
	levels := ark.NewFilter2[components.Client, Fatigue](world).Query()
	for levels.Next() {
		client, f := levels.Get()
		fmt.Printf("session %d: fatigue %d\n", client.Session, f.Level)
	}
	// Output:
	// [[ingest] [prepare] [move] [relay fatigue] [join]]
	// session 1: fatigue 2
	// session 2: fatigue 0
}
