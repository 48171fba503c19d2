package throng_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// watcher is an in-memory client and what it was told.
type watcher struct {
	c        *mem.Client
	welcome  wire.Welcome
	events   []string
	xs       map[uint32][]float32 // X of each record received, per actor
	refusal  string
	welcomed int
}

func newWatcher(c *mem.Client) *watcher { return &watcher{c: c, xs: map[uint32][]float32{}} }

func (w *watcher) read(t *testing.T) {
	var f wire.Frame
	w.c.DrainReliable(func(b []byte) {
		require.NoError(t, wire.Decode(b, &f))
		switch f.Type {
		case wire.TypeWelcome:
			w.welcome = f.Welcome
			w.welcomed++
		case wire.TypeAppear:
			w.events = append(w.events, fmt.Sprint("appear ", f.Appear.Actor))
		case wire.TypeDisappear:
			w.events = append(w.events, fmt.Sprint("disappear ", f.Disappear.Actor))
		case wire.TypeRefuse:
			w.refusal = string(f.Refuse.Reason)
		}
	})
	w.c.DrainDatagrams(func(d []byte) {
		b, err := wire.DecodeBatch(d)
		require.NoError(t, err)
		for i := range b.Len() {
			w.xs[b.At(i).Actor] = append(w.xs[b.At(i).Actor], b.At(i).X)
		}
	})
}

// TestASessionAttachedToAnActorDrivesItAndLetsItGo: a session that never
// said Hello is attached to an NPC: it is welcomed to the NPC's id and
// place and told who is around, its moves move the NPC, and the other
// player sees the NPC throughout with no Disappear or Appear. Detached,
// the NPC stays where it was, the session's moves no longer move it, and
// the connection is not closed. Attach and Detach refuse what they
// cannot do.
func TestASessionAttachedToAnActorDrivesItAndLetsItGo(t *testing.T) {
	srv, err := throng.New(throng.Options{
		Logger:      slog.New(slog.DiscardHandler),
		Parallelism: throng.Parallelism{Enabled: new(false)},
		Admit: func(wire.Hello) (throng.Entry, error) {
			return throng.Entry{Spawn: components.Transform{X: 130, Y: 100}}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	npc := srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: 100, Y: 100}})
	prop := srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: 90, Y: 100}, Prop: true})
	b := newWatcher(srv.Mem().Dial())
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("b")})
	require.NoError(t, err)
	require.NoError(t, b.c.Send(hello))
	a := newWatcher(srv.Mem().Dial())
	for range 3 {
		srv.Tick()
		b.read(t)
	}
	require.Equal(t, []string{fmt.Sprint("appear ", npc.ID)}, b.events)
	bActor := components.ActorID{ID: b.welcome.Actor}

	// What Attach refuses.
	assert.ErrorContains(t, srv.Attach(b.c.Session(), npc, ""), "said Hello")
	assert.ErrorContains(t, srv.Attach(a.c.Session(), bActor, ""), "has a client")
	assert.ErrorContains(t, srv.Attach(a.c.Session(), components.ActorID{ID: 999}, ""), "no actor")
	assert.ErrorContains(t, srv.Attach(a.c.Session(), prop, ""), "is a prop")
	assert.ErrorContains(t, srv.Attach(wire.SessionID(77), npc, ""), "no session")
	_, _, err = srv.Detach(npc)
	assert.ErrorContains(t, err, "no client in play")

	require.NoError(t, srv.Attach(a.c.Session(), npc, ""))
	srv.Tick()
	a.read(t)
	b.read(t)
	assert.Equal(t, 1, a.welcomed)
	assert.Equal(t, npc.ID, a.welcome.Actor, "welcomed to the NPC")
	assert.Equal(t, float32(100), a.welcome.X)
	assert.Equal(t, []string{fmt.Sprint("appear ", b.welcome.Actor)}, a.events, "told who is around, itself left out")

	for seq := uint32(1); seq <= 4; seq++ {
		require.NoError(t, a.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: 100 + 10*float32(seq), Y: 100})))
		srv.Tick()
		a.read(t)
		b.read(t)
	}
	assert.Equal(t, []float32{110, 120, 130, 140}, b.xs[npc.ID], "the other player saw the NPC walk")
	assert.Equal(t, []string{fmt.Sprint("appear ", npc.ID)}, b.events, "no Disappear, no second Appear")

	session, _, err := srv.Detach(npc)
	require.NoError(t, err)
	assert.Equal(t, a.c.Session(), session)
	for seq := uint32(5); seq <= 7; seq++ {
		require.NoError(t, a.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: 200, Y: 100})))
		srv.Tick()
		a.read(t)
		b.read(t)
	}
	assert.Equal(t, []float32{110, 120, 130, 140}, b.xs[npc.ID], "the detached session moves nothing")
	_, ok := srv.World().Entity(npc)
	require.True(t, ok, "the NPC stays")
	_, closed := a.c.CloseReason()
	assert.False(t, closed, "the connection is the caller's to move or close")
	assert.Equal(t, []string{fmt.Sprint("appear ", npc.ID)}, b.events)

	// An attach whose actor goes before the join is refused.
	c := newWatcher(srv.Mem().Dial())
	srv.Tick()
	require.NoError(t, srv.Attach(c.c.Session(), npc, ""))
	srv.World().Despawn(npc)
	srv.Tick()
	c.read(t)
	assert.Contains(t, c.refusal, "is gone")
	assert.Zero(t, c.welcomed)
}

// TestAnAttachedSessionKeepsItsPlayersName: Detach gives the player's
// name with its session, and the server it leaves does not keep the
// player; a session attached with a name is that player here: an actor
// kept for the name is forgotten (the player brings its newer one), and
// when the session leaves, its actor is kept under the name.
func TestAnAttachedSessionKeepsItsPlayersName(t *testing.T) {
	srv, err := throng.New(throng.Options{
		Logger:      slog.New(slog.DiscardHandler),
		Parallelism: throng.Parallelism{Enabled: new(false)},
		Admit: func(h wire.Hello) (throng.Entry, error) {
			return throng.Entry{Player: string(h.Token), Spawn: components.Transform{X: 130, Y: 100}}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	join := func(name string) *watcher {
		w := newWatcher(srv.Mem().Dial())
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(name)})
		require.NoError(t, err)
		require.NoError(t, w.c.Send(hello))
		for range 2 {
			srv.Tick()
			w.read(t)
		}
		require.Equal(t, 1, w.welcomed)
		return w
	}
	ann := join("ann")
	session, player, err := srv.Detach(components.ActorID{ID: ann.welcome.Actor})
	require.NoError(t, err)
	assert.Equal(t, ann.c.Session(), session)
	assert.Equal(t, "ann", player)
	ann.c.Close()
	srv.Tick()
	_, kept := srv.Kept("ann")
	assert.False(t, kept, "a player let go is kept where it goes, not here")

	bob := join("bob")
	bob.c.Close()
	srv.Tick()
	_, kept = srv.Kept("bob")
	require.True(t, kept)

	// bob comes back on another server's actor (here an NPC standing in
	// for it), attached under his name.
	npc := srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: 300, Y: 100}})
	back := newWatcher(srv.Mem().Dial())
	srv.Tick()
	require.NoError(t, srv.Attach(back.c.Session(), npc, "bob"))
	srv.Tick()
	back.read(t)
	require.Equal(t, npc.ID, back.welcome.Actor)
	_, kept = srv.Kept("bob")
	assert.False(t, kept, "the actor kept for bob is forgotten: he plays another")
	back.c.Close()
	srv.Tick()
	k, kept := srv.Kept("bob")
	require.True(t, kept, "bob, attached under his name, is kept when he leaves")
	assert.Equal(t, npc, k.ID)
	assert.Equal(t, float32(300), k.Transform.X)
}
