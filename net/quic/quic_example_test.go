package quic_test

import (
	"context"
	"fmt"
	"time"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/wire"
)

// A QUIC server in development mode and a client on loopback: the client's
// Hello reaches the server as a frame, the Welcome completes Dial, the
// client's move arrives as a datagram, and the reason of a disconnect
// reaches the client. A real server makes the same calls once per tick.
func ExampleListen() {
	srv, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	type dialed struct {
		c   *client.Client
		err error
	}
	result := make(chan dialed, 1)
	go func() {
		c, err := client.Dial(context.Background(), srv.Addr().String(),
			client.Config{Token: "ada", InsecureSkipVerify: true}) // development mode only
		result <- dialed{c, err}
	}()

	var inbox []wire.Inbound
	var d dialed
	for waiting := true; waiting; time.Sleep(time.Millisecond) {
		inbox = srv.Receive(inbox[:0]) // never blocks
		for _, in := range inbox {
			if h, err := wire.DecodeHello(in.Frame); in.Kind == wire.FrameReceived && err == nil {
				fmt.Printf("hello from %s\n", h.Token)
				srv.SendReliable(in.Session, wire.AppendWelcome(nil, wire.Welcome{Actor: 1, TickRate: 30}))
			}
		}
		select {
		case d = <-result:
			waiting = false
		default:
		}
	}
	if d.err != nil {
		fmt.Println(d.err)
		return
	}
	client := d.c
	defer client.Close()
	fmt.Println("welcomed as actor", client.Welcome().Actor)

	client.SendMove(wire.Move{Seq: 1, X: 10})
	for moved := false; !moved; time.Sleep(time.Millisecond) {
		inbox = srv.Receive(inbox[:0])
		for _, in := range inbox {
			if m, err := wire.DecodeMove(in.Frame); err == nil {
				fmt.Printf("move %d to x=%g\n", m.Seq, m.X)
				srv.Disconnect(in.Session, "example over")
				moved = true
			}
		}
	}
	<-client.Done()
	fmt.Println(client.Err())
	// Output:
	// hello from ada
	// welcomed as actor 1
	// move 1 to x=10
	// client: disconnected by the server: example over
}
