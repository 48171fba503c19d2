package viewer_test

// The viewer in a real browser (headless Chromium, see internal/browser)
// against a real server on loopback: the page served beside the WebSocket,
// as `go run ./examples/crowd -transport ws` serves it.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/viewer"
	"github.com/throng-go/throng/internal/browser"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

// The spawns admitNear gives: the page's player ("viewer") and a bot
// ("bot") two metres apart, in one chunk.
const (
	viewerX, viewerY = 1000, 1000
	botX, botY       = 1150, 1000
)

// within is how long a test waits for what the page or the bot should
// see: far more than it takes (milliseconds to a second), for a loaded
// machine.
const within = 10 * time.Second

func admitNear(h wire.Hello) (throng.Entry, error) {
	switch string(h.Token) {
	case "viewer":
		return throng.Entry{Player: "viewer", Spawn: components.Transform{X: viewerX, Y: viewerY}}, nil
	case "bot":
		return throng.Entry{Player: "bot", Spawn: components.Transform{X: botX, Y: botY}}, nil
	}
	return throng.Entry{}, fmt.Errorf("no player %q here", h.Token)
}

// crowd is a server on the WebSocket transport with the viewer's pages,
// on loopback.
type crowd struct {
	srv  *throng.Server
	ws   *websocket.Transport
	stop func()
}

// page is the viewer's URL.
func (c crowd) page() string { return "http://" + c.ws.Addr().String() + "/" }

// serve runs a 30 Hz server on the WebSocket transport at addr
// ("127.0.0.1:0" for any port) with the viewer's pages, admitting with
// admitNear unless opts says otherwise, until stop is called or the test
// ends.
func serve(t *testing.T, addr string, opts throng.Options) crowd {
	t.Helper()
	return serveWith(t, addr, opts, nil)
}

// serveWith is serve with setup run on the server before it starts, unless
// nil.
func serveWith(t *testing.T, addr string, opts throng.Options, setup func(*throng.Server)) crowd {
	t.Helper()
	ws, err := websocket.Listen(addr, websocket.Config{Pages: viewer.Handler()})
	require.NoError(t, err)
	opts.Transport = ws
	if opts.Admit == nil {
		opts.Admit = admitNear
	}
	srv, err := throng.New(opts)
	if err != nil {
		ws.Close()
		require.NoError(t, err)
	}
	if setup != nil {
		setup(srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			assert.NoError(t, <-ran)
		}
	}
	t.Cleanup(stop)
	return crowd{srv: srv, ws: ws, stop: stop}
}

// open starts a browser (after the server: its failure screenshot is
// taken before the server stops) on the viewer's page.
func open(t *testing.T, c crowd) context.Context {
	t.Helper()
	ctx := browser.New(t)
	run(t, ctx, chromedp.Navigate(c.page()))
	return ctx
}

// run runs a in the page and returns its value; it fails the test on an
// error, or after within.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	actx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	v, err := chromedp.Run(actx, a)
	require.NoError(t, err)
	return v
}

// waitStatus polls the page's status line until it matches re, and
// returns the submatches; it fails the test after within.
func waitStatus(t *testing.T, ctx context.Context, re *regexp.Regexp) []string {
	t.Helper()
	var status string
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		if status = run(t, ctx, chromedp.Evaluate[string](`document.getElementById("status").textContent`)); re.MatchString(status) {
			return re.FindStringSubmatch(status)
		}
	}
	t.Fatalf("the status line never matched %s within %v; it says %q", re, within, status)
	return nil
}

var joined = regexp.MustCompile(`^actor (\d+) · (\d+) others in view · `)

// join waits for the page to be in the crowd and returns its actor.
func join(t *testing.T, ctx context.Context) uint32 {
	t.Helper()
	m := waitStatus(t, ctx, joined)
	actor, err := strconv.ParseUint(m[1], 10, 32)
	require.NoError(t, err)
	return uint32(actor)
}

// TestViewerShowsItsActorAndTheOthers: the page joins the crowd, says
// which actor it is and sees the bot standing beside it; the controls'
// hint is shown and the wave button is enabled.
func TestViewerShowsItsActorAndTheOthers(t *testing.T) {
	c := serve(t, "127.0.0.1:0", throng.Options{})
	dialBot(t, c)
	ctx := open(t, c)

	m := waitStatus(t, ctx, joined)
	assert.NotEqual(t, "0", m[1], "an actor id")
	waitStatus(t, ctx, regexp.MustCompile(`^actor \d+ · 1 others in view · \d+ records/s · `))
	hint := run(t, ctx, chromedp.Text("#hint"))
	assert.Contains(t, hint, "arrow keys or WASD")
	assert.Contains(t, hint, "click")
	disabled := run(t, ctx, chromedp.Evaluate[bool](`document.getElementById("wave").disabled`))
	assert.False(t, disabled, "the wave button is on once the page is in the crowd")
}

// dialBot connects a client as "bot", beside the viewer's spawn, and
// closes it when the test ends.
func dialBot(t *testing.T, c crowd) *watcher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cl, err := client.DialWebSocket(ctx, c.ws.URL(), client.Config{Token: "bot"})
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return &watcher{c: cl, seen: make(map[uint32]wire.Record)}
}

// watcher is a bot's client that keeps the last position it heard of each
// actor.
type watcher struct {
	c    *client.Client
	seen map[uint32]wire.Record
}

// waitFor polls until the bot hears of actor at a position ok accepts (or
// the last it heard of it is one), and returns that record; it fails the
// test after within.
func (w *watcher) waitFor(t *testing.T, actor uint32, what string, ok func(wire.Record) bool) wire.Record {
	t.Helper()
	if r, heard := w.seen[actor]; heard && ok(r) {
		return r
	}
	var found *wire.Record
	hear := func(r wire.Record) {
		w.seen[r.Actor] = r
		if r.Actor == actor && found == nil && ok(r) {
			found = &r
		}
	}
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		select {
		case <-w.c.Done():
			t.Fatalf("the bot's connection ended: %v", w.c.Err())
		default:
		}
		w.c.Poll(func(f *wire.Frame) {
			switch f.Type {
			case wire.TypeAppear:
				a := f.Appear
				hear(wire.Record{Actor: a.Actor, X: a.X, Y: a.Y, Z: a.Z, Yaw: a.Yaw, Flags: a.Flags})
			case wire.TypeBatch:
				for i := range f.Batch.Len() {
					hear(f.Batch.At(i))
				}
			}
		})
		if found != nil {
			return *found
		}
	}
	last, heard := w.seen[actor]
	t.Fatalf("the bot never heard actor %d %s within %v (heard of it: %v, last %+v)", actor, what, within, heard, last)
	return wire.Record{}
}

// key sends one key event for the key at code (a KeyboardEvent.code) to the
// page, as a keyboard would.
func key(typ input.DispatchKeyEventType, code string, vk int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		keyName := code
		if len(code) == 4 && code[:3] == "Key" { // KeyW: the key "w"
			keyName = string(code[3] + 'a' - 'A')
		}
		_, err := cdp.Call(ctx, t, input.DispatchKeyEvent, input.DispatchKeyEventParams{
			Type: typ, Code: code, Key: keyName, WindowsVirtualKeyCode: vk, NativeVirtualKeyCode: vk,
		})
		return err
	})
}

// hold holds the key at code down until the bot hears the viewer's actor
// where ok says, then lets it go; it returns what the bot heard.
func hold(t *testing.T, ctx context.Context, bot *watcher, actor uint32, code string, vk int64, what string, ok func(wire.Record) bool) wire.Record {
	t.Helper()
	run(t, ctx, key(input.DispatchKeyEventTypeRawKeyDown, code, vk))
	r := bot.waitFor(t, actor, what, ok)
	run(t, ctx, key(input.DispatchKeyEventTypeKeyUp, code, vk))
	return r
}

// TestViewerWalksWithKeysAndClicksAndTheBotSeesIt: holding an arrow key or
// a WASD key walks the page's player that way, and a click on the map
// walks it toward that point; a bot standing beside it hears it move,
// with the walking flag, and the server never corrects it.
func TestViewerWalksWithKeysAndClicksAndTheBotSeesIt(t *testing.T) {
	c := serve(t, "127.0.0.1:0", throng.Options{})
	bot := dialBot(t, c)
	ctx := open(t, c)
	actor := join(t, ctx)
	waitStatus(t, ctx, regexp.MustCompile(` 1 others in view `))
	start := bot.waitFor(t, actor, "at its spawn", func(r wire.Record) bool { return true })
	assert.InDelta(t, viewerX, start.X, 1)
	assert.InDelta(t, viewerY, start.Y, 1)

	// Right: x grows, y stays.
	const far = 100 // units: well past any rounding, under half a second's walk
	r := hold(t, ctx, bot, actor, "ArrowRight", 39, "walk right", func(r wire.Record) bool { return r.X >= start.X+far })
	assert.InDelta(t, start.Y, r.Y, 1, "walking right keeps y")
	assert.Equal(t, uint16(1), r.Flags, "the walking flag")
	assert.InDelta(t, 0, r.Yaw, 0.01, "facing +x")

	// W: y grows (up on the map), x stays once the key is up.
	r = bot.waitFor(t, actor, "stop", func(r wire.Record) bool { return r.Flags == 0 })
	stopped := r
	r = hold(t, ctx, bot, actor, "KeyW", 87, "walk up", func(r wire.Record) bool { return r.Y >= stopped.Y+far })
	assert.InDelta(t, stopped.X, r.X, 1, "walking up keeps x")

	// A click on the map's left edge, half-way down (the map is centred
	// on the viewer, now up there, and the bot): it walks left, and a
	// little down.
	r = bot.waitFor(t, actor, "stop", func(r wire.Record) bool { return r.Flags == 0 })
	stopped = r
	height := run(t, ctx, chromedp.Evaluate[float64](`document.getElementById("crowd").getBoundingClientRect().height`))
	run(t, ctx, chromedp.MouseClickXY(20, height/2))
	r = bot.waitFor(t, actor, "walk left toward the click", func(r wire.Record) bool { return r.X <= stopped.X-far })
	assert.Less(t, r.Y, stopped.Y, "and a little down: toward the map's middle, between it and the bot")

	assert.Zero(t, c.srv.Stats().Corrections, "the page walks within the server's rules")
}

// serveBusy runs a server on the WebSocket transport, with the viewer's
// pages, that turns every player away as busy: any work passes a busy
// share of a billionth of the tick, once a second of ticks is in. It
// ticks flat out, so that second takes milliseconds.
func serveBusy(t *testing.T) crowd {
	t.Helper()
	ws, err := websocket.Listen("127.0.0.1:0", websocket.Config{Pages: viewer.Handler()})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: ws, Admit: admitNear, Admission: throng.Admission{BusyShare: new(1e-9)}})
	if err != nil {
		ws.Close()
		require.NoError(t, err)
	}
	for range 31 {
		srv.Tick()
	}
	require.False(t, srv.Stats().Second.Admitting, "the server turns players away")
	ctx, cancel := context.WithCancel(context.Background())
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		for ctx.Err() == nil {
			srv.Tick()
			time.Sleep(time.Millisecond)
		}
	}()
	stop := func() {
		cancel()
		<-ticked
		srv.Close()
	}
	t.Cleanup(stop)
	return crowd{srv: srv, ws: ws, stop: stop}
}

// TestViewerRetriesWhileTheServerIsBusy: a page the server turns away as
// busy says so and dials again, waiting longer each time: up to 1 s
// before the first retry, up to 2 s before the second.
func TestViewerRetriesWhileTheServerIsBusy(t *testing.T) {
	c := serveBusy(t)
	ctx := open(t, c)

	for attempt := 1; attempt <= 2; attempt++ {
		m := waitStatus(t, ctx, regexp.MustCompile(`^server busy, retrying in (\d+) s \(attempt `+strconv.Itoa(attempt)+`\)$`))
		wait, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		assert.LessOrEqual(t, wait, 1<<(attempt-1), "attempt %d waits at most %d s: %q", attempt, 1<<(attempt-1), m[0])
		assert.Positive(t, wait)
	}
	assert.GreaterOrEqual(t, c.srv.Stats().BusyRejections, uint64(2), "the page dialed again and was turned away again")
}

// TestViewerDoesNotRetryARefusal: a page whose player the server does not
// admit says why, and that it will not dial again.
func TestViewerDoesNotRetryARefusal(t *testing.T) {
	c := serve(t, "127.0.0.1:0", throng.Options{Admit: func(h wire.Hello) (throng.Entry, error) {
		return throng.Entry{}, fmt.Errorf("no player %q here", h.Token)
	}})
	ctx := open(t, c)
	waitStatus(t, ctx, regexp.MustCompile(`^refused \(code `+strconv.Itoa(int(wire.RefuseToken))+`\): no player "viewer" here; not retrying, reload to try again$`))
}

// TestViewerReconnectsWhenTheServerComesBack: a page whose server goes
// away says the connection is lost and dials again until a server
// answers at the address again, then joins its crowd.
func TestViewerReconnectsWhenTheServerComesBack(t *testing.T) {
	first := serve(t, "127.0.0.1:0", throng.Options{})
	addr := first.ws.Addr().String()
	ctx := open(t, first)
	join(t, ctx)

	first.stop()
	waitStatus(t, ctx, regexp.MustCompile(`^connection lost \(4000: `+regexp.QuoteMeta(wire.ReasonTransportClosed)+`\), retrying in \d+ s \(attempt \d+\)$`))
	serve(t, addr, throng.Options{})
	join(t, ctx)
}
