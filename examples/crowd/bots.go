package main

import (
	"context"
	"time"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net"
)

// crowd is the bots' side of the example: one MemClient per bot, driven
// from one goroutine at the tick rate.
type crowd struct {
	bots     []*scenario.Bot
	clients  []*net.MemClient
	welcomed []bool
	frame    []byte
	decoded  net.Frame

	// Set by the drain callbacks for bot cur.
	cur        int
	onReliable func([]byte)
	onDatagram func([]byte)
	counts     botCounts
	refusedWhy string
}

// botCounts is what the bots sent and received over the run.
type botCounts struct {
	updates, datagrams, records, corrections, refused int64
}

// newCrowd connects one bot per actor of pop to mem: each dials and sends
// its Hello; the server admits them all on its next tick.
func newCrowd(mem *net.Mem, pop scenario.Population, seed uint64) (*crowd, error) {
	c := &crowd{
		bots:     pop.Bots(scenario.WanderGait(), seed),
		clients:  make([]*net.MemClient, len(pop.Spawns)),
		welcomed: make([]bool, len(pop.Spawns)),
	}
	c.onReliable = c.reliable
	c.onDatagram = c.datagram
	for i := range c.bots {
		c.clients[i] = mem.Dial()
		hello, err := net.AppendHello(c.frame[:0], net.Hello{Token: scenario.Token(i)})
		if err != nil {
			return nil, err
		}
		if err := c.clients[i].Send(hello); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// run steps every bot once a period until ctx is done.
func (c *crowd) run(ctx context.Context, period time.Duration) {
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
func (c *crowd) step(dt time.Duration) {
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
			continue
		}
		if c.clients[i].Send(c.frame) != nil {
			continue // the transport closed: the run is ending
		}
		c.counts.updates++
	}
}

func (c *crowd) reliable(frame []byte) {
	if net.Decode(frame, &c.decoded) != nil {
		return
	}
	b := c.bots[c.cur]
	switch c.decoded.Type {
	case net.TypeWelcome:
		b.Welcome(c.decoded.Welcome)
		c.welcomed[c.cur] = true
	case net.TypeCorrection:
		b.Correct(c.decoded.Correction)
		c.counts.corrections++
	case net.TypeRefuse:
		c.counts.refused++
		c.refusedWhy = string(c.decoded.Refuse.Reason)
	}
}

func (c *crowd) datagram(d []byte) {
	c.counts.datagrams++
	if batch, err := net.DecodeBatch(d); err == nil {
		c.counts.records += int64(batch.Len())
	}
}
