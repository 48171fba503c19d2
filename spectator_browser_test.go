package throng_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/internal/browser"
)

// pageState is the spectator page's window.spectator.
type pageState struct {
	Frames, Tick, Actors, Players, Clusters, Shards, Chunks int
	Fps                                                     float64
	Paused, Connected                                       bool
	Watched, Sent, Owed                                     int
}

// TestTheSpectatorPageShowsTheWorld drives the spectator page in headless
// Chromium against a running server: it shows as many actors as the
// server has and draws the chunks by cluster, a watched player's records,
// and pause and step work from its buttons.
func TestTheSpectatorPageShowsTheWorld(t *testing.T) {
	srv, _ := spectatedServer(t, throng.Debug{Listen: "127.0.0.1:0"})
	actors := srv.World().Len()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunTicks(ctx, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	b := browser.New(t)
	url := "http://" + srv.DebugAddr().String() + "/"
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		actx, acancel := context.WithTimeout(b, 15*time.Second)
		defer acancel()
		require.NoError(t, chromedp.Do(actx, actions...))
	}
	eval := func(expr string) any {
		t.Helper()
		actx, acancel := context.WithTimeout(b, 15*time.Second)
		defer acancel()
		v, err := chromedp.Run(actx, chromedp.Evaluate[any](expr))
		require.NoError(t, err)
		return v
	}
	text := func(sel string) string {
		t.Helper()
		actx, acancel := context.WithTimeout(b, 15*time.Second)
		defer acancel()
		v, err := chromedp.Run(actx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err)
		return v
	}
	state := func() pageState {
		t.Helper()
		actx, acancel := context.WithTimeout(b, 15*time.Second)
		defer acancel()
		s, err := chromedp.Run(actx, chromedp.Evaluate[pageState](`window.spectator`))
		require.NoError(t, err)
		return s
	}
	until := func(what string, ok func(pageState) bool) pageState {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := state()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("the page never showed %s: %+v", what, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	run(chromedp.Navigate(url))
	s := until("frames", func(s pageState) bool { return s.Frames >= 3 })
	assert.Equal(t, actors, s.Actors, "every actor the server has")
	assert.Equal(t, 40, s.Players)
	assert.Positive(t, s.Clusters)
	assert.Contains(t, text("#status"), "350 actors (40 players, 300 NPCs, 10 props)")
	// The chunks are drawn, coloured by cluster: the canvas is not blank.
	coloured := eval(`(() => {
		const c = document.getElementById("world"), g = c.getContext("2d");
		const d = g.getImageData(0, 0, c.width, c.height).data;
		let n = 0;
		for (let i = 0; i < d.length; i += 4) if (d[i] + d[i+1] + d[i+2] > 3 * 0x30) n++;
		return n;
	})()`)
	assert.Greater(t, coloured, 1000.0, "pixels drawn")

	// Watch a player: the page names what it was sent.
	eval(`window.watchActor(311)`) // the first player: 310 NPCs and props came first
	until("the watched player", func(s pageState) bool { return s.Watched == 311 && s.Sent > 0 })
	assert.Contains(t, text("#watch"), "watching actor 311")

	// Pause, then step one tick.
	run(chromedp.Click(chromedp.ID("pause")))
	until("the pause", func(s pageState) bool { return s.Paused })
	time.Sleep(300 * time.Millisecond)
	held := state().Tick
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, held, state().Tick, "a paused world does not tick")
	run(chromedp.Click(chromedp.ID("step")))
	until("one step", func(s pageState) bool { return s.Tick == held+1 })
	run(chromedp.Click(chromedp.ID("pause"))) // resume
	until("ticking again", func(s pageState) bool { return !s.Paused && s.Tick > held+3 })
	if dir := os.Getenv("THRONG_SPECTATOR_SHOT"); dir != "" {
		require.NoError(t, browser.Screenshot(b, dir))
	}
}
