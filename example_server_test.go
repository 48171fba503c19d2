package throng_test

import (
	"fmt"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net"
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
		Admit: func(h net.Hello) (components.Transform, error) {
			return components.Transform{X: float32(len(h.Token)*100 - 300)}, nil
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
		hello, _ := net.AppendHello(nil, net.Hello{Token: []byte(name)})
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
