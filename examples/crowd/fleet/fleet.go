package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/wire"
)

// Defaults of [Config].
const (
	// DefaultTokenPrefix is the start of every bot's token: "bot-17", the
	// token [scenario.Token] makes.
	DefaultTokenPrefix = "bot-"
	// DefaultStep is how often a bot reads and may send: the clients'
	// moving limit of 30 updates a second.
	DefaultStep = time.Second / 30
	// DefaultDialConcurrency is how many dials [Fleet.Grow] has in flight.
	DefaultDialConcurrency = 64
	// DefaultDialTimeout bounds one dial, Welcome included.
	DefaultDialTimeout = 10 * time.Second
	// BusyRetryDelay is how long a bot refused with wire.RefuseBusy waits
	// before it dials again (see Config.RetryBusyFor): the server decides
	// once a second whether it admits.
	BusyRetryDelay = time.Second
)

// ErrClosed is what [Fleet.Grow] reports after [Fleet.Close].
var ErrClosed = errors.New("fleet: closed")

// Config says where the bots connect and how they behave. Every zero field
// means the default named on it.
type Config struct {
	// Addr is where the server listens: its UDP address, host:port, for
	// QUIC, or a ws:// or wss:// URL for its WebSocket transport. Required.
	Addr string
	// Population gives bot k its area to wander ([scenario.Population.Bot]).
	// It needs at least one spawn.
	Population scenario.Population
	// Gait is how the bots walk; the zero Gait means the population's
	// ([scenario.Population.BotGait]).
	Gait scenario.Gait
	// Seed fixes every bot's choices, bot k seeded from (Seed, k).
	Seed uint64
	// First is the number of the first bot (0 or more); several fleets
	// with the same prefix and disjoint numbers can share one server.
	First int
	// TokenPrefix starts every token; "" means [DefaultTokenPrefix].
	TokenPrefix string
	// Client is every bot's client configuration; its Token is replaced by
	// the bot's own. Set InsecureSkipVerify for a server in development
	// mode. Update rates left zero are the gait's ([scenario.Gait.Rates]).
	Client client.Config
	// Step is how often each bot is stepped; 0 means [DefaultStep].
	Step time.Duration
	// Drivers is how many goroutines step the bots, each a share of them;
	// 0 means runtime.GOMAXPROCS(0).
	Drivers int
	// DialConcurrency is how many dials run at once; 0 means
	// [DefaultDialConcurrency].
	DialConcurrency int
	// DialTimeout bounds one dial; 0 means [DefaultDialTimeout].
	DialTimeout time.Duration
	// RetryBusyFor is how long a bot refused as busy (wire.RefuseBusy, "try
	// again shortly") keeps dialing again, every [BusyRetryDelay], from its
	// first dial, as a player's client would. 0 never retries: the first
	// refusal is final.
	RetryBusyFor time.Duration
	// WaveEvery is how often each bot sends the command "wave", a message
	// of the game's own (client.Client.SendCommand); 0 never. Bot k waves
	// first (k mod 16)/16 of the interval after it joins, so the waves
	// spread out.
	WaveEvery time.Duration
}

func (c Config) resolved() (Config, error) {
	switch {
	case c.Addr == "":
		return c, errors.New("fleet: Config.Addr is empty; give the server's host:port")
	case len(c.Population.Spawns) == 0:
		return c, errors.New("fleet: Config.Population has no spawns")
	case c.First < 0:
		return c, fmt.Errorf("fleet: Config.First must not be negative, got %d", c.First)
	case c.Step < 0, c.Drivers < 0, c.DialConcurrency < 0, c.DialTimeout < 0, c.RetryBusyFor < 0, c.WaveEvery < 0:
		return c, errors.New("fleet: Config.Step, Drivers, DialConcurrency, DialTimeout, RetryBusyFor and WaveEvery must not be negative")
	}
	if c.Gait == (scenario.Gait{}) {
		c.Gait = c.Population.BotGait()
	}
	moving, standing := c.Gait.Rates()
	c.Client.MovingUpdatesPerSecond = cmp.Or(c.Client.MovingUpdatesPerSecond, moving)
	c.Client.StandingUpdatesPerSecond = cmp.Or(c.Client.StandingUpdatesPerSecond, standing)
	c.TokenPrefix = cmp.Or(c.TokenPrefix, DefaultTokenPrefix)
	c.Step = cmp.Or(c.Step, DefaultStep)
	c.Drivers = cmp.Or(c.Drivers, runtime.GOMAXPROCS(0))
	c.DialConcurrency = cmp.Or(c.DialConcurrency, DefaultDialConcurrency)
	c.DialTimeout = cmp.Or(c.DialTimeout, DefaultDialTimeout)
	return c, nil
}

// Totals is what a fleet's bots did so far. Counts only grow.
type Totals struct {
	// Joined counts bots welcomed; Refused, bots the server refused (a
	// *client.RefusedError, "server busy" among them, counted once its
	// retries are over); Failed, bots whose dial ended otherwise (timeout,
	// no server); Lost, joined bots whose connection closed before
	// [Fleet.Close] (the server kicked them or went away).
	Joined, Refused, Failed, Lost int
	// BusyRetries counts dials made again after a "server busy" refusal.
	BusyRetries int
	// MovesSent and MovesSkipped count updates sent and updates the
	// client's rate limit held back.
	MovesSent, MovesSkipped uint64
	// Datagrams and Records count movement batches received and the
	// movement records in them: the updates about other players.
	Datagrams, Records uint64
	// Corrections counts corrections received; each snapped its bot to the
	// server's position.
	Corrections uint64
	// Waves counts "wave" commands sent (Config.WaveEvery), Events the
	// events of the game's own the bots received.
	Waves, Events uint64
	// Refusal and Loss are the first refusal's and the first loss's
	// reasons, "" if none.
	Refusal, Loss string
}

// Active is the number of bots connected now: Joined - Lost.
func (t Totals) Active() int { return t.Joined - t.Lost }

// Growth is what one [Fleet.Grow] did, one outcome per bot.
type Growth struct {
	Joined, Refused, Failed int
	// BusyRetries counts dials made again after a "server busy" refusal;
	// the bot's outcome is that of its last dial.
	BusyRetries int
	// Canceled counts bots not connected because ctx ended or the fleet
	// closed first: dials cut short, and bots never dialed (a later Grow
	// dials those).
	Canceled int
	// Refusal is the first refusal, Failure the first other error; nil if
	// none.
	Refusal *client.RefusedError
	Failure error
	cause   error // why bots were canceled
}

// Err is nil when every bot asked for joined; otherwise an error that
// counts the bots that did not join and gives the first reason of each
// kind.
func (g Growth) Err() error {
	var errs []error
	if g.Refused > 0 {
		errs = append(errs, fmt.Errorf("fleet: %d of %d bots refused: %w", g.Refused, g.asked(), g.Refusal))
	}
	if g.Failed > 0 {
		errs = append(errs, fmt.Errorf("fleet: %d of %d bots failed to connect: %w", g.Failed, g.asked(), g.Failure))
	}
	if g.Canceled > 0 {
		errs = append(errs, fmt.Errorf("fleet: %d of %d bots not connected: %w", g.Canceled, g.asked(), g.cause))
	}
	return errors.Join(errs...)
}

func (g Growth) asked() int { return g.Joined + g.Refused + g.Failed + g.Canceled }

// Fleet is a set of bots, each a QUIC client of one server; see the package
// documentation. Its methods are safe for concurrent use. Lock order:
// growMu, a Grow's own counts, then mu; a driver's mu, then mu.
type Fleet struct {
	cfg     Config
	ctx     context.Context // ends at Close: stops drivers and dials
	cancel  context.CancelFunc
	drivers []*driver
	wg      sync.WaitGroup // the drivers

	growMu   sync.Mutex // one Grow at a time; Close waits for it
	asked    int        // bots Grow was asked for so far, counted from First
	undialed []int      // bots of those never dialed (a Grow cut short)
	closed   bool

	mu sync.Mutex // guards n
	n  Totals
}

// Start validates cfg and starts an empty fleet: its drivers run, with no
// bots yet. Close it when done.
func Start(cfg Config) (*Fleet, error) {
	cfg, err := cfg.resolved()
	if err != nil {
		return nil, err
	}
	f := &Fleet{cfg: cfg, drivers: make([]*driver, cfg.Drivers)}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	for i := range f.drivers {
		d := &driver{fleet: f}
		d.onFrame = d.frame
		f.drivers[i] = d
		f.wg.Go(func() { d.run(f.ctx, cfg.Step) })
	}
	return f, nil
}

// Grow connects bots until n have been asked for in all (bots First to
// First+n-1; nothing happens if n were already), dialing at most
// DialConcurrency at a time, and puts each welcomed bot to work at once.
// A bot told "server busy" dials again after [BusyRetryDelay] while
// Config.RetryBusyFor allows, without holding a dial slot meanwhile. Grow
// returns when every bot has its outcome. When ctx ends or [Fleet.Close]
// is called, the dials in flight are cut short and no more are started:
// those bots count as canceled, not failed, and the ones never dialed are
// dialed by the next Grow.
func (f *Fleet) Grow(ctx context.Context, n int) Growth {
	f.growMu.Lock()
	defer f.growMu.Unlock()
	todo := f.undialed
	for ; f.asked < n; f.asked++ {
		todo = append(todo, f.cfg.First+f.asked)
	}
	f.undialed = nil
	if f.closed {
		f.undialed = todo
		return Growth{Canceled: len(todo), cause: ErrClosed}
	}
	if len(todo) == 0 {
		return Growth{}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(f.ctx, func() { cancel(ErrClosed) })()

	// Each bot is in the queue at most once at a time, so it never blocks.
	queue := make(chan attempt, len(todo))
	for _, k := range todo {
		queue <- attempt{bot: k}
	}
	var pending sync.WaitGroup // bots without an outcome yet
	pending.Add(len(todo))
	go func() {
		pending.Wait()
		close(queue)
	}()
	var (
		g   Growth
		gmu sync.Mutex
		wg  sync.WaitGroup
	)
	for range min(f.cfg.DialConcurrency, len(todo)) {
		wg.Go(func() {
			for a := range queue {
				if f.try(ctx, &a, &g, &gmu) {
					pending.Done()
					continue
				}
				go func() { // dial again later, or at once if ctx ends
					t := time.NewTimer(BusyRetryDelay)
					defer t.Stop()
					select {
					case <-t.C:
					case <-ctx.Done():
					}
					queue <- a
				}()
			}
		})
	}
	wg.Wait()
	return g
}

// attempt is a bot on its way in.
type attempt struct {
	bot    int       // its number
	tries  int       // dials so far
	giveUp time.Time // no busy retry after this
}

// try dials a.bot once and reports whether it has its outcome, counted in
// g and the totals (and the bot at work if it joined); false means dial
// again after BusyRetryDelay.
func (f *Fleet) try(ctx context.Context, a *attempt, g *Growth, gmu *sync.Mutex) bool {
	if ctx.Err() != nil && a.tries == 0 {
		gmu.Lock()
		g.Canceled++
		g.cause = context.Cause(ctx)
		f.undialed = append(f.undialed, a.bot) // growMu is held by Grow
		gmu.Unlock()
		return true
	}
	if a.tries == 0 {
		a.giveUp = time.Now().Add(f.cfg.RetryBusyFor)
	}
	a.tries++
	c, err := f.dial(ctx, a.bot)
	var refused *client.RefusedError
	isRefused := errors.As(err, &refused)
	if isRefused && refused.Code == wire.RefuseBusy && ctx.Err() == nil && !time.Now().Add(BusyRetryDelay).After(a.giveUp) {
		gmu.Lock()
		g.BusyRetries++
		gmu.Unlock()
		f.mu.Lock()
		f.n.BusyRetries++
		f.mu.Unlock()
		return false
	}
	if err == nil {
		b := f.cfg.Population.Bot(a.bot, f.cfg.Gait, f.cfg.Seed)
		b.Welcome(c.Welcome())
		m := &member{bot: b, client: c}
		if f.cfg.WaveEvery > 0 {
			m.nextWave = time.Now().Add(f.cfg.WaveEvery * time.Duration(a.bot%16) / 16)
		}
		f.drivers[a.bot%len(f.drivers)].add(m)
	}
	gmu.Lock()
	defer gmu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case err == nil:
		g.Joined++
		f.n.Joined++
	case ctx.Err() != nil: // cut short: not the server's doing
		g.Canceled++
		g.cause = context.Cause(ctx)
	case isRefused:
		g.Refused++
		f.n.Refused++
		if g.Refusal == nil {
			g.Refusal = refused
		}
		f.n.Refusal = cmp.Or(f.n.Refusal, refused.Reason)
	default:
		g.Failed++
		f.n.Failed++
		if g.Failure == nil {
			g.Failure = err
		}
	}
	return true
}

// dial connects bot k once, within DialTimeout.
func (f *Fleet) dial(ctx context.Context, k int) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.DialTimeout)
	defer cancel()
	cc := f.cfg.Client
	cc.Token = f.cfg.TokenPrefix + strconv.Itoa(k)
	if IsWebSocketURL(f.cfg.Addr) {
		return client.DialWebSocket(ctx, f.cfg.Addr, cc)
	}
	return client.Dial(ctx, f.cfg.Addr, cc)
}

// Totals returns what the bots did so far.
func (f *Fleet) Totals() Totals {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// Close stops the drivers, waits for a Grow in progress (cutting its dials
// short), and closes every bot's connection. It returns nil; closing again
// does nothing.
func (f *Fleet) Close() error {
	f.cancel()
	f.growMu.Lock()
	f.closed = true
	f.growMu.Unlock()
	f.wg.Wait()
	var members []*member
	for _, d := range f.drivers {
		d.mu.Lock()
		members = append(members, d.members...)
		d.members = nil
		d.mu.Unlock()
	}
	// Each Close waits for its client's goroutines: close many at once.
	work := make(chan *member)
	var wg sync.WaitGroup
	for range min(f.cfg.DialConcurrency, len(members)) {
		wg.Go(func() {
			for m := range work {
				m.client.Close()
			}
		})
	}
	for _, m := range members {
		work <- m
	}
	close(work)
	wg.Wait()
	return nil
}

// IsWebSocketURL reports whether addr names a WebSocket server (ws:// or
// wss://) rather than a QUIC one (host:port).
func IsWebSocketURL(addr string) bool {
	return strings.HasPrefix(addr, "ws://") || strings.HasPrefix(addr, "wss://")
}
