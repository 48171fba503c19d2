package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/fleet"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/wire"
)

// serve runs a 30 Hz Throng server on QUIC on loopback, admitting with
// admit, until stop is called (or the test ends). It returns the address.
func serve(t *testing.T, admit func(wire.Hello) (throng.Entry, error)) (addr string, stop func()) {
	t.Helper()
	q, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: q, Admit: admit})
	if err != nil {
		q.Close()
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			assert.NoError(t, <-ran)
		}
	}
	t.Cleanup(stop)
	return q.Addr().String(), stop
}

func startFleet(t *testing.T, cfg fleet.Config) *fleet.Fleet {
	t.Helper()
	cfg.Client.InsecureSkipVerify = true
	f, err := fleet.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// TestBotsJoinHearEachOtherAndKeepTheRules runs four restless bots on one
// square for a second and a half: all are welcomed, each hears the other
// three (at most 30 Hz each), none sends past the rate limit, and none is
// ever corrected. (On a quiet machine a bot hears about 57 records a
// second and sends 30; the lower bounds only ask for some, so a loaded
// machine does not fail the test.)
func TestBotsJoinHearEachOtherAndKeepTheRules(t *testing.T) {
	pop := scenario.Square(4, 1)
	addr, _ := serve(t, pop.AdmitAny)
	f := startFleet(t, fleet.Config{Addr: addr, Population: pop, Gait: scenario.RestlessGait(), Seed: 1})

	g := f.Grow(context.Background(), 4)
	require.NoError(t, g.Err())
	assert.Equal(t, 4, g.Joined)
	start := f.Totals()
	time.Sleep(1500 * time.Millisecond)
	end := f.Totals()

	assert.Equal(t, 4, end.Active())
	assert.Zero(t, end.Corrections, "bots walk within the server's rules")
	assert.Zero(t, end.Lost)
	perBot := float64(end.Records-start.Records) / 1.5 / 4
	t.Logf("each bot heard %.1f records and sent %.1f updates a second", perBot, float64(end.MovesSent-start.MovesSent)/1.5/4)
	assert.Positive(t, perBot, "the others are heard")
	assert.LessOrEqual(t, perBot, 3*31.0, "no more than three others at 30 Hz: %.1f records/s each", perBot)
	sent := end.MovesSent - start.MovesSent
	assert.Positive(t, sent, "moving bots send")
	// 30 a second, one let in up to half an interval early: at most
	// 1.5*30 + 2 in 1.5 s.
	assert.LessOrEqual(t, sent, uint64(4*(45+2)), "never past the rate limit")
}

// TestGrowCountsRefusalsWithTheServersReason: bots the server does not let
// in are counted, with the reason it gave, and do not stop the others.
func TestGrowCountsRefusalsWithTheServersReason(t *testing.T) {
	pop := scenario.Square(3, 1)
	addr, _ := serve(t, pop.Admit) // strict: bot-3 and up have no spawn
	f := startFleet(t, fleet.Config{Addr: addr, Population: pop, Seed: 1, First: 1})

	g := f.Grow(context.Background(), 4) // bots 1 to 4
	assert.Equal(t, 2, g.Joined)
	assert.Equal(t, 2, g.Refused)
	require.NotNil(t, g.Refusal)
	assert.Contains(t, g.Refusal.Reason, "square has no bot")
	assert.ErrorContains(t, g.Err(), "fleet: 2 of 4 bots refused")
	tot := f.Totals()
	assert.Equal(t, 2, tot.Joined)
	assert.Equal(t, 2, tot.Refused)
	assert.Contains(t, tot.Refusal, "square has no bot")

	assert.Equal(t, fleet.Growth{}, f.Grow(context.Background(), 4), "bots already dialed are not dialed again")
}

// TestBotsOfAStoppedServerAreCountedLost: when the server goes away the
// fleet says so, with the reason, instead of stepping dead clients.
func TestBotsOfAStoppedServerAreCountedLost(t *testing.T) {
	pop := scenario.Square(2, 1)
	addr, stop := serve(t, pop.AdmitAny)
	f := startFleet(t, fleet.Config{Addr: addr, Population: pop, Seed: 1})
	require.NoError(t, f.Grow(context.Background(), 2).Err())
	stop()
	require.Eventually(t, func() bool { return f.Totals().Lost == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 0, f.Totals().Active())
	assert.NotEmpty(t, f.Totals().Loss)
}

// TestBusyBotsDialAgainUntilTheyGiveUp: a bot told "server busy" dials
// again a second later, as a player's client would, and counts as refused
// only once RetryBusyFor is over.
func TestBusyBotsDialAgainUntilTheyGiveUp(t *testing.T) {
	pop := scenario.Square(1, 1)
	q, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true})
	require.NoError(t, err)
	// Busy as soon as a second of ticks is in: any work passes a
	// nanosecond. Ticked flat out, so that second takes milliseconds.
	srv, err := throng.New(throng.Options{Transport: q, Admit: pop.AdmitAny, Admission: throng.Admission{BusyShare: new(1e-9)}})
	require.NoError(t, err)
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
	t.Cleanup(func() {
		cancel()
		<-ticked
		srv.Close()
	})

	f := startFleet(t, fleet.Config{Addr: q.Addr().String(), Population: pop, RetryBusyFor: 1500 * time.Millisecond})
	began := time.Now()
	g := f.Grow(context.Background(), 1)
	assert.GreaterOrEqual(t, time.Since(began), fleet.BusyRetryDelay, "it waited before dialing again")
	assert.Equal(t, 1, g.Refused)
	assert.Equal(t, 1, g.BusyRetries, "dialed at 0 s and 1 s; a third at 2 s would be past 1.5 s")
	require.NotNil(t, g.Refusal)
	assert.Equal(t, wire.RefuseBusy, g.Refusal.Code)
	tot := f.Totals()
	assert.Equal(t, 1, tot.Refused, "one bot, refused once all told")
	assert.Equal(t, 1, tot.BusyRetries)
}

func TestGrowWithNoServerFailsWithinTheDialTimeout(t *testing.T) {
	f := startFleet(t, fleet.Config{Addr: "127.0.0.1:9", Population: scenario.Square(1, 1), DialTimeout: 200 * time.Millisecond})
	began := time.Now()
	g := f.Grow(context.Background(), 2)
	assert.Less(t, time.Since(began), 2*time.Second)
	assert.Equal(t, 2, g.Failed)
	assert.ErrorContains(t, g.Err(), "fleet: 2 of 2 bots failed to connect")
}

func TestGrowAfterCloseSaysClosed(t *testing.T) {
	f := startFleet(t, fleet.Config{Addr: "127.0.0.1:9", Population: scenario.Square(1, 1)})
	require.NoError(t, f.Close())
	g := f.Grow(context.Background(), 3)
	assert.Equal(t, fleet.Growth{Canceled: 3}, stripCause(g))
	assert.True(t, errors.Is(g.Err(), fleet.ErrClosed), g.Err())
	assert.NoError(t, f.Close(), "closing again does nothing")
}

// TestGrowCutShortCountsNoFailures: bots cut off by the end of a run are
// not failures, and the ones never dialed are dialed by the next Grow.
func TestGrowCutShortCountsNoFailures(t *testing.T) {
	pop := scenario.Square(8, 1)
	addr, _ := serve(t, pop.AdmitAny)
	f := startFleet(t, fleet.Config{Addr: addr, Population: pop, Seed: 1, DialConcurrency: 1})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g := f.Grow(ctx, 8)
	assert.Equal(t, 8, g.Canceled)
	assert.Zero(t, g.Failed)
	assert.ErrorIs(t, g.Err(), context.Canceled)
	assert.ErrorContains(t, g.Err(), "fleet: 8 of 8 bots not connected")
	assert.Zero(t, f.Totals().Failed)

	g = f.Grow(context.Background(), 8)
	require.NoError(t, g.Err())
	assert.Equal(t, 8, g.Joined, "the next Grow dials the bots never dialed")
	assert.Equal(t, 8, f.Totals().Joined)
}

// stripCause drops Growth's unexported cause, which Err reports.
func stripCause(g fleet.Growth) fleet.Growth {
	return fleet.Growth{Joined: g.Joined, Refused: g.Refused, Failed: g.Failed, Canceled: g.Canceled, Refusal: g.Refusal, Failure: g.Failure}
}

func TestStartRejectsConfigsThatCannotRun(t *testing.T) {
	pop := scenario.Square(1, 1)
	for _, c := range []struct {
		cfg  fleet.Config
		want string
	}{
		{fleet.Config{Population: pop}, "Addr is empty"},
		{fleet.Config{Addr: "127.0.0.1:1"}, "no spawns"},
		{fleet.Config{Addr: "127.0.0.1:1", Population: pop, First: -1}, "First must not be negative"},
		{fleet.Config{Addr: "127.0.0.1:1", Population: pop, Step: -time.Second}, "must not be negative"},
	} {
		_, err := fleet.Start(c.cfg)
		require.Error(t, err, c.want)
		assert.True(t, strings.HasPrefix(err.Error(), "fleet: "), err.Error())
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestProcessCPUGrowsWithWork(t *testing.T) {
	before, ok := fleet.ProcessCPU()
	if !ok {
		t.Skip("this system does not report process CPU time")
	}
	// Spin until the count has grown by 20 ms, or give up after five
	// seconds: on a loaded machine (the race detector's packages run side
	// by side) 50 ms of wall time had got this goroutine under 20 ms of CPU.
	after := before
	for end := time.Now().Add(5 * time.Second); after-before < 20*time.Millisecond && time.Now().Before(end); {
		for spin := time.Now().Add(5 * time.Millisecond); time.Now().Before(spin); { //nolint:revive // spin on purpose
		}
		after, _ = fleet.ProcessCPU()
	}
	assert.GreaterOrEqual(t, after-before, 20*time.Millisecond, "spinning is counted")
}
