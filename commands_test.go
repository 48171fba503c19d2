package throng_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// echo is a game's system: after ingest it reads the tick's commands and
// answers each with an event to its sender, "<actor>: <payload>".
type echo struct {
	srv  *throng.Server
	seen []string
}

func (e *echo) Name() string             { return "echo" }
func (e *echo) Access() scheduler.Access { return scheduler.Uses() }
func (e *echo) RunSerial(*scheduler.Tick) {
	for _, c := range e.srv.Commands() {
		msg := fmt.Sprintf("%d: %s", c.Actor.ID, c.Payload)
		e.seen = append(e.seen, msg)
		e.srv.SendEvent(c.Actor, []byte(msg))
	}
}

// TestCommandsReachTheGamesSystemsAndEventsTheClients: what a client sends
// as a command reaches a system of the game's, with the sender's actor, in
// the tick it arrives; what the system sends its actor as an event reaches
// that client alone, on its reliable stream. Commands over the per-tick
// limit, or from a client not yet playing, are dropped and counted.
func TestCommandsReachTheGamesSystemsAndEventsTheClients(t *testing.T) {
	srv, err := throng.New(throng.Options{Admit: func(wire.Hello) (throng.Entry, error) { return throng.Entry{}, nil }})
	require.NoError(t, err)
	defer srv.Close()
	e := &echo{srv: srv}
	require.NoError(t, srv.AddSystem(e, scheduler.After(systems.IngestName)))

	a, b := dialTwo(t, srv)
	require.NoError(t, a.Send(wire.AppendCommand(nil, []byte("too early"))), "before a's Welcome")
	srv.Tick()
	assert.Empty(t, e.seen, "a command from a client not yet playing reaches no system")
	assert.Equal(t, uint64(1), srv.Stats().DroppedInputs)
	actorOf := map[*mem.Client]uint32{}
	for _, c := range []*mem.Client{a, b} {
		c.DrainReliable(func(f []byte) {
			if w, err := wire.DecodeWelcome(f); err == nil {
				actorOf[c] = w.Actor
			}
		})
	}

	require.NoError(t, a.Send(wire.AppendCommand(nil, []byte("open door"))))
	require.NoError(t, b.Send(wire.AppendCommand(nil, []byte("wave"))))
	require.NoError(t, a.Send(wire.AppendCommand(nil, []byte("close door"))))
	srv.Tick()
	want := []string{
		fmt.Sprintf("%d: open door", actorOf[a]),
		fmt.Sprintf("%d: wave", actorOf[b]),
		fmt.Sprintf("%d: close door", actorOf[a]),
	}
	assert.Equal(t, want, e.seen, "in arrival order, each with its sender's actor")
	events := func(c *mem.Client) []string {
		var got []string
		c.DrainReliable(func(f []byte) {
			if p, err := wire.DecodeEvent(f); err == nil {
				got = append(got, string(p))
			}
		})
		return got
	}
	assert.Equal(t, []string{want[0], want[2]}, events(a), "a hears its own answers")
	assert.Equal(t, []string{want[1]}, events(b))

	e.seen = nil
	for i := range systems.MaxCommandsPerTick + 4 {
		require.NoError(t, b.Send(wire.AppendCommand(nil, fmt.Appendf(nil, "%d", i))))
	}
	before := srv.Stats().DroppedInputs
	srv.Tick()
	assert.Len(t, e.seen, systems.MaxCommandsPerTick)
	assert.Equal(t, fmt.Sprintf("%d: 0", actorOf[b]), e.seen[0])
	assert.Equal(t, before+4, srv.Stats().DroppedInputs, "the rest are dropped and counted")

	assert.False(t, srv.SendEvent(components.ActorID{ID: 999}, []byte("x")), "no such actor")
	assert.Equal(t, uint64(3+systems.MaxCommandsPerTick), srv.Stats().Commands, "handed to the game's systems")
	assert.Equal(t, uint64(3+systems.MaxCommandsPerTick), srv.Stats().EventsSent, "one answer each")
}

// roster is a game's system after the join: it keeps who is playing from
// the tick's changes.
type roster struct {
	srv     *throng.Server
	playing map[uint64]components.ActorID // by session
	left    []uint64
}

func (r *roster) Name() string             { return "roster" }
func (r *roster) Access() scheduler.Access { return scheduler.Uses() }
func (r *roster) RunSerial(*scheduler.Tick) {
	for _, c := range r.srv.Changes() {
		switch {
		case c.Kind == ecs.Spawned && c.Session != 0:
			r.playing[c.Session] = c.ID
		case c.Kind == ecs.Despawned && c.Session != 0:
			delete(r.playing, c.Session)
			r.left = append(r.left, c.Session)
		}
	}
}

// TestChangesTellTheGameWhoJoinedAndWhoLeft: a system after the join sees
// each player's spawn in the tick it is admitted and its despawn in the
// tick after it leaves, with its session; an NPC's spawn has none.
func TestChangesTellTheGameWhoJoinedAndWhoLeft(t *testing.T) {
	srv, err := throng.New(throng.Options{Admit: func(wire.Hello) (throng.Entry, error) { return throng.Entry{}, nil }})
	require.NoError(t, err)
	defer srv.Close()
	r := &roster{srv: srv, playing: map[uint64]components.ActorID{}}
	require.NoError(t, srv.AddSystem(r, scheduler.After(systems.JoinName)))
	a, _ := dialTwo(t, srv)
	npc := srv.World().Spawn(ecs.ActorSpec{})
	srv.Tick()
	require.Len(t, r.playing, 2, "both players, not the NPC")
	assert.Contains(t, r.playing, uint64(a.Session()))
	assert.NotContains(t, r.playing, uint64(0))
	spawnedNPC := false
	for _, c := range srv.Changes() {
		spawnedNPC = spawnedNPC || c.ID == npc
	}
	assert.True(t, spawnedNPC, "the NPC's spawn is among the changes")

	a.Close()
	srv.Tick()
	assert.Equal(t, []uint64{uint64(a.Session())}, r.left)
	assert.Len(t, r.playing, 1)
	srv.Tick()
	assert.Empty(t, srv.Changes(), "a quiet tick changes nothing")
}

// dialTwo connects two in-memory clients, "a" and "b", and sends their
// Hellos; the next tick admits them.
func dialTwo(t *testing.T, srv *throng.Server) (a, b *mem.Client) {
	t.Helper()
	a, b = srv.Mem().Dial(), srv.Mem().Dial()
	for i, c := range []*mem.Client{a, b} {
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte{'a' + byte(i)}})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
	}
	return a, b
}
