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
// (-transport mem): one MemClient per bot, driven from one goroutine once
// a tick. It counts what it does in the fleet's terms, so the meter
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

	kick chan struct{} // a tick ended: step the bots (ticked)

	mu sync.Mutex // guards n: the meter reads it from the tick goroutine
	n  fleet.Totals
}

// newMemCrowd connects n bots of pop to mem, bot i with [scenario.Token](i):
// each dials and sends its Hello; the server admits them on its next ticks
// (a few a tick while a crowd arrives: admission.joinAppearsPerTick).
func newMemCrowd(mem *mem.Transport, pop scenario.Population, n int, seed uint64) (*memCrowd, error) {
	c := &memCrowd{mem: mem, pop: pop, seed: seed, kick: make(chan struct{}, 1)}
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

// run steps every bot once after each server tick (see ticked) until ctx
// is done, walking one tick period a step: the bots keep the server's
// time, as a client told a slowed rate does. Stepping in the gap after a
// tick, not on a clock of their own, keeps the bots off the cores while
// the tick runs: they stand in for clients on other machines, and on a
// two-core host a bot step that overlapped the tick's parallel phase
// would take one of its two cores and be counted as the server's work.
func (c *memCrowd) run(ctx context.Context, period time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
		c.step(period)
	}
}

// ticked tells run a tick has ended; called from the server's tick
// goroutine (the RunTicks callback), it never waits: a bot step still
// running when the next tick ends is followed by one step, not several.
func (c *memCrowd) ticked() {
	select {
	case c.kick <- struct{}{}:
	default:
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
