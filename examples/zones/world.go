package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// The world is 4 x 4 chunks of scenario.ChunkSize. With four zones, each
// holds a 2 x 2 corner of it, so the four meet at its centre; the bots
// roam a square around the centre, crossing the borders as they wander.
const (
	worldChunks = 4
	centre      = worldChunks / 2 * scenario.ChunkSize
	// roam is the half-width of the bots' square around the centre.
	roam = scenario.ChunkSize / 2
)

// zoneMap returns the map of n zones (1 or 4), the zone i's owner named
// "zone-<i>".
func zoneMap(n int) (zone.Map, error) {
	switch n {
	case 1:
		return zone.Map{Zones: []zone.Zone{{ID: 1, Owner: "zone-1", Chunks: zone.Rect{MaxX: worldChunks - 1, MaxY: worldChunks - 1}}}}, nil
	case 4:
		var m zone.Map
		half := int32(worldChunks / 2)
		for i := range 4 {
			x, y := int32(i%2)*half, int32(i/2)*half
			m.Zones = append(m.Zones, zone.Zone{ID: zone.ID(i + 1), Owner: "zone-" + strconv.Itoa(i+1),
				Chunks: zone.Rect{MinX: x, MinY: y, MaxX: x + half - 1, MaxY: y + half - 1}})
		}
		return m, nil
	}
	return zone.Map{}, fmt.Errorf("-zones: 1 or 4, not %d", n)
}

// population places n bots uniformly in the roaming square, seeded: the
// square around the centre (crowd "centre"), or zone 1's quarter of the
// world (crowd "corner", a crowd a coordinator can spread).
func population(n int, seed uint64, crowd string) scenario.Population {
	area := scenario.Area{MinX: centre - roam, MinY: centre - roam, MaxX: centre + roam, MaxY: centre + roam}
	if crowd == "corner" {
		area = scenario.Area{MinX: 0, MinY: 0, MaxX: centre, MaxY: centre}
	}
	rng := rand.New(rand.NewPCG(seed, 0x7a6f6e6573))
	p := scenario.Population{Name: "zones", Gait: scenario.WanderGait()}
	for range n {
		x := area.MinX + 1 + float32(rng.Float64())*(area.MaxX-area.MinX-2)
		y := area.MinY + 1 + float32(rng.Float64())*(area.MaxY-area.MinY-2)
		p.Spawns = append(p.Spawns, scenario.Spawn{Transform: components.Transform{X: x, Y: y}, Area: area})
	}
	return p
}

// router sends a bot's session to the zone that keeps its actor, if it
// left one (the player directory: a bot that joins again after its zone
// server restarted, say), or else to the zone its spawn lies in, by the
// map in force (borders move with -balance): the gateway routes each new
// session by its Hello (gateway.Config.Route). A bot's player name is its
// token (scenario.Population.AdmitAny).
type router struct {
	maps *zone.MapWatch
	kept *zone.PlayerWatch
	pop  scenario.Population
}

func (r router) route(_ wire.SessionID, h wire.Hello) uint32 {
	m, _, _ := r.maps.Map()
	if len(m.Zones) == 0 {
		return 1
	}
	if z, ok := r.kept.Zone(string(h.Token)); ok {
		if _, held := m.Zone(z); held {
			return uint32(z)
		}
	}
	i, err := strconv.Atoi(strings.TrimPrefix(string(h.Token), "bot-"))
	if err != nil || i < 0 || len(r.pop.Spawns) == 0 {
		return uint32(m.Zones[0].ID) // its server refuses a stranger
	}
	t := r.pop.Spawns[i%len(r.pop.Spawns)].Transform
	if z, ok := m.Owner(grid.KeyOf(t.WorldOrCell, t.X, t.Y, scenario.ChunkSize)); ok {
		return uint32(z.ID)
	}
	return uint32(m.Zones[0].ID)
}
