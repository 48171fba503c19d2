package spectator

import (
	"context"
	"crypto/subtle"
	"embed"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

//go:embed page.html
var page embed.FS

// Hub hands the frames a server publishes to the spectators connected to
// its handler, and their controls back to the server. The server's tick
// goroutine calls [Hub.Due], [Hub.Publish] and [Hub.Controls]; everything
// else runs on the spectators' goroutines.
type Hub struct {
	interval time.Duration
	token    string

	clients atomic.Int32
	nextAt  time.Time // tick goroutine only

	mu      sync.Mutex
	latest  []byte
	version uint64
	waiters map[chan struct{}]struct{}

	// Controls, set by spectators and taken by the tick goroutine.
	watch   atomic.Uint32
	watchOn atomic.Bool // watch changed since the last Controls
	paused  atomic.Bool
	steps   atomic.Int32
}

// NewHub returns a hub that lets spectators in with token (none: ""),
// sending at most fps frames a second.
func NewHub(token string, fps int) *Hub {
	return &Hub{interval: time.Second / time.Duration(max(fps, 1)), token: token, waiters: map[chan struct{}]struct{}{}}
}

// Due reports whether a spectator is connected and a frame is due at now;
// if so it counts the frame as sent.
func (h *Hub) Due(now time.Time) bool {
	if h.clients.Load() == 0 || now.Before(h.nextAt) {
		return false
	}
	// The next frame is due an interval after this one was, not after
	// now: ticks come every period, and counting from now would lose up
	// to a tick a frame (at 30 Hz, 7.5 frames a second instead of 10).
	h.nextAt = h.nextAt.Add(h.interval)
	if h.nextAt.Before(now) {
		h.nextAt = now.Add(h.interval)
	}
	return true
}

// Publish makes frame the latest and wakes the spectators; it copies
// frame, which the caller may reuse.
func (h *Hub) Publish(frame []byte) {
	h.mu.Lock()
	h.latest = append(h.latest[:0], frame...)
	h.version++
	for c := range h.waiters {
		select {
		case c <- struct{}{}:
		default:
		}
	}
	h.mu.Unlock()
}

// Controls returns what the spectators asked for since the last call: the
// player to watch (changed false: no change), whether the world is paused,
// and how many ticks they asked to step (which only a paused world takes).
func (h *Hub) Controls() (watch uint32, changed, paused bool, steps int) {
	if h.watchOn.Swap(false) {
		watch, changed = h.watch.Load(), true
	}
	return watch, changed, h.paused.Load(), int(h.steps.Swap(0))
}

// Paused reports whether a spectator paused the world.
func (h *Hub) Paused() bool { return h.paused.Load() }

// Handler serves the page at "/" and the stream at "/spectate". With a
// token, both ask for it as ?token=.
func (h *Hub) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.token != "" && subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(h.token)) != 1 {
			http.Error(w, "spectator: a token is needed (?token=)", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/", "/index.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			http.ServeFileFS(w, r, page, "page.html")
		case "/spectate":
			h.serve(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// control is a message from the page.
type control struct {
	Watch *uint32 `json:"watch"`
	Pause *bool   `json:"pause"`
	Step  int     `json:"step"`
}

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.SetReadLimit(4 << 10)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	wake := make(chan struct{}, 1)
	h.mu.Lock()
	h.waiters[wake] = struct{}{}
	h.mu.Unlock()
	h.clients.Add(1)
	defer func() {
		h.clients.Add(-1)
		h.mu.Lock()
		delete(h.waiters, wake)
		h.mu.Unlock()
		conn.CloseNow()
	}()
	go func() { // the page's controls
		defer cancel()
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var c control
			if json.Unmarshal(data, &c) != nil {
				continue // a control this server does not know: ignored
			}
			if c.Watch != nil {
				h.watch.Store(*c.Watch)
				h.watchOn.Store(true)
			}
			if c.Pause != nil {
				h.paused.Store(*c.Pause)
			}
			if c.Step > 0 {
				h.steps.Add(int32(min(c.Step, 1000)))
			}
		}
	}()
	var buf []byte
	var sent uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		h.mu.Lock()
		if h.version == sent {
			h.mu.Unlock()
			continue
		}
		buf, sent = append(buf[:0], h.latest...), h.version
		h.mu.Unlock()
		wctx, done := context.WithTimeout(ctx, 5*time.Second)
		err := conn.Write(wctx, websocket.MessageBinary, buf)
		done()
		if err != nil {
			return
		}
	}
}
