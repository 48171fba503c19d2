package throng_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/internal/spectator"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// spectatedServer is a server with the spectator window on loopback and a
// world of 300 NPCs, which a system of the test's moves every tick, 10
// props that never move, and 40 players near them.
func spectatedServer(t *testing.T, debug throng.Debug) (*throng.Server, []*mem.Client) {
	t.Helper()
	srv, err := throng.New(throng.Options{Debug: debug, Admit: func(h wire.Hello) (throng.Entry, error) {
		var i int
		fmt.Sscanf(string(h.Token), "p%d", &i)
		return throng.Entry{Spawn: components.Transform{X: float32(i%8) * 300, Y: float32(i/8) * 300}}, nil
	}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	w := srv.World()
	var props []components.ActorID
	for i := range 300 {
		props = append(props, w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i%30) * 250, Y: float32(i/30) * 250}}))
	}
	for i := range 10 {
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: float32(i) * 700, Y: 3000}, Prop: true})
	}
	w.Apply(nil)
	require.NoError(t, srv.AddSystem(&shuffle{w: w, props: props}, scheduler.After(systems.JoinName)))
	var clients []*mem.Client
	for i := range 40 {
		c := srv.Mem().Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p%d", i)})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		clients = append(clients, c)
	}
	for range 3 {
		srv.Tick()
	}
	return srv, clients
}

// nextFrame ticks srv until the spectator connection c receives a frame.
func nextFrame(t *testing.T, srv *throng.Server, c *websocket.Conn) spectator.Decoded {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, data, err := c.Read(ctx)
		if err == nil {
			got <- data
		}
		close(got)
	}()
	for {
		select {
		case data, ok := <-got:
			require.True(t, ok, "no frame came")
			d, err := spectator.Decode(data)
			require.NoError(t, err)
			return d
		case <-time.After(20 * time.Millisecond):
			srv.Tick()
		}
	}
}

// TestTheSpectatorSeesTheWholeWorld: the stream shows every actor the
// server has, players apart, the chunks with their clusters and work
// units, and a watched player's records: what it was sent this tick.
func TestTheSpectatorSeesTheWholeWorld(t *testing.T) {
	srv, _ := spectatedServer(t, throng.Debug{Listen: "127.0.0.1:0"})
	addr := srv.DebugAddr()
	require.NotNil(t, addr)
	ctx := context.Background()
	c, _, err := websocket.Dial(ctx, "ws://"+addr.String()+"/spectate", nil)
	require.NoError(t, err)
	defer c.CloseNow()
	c.SetReadLimit(1 << 24)

	f := nextFrame(t, srv, c)
	assert.Equal(t, srv.World().Len(), len(f.Actors), "every actor")
	kinds := map[systems.ActorKind]int{}
	for _, a := range f.Actors {
		kinds[a.Kind]++
	}
	assert.Equal(t, map[systems.ActorKind]int{systems.KindPlayer: 40, systems.KindNPC: 300, systems.KindProp: 10}, kinds)
	assert.Equal(t, srv.Stats().Clusters, f.Clusters)
	chunkActors := 0
	for _, ch := range f.Chunks {
		chunkActors += int(ch.Actors)
		assert.GreaterOrEqual(t, ch.Shard, int32(0))
		assert.Less(t, int(ch.Cluster), f.Clusters)
	}
	assert.Equal(t, len(f.Actors)-kinds[systems.KindProp], chunkActors, "a chunk counts the actors the tick moves and relays: props apart")
	assert.Contains(t, f.Systems, "relay")
	assert.Zero(t, f.Watched)

	// Watch a player: the next frames name what it was sent.
	var player uint32
	for _, a := range f.Actors {
		if a.Kind == systems.KindPlayer {
			player = a.ID
			break
		}
	}
	require.NoError(t, c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"watch": %d}`, player)))
	deadline := time.Now().Add(5 * time.Second)
	for f.Watched != player && time.Now().Before(deadline) {
		f = nextFrame(t, srv, c)
	}
	require.Equal(t, player, f.Watched)
	assert.NotEmpty(t, f.Sent, "the actors around it were sent to it")
	known := map[uint32]bool{}
	for _, a := range f.Actors {
		known[a.ID] = true
	}
	for _, id := range f.Sent {
		assert.True(t, known[id], "sent actor %d is in the world", id)
		assert.NotEqual(t, player, id, "a player is not sent its own actor")
	}
}

// TestTheSpectatorPausesAndSteps: a paused world does not tick under Run
// until a step is asked for, and then ticks once.
func TestTheSpectatorPausesAndSteps(t *testing.T) {
	srv, _ := spectatedServer(t, throng.Debug{Listen: "127.0.0.1:0", FramesPerSecond: new(30)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.RunTicks(ctx, nil) }()
	defer func() { cancel(); <-done }()
	c, _, err := websocket.Dial(ctx, "ws://"+srv.DebugAddr().String()+"/spectate", nil)
	require.NoError(t, err)
	defer c.CloseNow()
	c.SetReadLimit(1 << 24)
	read := func() spectator.Decoded {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		_, data, err := c.Read(rctx)
		require.NoError(t, err)
		d, err := spectator.Decode(data)
		require.NoError(t, err)
		return d
	}
	var f spectator.Decoded
	player := uint32(311) // the first player: 310 NPCs and props came first
	require.NoError(t, c.Write(ctx, websocket.MessageText, fmt.Appendf(nil, `{"watch": %d}`, player)))
	for f = read(); f.Watched != player; f = read() {
	}
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"pause": true}`)))
	for f = read(); !f.Paused; f = read() {
	}
	paused := f.Tick
	for range 5 { // frames keep coming, the tick does not move
		f = read()
		assert.Equal(t, paused, f.Tick)
		assert.Equal(t, player, f.Watched, "the watched player stays shown while paused")
	}
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"step": 1}`)))
	for f = read(); f.Tick == paused; f = read() {
	}
	assert.Equal(t, paused+1, f.Tick, "one step, one tick")
	for range 3 {
		assert.Equal(t, paused+1, read().Tick)
	}
	require.NoError(t, c.Write(ctx, websocket.MessageText, []byte(`{"pause": false}`)))
	for f = read(); f.Tick <= paused+3; f = read() {
	}
	assert.False(t, f.Paused)
}

func TestTheSpectatorAsksForItsToken(t *testing.T) {
	srv, _ := spectatedServer(t, throng.Debug{Listen: "127.0.0.1:0", Token: "s3cret"})
	base := "http://" + srv.DebugAddr().String() + "/"
	res, err := http.Get(base)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode)
	res, err = http.Get(base + "?token=s3cret")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), "Throng spectator")
	_, _, err = websocket.Dial(context.Background(), "ws://"+srv.DebugAddr().String()+"/spectate", nil)
	assert.Error(t, err, "the stream asks for the token too")
}

func TestBadDebugSettingsAreErrors(t *testing.T) {
	for _, c := range []struct {
		debug throng.Debug
		want  string
	}{
		{throng.Debug{Listen: "0.0.0.0:7778"}, `debug.listen: "0.0.0.0:7778" is not a loopback address: set debug.token`},
		{throng.Debug{Listen: "nonsense"}, "debug.listen: must be host:port"},
		{throng.Debug{Listen: "127.0.0.1:0", FramesPerSecond: new(0)}, "debug.framesPerSecond: must be 1 to 60"},
	} {
		_, _, err := throng.Options{Debug: c.debug}.Resolve()
		assert.ErrorContains(t, err, c.want)
	}
	_, _, err := throng.Options{Debug: throng.Debug{Listen: "0.0.0.0:0", Token: "x"}}.Resolve()
	assert.NoError(t, err, "any address with a token")
}

// shuffle moves the props a little every tick, so that the players are
// sent something.
type shuffle struct {
	w     *ecs.World
	props []components.ActorID
	tick  int
}

func (s *shuffle) Name() string { return "shuffle" }
func (s *shuffle) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform]())
}
func (s *shuffle) RunSerial(*scheduler.Tick) {
	s.tick++
	for i, id := range s.props {
		s.w.Teleport(id, components.Transform{X: float32(i%30)*250 + float32(s.tick%7)*10, Y: float32(i/30) * 250})
	}
}
