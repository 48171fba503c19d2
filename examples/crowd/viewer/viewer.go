// Package viewer is the crowd example's page for browsers: served beside
// the server's WebSocket (websocket.Config.Pages, -transport ws), it
// joins the crowd as a player and draws the actors the server relays to
// it, and the props in its sight (Prop frames, until a Disappear). Players
// are blue dots, NPCs green ones, props small squares, bright while they
// slide: on the wire an NPC is an actor like a player, so the page knows
// NPCs by the animation flag the plaza sets on them (plaza.FlagNPC, 0x100),
// and sliding props by plaza.FlagSliding (0x200).
//
// Its player walks with the arrow keys or WASD, or toward a point clicked
// on the map, sending its Move ten times a second while it walks (once a
// second standing still). Turned away as busy, or cut off, the page dials
// again after a wait that doubles from 1 s to 30 s; any other refusal it
// shows and leaves. throng.mjs is the wire format in JavaScript, for a
// browser game to start from.
//
// Its tests drive the page in headless Chromium (internal/browser) against
// a real server on loopback; without Chromium they skip, unless
// THRONG_REQUIRE_BROWSER=1.
package viewer

import (
	"embed"
	"net/http"
)

//go:embed index.html throng.mjs
var files embed.FS

// Handler serves the page at "/" and its script at "/throng.mjs".
func Handler() http.Handler {
	fs := http.FileServerFS(files)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/", "/index.html":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		case "/throng.mjs":
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		default:
			http.NotFound(w, r)
			return
		}
		fs.ServeHTTP(w, r)
	})
}
