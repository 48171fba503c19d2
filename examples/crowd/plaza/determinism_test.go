package plaza_test

import (
	"crypto/sha256"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// plazaRun is what a scripted plaza run left behind: every actor's place,
// the changes made, and a digest of each client's bytes.
type plazaRun struct {
	places  map[uint32]components.Transform
	changes uint64
	sent    int
	digests [][32]byte
}

// runPlaza runs the plaza scenario's bots (players, seed 5) for ticks on a
// server with opts, the default plaza on it, every bot sending as its gait
// allows.
func runPlaza(t *testing.T, players, ticks int, opts throng.Options) plazaRun {
	t.Helper()
	pop := scenario.Plaza(players, 5)
	opts.Admit = pop.Admit
	opts.Parallelism.AdaptiveThrottling = new(false) // reacts to measured time: outside the promise
	srv, err := throng.New(opts)
	require.NoError(t, err)
	defer srv.Close()
	w, err := plaza.Setup(srv, plaza.Config{Seed: 5})
	require.NoError(t, err)
	bots := pop.Bots(pop.BotGait(), 5)
	clients := make([]*mem.Client, players)
	hashes := make([][]byte, players) // running digests: sha256 over the last digest and what came
	for i := range clients {
		clients[i] = srv.Mem().Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: scenario.Token(i)})
		require.NoError(t, err)
		require.NoError(t, clients[i].Send(hello))
	}
	welcomed := make([]bool, players)
	var frame []byte
	sent := 0
	for range ticks {
		for i, b := range bots {
			if !welcomed[i] {
				continue
			}
			b.Advance(time.Second / 30)
			var due bool
			if frame, due = b.AppendDueMove(frame[:0]); due {
				require.NoError(t, clients[i].Send(frame))
			}
		}
		st := srv.Tick()
		sent += st.PropsSent
		for i, c := range clients {
			fold := func(b []byte) {
				sum := sha256.Sum256(append(hashes[i], b...))
				hashes[i] = sum[:]
			}
			c.DrainReliable(func(b []byte) {
				if !welcomed[i] && b[1] == byte(wire.TypeWelcome) {
					welcomed[i] = true
				}
				fold(b)
			})
			c.DrainDatagrams(fold)
		}
	}
	run := plazaRun{places: map[uint32]components.Transform{}, changes: w.PropChanges(), sent: sent}
	places := ark.NewMap[components.Transform](srv.World().Ark())
	for _, ids := range [][]components.ActorID{w.Props(), w.NPCs()} {
		for _, id := range ids {
			e, ok := srv.World().Entity(id)
			require.True(t, ok)
			run.places[id.ID] = *places.Get(e)
		}
	}
	for _, h := range hashes {
		run.digests = append(run.digests, [32]byte(h))
	}
	return run
}

// TestTheSamePlayersGiveTheSamePlazaOnOneCoreOrMany: a hundred bots walk
// the default plaza for ten seconds, pushing props about, with NPCs
// following them; run inline and on four workers, every prop and NPC ends
// in the same place and every client received the same bytes.
func TestTheSamePlayersGiveTheSamePlazaOnOneCoreOrMany(t *testing.T) {
	if testing.Short() {
		t.Skip("ten seconds of a plaza, twice")
	}
	inline := runPlaza(t, 100, 300, throng.Options{Parallelism: throng.Parallelism{Enabled: new(false)}})
	pooled := runPlaza(t, 100, 300, throng.Options{Parallelism: throng.Parallelism{WorkerThreads: 4, MinActorsToOffload: new(1)}})
	require.Positive(t, inline.changes, "the bots pushed props")
	t.Logf("100 players, 10 s: %d prop changes, %d Prop frames", inline.changes, inline.sent)
	assert.Equal(t, inline.changes, pooled.changes)
	assert.Equal(t, inline.sent, pooled.sent)
	assert.Equal(t, inline.places, pooled.places, "every prop and NPC in the same place")
	assert.Equal(t, inline.digests, pooled.digests, "every client got the same bytes")
}
