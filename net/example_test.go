package net_test

import (
	"fmt"

	"github.com/throng-go/throng/net"
)

// The server encodes each sender's record once per tick into a flat buffer,
// then builds every recipient's batch by copying the chosen records.
func ExamplePutRecord() {
	senders := []net.Record{
		{Actor: 1, X: 10, Y: 20, Yaw: 0},
		{Actor: 2, X: 30, Y: 40, Yaw: 3.14159},
		{Actor: 3, X: 50, Y: 60, Yaw: 1.5708},
	}
	records := make([]byte, len(senders)*net.RecordSize)
	for i, s := range senders {
		net.PutRecord(records[i*net.RecordSize:], s)
	}

	// Recipient 1 sees senders 2 and 3.
	batch := net.AppendBatchHeader(nil, 100, 0)
	n := 0
	for _, i := range []int{1, 2} {
		batch = append(batch, records[i*net.RecordSize:(i+1)*net.RecordSize]...)
		n++
	}
	net.SetBatchCount(batch, n)
	fmt.Println("batch bytes:", len(batch))

	b, err := net.DecodeBatch(batch)
	if err != nil {
		panic(err)
	}
	for i := range b.Len() {
		r := b.At(i)
		fmt.Printf("tick %d actor %d at (%g, %g) yaw %.4f\n", b.Tick, r.Actor, r.X, r.Y, r.Yaw)
	}
	// Output:
	// batch bytes: 48
	// tick 100 actor 2 at (30, 40) yaw 3.1416
	// tick 100 actor 3 at (50, 60) yaw 1.5708
}

// A client decodes whatever arrives into one reused Frame and switches on
// its type.
func ExampleDecode() {
	var stream [][]byte
	stream = append(stream, net.AppendWelcome(nil, net.Welcome{Actor: 7, TickRate: 30}))
	stream = append(stream, net.AppendAppear(nil, net.Appear{Actor: 8, X: 1, Y: 2}))
	stream = append(stream, net.AppendRecord(net.AppendBatchHeader(nil, 5, 1), net.Record{Actor: 8, X: 3, Y: 4}))
	stream = append(stream, []byte{2, 0x10}) // a frame from another wire version

	var f net.Frame
	for _, b := range stream {
		if err := net.Decode(b, &f); err != nil {
			fmt.Println("dropped:", err)
			continue
		}
		switch f.Type {
		case net.TypeWelcome:
			fmt.Printf("I am actor %d at %d Hz\n", f.Welcome.Actor, f.Welcome.TickRate)
		case net.TypeAppear:
			fmt.Printf("actor %d appears at (%g, %g)\n", f.Appear.Actor, f.Appear.X, f.Appear.Y)
		case net.TypeBatch:
			for i := range f.Batch.Len() {
				r := f.Batch.At(i)
				fmt.Printf("tick %d: actor %d moves to (%g, %g)\n", f.Batch.Tick, r.Actor, r.X, r.Y)
			}
		}
	}
	// Output:
	// I am actor 7 at 30 Hz
	// actor 8 appears at (1, 2)
	// tick 5: actor 8 moves to (3, 4)
	// dropped: net: unsupported wire version
}

// A handshake over the in-memory transport: the server turns the client
// away, and the client reads why.
func ExampleMem() {
	m := net.NewMem(net.MemOptions{})
	client := m.Dial()
	hello, _ := net.AppendHello(nil, net.Hello{Protocol: 1, Token: []byte("ann")})
	_ = client.Send(hello)

	for _, in := range m.Receive(nil) {
		switch in.Kind {
		case net.SessionOpened:
			fmt.Println("session", in.Session, "opened")
		case net.FrameReceived:
			h, err := net.DecodeHello(in.Frame)
			if err != nil {
				m.Disconnect(in.Session, err.Error())
				continue
			}
			fmt.Printf("hello from %s\n", h.Token)
			m.SendReliable(in.Session, net.AppendRefuse(nil, net.Refuse{Code: net.RefuseBusy, Reason: []byte("server busy, try again soon")}))
			m.Disconnect(in.Session, "server busy")
		}
	}

	client.DrainReliable(func(frame []byte) {
		r, _ := net.DecodeRefuse(frame)
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

// Reliable frames travel behind a length prefix; the reader reassembles
// them however the stream's reads cut the bytes.
func ExampleStreamReader() {
	var stream []byte
	stream = net.AppendStreamFrame(stream, net.AppendDisappear(nil, net.Disappear{Actor: 1}))
	stream = net.AppendStreamFrame(stream, net.AppendDisappear(nil, net.Disappear{Actor: 2}))

	r := net.NewStreamReader(0)
	for _, read := range [][]byte{stream[:3], stream[3:11], stream[11:]} {
		r.Feed(read)
		for {
			frame, err := r.Next()
			if err != nil {
				panic(err)
			}
			if frame == nil {
				break
			}
			d, _ := net.DecodeDisappear(frame)
			fmt.Println("actor", d.Actor, "disappears")
		}
	}
	// Output:
	// actor 1 disappears
	// actor 2 disappears
}
