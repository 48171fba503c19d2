package systems

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// TestRoutedInputsAreAppliedAsDirectOnes: with the Move frames routed to
// buckets and the buckets applied at once on goroutines of their own (what
// the ingest system does on the pool for a big crowd), every client gets
// the bytes it gets when each frame is applied as it comes, and the tick
// counts the same: stale updates and their corrections, updates over the
// rate limit, a malformed frame, a flooder's kick.
func TestRoutedInputsAreAppliedAsDirectOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var spawns []components.Transform
	for range 160 { // two chunks side by side
		spawns = append(spawns, components.Transform{X: 100 + rng.Float32()*8000, Y: 100 + rng.Float32()*3800})
	}
	cfg := Config{
		Parallel: true,
		Limits:   Limits{MovingPerSecond: 30, StandingPerSecond: 10, FloodFactor: 3, FloodSeconds: 1},
	}
	direct := newRig(t, cfg, spawns)
	routed := newRig(t, cfg, spawns)
	routed.p.minRouted = 1
	routed.p.cfg.Shards.ShardsPerCluster = 7 // buckets of uneven slot ranges
	routed.routeInputs = true

	seq := make([]uint32, len(spawns))
	var got [2][][]byte // per rig, per client: everything received
	got[0], got[1] = make([][]byte, len(spawns)), make([][]byte, len(spawns))
	for tick := range 60 {
		for i, s := range spawns {
			move := func(seq uint32) []byte {
				return wire.AppendMove(nil, wire.Move{Seq: seq, X: s.X + float32(tick%5)*10, Y: s.Y})
			}
			var frames [][]byte
			seq[i]++
			switch {
			case i == 3: // far over the rate limit, and soon over the flood line
				for range 5 {
					frames = append(frames, move(seq[i]))
					seq[i]++
				}
			case i%7 == 0 && tick%5 == 4: // a step back: stale, and corrected
				frames = append(frames, move(seq[i]-3))
				seq[i]--
			case i%7 == 1 && tick%5 == 4: // overtaken within the tick: stale, quietly
				frames = append(frames, move(seq[i]), move(seq[i]-1))
			case i == 5 && tick == 10: // a truncated Move
				frames = append(frames, move(seq[i])[:wire.HeaderSize+3])
			default:
				frames = append(frames, move(seq[i]))
			}
			for _, f := range frames {
				for _, r := range []*rig{direct, routed} {
					if err := r.clients[i].Send(f); err != nil {
						require.ErrorIs(t, err, wire.ErrClosed, "only the flooder's session closes")
					}
				}
			}
		}
		for k, r := range []*rig{direct, routed} {
			r.step()
			for i, c := range r.clients {
				c.DrainDatagrams(func(d []byte) { got[k][i] = append(got[k][i], d...) })
				c.DrainReliable(func(f []byte) { got[k][i] = append(got[k][i], f...) })
			}
		}
		for i := range spawns {
			require.True(t, bytes.Equal(got[0][i], got[1][i]), "tick %d: client %d got different bytes", tick, i)
		}
		a, b := direct.p.Stats(), routed.p.Stats()
		require.Equal(t, [6]uint64{a.Malformed, a.DroppedInputs, a.StaleInputs, a.RateLimited, a.Kicked, a.Rejected},
			[6]uint64{b.Malformed, b.DroppedInputs, b.StaleInputs, b.RateLimited, b.Kicked, b.Rejected}, "tick %d", tick)
	}
	st := routed.p.Stats()
	assert.Positive(t, routed.routed, "the frames went through the buckets")
	assert.Zero(t, direct.routed)
	for what, n := range map[string]uint64{
		"malformed frames": st.Malformed, "stale updates": st.StaleInputs, "updates over the rate limit": st.RateLimited,
		"a kick": st.Kicked, "rejected updates": st.Rejected, "corrections": st.CorrectionsSent,
	} {
		assert.Positive(t, n, "the walk must produce %s", what)
	}
}

// TestAnHonestClientIsNeverLimitedBecauseTheServerTickedSlowly: a client
// sends 30 updates a second, its limit, to a server that runs at half its
// rate (every other tick period skipped: Skip), so two updates arrive
// every tick. The limit counts time, not ticks: none is dropped. The same
// client against a server that counted ticks (no Skip) is limited, which
// is what the test would catch.
func TestAnHonestClientIsNeverLimitedBecauseTheServerTickedSlowly(t *testing.T) {
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 300, Y: 100}}
	cfg := Config{Limits: Limits{MovingPerSecond: 30, StandingPerSecond: 10, FloodFactor: 10, FloodSeconds: 2}}
	limited := func(skip bool) uint64 {
		r := newRig(t, cfg, spawns)
		for k := range 150 { // ten seconds at half of 30 Hz
			if skip {
				r.p.Skip(1) // the period the slow tick before this one overran
			}
			for range 2 {
				r.seq[0]++
				x := 100 + float32(r.seq[0])
				require.NoError(t, r.clients[0].Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[0], X: x, Y: 100})))
			}
			r.step()
			require.Zero(t, r.p.Stats().Kicked, "tick %d", k)
		}
		return r.p.Stats().RateLimited
	}
	assert.Zero(t, limited(true), "updates dropped from a client at its limit")
	assert.Positive(t, limited(false), "counted in ticks, the same client is over its limit")
}

// TestAPlayerWaitingWhileTheServerIsBusyIsRefusedAfterTenSeconds: a
// player waiting its turn to join is not turned away because the server
// became busy; the line stands still, and only once it has waited ten
// seconds of ticks is it refused with the busy reason, as a newcomer
// would be.
func TestAPlayerWaitingWhileTheServerIsBusyIsRefusedAfterTenSeconds(t *testing.T) {
	r := newRig(t, Config{}, []components.Transform{{X: 100, Y: 100}})
	r.p.cfg.JoinAppears = 1 // one join a tick here
	mem := r.p.transport.(*mem.Transport)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p0")})
	require.NoError(t, err)
	first, second := mem.Dial(), mem.Dial()
	require.NoError(t, first.Send(hello))
	require.NoError(t, second.Send(hello))
	r.step()
	require.Equal(t, 2, r.p.world.Len(), "the first newcomer joins")
	require.Equal(t, 1, r.p.Waiting(), "the second waits its turn")
	r.p.SetBusy(true)
	for k := 1; k < 10*30; k++ { // TickRate 30: ten seconds of ticks, less one
		r.step()
		require.Equal(t, 1, r.p.Waiting(), "tick %d: the line stands still", k)
	}
	require.Zero(t, r.p.Stats().BusyRejections)
	r.step()
	assert.Zero(t, r.p.Waiting())
	assert.EqualValues(t, 1, r.p.Stats().BusyRejections)
	assert.Equal(t, 2, r.p.world.Len(), "and never joined")
	var refused wire.Refuse
	second.DrainReliable(func(f []byte) {
		if rf, err := wire.DecodeRefuse(f); err == nil {
			refused = rf
		}
	})
	assert.Equal(t, wire.RefuseBusy, refused.Code)
	assert.Equal(t, BusyReason, string(refused.Reason))
}

// TestABriefBusySpellDoesNotEmptyALongLine: a line of 400 let in one a
// tick has waited more than ten seconds at its back when one busy second
// stands it still; nobody is turned away, and all join once it moves again.
func TestABriefBusySpellDoesNotEmptyALongLine(t *testing.T) {
	r := newRig(t, Config{}, []components.Transform{{X: 100, Y: 100}})
	r.p.cfg.JoinAppears = 1 // one join a tick here
	mem := r.p.transport.(*mem.Transport)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p0")})
	require.NoError(t, err)
	for range 400 {
		require.NoError(t, mem.Dial().Send(hello))
	}
	for range 350 { // TickRate 30: more than eleven seconds
		r.step()
	}
	waiting := r.p.Waiting()
	require.Positive(t, waiting, "some are still in line")
	r.p.SetBusy(true)
	for range 30 {
		r.step()
	}
	r.p.SetBusy(false)
	require.Equal(t, waiting, r.p.Waiting(), "the line stood still for a second")
	for range waiting + 1 {
		r.step()
	}
	assert.Zero(t, r.p.Waiting())
	assert.Zero(t, r.p.Stats().BusyRejections)
	assert.Equal(t, 401, r.p.world.Len(), "the rig's player and all 400 of the line")
}

// TestRoutedInputsAllocateNothingOnceWarm: a crowd's Move frames routed
// to the input buckets and applied there (a crowd's path, on the pool or
// inline, which the tick allocation tests' crowds are too small to take)
// allocate nothing once the buckets have held a tick's frames: every
// bucket's lists keep their memory from tick to tick.
func TestRoutedInputsAllocateNothingOnceWarm(t *testing.T) {
	var spawns []components.Transform
	for i := range 160 {
		spawns = append(spawns, components.Transform{X: 100 + float32(i%40)*200, Y: 100 + float32(i/40)*900})
	}
	r := newRig(t, Config{Parallel: true}, spawns)
	r.p.minRouted = 1
	r.p.cfg.Shards.ShardsPerCluster = 7
	r.routeInputs = true
	var frame []byte
	send := func() {
		for i, c := range r.clients {
			r.seq[i]++
			s := spawns[i]
			frame = wire.AppendMove(frame[:0], wire.Move{Seq: r.seq[i], X: s.X + float32(r.seq[i]%8), Y: s.Y})
			if err := c.Send(frame); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 10 {
		send()
		r.step()
	}
	before, routed := r.p.Stats(), r.routed
	ingest := func() {
		send()
		r.tick++
		r.routed += r.p.routeInputs(r.tick)
		for b := range r.p.buckets {
			r.p.applyInputs(b)
		}
		r.p.mergeInputs()
	}
	assert.Zero(t, testing.AllocsPerRun(20, ingest), "allocations per tick of routed Move frames")
	after := r.p.Stats()
	assert.Equal(t, 21*len(spawns), r.routed-routed, "every frame went through the buckets")
	assert.Equal(t, [3]uint64{before.StaleInputs, before.RateLimited, before.DroppedInputs},
		[3]uint64{after.StaleInputs, after.RateLimited, after.DroppedInputs}, "no frame dropped")
	for i, id := range r.actors {
		e, ok := r.p.world.Entity(components.ActorID{ID: id})
		require.True(t, ok)
		in := r.p.inputs.Get(e)
		assert.Equal(t, r.seq[i], in.Seq, "player %d's actor holds its latest move", i)
		assert.True(t, in.Pending, "player %d's latest move waits for Move", i)
	}
}
