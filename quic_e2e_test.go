package throng_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// e2eTickRate is the end-to-end servers' tick rate: below the clients'
// 30 updates a second, so every tick has a fresh update from every mover
// and a recipient hears each mover once per tick.
const e2eTickRate = 20

// quicServer is a Throng server on a QUIC transport on loopback, ticking
// in its own goroutine.
type quicServer struct {
	addr string
	quic *quic.Transport
	srv  *throng.Server
}

// tick returns the number of the server's latest tick.
func (s *quicServer) tick() uint64 { return s.srv.Stats().Tick }

// startQUICServer runs a server on QUIC with opts, admitting tokens "p<i>"
// at spawns[i]; setup runs before the first tick. Cleanup stops it.
func startQUICServer(t *testing.T, opts throng.Options, spawns []components.Transform, setup func(*throng.Server)) *quicServer {
	t.Helper()
	return startQUICServerWith(t, quic.Config{}, opts, spawns, setup)
}

// startQUICServerWith is startQUICServer with the transport's settings.
func startQUICServerWith(t *testing.T, cfg quic.Config, opts throng.Options, spawns []components.Transform, setup func(*throng.Server)) *quicServer {
	t.Helper()
	cfg.Development = true
	q, err := quic.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	opts.Transport = q
	opts.TickRate = new(e2eTickRate)
	opts.Admit = func(h wire.Hello) (throng.Entry, error) {
		var i int
		if _, err := fmt.Sscanf(string(h.Token), "p%d", &i); err != nil || i >= len(spawns) {
			return throng.Entry{}, fmt.Errorf("unknown player %q", h.Token)
		}
		return throng.Entry{Spawn: spawns[i]}, nil
	}
	srv, err := throng.New(opts)
	if err != nil {
		q.Close()
		require.NoError(t, err)
	}
	if setup != nil {
		setup(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-ran)
	})
	return &quicServer{addr: q.Addr().String(), quic: q, srv: srv}
}

// join dials the server as player i.
func (s *quicServer) join(t *testing.T, i int, cfg client.Config) (*client.Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg.Token = fmt.Sprintf("p%d", i)
	cfg.InsecureSkipVerify = true
	c, err := client.Dial(ctx, s.addr, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

// quicBot moves its player every 1/30 s and logs when it hears about
// whom.
type quicBot struct {
	c      *client.Client
	x, y   float32
	mu     sync.Mutex
	heard  map[uint32][]time.Time // a Poll's time, once per record
	wrong  int                    // records about the bot's own actor
	corrig int
	// unpaced counts moves the client skipped although they came a full
	// interval after the last one it sent. The bot's timer may bunch
	// moves on a loaded machine, and the client rightly skips the second
	// of two that come too close; it must never skip a move that keeps
	// the pace.
	unpaced int
}

func newQUICBot(c *client.Client) *quicBot {
	w := c.Welcome()
	return &quicBot{c: c, x: w.X, y: w.Y, heard: map[uint32][]time.Time{}}
}

// run moves and polls until ctx ends.
func (b *quicBot) run(ctx context.Context, wg *sync.WaitGroup) {
	defer wg.Done()
	ticker := time.NewTicker(time.Second / 30)
	defer ticker.Stop()
	self := b.c.Welcome().Actor
	var lastSent time.Time // no earlier than the client's own clock read
	for seq := uint32(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		b.x++
		offered := time.Now()
		sent, err := b.c.SendMove(wire.Move{Seq: seq, X: b.x, Y: b.y})
		if err != nil {
			return
		}
		b.mu.Lock()
		switch {
		case sent:
			lastSent = time.Now()
		case offered.Sub(lastSent) >= time.Second/client.DefaultMovingUpdatesPerSecond:
			b.unpaced++
		}
		now := time.Now()
		b.c.Poll(func(f *wire.Frame) {
			switch f.Type {
			case wire.TypeBatch:
				for i := range f.Batch.Len() {
					if r := f.Batch.At(i); r.Actor == self {
						b.wrong++
					} else {
						b.heard[r.Actor] = append(b.heard[r.Actor], now)
					}
				}
			case wire.TypeCorrection:
				b.corrig++
			}
		})
		b.mu.Unlock()
	}
}

func (b *quicBot) heardFrom(actor uint32) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.heard[actor])
}

// longestSilence returns the longest time between from and to in which the
// bot heard nothing about actor.
func (b *quicBot) longestSilence(actor uint32, from, to time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	longest, last := time.Duration(0), from
	for _, at := range b.heard[actor] {
		if at.After(from) && at.Before(to) {
			longest, last = max(longest, at.Sub(last)), at
		}
	}
	return max(longest, to.Sub(last))
}

// moveFor runs the bots for d and returns how many ticks the server ran
// meanwhile: on a loaded machine fewer than d at the tick rate.
func (s *quicServer) moveFor(d time.Duration, bots ...*quicBot) (ticks int) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return s.moveUntil(ctx, bots...)
}

// moveUntil runs the bots until ctx ends and returns how many ticks the
// server ran meanwhile.
func (s *quicServer) moveUntil(ctx context.Context, bots ...*quicBot) (ticks int) {
	var wg sync.WaitGroup
	first := s.tick()
	for _, b := range bots {
		wg.Add(1)
		go b.run(ctx, &wg)
	}
	wg.Wait()
	return int(s.tick() - first)
}

func TestQUICPlayersHearEachOthersMovement(t *testing.T) {
	spawns := []components.Transform{{X: 1000, Y: 1000}, {X: 1100, Y: 1000}}
	srv := startQUICServer(t, throng.Options{}, spawns, nil)
	a, err := srv.join(t, 0, client.Config{})
	require.NoError(t, err)
	b, err := srv.join(t, 1, client.Config{})
	require.NoError(t, err)
	require.NotEqual(t, a.Welcome().Actor, b.Welcome().Actor)
	assert.Equal(t, spawns[1].X, b.Welcome().X, "the Welcome carries the spawn Admit chose")

	botA, botB := newQUICBot(a), newQUICBot(b)
	ticks := srv.moveFor(time.Second, botA, botB)

	heardB, heardA := botA.heardFrom(b.Welcome().Actor), botB.heardFrom(a.Welcome().Actor)
	t.Logf("over %d ticks A heard B %d times and B heard A %d times; skipped moves: %d and %d",
		ticks, heardB, heardA, a.Stats().MovesSkipped, b.Stats().MovesSkipped)
	assert.Greater(t, float64(heardB), 0.6*float64(ticks), "A hears B about once per tick")
	assert.Greater(t, float64(heardA), 0.6*float64(ticks), "B hears A about once per tick")
	assert.Zero(t, botA.wrong+botB.wrong, "nobody is sent their own movement")
	assert.Zero(t, botA.corrig+botB.corrig, "moves within the limits are never corrected")
	assert.Zero(t, botA.unpaced+botB.unpaced, "a move that keeps the 30 Hz pace is never skipped")
	assert.Greater(t, a.Stats().MovesSent, a.Stats().MovesSkipped)
}

func TestQUICWrongProtocolIsRefusedWithItsReason(t *testing.T) {
	srv := startQUICServer(t, throng.Options{Protocol: 2}, []components.Transform{{}}, nil)
	_, err := srv.join(t, 0, client.Config{Protocol: 1})
	var refused *client.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, wire.RefuseProtocol, refused.Code)
	assert.Contains(t, refused.Reason, "protocol mismatch")
	assert.Contains(t, err.Error(), "protocol mismatch", "the error a program prints says why")

	c, err := srv.join(t, 0, client.Config{Protocol: 2})
	require.NoError(t, err, "the right protocol is welcomed")
	assert.NoError(t, c.Err())
}

// tickLoad is a user system that makes every tick take delay: load
// injected the way a heavy game system would.
type tickLoad struct{ delay time.Duration }

func (l *tickLoad) Name() string              { return "tickload" }
func (l *tickLoad) Access() scheduler.Access  { return scheduler.Uses() }
func (l *tickLoad) RunSerial(*scheduler.Tick) { time.Sleep(l.delay) }

func TestQUICBusyServerRefusesNewPlayersWithTheBusyReason(t *testing.T) {
	load := &tickLoad{delay: time.Second / e2eTickRate} // the whole tick
	srv := startQUICServer(t, throng.Options{}, []components.Transform{{}}, func(s *throng.Server) {
		require.NoError(t, s.AddSystem(load, scheduler.After(systems.JoinName)))
	})
	// Admission closes once a second of slow ticks has been measured;
	// until then players are still let in.
	deadline := time.Now().Add(5 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		var c *client.Client
		if c, err = srv.join(t, 0, client.Config{}); err != nil {
			break
		}
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
	var refused *client.RefusedError
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, wire.RefuseBusy, refused.Code)
	assert.Equal(t, systems.BusyReason, refused.Reason)
}

func TestQUICClientThatStopsReadingDoesNotStallTheOthers(t *testing.T) {
	spawns := []components.Transform{{X: 1000, Y: 1000}, {X: 1100, Y: 1000}, {X: 1200, Y: 1000}}
	// A queue that never overflows here: the stalled client is found out
	// by its stream staying blocked for a second.
	cfg := quic.Config{ReliableQueue: 1 << 20, StallTimeout: time.Second}
	srv := startQUICServerWith(t, cfg, throng.Options{}, spawns, nil)
	// The stalled player joins first (session 1), keeps one reliable frame
	// and never polls again.
	stalled, err := srv.join(t, 0, client.Config{ReliableQueue: 1})
	require.NoError(t, err)
	a, err := srv.join(t, 1, client.Config{})
	require.NoError(t, err)
	b, err := srv.join(t, 2, client.Config{})
	require.NoError(t, err)
	botA, botB := newQUICBot(a), newQUICBot(b)

	// A game system with a lot to say to the stalled player: QUIC's flow
	// control soon blocks its stream, and its writer waits while the
	// others move, until the stall timeout disconnects it.
	start := time.Now()
	var stalledFor time.Duration
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		defer time.AfterFunc(500*time.Millisecond, stop) // the others move on a little
		frame := wire.AppendRefuse(nil, wire.Refuse{Reason: make([]byte, wire.MaxReasonLen)})
		for end := start.Add(10 * time.Second); stalled.Err() == nil && time.Now().Before(end); {
			for range 20 {
				srv.quic.SendReliable(1, frame)
			}
			time.Sleep(2 * time.Millisecond)
		}
		stalledFor = time.Since(start)
	}()
	ticks := srv.moveUntil(ctx, botA, botB)
	<-flooded

	var gone *client.DisconnectedError
	require.ErrorAs(t, stalled.Err(), &gone, "the stalled player is disconnected")
	assert.Equal(t, wire.ReasonSlowClient, gone.Reason)
	assert.Equal(t, uint64(1), srv.quic.Counters().SlowClients)
	assert.GreaterOrEqual(t, stalledFor, cfg.StallTimeout, "found out by the stall timeout")

	// Had the blocked writer held up the tick, A would have heard nothing
	// of B for the whole stall timeout. The bound leaves room for a loaded
	// machine: under the race detector on two busy cores, a gap of 614 ms
	// came without any writer blocking the tick.
	silence := botA.longestSilence(b.Welcome().Actor, start, start.Add(stalledFor))
	heardB, heardA := botA.heardFrom(b.Welcome().Actor), botB.heardFrom(a.Welcome().Actor)
	t.Logf("over %d ticks A heard B %d times and B heard A %d times; A's longest silence about B in the %v until the disconnect: %v",
		ticks, heardB, heardA, stalledFor, silence)
	assert.Less(t, silence, cfg.StallTimeout*3/4, "A keeps hearing B while the stalled client's writer is blocked")
	assert.Greater(t, float64(heardB), 0.6*float64(ticks), "A hears B about once per tick")
	assert.Greater(t, float64(heardA), 0.6*float64(ticks), "B hears A about once per tick")
	assert.NoError(t, a.Err())
	assert.NoError(t, b.Err())
}
