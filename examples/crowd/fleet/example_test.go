package fleet_test

import (
	"context"
	"fmt"
	"time"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
)

// Three bots join a development server on loopback, walk the square for
// half a second and hear each other; nobody is corrected.
func ExampleFleet() {
	pop := scenario.Square(3, 1)
	q, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true})
	if err != nil {
		panic(err)
	}
	srv, err := throng.New(throng.Options{Transport: q, Admit: pop.AdmitAny})
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Run(ctx) }()

	bots, err := fleet.Start(fleet.Config{
		Addr:       q.Addr().String(),
		Population: pop,
		Client:     client.Config{InsecureSkipVerify: true}, // the development certificate
	})
	if err != nil {
		panic(err)
	}
	g := bots.Grow(context.Background(), 3)
	fmt.Println("joined:", g.Joined, "error:", g.Err())
	time.Sleep(500 * time.Millisecond)
	bots.Close()
	stop()
	<-served

	t := bots.Totals()
	fmt.Println("heard each other:", t.Records > 0, "corrections:", t.Corrections)
	// Output:
	// joined: 3 error: <nil>
	// heard each other: true corrections: 0
}
