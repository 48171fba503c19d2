package scenario

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

func TestPopulationsAreAFunctionOfPlayersAndSeed(t *testing.T) {
	for _, name := range Names() {
		a, err := New(name, 500, 42)
		require.NoError(t, err)
		b, err := New(name, 500, 42)
		require.NoError(t, err)
		c, err := New(name, 500, 43)
		require.NoError(t, err)
		assert.Len(t, a.Spawns, 500, name)
		assert.Equal(t, a, b, "%s: same seed, same population", name)
		assert.NotEqual(t, a.Spawns, c.Spawns, "%s: another seed, another population", name)
	}
}

func TestNewRejectsUnknownScenariosAndNegativeCounts(t *testing.T) {
	_, err := New("arena", 10, 1)
	assert.ErrorContains(t, err, `scenario: unknown scenario "arena"`)
	_, err = New("square", -1, 1)
	assert.ErrorContains(t, err, "scenario: players must not be negative")
}

func TestSquareFillsOneChunkSoEveryoneSeesEveryone(t *testing.T) {
	p := Square(400, 1)
	for _, s := range p.Spawns {
		require.Equal(t, grid.AreaKey{}, keyOf(s.Transform))
		require.True(t, s.Area.contains(s.Transform.X, s.Transform.Y))
	}
	assert.Equal(t, int64(400*399), p.RelayWork().Total, "159,600 relays without interest")
}

func TestWorldSpreadsOverSixtyFourBySixtyFourChunks(t *testing.T) {
	p := World(10000, 1)
	chunks := map[grid.AreaKey]int{}
	for _, s := range p.Spawns {
		k := keyOf(s.Transform)
		require.True(t, k.X >= 0 && k.X < WorldChunks && k.Y >= 0 && k.Y < WorldChunks, "spawn in chunk %v", k)
		chunks[k]++
	}
	assert.Greater(t, len(chunks), WorldChunks*WorldChunks*9/10, "nearly every chunk is occupied")
	w := p.RelayWork()
	perActor := float64(w.Total) / 10000
	assert.InDelta(t, 9*10000.0/(64*64), perActor, 3, "each actor sees about nine chunks' worth of others")
}

// TestTownHubHoldsSeventyPercentOfRelayWork pins the design's "realistic
// population": the hub holds about 70% of the relay work, and the parts
// never see each other, so every part's work is its own k(k-1).
func TestTownHubHoldsSeventyPercentOfRelayWork(t *testing.T) {
	for _, n := range []int{300, 1000} {
		p := Town(n, 1)
		count := map[Region]int64{}
		for _, s := range p.Spawns {
			count[s.Region]++
		}
		w := p.RelayWork()
		hub, town, interior := count[RegionHub], count[RegionTown], count[RegionInterior]
		assert.Equal(t, hub*(hub-1), w.ByRegion[RegionHub], "n=%d: the hub sees only itself", n)
		assert.Equal(t, 2*(town/2)*(town/2-1), w.ByRegion[RegionTown], "n=%d: each town sees only itself", n)
		assert.Equal(t, 2*(interior/2)*(interior/2-1), w.ByRegion[RegionInterior], "n=%d: each interior sees only itself", n)
		assert.InDelta(t, 0.70, w.Share(RegionHub), 0.02, "n=%d", n)
		assert.Greater(t, count[RegionTraveller], int64(0))
		t.Logf("town n=%d: hub %d (%.1f%%), towns %d (%.1f%%), interiors %d (%.1f%%), travellers %d (%.1f%%)",
			n, hub, 100*w.Share(RegionHub), town, 100*w.Share(RegionTown),
			interior, 100*w.Share(RegionInterior), count[RegionTraveller], 100*w.Share(RegionTraveller))
	}
}

func TestTownInteriorsAreCellsOfTheirOwn(t *testing.T) {
	cells := map[uint32]int{}
	for _, s := range Town(1000, 1).Spawns {
		cells[s.Transform.WorldOrCell]++
		if s.Region == RegionInterior {
			assert.NotZero(t, s.Transform.WorldOrCell)
		} else {
			assert.Zero(t, s.Transform.WorldOrCell)
		}
	}
	assert.Len(t, cells, 3, "the exterior and two interiors")
}

func TestTinyTownsNeverHaveMoreActorsThanAskedFor(t *testing.T) {
	for n := range 12 {
		assert.Len(t, Town(n, 1).Spawns, n)
	}
}

func TestAdmitPlacesEachBotAtItsSpawn(t *testing.T) {
	p := Town(50, 3)
	for i, s := range p.Spawns {
		got, err := p.Admit(wire.Hello{Token: Token(i)})
		require.NoError(t, err)
		assert.Equal(t, s.Transform, got.Spawn)
		assert.Equal(t, string(Token(i)), got.Player, "a bot plays under its token")
	}
	for _, tok := range []string{"bot-50", "bot--1", "bot-", "player-1", ""} {
		_, err := p.Admit(wire.Hello{Token: []byte(tok)})
		assert.ErrorContains(t, err, "scenario: town has no bot", "token %q", tok)
	}
}

func TestRelayWorkOfNobodyIsZero(t *testing.T) {
	var p Population
	assert.Zero(t, p.RelayWork().Total)
	assert.Zero(t, p.RelayWork().Share(RegionHub))
}

func TestSpawnsFaceEveryWay(t *testing.T) {
	var west, east int
	for _, s := range Square(200, 9).Spawns {
		require.True(t, s.Transform.Yaw >= -math.Pi && s.Transform.Yaw < math.Pi)
		if math.Abs(float64(s.Transform.Yaw)) > math.Pi/2 {
			west++
		} else {
			east++
		}
	}
	assert.Greater(t, west, 50)
	assert.Greater(t, east, 50)
}

// TestAdmitAnyLetsEveryoneInAtTheirNumberedSpawn pins the development
// admission: bot tokens of any prefix land on the spawn their number names
// (wrapping past the end), other names on a spawn of their own, always the
// same one; only a population with nowhere to stand refuses.
func TestAdmitAnyLetsEveryoneInAtTheirNumberedSpawn(t *testing.T) {
	p := Square(10, 4)
	for _, c := range []struct {
		token string
		spawn int
	}{
		{"bot-0", 0}, {"bot-7", 7}, {"bot-13", 3}, {"west-42", 2}, {"7", 7},
		{"bot-123456789012345678901234567890", 0}, // 10 divides it: no overflow
	} {
		got, err := p.AdmitAny(wire.Hello{Token: []byte(c.token)})
		require.NoError(t, err, c.token)
		assert.Equal(t, p.Spawns[c.spawn].Transform, got.Spawn, c.token)
		assert.Equal(t, c.token, got.Player)
	}
	seen := map[components.Transform]bool{}
	for _, name := range []string{"alice", "bob", "carol", "dave", "erin", ""} {
		a, err := p.AdmitAny(wire.Hello{Token: []byte(name)})
		require.NoError(t, err, name)
		b, _ := p.AdmitAny(wire.Hello{Token: []byte(name)})
		assert.Equal(t, a, b, "%q lands on the same spawn every time", name)
		seen[a.Spawn] = true
	}
	assert.Greater(t, len(seen), 2, "names spread over the spawns")

	_, err := Population{Name: "empty"}.AdmitAny(wire.Hello{Token: []byte("bot-1")})
	assert.ErrorContains(t, err, "scenario: empty has no spawns")
}
