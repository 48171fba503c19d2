package throng

import (
	"errors"
	"fmt"
	stdnet "net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/throng-go/throng/internal/spectator"
	"github.com/throng-go/throng/systems"
)

// DefaultSpectatorFramesPerSecond: the spectator window is sent ten frames
// a second.
const DefaultSpectatorFramesPerSecond = 10

// Debug is the "debug" section: the server's window for operators, a page
// that shows the whole world as the server sees it (chunks, clusters and
// work units, actors, each chunk's relay cost, a watched player's interest
// and what it is sent, live charts of the tick) with pause and step. It is
// off unless Listen is set; the page is at http://<listen>/.
type Debug struct {
	// Listen is the host:port of the window's HTTP listener. Empty (the
	// default) means off. Without a Token it must be a loopback address:
	// the window shows every player's position and can pause the world.
	// Key "listen".
	Listen string `json:"listen,omitempty"`
	// Token, when set, is asked of every page and stream as ?token=.
	// Key "token".
	Token string `json:"token,omitempty"`
	// FramesPerSecond is how many frames a second the window is sent, 1
	// to 60. Key "framesPerSecond"; nil means
	// [DefaultSpectatorFramesPerSecond].
	FramesPerSecond *int `json:"framesPerSecond,omitempty"`
}

// DebugSettings is [Debug] resolved.
type DebugSettings struct {
	Listen          string
	Token           string
	FramesPerSecond int
}

func (d Debug) resolve(r *resolver) DebugSettings {
	s := DebugSettings{Listen: d.Listen, Token: d.Token, FramesPerSecond: DefaultSpectatorFramesPerSecond}
	if d.FramesPerSecond != nil {
		if s.FramesPerSecond = *d.FramesPerSecond; s.FramesPerSecond < 1 || s.FramesPerSecond > 60 {
			r.fail("debug.framesPerSecond", "must be 1 to 60, got %d", s.FramesPerSecond)
		}
	}
	if d.Listen == "" {
		return s
	}
	host, port, ok := cutHostPort(d.Listen)
	if !ok || port == "" {
		r.fail("debug.listen", "must be host:port, got %q", d.Listen)
		return s
	}
	if d.Token == "" && !loopback(host) {
		r.fail("debug.listen", "%q is not a loopback address: set debug.token, or listen on 127.0.0.1", d.Listen)
	}
	return s
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// spectatorServer is the debug listener and what it shows.
type spectatorServer struct {
	hub      *spectator.Hub
	http     *http.Server
	listener stdnet.Listener
	sp       systems.Spectacle
	frame    spectator.Frame
	buf      []byte
	tiers    []float32
	steps    int // ticks still to step while paused
}

func startSpectator(s *Server, set DebugSettings) (*spectatorServer, error) {
	ln, err := stdnet.Listen("tcp", set.Listen)
	if err != nil {
		return nil, err
	}
	v := &spectatorServer{hub: spectator.NewHub(set.Token, set.FramesPerSecond), listener: ln}
	v.http = &http.Server{Handler: v.hub.Handler(), ReadHeaderTimeout: 5 * time.Second}
	for _, t := range s.settings.Parallelism.InterestTiers {
		v.tiers = append(v.tiers, t.BeyondUnits)
	}
	go func() {
		if err := v.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("throng: debug listener", "err", err)
		}
	}()
	s.log.Info("throng: spectator window", "url", fmt.Sprintf("http://%s/", ln.Addr()))
	return v, nil
}

func (v *spectatorServer) close() {
	v.http.Close()
}

// DebugAddr returns the address the spectator window listens on, or nil
// when debug.listen is off.
func (s *Server) DebugAddr() stdnet.Addr {
	if s.spect == nil {
		return nil
	}
	return s.spect.listener.Addr()
}

// spectate sends the spectators a frame of the tick just run, when one is
// due and someone watches, and takes their controls.
func (s *Server) spectate(now time.Time) {
	s.spectatorControls()
	if s.spect.hub.Due(now) {
		s.sendFrame()
	}
}

// spectatorControls applies the player the spectators chose to watch,
// counts the steps they asked for, and reports whether they paused the
// world.
func (s *Server) spectatorControls() (paused bool) {
	v := s.spect
	watch, changed, paused, steps := v.hub.Controls()
	if changed {
		s.pipe.Watch(watch)
	}
	if v.steps += steps; !paused {
		v.steps = 0
	}
	return paused
}

// holdForSpectator reports whether RunTicks should skip this tick: a
// spectator paused the world and no step is left. While paused, the
// window is still sent frames (of the last tick).
func (s *Server) holdForSpectator() bool {
	v := s.spect
	if !s.spectatorControls() {
		return false
	}
	if v.steps > 0 {
		v.steps--
		return false
	}
	if v.hub.Due(time.Now()) {
		s.sendFrame()
	}
	return true
}

// sendFrame builds the frame of the last tick and hands it to the hub.
func (s *Server) sendFrame() {
	v := s.spect
	s.pipe.Spectate(&v.sp)
	st := s.Stats().Second
	f := &v.frame
	*f = spectator.Frame{
		Paused: v.hub.Paused(), TickRate: s.settings.TickRate, Hz: st.TickRate,
		WorkAvg: ms(st.WorkAvg), WorkP5: ms(st.WorkP5), WorkP95: ms(st.WorkP95), BytesOut: st.BytesPerSecond,
		ChunkSize: s.settings.ChunkSize, Systems: f.Systems[:0], Tiers: v.tiers, Spectacle: &v.sp,
	}
	for _, t := range s.times { // the last tick's
		f.Systems = append(f.Systems, spectator.System{Name: t.Name, Ms: ms(t.Serial + t.Units)})
	}
	v.buf = spectator.Append(v.buf[:0], f)
	v.hub.Publish(v.buf)
}
