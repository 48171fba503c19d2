package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// The world is a square of chunks of scenario.ChunkSize, -world on a
// side (4 by default). With four zones, each holds a corner of it, so the
// four meet at its centre; the bots roam, crossing the borders as they
// wander: a square one chunk wide around the centre (crowd "centre"), zone
// 1's quarter (crowd "corner"), or boxes one chunk square along the
// borders' whole length (crowd "borders", a world as large as -world makes
// it, its players spread along the borders instead of in one square).

// roam is the half-width of a bot's square around the centre, and of the
// boxes along the borders.
const roam = scenario.ChunkSize / 2

// crowds are the -crowd values.
var crowds = []string{"centre", "corner", "borders"}

// zoneMap returns the map of n zones (1 or 4) of a world side chunks
// across, the zone i's owner named "zone-<i>".
func zoneMap(n int, side int32) (zone.Map, error) {
	switch n {
	case 1:
		return zone.Map{Zones: []zone.Zone{{ID: 1, Owner: "zone-1", Chunks: zone.Rect{MaxX: side - 1, MaxY: side - 1}}}}, nil
	case 4:
		var m zone.Map
		half := side / 2
		for i := range 4 {
			x, y := int32(i%2)*half, int32(i/2)*half
			m.Zones = append(m.Zones, zone.Zone{ID: zone.ID(i + 1), Owner: "zone-" + strconv.Itoa(i+1),
				Chunks: zone.Rect{MinX: x, MinY: y, MaxX: x + half - 1, MaxY: y + half - 1}})
		}
		return m, nil
	}
	return zone.Map{}, fmt.Errorf("-zones: 1 or 4, not %d", n)
}

// population places n bots uniformly where the crowd roams in a world
// side chunks across, seeded: in the square around the centre (crowd
// "centre") or zone 1's quarter (crowd "corner"), each free to wander all
// of it; or along the borders (crowd "borders"): half of them on the line
// between the west and east zones, half on the one between the south and
// north, each in a box one chunk square that straddles its line, centred
// on its spawn along it, which it wanders in. A bot of the borders crosses
// as often as one of the centre, wherever along a border it is.
func population(n int, seed uint64, crowd string, side int32) scenario.Population {
	size := float32(side) * scenario.ChunkSize
	centre := size / 2
	rng := rand.New(rand.NewPCG(seed, 0x7a6f6e6573))
	p := scenario.Population{Name: "zones", Gait: scenario.WanderGait()}
	for i := range n {
		area := scenario.Area{MinX: centre - roam, MinY: centre - roam, MaxX: centre + roam, MaxY: centre + roam}
		switch crowd {
		case "corner":
			area = scenario.Area{MinX: 0, MinY: 0, MaxX: centre, MaxY: centre}
		case "borders":
			along := min(max(float32(rng.Float64())*size, roam), size-roam)
			if i%2 == 0 { // the line x = centre, its box centred at y = along
				area.MinY, area.MaxY = along-roam, along+roam
			} else {
				area.MinX, area.MaxX = along-roam, along+roam
			}
		}
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

// tickPhase is how far into each period zone id's server ticks: the
// zones of the 2 x 2 map tick in a chequerboard, each half a period after
// the two it borders. A player's session, let go at the start of its old
// server's tick, reaches the new one a few milliseconds later, and is
// taken at that server's next tick: half a period on, not most of one.
// The two zones that only touch at a corner tick together, which two
// cores hold, and so the four servers of one process take turns at the
// cores rather than all wanting them at once; a player who crosses
// straight through the corner waits a period more.
func tickPhase(m zone.Map, id zone.ID, period time.Duration) time.Duration {
	z, ok := m.Zone(id)
	if !ok {
		return 0
	}
	r := z.Chunks
	col, row := r.MinX/(r.MaxX-r.MinX+1), r.MinY/(r.MaxY-r.MinY+1)
	return period / 2 * time.Duration((col+row)%2)
}

// firstTick is when zone id's server, started at now, ticks first: the
// next instant of the chequerboard (tickPhase) on a grid of periods laid
// over the wall clock, not over the process's start. So zone servers in
// processes of their own, started one after another, still tick in the
// chequerboard, as the four of one process do.
func firstTick(now time.Time, m zone.Map, id zone.ID, period time.Duration) time.Time {
	at := now.Truncate(period).Add(tickPhase(m, id, period))
	if !at.After(now) {
		at = at.Add(period)
	}
	return at
}

// worldBucket and worldKey hold, in NATS, the flags the first process of
// a world started with (settings): every process of one world must agree
// on them, since each zone server places a bot where the gateway's bots
// believe it is.
const (
	worldBucket = "throng_zones_example"
	worldKey    = "world"
)

// settings are the flags every process of a world must share.
func (c config) settings() string {
	return fmt.Sprintf("-zones %d -world %d -crowd %s -players %d -seed %d", c.zones, c.world, c.crowd, c.players, c.seed)
}

// agree records c's settings in NATS if no process of the world has yet,
// and otherwise checks that they are the recorded ones: a zone process
// started with other flags than the gateway's would place the bots
// elsewhere than they believe they are, and the world would run, wrongly,
// without a word.
func agree(ctx context.Context, js jetstream.JetStream, c config) error {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: worldBucket})
	if err != nil {
		return fmt.Errorf("settings bucket %q: %w", worldBucket, err)
	}
	mine := c.settings()
	if _, err := kv.Create(ctx, worldKey, []byte(mine)); err == nil || !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	e, err := kv.Get(ctx, worldKey)
	if err != nil {
		return fmt.Errorf("settings bucket %q: %w", worldBucket, err)
	}
	if theirs := string(e.Value()); theirs != mine {
		return fmt.Errorf("this process has %s, but the world on this NATS was started with %s: give every process the same flags, or remove the bucket %q (nats kv del %s) to start another world",
			mine, theirs, worldBucket, worldBucket)
	}
	return nil
}

// awaitZones waits until every zone of m has reported its load (a zone
// server reports once a second), or until wait has passed or ctx ends,
// and returns the zones not heard from. A gateway process started before
// its zone processes (one serving them NATS, say) lets its bots in once
// their servers are there, rather than sending the first of them to a
// zone with no server, to be told it is gone and to dial again later.
func awaitZones(ctx context.Context, nc *nats.Conn, m zone.Map, wait time.Duration) ([]zone.ID, error) {
	heard := make(chan zone.ID, 64)
	sub, err := nc.Subscribe(zone.LoadSubject("throng", "*"), func(msg *nats.Msg) {
		var r zone.LoadReport
		if zone.DecodeLoadReport(msg.Data, &r) == nil {
			select {
			case heard <- r.Zone:
			default: // the waiter hears the next one
			}
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	missing := map[zone.ID]bool{}
	for _, z := range m.Zones {
		missing[z.ID] = true
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for len(missing) > 0 {
		select {
		case id := <-heard:
			delete(missing, id)
		case <-timeout.C:
			return slices.Sorted(maps.Keys(missing)), nil
		case <-ctx.Done():
			return nil, nil // the run is over before it began
		}
	}
	return nil, nil
}

// joinIDs writes zone ids as a comma-separated list.
func joinIDs(ids []zone.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}
