package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

// ChunkSize is the chunk edge the scenarios are laid out for: the server's
// default, grid.DefaultChunkSize.
const ChunkSize = grid.DefaultChunkSize

// WorldChunks is the edge of the world scenario, in chunks.
const WorldChunks = 64

// Region says which part of a scenario an actor belongs to.
type Region uint8

// Regions. Square and world actors are RegionOpen; the others make up a
// town.
const (
	RegionOpen Region = iota
	RegionHub
	RegionTown
	RegionInterior
	RegionTraveller
	regionCount
)

// String returns the region's name.
func (r Region) String() string {
	switch r {
	case RegionOpen:
		return "open"
	case RegionHub:
		return "hub"
	case RegionTown:
		return "town"
	case RegionInterior:
		return "interior"
	case RegionTraveller:
		return "traveller"
	}
	return "Region(" + strconv.Itoa(int(r)) + ")"
}

// Area is a rectangle of one worldOrCell: [MinX, MaxX) x [MinY, MaxY). A bot
// stays inside its area, turning back at the edges.
type Area struct {
	WorldOrCell            uint32
	MinX, MinY, MaxX, MaxY float32
}

// edge keeps positions this far inside an area, so that float rounding never
// puts an actor on the far side of a chunk border its area ends at.
const edge = 1

// contains reports whether (x, y) lies inside a, edge included.
func (a Area) contains(x, y float32) bool {
	return x >= a.MinX+edge && x <= a.MaxX-edge && y >= a.MinY+edge && y <= a.MaxY-edge
}

// uniform returns a point drawn uniformly from a (edge included).
func (a Area) uniform(rng *rand.Rand) (x, y float32) {
	x = a.MinX + edge + float32(rng.Float64())*(a.MaxX-a.MinX-2*edge)
	y = a.MinY + edge + float32(rng.Float64())*(a.MaxY-a.MinY-2*edge)
	return x, y
}

// chunkArea returns the rectangle of chunks [cx0, cx1] x [cy0, cy1] of
// worldOrCell w.
func chunkArea(w uint32, cx0, cy0, cx1, cy1 int32) Area {
	return Area{
		WorldOrCell: w,
		MinX:        float32(cx0) * ChunkSize, MinY: float32(cy0) * ChunkSize,
		MaxX: float32(cx1+1) * ChunkSize, MaxY: float32(cy1+1) * ChunkSize,
	}
}

// Spawn is one actor of a population: where it enters the world and where
// its bot may go.
type Spawn struct {
	Transform components.Transform
	Area      Area
	Region    Region
}

// Population is a scenario's actors, in spawn order. Actor i connects with
// [Token](i) and is admitted at Spawns[i] by [Population.Admit].
type Population struct {
	Name   string
	Spawns []Spawn
	// Gait is how the scenario's bots walk (see [Population.BotGait]);
	// the zero Gait means [WanderGait].
	Gait Gait
}

// BotGait returns how the population's bots walk: its Gait, or
// [WanderGait] if it has none.
func (p Population) BotGait() Gait {
	if p.Gait == (Gait{}) {
		return WanderGait()
	}
	return p.Gait
}

// Names lists the scenarios [New] knows.
func Names() []string { return []string{"square", "town", "world", "plaza"} }

// New builds the scenario called name ("square", "town", "world" or
// "plaza") with n actors. The same (name, n, seed) always gives the same
// population. It returns an error for an unknown name or a negative n.
func New(name string, n int, seed uint64) (Population, error) {
	if n < 0 {
		return Population{}, fmt.Errorf("scenario: players must not be negative, got %d", n)
	}
	switch name {
	case "square":
		return Square(n, seed), nil
	case "town":
		return Town(n, seed), nil
	case "world":
		return World(n, seed), nil
	case "plaza":
		return Plaza(n, seed), nil
	}
	return Population{}, fmt.Errorf("scenario: unknown scenario %q (want one of %s)", name, strings.Join(Names(), ", "))
}

func newRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// place appends n actors of region r drawn uniformly from area, facing at
// random.
func place(spawns []Spawn, n int, r Region, area Area, rng *rand.Rand) []Spawn {
	for range n {
		x, y := area.uniform(rng)
		spawns = append(spawns, Spawn{
			Transform: components.Transform{X: x, Y: y, Yaw: randomYaw(rng), WorldOrCell: area.WorldOrCell},
			Area:      area,
			Region:    r,
		})
	}
	return spawns
}

func randomYaw(rng *rand.Rand) float32 {
	return float32((rng.Float64()*2 - 1) * math.Pi)
}

// Square is n actors uniform over chunk (0, 0) of worldOrCell 0, each
// wandering that chunk: everyone sees everyone, n(n-1) relays per tick
// without interest management.
func Square(n int, seed uint64) Population {
	rng := newRand(seed, 1)
	return Population{Name: "square", Spawns: place(nil, n, RegionOpen, chunkArea(0, 0, 0, 0, 0), rng), Gait: WanderGait()}
}

// World is n actors uniform over a WorldChunks x WorldChunks chunk world
// (worldOrCell 0, chunks 0 to 63 on both axes), each free to roam all of it
// and so to cross chunk borders.
func World(n int, seed uint64) Population {
	rng := newRand(seed, 3)
	return Population{Name: "world", Spawns: place(nil, n, RegionOpen, chunkArea(0, 0, 0, WorldChunks-1, WorldChunks-1), rng), Gait: WanderGait()}
}

// The plaza scenario's layout, in worldOrCell 0 at about 70 units to the
// metre: a square plaza PlazaSide across (240 m) where the props stand,
// in the middle of the square PlazaSpawnSide across (300 m) that the
// players spawn and wander in, from (0, 0) to (PlazaSpawnSide,
// PlazaSpawnSide). Both span several chunks (a chunk is 58.5 m), and
// nearly everyone is within sight of nearly everything: the worst case a
// crowded server meets.
const (
	PlazaSide      = 16800
	PlazaSpawnSide = 21000
)

// PlazaArea is the plaza: the PlazaSide square centred in the spawn area.
func PlazaArea() Area {
	lo := float32(PlazaSpawnSide-PlazaSide) / 2
	return Area{MinX: lo, MinY: lo, MaxX: lo + PlazaSide, MaxY: lo + PlazaSide}
}

// PlazaSpawnArea is where the plaza scenario's players spawn and wander:
// the PlazaSpawnSide square around the plaza.
func PlazaSpawnArea() Area {
	return Area{MaxX: PlazaSpawnSide, MaxY: PlazaSpawnSide}
}

// Plaza is n players uniform over [PlazaSpawnArea], each wandering all of
// it with [PlazaGait]: walking, stopping, jumping, 10 updates a second.
// The plaza's props and NPCs are the game's, not the population's (package
// examples/crowd/plaza spawns them); bots walk into the props simply by
// wandering among them.
func Plaza(n int, seed uint64) Population {
	rng := newRand(seed, 4)
	return Population{Name: "plaza", Spawns: place(nil, n, RegionOpen, PlazaSpawnArea(), rng), Gait: PlazaGait()}
}

// The town's parts, in shares of the population. Relay work is the number
// of relay decisions, the (sender, recipient) pairs in one another's 3x3
// stencil, which is what a tick costs with interest management off: a
// group of k actors that all see each other costs k(k-1). With everyone of
// a part in sight of each other and the parts out of sight of each other,
// the hub's share is 0.42^2 / (0.42^2 + 2*0.17^2 + 2*0.09^2) = 70%, plus a
// little for travellers who meet. Measured with [Population.RelayWork]
// (seed 1): 300 actors give hub 70.8%, towns 22.9%, interiors 6.3%; 1000
// give hub 70.5%, towns 23.0%, interiors 6.4%; travellers under 0.1%.
// With the default interest tiers the hub's share of relays actually sent
// is higher (75%), because the towns are spread over 2 x 2 chunks and
// their far pairs are sent less often.
const (
	hubShare      = 0.42
	townShare     = 0.17 // each of two
	interiorShare = 0.09 // each of two
	// travellers take the rest, about 6%
)

// chunkRect is a rectangle of chunks of worldOrCell 0, corners included.
type chunkRect struct{ x0, y0, x1, y1 int32 }

func (c chunkRect) area() Area { return chunkArea(0, c.x0, c.y0, c.x1, c.y1) }

// gap is the Chebyshev distance from chunk (cx, cy) to the nearest chunk of c.
func (c chunkRect) gap(cx, cy int32) int32 {
	return max(c.x0-cx, cx-c.x1, c.y0-cy, cy-c.y1, 0)
}

// townMap is the town's layout in worldOrCell 0, in chunks.
type townMap struct{ hub, townA, townB, roads chunkRect }

// theTown returns the layout: the hub is the market square, one chunk; the
// towns are 2 x 2 chunks east and north of it, more than
// DefaultClusterSeparationChunks apart, so they are separate clusters
// unless travellers on the road between them link them into one (which
// changes how the work is cut, never who sees whom). Travellers roam a
// 40 x 40 chunk countryside around them.
func theTown() townMap {
	return townMap{
		hub:   chunkRect{0, 0, 0, 0},
		townA: chunkRect{8, 0, 9, 1},
		townB: chunkRect{-2, 8, -1, 9},
		roads: chunkRect{-16, -16, 23, 23},
	}
}

// Interior cells are worldOrCells of their own, 2048 x 2048 units (a hall,
// an inn): nobody outside sees in, everybody inside sees everyone.
const (
	interiorA    uint32 = 1
	interiorB    uint32 = 2
	interiorSize        = ChunkSize / 2
)

// Town is a realistic population: a hub (a market square, one chunk, 42%
// of the actors), two towns of 2 x 2 chunks (17% each), two interior cells
// (9% each) and travellers scattered over a 40 x 40 chunk countryside (the
// rest). Every part's actors wander their part only. The shares are chosen
// so that the hub holds about 70% of the relay work; see the constants
// above for the arithmetic and the measured split.
func Town(n int, seed uint64) Population {
	rng := newRand(seed, 2)
	hub := int(math.Round(hubShare * float64(n)))
	town := int(math.Round(townShare * float64(n)))
	interior := int(math.Round(interiorShare * float64(n)))
	for hub+2*town+2*interior > n { // tiny populations: never more than n
		switch {
		case interior > 0:
			interior--
		case town > 0:
			town--
		default:
			hub--
		}
	}
	travellers := n - hub - 2*town - 2*interior

	m := theTown()
	spawns := make([]Spawn, 0, n)
	spawns = place(spawns, hub, RegionHub, m.hub.area(), rng)
	spawns = place(spawns, town, RegionTown, m.townA.area(), rng)
	spawns = place(spawns, town, RegionTown, m.townB.area(), rng)
	spawns = place(spawns, interior, RegionInterior, Area{WorldOrCell: interiorA, MaxX: interiorSize, MaxY: interiorSize}, rng)
	spawns = place(spawns, interior, RegionInterior, Area{WorldOrCell: interiorB, MaxX: interiorSize, MaxY: interiorSize}, rng)
	for range travellers {
		cx, cy := m.travellerChunk(rng)
		area := chunkArea(0, cx-1, cy-1, cx+1, cy+1)
		x, y := chunkArea(0, cx, cy, cx, cy).uniform(rng)
		spawns = append(spawns, Spawn{
			Transform: components.Transform{X: x, Y: y, Yaw: randomYaw(rng)},
			Area:      area,
			Region:    RegionTraveller,
		})
	}
	return Population{Name: "town", Spawns: spawns, Gait: WanderGait()}
}

// travellerChunk draws a countryside chunk at least three chunks from the
// hub and the towns: a traveller roams its chunk and the eight around it,
// so it stays two chunks away and out of their stencils.
func (m townMap) travellerChunk(rng *rand.Rand) (cx, cy int32) {
	r := m.roads
	for {
		cx = r.x0 + rng.Int32N(r.x1-r.x0+1)
		cy = r.y0 + rng.Int32N(r.y1-r.y0+1)
		if m.hub.gap(cx, cy) >= 3 && m.townA.gap(cx, cy) >= 3 && m.townB.gap(cx, cy) >= 3 {
			return cx, cy
		}
	}
}

// Token returns the Hello token of the bot for actor i: "bot-<i>".
func Token(i int) []byte {
	return strconv.AppendInt([]byte("bot-"), int64(i), 10)
}

// AdmitAny is the development admission of the crowd example (pass it as
// throng.Options.Admit): every token is let in, the way a development
// server lets any name play. A token that ends in a decimal number N (as
// [Token](N) and "west-N" do) is placed at Spawns[N mod len(Spawns)], the
// spawn [Population.Bot](N) wanders from; any other token at a spawn picked
// by a hash of the token. Only an empty population refuses.
func (p Population) AdmitAny(h wire.Hello) (throng.Entry, error) {
	if len(p.Spawns) == 0 {
		return throng.Entry{}, fmt.Errorf("scenario: %s has no spawns to admit %q at", p.Name, h.Token)
	}
	return throng.Entry{Player: string(h.Token), Spawn: p.Spawns[spawnIndex(h.Token, len(p.Spawns))].Transform}, nil
}

// spawnIndex maps a token to a spawn of n: its trailing number mod n, or
// else its FNV-1a hash mod n.
func spawnIndex(token []byte, n int) int {
	digits := len(token)
	for digits > 0 && token[digits-1] >= '0' && token[digits-1] <= '9' {
		digits--
	}
	if tail := token[digits:]; len(tail) > 0 {
		i := 0
		for _, d := range tail {
			i = (i*10 + int(d-'0')) % n // mod as we go: no overflow on long numbers
		}
		return i
	}
	h := uint32(2166136261)
	for _, c := range token {
		h = (h ^ uint32(c)) * 16777619
	}
	return int(h % uint32(n))
}

// Admit is the server's admission function for this population (pass it as
// throng.Options.Admit): a Hello whose token is [Token](i) for an actor of
// the population is admitted at Spawns[i]; any other token is refused.
func (p Population) Admit(h wire.Hello) (throng.Entry, error) {
	rest, ok := strings.CutPrefix(string(h.Token), "bot-")
	i, err := strconv.Atoi(rest)
	if !ok || err != nil || i < 0 || i >= len(p.Spawns) {
		return throng.Entry{}, fmt.Errorf("scenario: %s has no bot %q", p.Name, h.Token)
	}
	return throng.Entry{Player: string(h.Token), Spawn: p.Spawns[i].Transform}, nil
}

// RelayWork counts a population's relay decisions: ordered (sender,
// recipient) pairs of distinct actors whose chunks see each other (same
// worldOrCell, 3x3 stencil), by the recipient's region. It is the relay
// count of a tick with interest management off and every actor moving.
type RelayWork struct {
	ByRegion [regionCount]int64
	Total    int64
}

// Share returns region r's fraction of the total (0 when there is none).
func (w RelayWork) Share(r Region) float64 {
	if w.Total == 0 || int(r) >= len(w.ByRegion) {
		return 0
	}
	return float64(w.ByRegion[r]) / float64(w.Total)
}

// RelayWork counts the relay decisions of the population as spawned, chunk
// by chunk (linear in its size).
func (p Population) RelayWork() RelayWork {
	perChunk := make(map[grid.AreaKey]int64)
	for _, s := range p.Spawns {
		perChunk[keyOf(s.Transform)]++
	}
	var w RelayWork
	for _, s := range p.Spawns {
		var seen int64
		for _, k := range grid.Stencil(keyOf(s.Transform)) {
			seen += perChunk[k]
		}
		seen-- // not itself
		w.ByRegion[s.Region] += seen
		w.Total += seen
	}
	return w
}

func keyOf(t components.Transform) grid.AreaKey {
	return grid.KeyOf(t.WorldOrCell, t.X, t.Y, ChunkSize)
}
