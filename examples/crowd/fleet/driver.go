package fleet

import (
	"cmp"
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/wire"
)

// member is one bot and its connection.
type member struct {
	bot      *scenario.Bot
	client   *client.Client
	lost     bool
	nextWave time.Time // when it next waves (Config.WaveEvery)
}

// driver steps its share of the bots every step.
type driver struct {
	fleet *Fleet

	mu      sync.Mutex // guards members; held for a whole step
	members []*member
	cur     *member           // the bot being polled
	tally   Totals            // this step's counts, added to the fleet's after it
	onFrame func(*wire.Frame) // d.frame, made once: a method value allocates
}

func (d *driver) add(m *member) {
	d.mu.Lock()
	d.members = append(d.members, m)
	d.mu.Unlock()
}

func (d *driver) run(ctx context.Context, step time.Duration) {
	t := time.NewTicker(step)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			d.step(now.Sub(last))
			last = now
		}
	}
}

// yieldEvery is how many bots a driver steps before it lets the server's
// goroutines (the tick among them) have its core.
const yieldEvery = 64

// step lets every bot read what arrived, walk dt (the time since its last
// step, so a late step walks further), and send its update. The client's
// limiter skips updates over the rate limit, leaving gaps in the sequence
// numbers that the server accepts.
func (d *driver) step(dt time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tally = Totals{}
	var loss string
	now := time.Now()
	every := d.fleet.cfg.WaveEvery
	for i, m := range d.members {
		if m.lost {
			continue
		}
		if i%yieldEvery == yieldEvery-1 {
			// The bots stand in for players on other machines: a step
			// of thousands of sends would hold a core for milliseconds
			// at a time, which no remote fleet does to the server.
			runtime.Gosched()
		}
		d.cur = m
		m.client.Poll(d.onFrame)
		m.bot.Advance(dt)
		sent, err := m.client.SendMove(m.bot.Move())
		switch {
		case err != nil:
			m.lost = true
			d.tally.Lost++
			loss = cmp.Or(loss, err.Error())
		case sent:
			d.tally.MovesSent++
		default:
			d.tally.MovesSkipped++
		}
		if every > 0 && !m.lost && !now.Before(m.nextWave) {
			if m.client.SendCommand(wave) == nil {
				d.tally.Waves++
			}
			m.nextWave = now.Add(every)
		}
	}
	f := d.fleet
	f.mu.Lock()
	f.n.Lost += d.tally.Lost
	f.n.Loss = cmp.Or(f.n.Loss, loss)
	f.n.MovesSent += d.tally.MovesSent
	f.n.MovesSkipped += d.tally.MovesSkipped
	f.n.Datagrams += d.tally.Datagrams
	f.n.Records += d.tally.Records
	f.n.Corrections += d.tally.Corrections
	f.n.Waves += d.tally.Waves
	f.n.Events += d.tally.Events
	f.mu.Unlock()
}

// wave is the command a bot sends every Config.WaveEvery.
var wave = []byte("wave")

func (d *driver) frame(fr *wire.Frame) {
	switch fr.Type {
	case wire.TypeBatch:
		d.tally.Datagrams++
		d.tally.Records += uint64(fr.Batch.Len())
	case wire.TypeCorrection:
		d.cur.bot.Correct(fr.Correction)
		d.tally.Corrections++
	case wire.TypeEvent:
		d.tally.Events++
	}
}
