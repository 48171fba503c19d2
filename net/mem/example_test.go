package mem_test

import (
	"fmt"

	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// A handshake over the in-memory transport: the server turns the client
// away, and the client reads why.
func Example() {
	m := mem.New(mem.Options{})
	client := m.Dial()
	hello, _ := wire.AppendHello(nil, wire.Hello{Protocol: 1, Token: []byte("ann")})
	_ = client.Send(hello)

	for _, in := range m.Receive(nil) {
		switch in.Kind {
		case wire.SessionOpened:
			fmt.Println("session", in.Session, "opened")
		case wire.FrameReceived:
			h, err := wire.DecodeHello(in.Frame)
			if err != nil {
				m.Disconnect(in.Session, err.Error())
				continue
			}
			fmt.Printf("hello from %s\n", h.Token)
			m.SendReliable(in.Session, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("server busy, try again soon")}))
			m.Disconnect(in.Session, "server busy")
		}
	}

	client.DrainReliable(func(frame []byte) {
		r, _ := wire.DecodeRefuse(frame)
		fmt.Printf("refused (code %d): %s\n", r.Code, r.Reason)
	})
	reason, closed := client.CloseReason()
	fmt.Println("closed:", closed, reason)
	// Output:
	// session 1 opened
	// hello from ann
	// refused (code 1): server busy, try again soon
	// closed: true server busy
}
