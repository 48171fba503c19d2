package main

import (
	"context"
	"sync"
	"time"

	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// memCrowd is the bots' side of the example on the in-memory transport
// (-transport mem): one MemClient per bot, driven from one goroutine at
// the tick rate. It counts what it does in the fleet's terms, so the meter
// reads both kinds of bots alike.
type memCrowd struct {
	mem      *mem.Transport
	pop      scenario.Population
	seed     uint64
	bots     []*scenario.Bot
	clients  []*mem.Client
	welcomed []bool
	frame    []byte
	decoded  wire.Frame

	// Set by the drain callbacks for bot cur.
	cur        int
	onReliable func([]byte)
	onDatagram func([]byte)

	mu sync.Mutex // guards n: the meter reads it from the tick goroutine
	n  fleet.Totals
}

// newMemCrowd connects n bots of pop to mem, bot i with [scenario.Token](i):
// each dials and sends its Hello; the server admits them on its next ticks
// (a few a tick while a crowd arrives: admission.joinAppearsPerTick).
func newMemCrowd(mem *mem.Transport, pop scenario.Population, n int, seed uint64) (*memCrowd, error) {
	c := &memCrowd{mem: mem, pop: pop, seed: seed}
	c.onReliable = c.reliable
	c.onDatagram = c.datagram
	if err := c.grow(n); err != nil {
		return nil, err
	}
	return c, nil
}

// grow connects bots until there are n (of pop's spawns at most).
func (c *memCrowd) grow(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.bots); i < min(n, len(c.pop.Spawns)); i++ {
		client := c.mem.Dial()
		hello, err := wire.AppendHello(c.frame[:0], wire.Hello{Token: scenario.Token(i)})
		if err != nil {
			return err
		}
		if err := client.Send(hello); err != nil {
			return err
		}
		c.bots = append(c.bots, c.pop.Bot(i, c.pop.BotGait(), c.seed))
		c.clients = append(c.clients, client)
		c.welcomed = append(c.welcomed, false)
	}
	return nil
}

// Grow is grow for the load test, which grows QUIC fleets alike: the
// Hellos are sent at once, and the server's ticks let the bots in, so the
// growth says nothing of who joined (Totals does).
func (c *memCrowd) Grow(_ context.Context, n int) fleet.Growth {
	if err := c.grow(n); err != nil {
		return fleet.Growth{Failure: err}
	}
	return fleet.Growth{}
}

// Totals returns what the bots did so far.
func (c *memCrowd) Totals() fleet.Totals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Close does nothing: the server's Close closes the in-memory transport
// and with it every client.
func (c *memCrowd) Close() error { return nil }

// run steps every bot once a period until ctx is done.
func (c *memCrowd) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.step(period)
	}
}

// step lets every bot read what the server sent it, walk dt, and send an
// update if its limiter allows one. Bots wait for their Welcome: the server
// drops updates sent before it.
func (c *memCrowd) step(dt time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, b := range c.bots {
		c.cur = i
		c.clients[i].DrainReliable(c.onReliable)
		c.clients[i].DrainDatagrams(c.onDatagram)
		if !c.welcomed[i] {
			continue
		}
		b.Advance(dt)
		var due bool
		if c.frame, due = b.AppendDueMove(c.frame[:0]); !due {
			c.n.MovesSkipped++
			continue
		}
		if c.clients[i].Send(c.frame) != nil {
			continue // the transport closed: the run is ending
		}
		c.n.MovesSent++
	}
}

func (c *memCrowd) reliable(frame []byte) {
	if wire.Decode(frame, &c.decoded) != nil {
		return
	}
	b := c.bots[c.cur]
	switch c.decoded.Type {
	case wire.TypeWelcome:
		b.Welcome(c.decoded.Welcome)
		c.welcomed[c.cur] = true
		c.n.Joined++
	case wire.TypeCorrection:
		b.Correct(c.decoded.Correction)
		c.n.Corrections++
	case wire.TypeRefuse:
		c.n.Refused++
		if c.n.Refusal == "" {
			c.n.Refusal = string(c.decoded.Refuse.Reason)
		}
	}
}

func (c *memCrowd) datagram(d []byte) {
	c.n.Datagrams++
	if batch, err := wire.DecodeBatch(d); err == nil {
		c.n.Records += uint64(batch.Len())
	}
}
