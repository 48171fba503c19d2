package zone_test

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// oracleWalk is player i's place at round r of the oracle's walk: four
// walk east or west across the world, four north or south, each on a line
// of its own, so that no two players ever stand on the same spot and a
// place names its player.
func oracleWalk(i, r int) (x, y float32) {
	lines := []float32{3010, 7010, 9510, 13010, 2525, 7525, 9025, 14025}
	along := float32(1000 + 150*r)
	if i%2 == 1 {
		along = float32(16000 - 150*r) // the other way
	}
	if i < 4 {
		return along, lines[i]
	}
	return lines[i], along
}

// identify returns the player whose walk passed through t, or -1.
func identify(places map[[2]float32]int, t components.Transform) int {
	if p, ok := places[[2]float32{t.X, t.Y}]; ok {
		return p
	}
	return -1
}

// TestFourZonesShowEveryPlayerWhatOneServerShows is the zones' oracle:
// eight players walk the same paths, one move a tick, on one server and
// on four zone servers behind a gateway (crossing borders, handed off,
// welcomed again). Each tick, every player sees the same players on both,
// but for the documented latency: an actor across a border is shown a
// tick after its owner moved it, so a player may appear or disappear one
// tick later than on one server, never earlier and never otherwise.
func TestFourZonesShowEveryPlayerWhatOneServerShows(t *testing.T) {
	const players, walk = 8, 100
	w := startGatewayZones(t, grid2x2(), zone.Options{})
	var spawn components.Transform
	one, err := throng.New(throng.Options{Parallelism: throng.Parallelism{Enabled: new(false)}, Logger: slog.New(slog.DiscardHandler),
		Admit: func(wire.Hello) (throng.Entry, error) { return throng.Entry{Spawn: spawn}, nil }})
	require.NoError(t, err)
	t.Cleanup(func() { one.Close() })

	places := map[[2]float32]int{}
	for i := range players {
		for r := range walk + 1 {
			x, y := oracleWalk(i, r)
			places[[2]float32{x, y}] = i
		}
	}
	var inZones, inOne []*viewer
	step := func() {
		w.round()
		one.Tick()
		for i := range inZones {
			inZones[i].read()
			inOne[i].read()
		}
	}
	for i := range players {
		x, y := oracleWalk(i, 0)
		spawn = components.Transform{X: x, Y: y}
		entry, _ := grid2x2().Owner(w.servers[1].srv.World().KeyOf(spawn))
		inZones = append(inZones, w.joinVia(entry.ID, x, y))
		c := one.Mem().Dial()
		hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p")})
		require.NoError(t, err)
		require.NoError(t, c.Send(hello))
		inOne = append(inOne, &viewer{t: t, c: c, visible: map[uint32]bool{}, xs: map[uint32][]float32{}})
		step()
	}
	step()

	// whoInZone resolves an actor of zone z's world to its player: a ghost
	// through its owner, an actor of the zone's own by its place.
	var whoInZone func(z zone.ID, id uint32, depth int) int
	whoInZone = func(z zone.ID, id uint32, depth int) int {
		mb := w.servers[z]
		if owner, rid, ghost := mb.z.Ghost(components.ActorID{ID: id}); ghost && depth < 4 {
			return whoInZone(owner, rid, depth+1)
		}
		e, ok := mb.srv.World().Entity(components.ActorID{ID: id})
		if !ok {
			return -1
		}
		return identify(places, *mb.moves.Get(e))
	}
	// Each zone viewer's server is the one that welcomed it last: the zone
	// where its actor has a client and stands on its walk.
	serverOf := make([]zone.ID, players)
	welcomes := make([]int, players)
	locate := func() {
		for i, v := range inZones {
			if len(v.welcomes) == welcomes[i] {
				continue
			}
			welcomes[i] = len(v.welcomes)
			serverOf[i] = 0
			for _, z := range w.order {
				world := w.servers[z].srv.World()
				for _, cv := range world.Snapshot(nil) {
					for r := range cv.Len() {
						if cv.IDs[r].ID == v.self && cv.Clients[r].Session != 0 && identify(places, cv.Transforms[r]) == i {
							serverOf[i] = z
						}
					}
				}
			}
			require.NotZero(t, serverOf[i], "player %d's server", i)
		}
	}
	seen := func(ids map[uint32]bool, who func(uint32) int) map[int]bool {
		s := map[int]bool{}
		for id := range ids {
			p := who(id)
			require.NotEqual(t, -1, p, "an actor no walk passed through")
			s[p] = true
		}
		return s
	}
	oneTransforms := ark.NewMap[components.Transform](one.World().Ark())
	// switching[i][r]: no zone server let player i drive its actor at the
	// end of round r (its session between servers): its view is not told
	// that round, and its next server tells it whole with its Welcome.
	switching := make([][]bool, players)
	attached := func(i int) bool {
		for _, z := range w.order {
			for _, cv := range w.servers[z].srv.World().Snapshot(nil) {
				for r := range cv.Len() {
					if cv.Clients[r].Session != 0 && identify(places, cv.Transforms[r]) == i {
						return true
					}
				}
			}
		}
		return false
	}
	zonesSaw := make([][]map[int]bool, players)
	oneSaw := make([][]map[int]bool, players)
	for r := 1; r <= walk; r++ {
		for i := range players {
			x, y := oracleWalk(i, r)
			m := wire.AppendMove(nil, wire.Move{Seq: uint32(r), X: x, Y: y})
			require.NoError(t, inZones[i].c.Send(m))
			require.NoError(t, inOne[i].c.Send(m))
		}
		step()
		locate()
		for i := range players {
			z := serverOf[i]
			switching[i] = append(switching[i], !attached(i))
			zonesSaw[i] = append(zonesSaw[i], seen(inZones[i].visible, func(id uint32) int { return whoInZone(z, id, 0) }))
			oneSaw[i] = append(oneSaw[i], seen(inOne[i].visible, func(id uint32) int {
				e, ok := one.World().Entity(components.ActorID{ID: id})
				require.True(t, ok)
				return identify(places, *oneTransforms.Get(e))
			}))
		}
	}
	// Every player saw the others come and go (the walk is no crowd in
	// one place), and each time as one server showed it, a tick late at
	// most; a player whose session is between servers is shown nothing
	// until its new server's Welcome, which tells it all (those rounds are
	// left out, and a tick late means at its next round told).
	changes, late, paused := 0, 0, 0
	next := func(i, r int) int { // the first round after r whose view is told
		for r++; r < len(switching[i]) && switching[i][r]; r++ {
		}
		return r
	}
	for i := range players {
		for r := range oneSaw[i] {
			if r > 0 && !maps.Equal(oneSaw[i][r], oneSaw[i][r-1]) {
				changes++
			}
			if switching[i][r] {
				paused++
				continue
			}
			for p := range zonesSaw[i][r] {
				if !oneSaw[i][r][p] {
					require.True(t, r > 0 && oneSaw[i][r-1][p], "player %d saw %d at round %d on the zones, which one server showed neither then nor a round before: zones %v, one %v",
						i, p, r+1, keys(zonesSaw[i][r]), keys(oneSaw[i][r]))
					late++
				}
			}
			for p := range oneSaw[i][r] {
				if !zonesSaw[i][r][p] {
					n := next(i, r)
					require.True(t, n < len(zonesSaw[i]) && zonesSaw[i][n][p], "player %d did not see %d at round %d on the zones, nor at its next round told, as one server showed it: zones %v, one %v",
						i, p, r+1, keys(zonesSaw[i][r]), keys(oneSaw[i][r]))
					late++
				}
			}
		}
	}
	assert.Greater(t, changes, 2*players, "players came into and out of sight")
	var handoffs uint64
	for _, z := range w.order {
		handoffs += w.servers[z].z.Stats().Handoffs.SessionsTaken
	}
	assert.GreaterOrEqual(t, handoffs, uint64(players), "every player crossed a border")
	t.Logf("%d changes of sight on one server; %d seen a tick late on the zones; %d players' switches, %d rounds paused by them", changes, late, handoffs, paused)
}

func keys(m map[int]bool) string { return fmt.Sprint(slices.Sorted(maps.Keys(m))) }
