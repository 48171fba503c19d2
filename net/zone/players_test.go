package zone_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// midTick is a test's system run in the middle of a zone server's tick.
type midTick struct{ run func() }

func (m *midTick) Name() string              { return "test-mid-tick" }
func (m *midTick) Access() scheduler.Access  { return scheduler.Uses(scheduler.Structural()) }
func (m *midTick) RunSerial(*scheduler.Tick) { m.run() }

// walkerAt returns the actor of the one player that has moved on the
// zone server that owns it now (the only actor with a client and an input
// applied), that zone and its MoveInput and Transform; zone 0 while no
// server lets a player drive it (its session between servers).
func (w *zones) walkerAt() (zone.ID, components.ActorID, components.MoveInput, components.Transform) {
	for _, id := range w.order {
		srv := w.servers[id].srv
		world := srv.World()
		for _, cv := range world.Snapshot(nil) {
			for r := range cv.Len() {
				if cv.Clients[r].Session != 0 && cv.Inputs[r].Seq > 0 {
					return id, cv.IDs[r], cv.Inputs[r], cv.Transforms[r]
				}
			}
		}
	}
	return 0, components.ActorID{}, components.MoveInput{}, components.Transform{}
}

// TestAPlayerWalksAcrossTheBorderOnOneConnection: a player behind the
// gateway walks from zone 1 into zone 2 and back, one move a tick, on
// one connection. Each zone server takes its actor in turn, and the
// player is welcomed by each to the actor it took (a new view, in that
// server's ids); every move the player sent is applied once by the
// server that owned the actor then: the authoritative input sequence
// never goes back, and the last move is where the actor ends. No move
// earns a Correction. A player of zone 2 watching it sees one actor all
// along: no Disappear, no second Appear.
func TestAPlayerWalksAcrossTheBorderOnOneConnection(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{})
	seq := uint32(0)
	x := float32(7800)
	var walker *viewer
	// The move that races the switch: the client sends it, and the
	// gateway forwards it to zone 1, during zone 1's tick that lets the
	// session go, after its Receive and before its apply system takes
	// the Ready and lets the session go. Zone 1's transport holds the
	// frame, and its next Receive finds it for a session it no longer
	// holds: it drops it. Zone 2 must get it from the gateway's copy.
	raced := false
	race := &midTick{run: func() {
		h := w.servers[1].z.Stats().Handoffs
		if raced || h.Started == 0 || h.AnswersReceived == 0 || h.SessionsMoved > 0 {
			return
		}
		raced = true
		seq++
		x += 25
		require.NoError(t, walker.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: 100})))
		w.gw.Step()
		require.Eventually(t, func() bool {
			received, _ := w.gatewayMessages()
			return received == w.gw.Stats().Messages
		}, 5*time.Second, time.Millisecond)
	}}
	require.NoError(t, w.servers[1].srv.AddSystem(race, scheduler.After(systems.IngestName), scheduler.Before(zone.ApplyName)))
	walker = w.joinVia(1, 7800, 100)
	watcher := w.joinVia(2, 9000, 100)
	players := []*viewer{walker, watcher}
	step := func() {
		w.round()
		for _, p := range players {
			p.read()
		}
	}
	for range 3 {
		step()
	}
	require.Len(t, walker.welcomes, 1)
	require.Len(t, watcher.others(), 1, "the walker, seen across the border")
	seenAs := watcher.others()[0]
	before := slices.Clone(watcher.events)

	// owners and seqs: per tick, the zone that owned the walker's actor
	// and the last input it applied.
	var owners []zone.ID
	var seqs []uint32
	walk := func(xs []float32) {
		for _, nx := range xs {
			seq++
			x = nx
			require.NoError(t, walker.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: 100})))
			step()
			if owner, _, in, _ := w.walkerAt(); owner != 0 {
				owners = append(owners, owner)
				seqs = append(seqs, in.Seq)
			}
		}
	}
	// idle lets the walker stand without sending (a client standing still
	// sends at a third of the moving rate, which the server's limit for
	// standing updates holds it to).
	idle := func(rounds int) {
		for range rounds {
			step()
		}
	}
	walk(span(7850, 8600, 50))
	idle(6)

	require.True(t, raced)
	require.Len(t, walker.welcomes, 2, "welcomed again, by zone 2")
	owner, id, in, tr := w.walkerAt()
	require.Equal(t, zone.ID(2), owner)
	assert.Equal(t, seq, in.Seq, "zone 2 applied the last move")
	assert.Equal(t, x, tr.X)
	assert.Equal(t, seenAs, id.ID, "zone 2's actor is the one its player watched")
	assert.True(t, slices.IsSorted(seqs), "the applied inputs never went back: %v", seqs)
	assert.Equal(t, zone.ID(1), owners[0])
	assert.Equal(t, before, watcher.events, "the watcher saw no Appear or Disappear")
	assert.Zero(t, walker.corrections, "no move was corrected")
	assert.Equal(t, uint64(1), w.gts[1].Strays(), "zone 1 dropped the move that raced the switch")
	// Every record the watcher got of the walker is a place it walked
	// through, in order.
	assert.True(t, slices.IsSorted(watcher.xs[seenAs]), "%v", watcher.xs[seenAs])

	// And back into zone 1.
	walk(span(8550, 7800, -50))
	idle(6)
	require.Len(t, walker.welcomes, 3, "welcomed again, by zone 1")
	owner, _, in, tr = w.walkerAt()
	require.Equal(t, zone.ID(1), owner)
	assert.Equal(t, walker.welcomes[0], walker.welcomes[2], "zone 1 gave it back its first actor")
	assert.Equal(t, seq, in.Seq)
	assert.Equal(t, x, tr.X)
	assert.Zero(t, walker.corrections)
	assert.Equal(t, before, watcher.events)
	_, closed := walker.c.CloseReason()
	assert.False(t, closed, "one connection throughout")
	h1, h2 := w.servers[1].z.Stats().Handoffs, w.servers[2].z.Stats().Handoffs
	assert.Equal(t, uint64(1), h1.SessionsMoved)
	assert.Equal(t, uint64(1), h2.SessionsMoved)
	assert.Equal(t, uint64(1), h1.SessionsTaken)
	assert.Equal(t, uint64(1), h2.SessionsTaken)
	assert.Zero(t, h1.SessionsLost+h2.SessionsLost)
	assert.Zero(t, h1.InputsMissed+h2.InputsMissed, "no move of the switch was lost")
	assert.Zero(t, h1.InputsDuplicated+h2.InputsDuplicated, "none was applied twice")
	gs := w.gw.Stats()
	assert.Equal(t, uint64(2), gs.ShadowMoves, "each new owner had the session opened with the Prepare, ahead of its move")
}

// crossing walks the player that has moved (see walkerAt) one step a
// round from x by dx until until says the hand-off has come as far as a
// test needs, and returns the next place.
func (w *zones) crossing(v *viewer, seq *uint32, x, dx float32, read func(), until func(zone.HandoffStats) bool) float32 {
	for range 40 {
		*seq++
		require.NoError(w.t, v.c.Send(wire.AppendMove(nil, wire.Move{Seq: *seq, X: x, Y: 100})))
		x += dx
		w.round()
		read()
		for _, id := range w.order {
			if until(w.servers[id].z.Stats().Handoffs) {
				return x
			}
		}
	}
	require.Fail(w.t, "the hand-off never came so far")
	return x
}

// TestAPlayerWhoseHandoffFailsIsGivenBackItsActor: zone 2 is given to
// another server once it has answered Ready to the hand-off of a player
// walking into it, before zone 1 commits. Zone 1 lets the session go with
// the Commit; zone 2, fenced, refuses the Commit and sends the session
// back; zone 1 welcomes the player again to the actor it had, which it
// drives on, on the same connection.
func TestAPlayerWhoseHandoffFailsIsGivenBackItsActor(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{})
	walker := w.joinVia(1, 8000, 100)
	for range 2 {
		w.round()
		walker.read()
	}
	require.Len(t, walker.welcomes, 1)
	seq := uint32(0)
	x := w.crossing(walker, &seq, 8100, 50, walker.read, func(h zone.HandoffStats) bool { return h.Started > 0 })

	moved := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	moved.Zones[1].Owner = "b2"
	rev, err := zone.PublishMap(testContext(t), w.js, "", moved)
	require.NoError(t, err)
	for _, id := range w.order {
		require.Eventually(t, func() bool { r, _ := w.servers[id].z.Revision(); return r == rev }, 5*time.Second, time.Millisecond)
	}
	w.round()
	walker.read()
	owner, _, _, _ := w.walkerAt()
	require.Zero(t, owner, "the session is between servers")
	for range 4 {
		w.round()
		walker.read()
	}
	require.Len(t, walker.welcomes, 2, "welcomed back")
	assert.Equal(t, walker.welcomes[0], walker.welcomes[1], "to the actor it had")
	for range 3 {
		seq++
		require.NoError(t, walker.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: 100})))
		w.round()
		walker.read()
	}
	owner, back, in, tr := w.walkerAt()
	require.Equal(t, zone.ID(1), owner)
	assert.Equal(t, walker.welcomes[0], back.ID)
	assert.Equal(t, seq, in.Seq)
	assert.Equal(t, x, tr.X)
	_, closed := walker.c.CloseReason()
	assert.False(t, closed, "one connection throughout")
	h1, h2 := w.servers[1].z.Stats().Handoffs, w.servers[2].z.Stats().Handoffs
	assert.Equal(t, uint64(1), h1.Refused)
	assert.Equal(t, uint64(1), h1.SessionsTaken, "zone 1 took its player back")
	// Zone 2 had the session opened with the Prepare (a shadow). Fenced,
	// it sends back what it holds: the session once zone 1's move made
	// it zone 2's, or first the shadow (which the gateway ends, zone 1
	// still serving the player) and then the session its move sent.
	gs := w.gw.Stats()
	assert.Equal(t, uint64(1), gs.Shadows)
	assert.Equal(t, uint64(1), gs.ShadowMoves+gs.ShadowsEnded)
	assert.Equal(t, 1+gs.ShadowsEnded, h2.SessionsMoved, "zone 2 sent it back")
	assert.Zero(t, h1.SessionsLost+h2.SessionsLost)
}

// TestAPlayerWhoLeavesDuringItsHandoffLeavesNoActorBehind: the player
// disconnects just after its owner let its session go. The new owner
// takes its actor; the session reaches it either before the player's
// leaving does (it is attached, then leaves as any player) or not at all
// (the gateway forwards the move as it hears of it, the close at its
// next step): then the new owner waits for the session a while and
// despawns the actor. Either way the watcher of zone 2 is told it is
// gone, and neither world keeps it.
func TestAPlayerWhoLeavesDuringItsHandoffLeavesNoActorBehind(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{HandoffTimeout: 3})
	walker := w.joinVia(1, 8000, 100)
	watcher := w.joinVia(2, 9000, 100)
	read := func() {
		walker.read()
		watcher.read()
	}
	for range 3 {
		w.round()
		read()
	}
	require.Len(t, watcher.others(), 1)
	seq := uint32(0)
	w.crossing(walker, &seq, 8100, 50, read, func(h zone.HandoffStats) bool { return h.SessionsMoved > 0 })
	walker.c.Close()
	for range 30*3 + 5 { // sessionWait hand-off timeouts of 3 ticks, and a few
		w.round()
		watcher.read()
	}
	assert.Empty(t, watcher.others(), "the walker's actor is gone")
	assert.Equal(t, "disappear", watcher.events[len(watcher.events)-1][:len("disappear")])
	for _, id := range w.order {
		for _, cv := range w.servers[id].srv.World().Snapshot(nil) {
			for r := range cv.Len() {
				if _, _, ghost := w.servers[id].z.Ghost(cv.IDs[r]); ghost {
					continue
				}
				assert.NotZero(t, cv.Clients[r].Session, "zone %d keeps actor %d without its player", id, cv.IDs[r].ID)
			}
		}
	}
	h2 := w.servers[2].z.Stats().Handoffs
	assert.Equal(t, uint64(1), h2.Taken)
	attached := uint64(0)
	for _, n := range h2.SwitchTicks {
		attached += n
	}
	assert.Equal(t, uint64(1), attached+h2.SessionsLost, "the session came or was counted lost, once: %+v", h2)
}
