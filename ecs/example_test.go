package ecs_test

import (
	"fmt"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

func ExampleWorld_Snapshot() {
	w := ecs.NewWorld(100)
	w.Spawn(ecs.ActorSpec{
		Transform: components.Transform{X: 10, Y: 20},
		Client:    components.Client{Session: 1},
	})
	w.Spawn(ecs.ActorSpec{ // a prop: no client
		Transform: components.Transform{X: 150, Y: -30},
	})

	var report ecs.ApplyReport
	w.Apply(&report)
	for _, c := range report.Changes {
		fmt.Printf("%v actor %d in chunk %+v\n", c.Kind, c.ID.ID, c.To)
	}

	// Views come ordered by chunk: worldOrCell, then Y, then X.
	for _, v := range w.Snapshot(nil) {
		for i := range v.Len() {
			t := v.Transforms[i]
			fmt.Printf("chunk %+v: actor %d at (%g, %g), session %d\n",
				v.Key, v.IDs[i].ID, t.X, t.Y, v.Clients[i].Session)
		}
	}
	// Output:
	// Spawned actor 1 in chunk {WorldOrCell:0 X:0 Y:0}
	// Spawned actor 2 in chunk {WorldOrCell:0 X:1 Y:-1}
	// chunk {WorldOrCell:0 X:1 Y:-1}: actor 2 at (150, -30), session 0
	// chunk {WorldOrCell:0 X:0 Y:0}: actor 1 at (10, 20), session 1
}
