package wire_test

import (
	"fmt"

	"github.com/throng-go/throng/net/wire"
)

// The server encodes each sender's record once per tick into a flat buffer,
// then builds every recipient's batch by copying the chosen records.
func ExamplePutRecord() {
	senders := []wire.Record{
		{Actor: 1, X: 10, Y: 20, Yaw: 0},
		{Actor: 2, X: 30, Y: 40, Yaw: 3.14159},
		{Actor: 3, X: 50, Y: 60, Yaw: 1.5708},
	}
	records := make([]byte, len(senders)*wire.RecordSize)
	for i, s := range senders {
		wire.PutRecord(records[i*wire.RecordSize:], s)
	}

	// Recipient 1 sees senders 2 and 3.
	batch := wire.AppendBatchHeader(nil, 100, 0)
	n := 0
	for _, i := range []int{1, 2} {
		batch = append(batch, records[i*wire.RecordSize:(i+1)*wire.RecordSize]...)
		n++
	}
	wire.SetBatchCount(batch, n)
	fmt.Println("batch bytes:", len(batch))

	b, err := wire.DecodeBatch(batch)
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
	stream = append(stream, wire.AppendWelcome(nil, wire.Welcome{Actor: 7, TickRate: 30}))
	stream = append(stream, wire.AppendAppear(nil, wire.Appear{Actor: 8, X: 1, Y: 2}))
	stream = append(stream, wire.AppendRecord(wire.AppendBatchHeader(nil, 5, 1), wire.Record{Actor: 8, X: 3, Y: 4}))
	stream = append(stream, []byte{2, 0x10}) // a frame from another wire version

	var f wire.Frame
	for _, b := range stream {
		if err := wire.Decode(b, &f); err != nil {
			fmt.Println("dropped:", err)
			continue
		}
		switch f.Type {
		case wire.TypeWelcome:
			fmt.Printf("I am actor %d at %d Hz\n", f.Welcome.Actor, f.Welcome.TickRate)
		case wire.TypeAppear:
			fmt.Printf("actor %d appears at (%g, %g)\n", f.Appear.Actor, f.Appear.X, f.Appear.Y)
		case wire.TypeBatch:
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
	// dropped: wire: unsupported wire version
}

// Reliable frames travel behind a length prefix; the reader reassembles
// them however the stream's reads cut the bytes.
func ExampleStreamReader() {
	var stream []byte
	stream = wire.AppendStreamFrame(stream, wire.AppendDisappear(nil, wire.Disappear{Actor: 1}))
	stream = wire.AppendStreamFrame(stream, wire.AppendDisappear(nil, wire.Disappear{Actor: 2}))

	r := wire.NewStreamReader(0)
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
			d, _ := wire.DecodeDisappear(frame)
			fmt.Println("actor", d.Actor, "disappears")
		}
	}
	// Output:
	// actor 1 disappears
	// actor 2 disappears
}
