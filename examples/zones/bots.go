package main

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/systems"
)

// bots are the example's players: scenario bots on the gateway's
// in-memory front, stepped together at the tick rate from one goroutine.
// A bot welcomed again (its actor handed to another zone's server) takes
// the Welcome as its new place and walks on.
type bots struct {
	front   *mem.Transport
	pop     scenario.Population
	seed    uint64
	rate    int     // bots that connect a second
	owed    float64 // bots due to connect, not yet connected
	bots    []*scenario.Bot
	clients []*mem.Client
	frame   []byte
	decoded wire.Frame
	// welcomed[i]: bot i has had its first Welcome. cur is the bot whose
	// frames the drain callbacks (onReliable, onDatagram) are handed.
	welcomed               []bool
	retryAt                []time.Duration // a bot turned away as busy dials again then (0: no)
	rejoining              []bool          // a bot dialling again after its zone's server stopped
	dialledAt              []time.Duration // when each bot last dialled
	clock                  time.Duration   // time stepped so far
	cur                    int
	onReliable, onDatagram func([]byte)

	mu sync.Mutex
	n  botCounts
}

// botCounts is what the bots did so far.
type botCounts struct {
	// Joined counts first Welcomes; Welcomes those after, one per switch
	// of zone servers.
	Joined, Welcomes, Refused, Closed int
	Retries                           int // dials again after a busy refusal or a lost zone
	ZoneGone                          int // disconnects because a zone's server stopped
	Rejoined                          int // welcomed again after one
	MovesSent, Records, Corrections   uint64
	Refusal                           string // the first refusal's reason
}

// yieldEvery is how many bots a step runs between yields of the
// processor (see step).
const yieldEvery = 256

// welcomeWait is how long a bot waits for its Welcome before it dials
// again: long, because a server admits a join storm at a bounded rate
// and a Hello may wait in its line for many seconds (dialling again
// would lose the place); a zone server that is not there is told by the
// gateway sooner (gateway.ZoneGone, after its ZoneTimeout).
const welcomeWait = 60 * time.Second

// newBots returns the bots of pop, not connected yet: they connect at
// rate a second once run starts, each sending its Hello.
func newBots(front *mem.Transport, pop scenario.Population, seed uint64, rate int) *bots {
	b := &bots{front: front, pop: pop, seed: seed, rate: rate}
	b.onReliable, b.onDatagram = b.reliable, b.datagram
	return b
}

// connect dials the bots due to connect by now.
func (b *bots) connect(dt time.Duration) {
	b.owed += dt.Seconds() * float64(b.rate)
	for ; b.owed >= 1 && len(b.bots) < len(b.pop.Spawns); b.owed-- {
		i := len(b.bots)
		c := b.dial(i)
		if c == nil {
			return // the transport closed: the run is ending
		}
		b.bots = append(b.bots, b.pop.Bot(i, b.pop.BotGait(), b.seed))
		b.clients = append(b.clients, c)
		b.welcomed = append(b.welcomed, false)
		b.retryAt = append(b.retryAt, 0)
		b.rejoining = append(b.rejoining, false)
		b.dialledAt = append(b.dialledAt, b.clock)
	}
}

// dial connects bot i and sends its Hello; nil once the transport closed.
func (b *bots) dial(i int) *mem.Client {
	c := b.front.Dial()
	hello, _ := wire.AppendHello(b.frame[:0], wire.Hello{Token: scenario.Token(i)}) // a token never too long
	if c.Send(hello) != nil {
		return nil
	}
	return c
}

// retry dials bot i again, as a player turned away as busy does a second
// later.
func (b *bots) retry(i int) {
	if c := b.dial(i); c != nil {
		b.clients[i], b.retryAt[i], b.dialledAt[i] = c, 0, b.clock
		b.n.Retries++
	}
}

// run steps the bots every period until ctx ends.
func (b *bots) run(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		b.step(period)
	}
}

func (b *bots) step(dt time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.clock += dt
	b.connect(dt)
	closed := 0
	// The bots stand in for clients on other machines: in a process of
	// one P, they let the gateway's NATS handlers run between groups of
	// them rather than after all of them, as the gateway would with its
	// clients elsewhere. With more Ps the handlers have others.
	yield := runtime.GOMAXPROCS(0) == 1
	for i, bot := range b.bots {
		if yield && i%yieldEvery == yieldEvery-1 {
			runtime.Gosched()
		}
		if b.retryAt[i] != 0 && b.clock >= b.retryAt[i] {
			b.retry(i)
		}
		b.cur = i
		c := b.clients[i]
		c.DrainReliable(b.onReliable)
		c.DrainDatagrams(b.onDatagram)
		if reason, gone := c.CloseReason(); gone {
			switch {
			case b.retryAt[i] != 0:
			case strings.HasPrefix(reason, "zone server "):
				// Its zone's server stopped (gateway.ZoneGone): dial
				// again, as a player does, for when it is back.
				b.retryAt[i] = b.clock + time.Second
				b.welcomed[i], b.rejoining[i] = false, true
				b.n.ZoneGone++
			default:
				closed++
			}
			continue
		}
		if !b.welcomed[i] {
			if b.clock-b.dialledAt[i] > welcomeWait {
				// No Welcome, no refusal, no word from the gateway: dial
				// again.
				c.Close()
				b.retry(i)
			}
			continue
		}
		bot.Advance(dt)
		var due bool
		if b.frame, due = bot.AppendDueMove(b.frame[:0]); due && c.Send(b.frame) == nil {
			b.n.MovesSent++
		}
	}
	b.n.Closed = closed
}

func (b *bots) reliable(frame []byte) {
	if wire.Decode(frame, &b.decoded) != nil {
		return
	}
	bot := b.bots[b.cur]
	switch b.decoded.Type {
	case wire.TypeWelcome:
		bot.Welcome(b.decoded.Welcome)
		switch {
		case b.welcomed[b.cur]:
			b.n.Welcomes++
		case b.rejoining[b.cur]:
			b.welcomed[b.cur], b.rejoining[b.cur] = true, false
			b.n.Rejoined++
		default:
			b.welcomed[b.cur] = true
			b.n.Joined++
		}
	case wire.TypeCorrection:
		bot.Correct(b.decoded.Correction)
		b.n.Corrections++
	case wire.TypeRefuse:
		b.n.Refused++
		if string(b.decoded.Refuse.Reason) == systems.BusyReason {
			b.retryAt[b.cur] = b.clock + time.Second
		}
		if b.n.Refusal == "" {
			b.n.Refusal = string(b.decoded.Refuse.Reason)
		}
	}
}

func (b *bots) datagram(d []byte) {
	if batch, err := wire.DecodeBatch(d); err == nil {
		b.n.Records += uint64(batch.Len())
	}
}

// counts returns what the bots did so far.
func (b *bots) counts() botCounts {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}
