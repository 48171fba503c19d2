package scenario_test

import (
	"fmt"
	"time"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/wire"
)

// A town's relay work, split by region: the hub holds about 70%.
func ExampleTown() {
	p := scenario.Town(1000, 1)
	w := p.RelayWork()
	fmt.Printf("%d actors, %d relay decisions a tick without interest\n", len(p.Spawns), w.Total)
	for _, r := range []scenario.Region{scenario.RegionHub, scenario.RegionTown, scenario.RegionInterior} {
		fmt.Printf("%-9s %.1f%%\n", r, 100*w.Share(r))
	}
	// Output:
	// 1000 actors, 249482 relay decisions a tick without interest
	// hub       70.5%
	// town      23.0%
	// interior  6.4%
}

// A bot is admitted with its token, placed by the Welcome, then sends its
// updates as the limiter allows.
func ExampleBot() {
	p := scenario.Square(400, 1)
	entry, _ := p.Admit(wire.Hello{Token: scenario.Token(17)})
	spawn := entry.Spawn
	bot := scenario.NewBot(p.Spawns[17], scenario.WanderGait(), 17)
	bot.Welcome(wire.Welcome{X: spawn.X, Y: spawn.Y, WorldOrCell: spawn.WorldOrCell})

	var frame []byte
	sent := 0
	for range 30 { // one second at 30 Hz
		bot.Advance(time.Second / 30)
		var ok bool
		if frame, ok = bot.AppendDueMove(frame[:0]); ok {
			sent++
		}
	}
	fmt.Println(string(scenario.Token(17)), "sent", sent, "updates in its first second, walking:", bot.Moving())
	// Output:
	// bot-17 sent 30 updates in its first second, walking: true
}
