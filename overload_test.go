package throng_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// TestAJoinStormIsAdmittedInTurnsWithinItsAppearBudget: 600 players say
// Hello in the same tick to a server with 200 in already, all at the
// origin. They are let in
// a few a tick, first come first served, each tick's joins costing at most
// admission.joinAppearsPerTick appears (the rest wait, and Stats says how
// many); none is refused, and all are in within the ticks that budget
// allows.
func TestAJoinStormIsAdmittedInTurnsWithinItsAppearBudget(t *testing.T) {
	const first, storm, budget = 200, 600, 20_000
	srv, err := throng.New(throng.Options{Admission: throng.Admission{JoinAppearsPerTick: new(budget)}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	tr := srv.Mem()
	hello := func(i int) *mem.Client {
		c := tr.Dial()
		frame, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p%d", i)})
		require.NoError(t, err)
		require.NoError(t, c.Send(frame))
		return c
	}
	var clients []*mem.Client
	for i := range first {
		clients = append(clients, hello(i))
	}
	for srv.Tick(); srv.Stats().Waiting > 0; srv.Tick() {
	}
	require.Equal(t, first, srv.World().Len())
	for i := range storm {
		clients = append(clients, hello(first+i))
	}
	ticks, admittedFirst := 0, -1
	for {
		before := srv.World().Len()
		st := srv.Tick()
		ticks++
		joined := srv.World().Len() - before
		if admittedFirst < 0 {
			admittedFirst = joined
		}
		// k joining n (all in one place) cost 2kn appears between them and
		// the n, and k(k-1) among themselves; one join always passes.
		assert.LessOrEqual(t, 2*joined*before+joined*(joined-1), max(budget, 2*before), "tick %d: %d joined %d", ticks, joined, before)
		assert.Equal(t, first+storm-srv.World().Len(), st.Waiting, "tick %d: Stats counts who waits", ticks)
		if st.Waiting == 0 {
			break
		}
		require.Less(t, ticks, storm, "the storm never drained")
	}
	assert.Less(t, admittedFirst, storm/4, "the storm did not join in one tick")
	assert.Equal(t, first+storm, srv.World().Len(), "everyone is in")
	assert.Zero(t, srv.Stats().BusyRejections+srv.Stats().Refused, "and nobody was refused")
	for i, c := range clients {
		welcomed := false
		c.DrainReliable(func(f []byte) {
			if _, err := wire.DecodeWelcome(f); err == nil {
				welcomed = true
			}
		})
		require.True(t, welcomed, "player %d got no Welcome", i)
	}
	t.Logf("%d joined in %d ticks, %d in the first", storm, ticks, admittedFirst)
}

// TestASlowGameSlowsTheServerEvenlyAndItRecovers: a game system that takes
// 50 ms of a 33 ms tick cannot be shed, so the server does not throttle
// for it: pressure stays at 0, the tick rate falls to what the system
// allows (about 20 Hz) without stalling, and climbs back to 30 Hz when the
// load goes. The client is told the rate while the server is slowed (a
// Rate frame a second), and told when it is back. A client sending its 30
// updates a second through all of it is never counted over its limit,
// though the server ticked slower.
func TestASlowGameSlowsTheServerEvenlyAndItRecovers(t *testing.T) {
	// Admission stays open, so that a player can join the slowed server.
	srv, err := throng.New(throng.Options{TickRate: new(30), Admission: throng.Admission{Enabled: new(false)}})
	require.NoError(t, err)
	load := &slowdown{}
	require.NoError(t, srv.AddSystem(load, scheduler.After(systems.JoinName)))
	tr := srv.Mem()
	client := tr.Dial()
	frame, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p0")})
	require.NoError(t, err)
	require.NoError(t, client.Send(frame))

	ctx, cancel := context.WithCancel(context.Background())
	type sample struct {
		at       time.Duration
		pressure int
	}
	samples := make(chan sample, 4096)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- srv.RunTicks(ctx, func(st systems.TickStats, _ time.Duration) {
			samples <- sample{time.Since(start), st.Pressure}
		})
	}()
	// The client: 30 moves a second by its own clock, as a game client
	// would, whatever the server's rate.
	sent := 0
	var rates []wire.Rate // what the server told the client of its rate
	send := func(until time.Duration) {
		for time.Since(start) < until {
			sent++
			require.NoError(t, client.Send(wire.AppendMove(nil, wire.Move{Seq: uint32(sent), X: float32(sent), Y: 1})))
			time.Sleep(time.Second / 30)
			client.DrainDatagrams(func([]byte) {})
			client.DrainReliable(func(f []byte) {
				if r, err := wire.DecodeRate(f); err == nil {
					rates = append(rates, r)
				}
			})
		}
	}
	send(500 * time.Millisecond)
	load.delay.Store(int64(50 * time.Millisecond))
	send(2200 * time.Millisecond)
	// A player who joins the slowed server hears its rate right after its
	// Welcome.
	late := tr.Dial()
	frame, err = wire.AppendHello(nil, wire.Hello{Token: []byte("p1")})
	require.NoError(t, err)
	require.NoError(t, late.Send(frame))
	send(2500 * time.Millisecond)
	var lateFrames []wire.Type
	var lateRate wire.Rate
	late.DrainReliable(func(f []byte) {
		var fr wire.Frame
		if wire.Decode(f, &fr) == nil {
			lateFrames = append(lateFrames, fr.Type)
			if fr.Type == wire.TypeRate {
				lateRate = fr.Rate
			}
		}
	})
	require.GreaterOrEqual(t, len(lateFrames), 2, "the late player's frames: %v", lateFrames)
	assert.Equal(t, []wire.Type{wire.TypeWelcome, wire.TypeRate}, lateFrames[:2], "Welcome, then the rate")
	assert.Less(t, lateRate.Hz(), 28.5, "the slowed rate: %v", lateRate)
	load.delay.Store(0)
	send(4500 * time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	close(samples)
	var slow, after, highest int
	for s := range samples {
		highest = max(highest, s.pressure)
		switch {
		case s.at > time.Second && s.at <= 2500*time.Millisecond:
			slow++
		case s.at > 3*time.Second:
			after++
		}
	}
	srv.Close()
	assert.Zero(t, highest, "no pressure for a cost throttling cannot shed")
	// 1.5 s at 50 ms a tick is 30 ticks; at the full rate it would be 45.
	assert.Greater(t, slow, 10, "the server slowed, it did not stall")
	assert.Less(t, slow, 40, "the slow system slowed the ticks")
	assert.Greater(t, after, 20, "the rate climbed back once the load went (30 ticks in the last second at 30 Hz)")
	assert.Zero(t, srv.Stats().RateLimited, "%d updates sent at the limit, none counted over it", sent)
	require.GreaterOrEqual(t, len(rates), 2, "the server told the client its rate while slowed, and when back: %v", rates)
	slowed := rates[0]
	assert.EqualValues(t, 30, slowed.Nominal)
	assert.Less(t, slowed.Hz(), 28.5, "told while slowed: %v", rates)
	assert.Greater(t, slowed.Hz(), 5.0, "and what it ticked at: %v", rates)
	back := rates[len(rates)-1]
	assert.EqualValues(t, 3000, back.Centihertz, "then told the nominal rate once it was back: %v", rates)
}

// TestTheLineStandsStillWhileTheServerIsBusy: players waiting their turn
// to join are not turned away because the server got busy (its own joins
// may be why); the line stops while admission is closed and moves on once
// it reopens, and every player is in at the end.
func TestTheLineStandsStillWhileTheServerIsBusy(t *testing.T) {
	const players = 45
	srv, err := throng.New(throng.Options{TickRate: new(30), Admission: throng.Admission{JoinAppearsPerTick: new(1)}})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	load := &slowdown{}
	require.NoError(t, srv.AddSystem(load, scheduler.After(systems.JoinName)))
	for i := range players {
		c := srv.Mem().Dial()
		frame, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p%d", i)})
		require.NoError(t, err)
		require.NoError(t, c.Send(frame))
	}
	load.delay.Store(int64(40 * time.Millisecond)) // over 90% of the 33.3 ms tick
	for k := 0; k < 30 || srv.Stats().Second.Admitting; k++ {
		require.Less(t, k, 90, "admission never closed")
		srv.Tick() // one joins a tick while a second of slow ticks passes
	}
	waiting := srv.Stats().Waiting
	require.Positive(t, waiting, "some still wait when admission closes")
	in := srv.World().Len()
	for range 10 {
		srv.Tick()
	}
	assert.Equal(t, in, srv.World().Len(), "nobody joins while the server is busy")
	assert.Equal(t, waiting, srv.Stats().Waiting, "and nobody waiting is turned away")
	load.delay.Store(0)
	for k := 0; k < 200 && srv.Stats().Waiting > 0; k++ {
		srv.Tick()
	}
	assert.Equal(t, players, srv.World().Len(), "the line moved on once admission reopened")
	assert.Zero(t, srv.Stats().BusyRejections)
}
