package plaza

import (
	"math"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/examples/crowd/scenario"
)

// field is a square grid of cells laid over the plaza's spawn area
// (scenario.PlazaSpawnArea) with a margin of one cell all round. A
// position outside it counts in the nearest edge cell, so that the 3 x 3
// cells around any point of the area hold everything within one cell of
// that point, wherever it stands.
type field struct {
	cell float32 // edge of a cell, in units
	lo   float32 // low corner of the grid on both axes
	cols int32   // cells a row; the grid is cols x cols
}

func newField(cell float32) field {
	cols := int32(math.Ceil(float64(scenario.PlazaSpawnSide/cell))) + 2
	return field{cell: cell, lo: -cell, cols: cols}
}

// cells is the number of cells.
func (f field) cells() int { return int(f.cols) * int(f.cols) }

// cellOf returns the column and row of the cell (x, y) counts in.
func (f field) cellOf(x, y float32) (cx, cy int32) {
	return f.clamp((x - f.lo) / f.cell), f.clamp((y - f.lo) / f.cell)
}

func (f field) clamp(v float32) int32 {
	if !(v >= 0) { // NaN too
		return 0
	}
	return min(int32(v), f.cols-1)
}

// index is the cell's number, row by row.
func (f field) index(cx, cy int32) int32 { return cy*f.cols + cx }

// buckets lists items (numbered 0 to n-1) by cell: cell c's are
// items[start[c]:start[c+1]], in item order. build is a counting sort,
// linear in items and cells, and allocates only when they grow.
type buckets struct {
	start []int32
	items []int32
}

// build sorts items 0 to len(cellOf)-1 by their cells.
func (b *buckets) build(cells int, cellOf []int32) {
	if cap(b.start) < cells+1 {
		b.start = make([]int32, cells+1)
	}
	b.start = b.start[:cells+1]
	clear(b.start)
	for _, c := range cellOf {
		b.start[c+1]++
	}
	for c := range cells {
		b.start[c+1] += b.start[c]
	}
	if cap(b.items) < len(cellOf) {
		b.items = make([]int32, len(cellOf))
	}
	b.items = b.items[:len(cellOf)]
	// Place each item at its cell's next free slot: start[c] runs through
	// cell c's range and ends at cell c+1's start, so shift back after.
	for i, c := range cellOf {
		b.items[b.start[c]] = int32(i)
		b.start[c]++
	}
	copy(b.start[1:], b.start[:cells])
	b.start[0] = 0
}

// in returns cell c's items.
func (b *buckets) in(c int32) []int32 { return b.items[b.start[c]:b.start[c+1]] }

// walker is an actor that walks (a player or an NPC) as a tick found it:
// where it stands and how fast it has been moving.
type walker struct {
	id     uint32
	x, y   float32
	vx, vy float32
}

// stride is what the plaza remembers of a walker between ticks, to tell
// its velocity: where it last stood, the velocity it moved there with,
// and the tick it got there.
type stride struct {
	id     uint32 // the actor it was taken for: a slot is reused by later players
	x, y   float32
	vx, vy float32
	world  uint32
	at     uint64
	seen   bool
}

// crowd is a tick's walkers, bucketed by the cells of a field. Walkers
// are found with an Ark query over the actors that are not props; which
// of them count (players only, or NPCs too) is the caller's choice.
type crowd struct {
	field   field
	query   *ark.Filter3[components.ActorID, components.Transform, components.Client]
	players bool // only actors with a client count

	list   []walker
	cellOf []int32
	cells  buckets
	// strides is indexed by the players' session slots (Client.Slot),
	// which the server reuses, so it grows with the most players ever in
	// at once, not with every player who ever came; nil when the crowd
	// does not track velocities (only a crowd of players does).
	strides []stride
}

func newCrowd(w *ark.World, cell float32, players, velocities bool) *crowd {
	if velocities && !players {
		panic("plaza: a crowd tracks velocities by session slot: players only")
	}
	c := &crowd{
		field:   newField(cell),
		query:   ark.NewFilter3[components.ActorID, components.Transform, components.Client](w).Without(ark.C[components.Prop]()),
		players: players,
	}
	if velocities {
		c.strides = []stride{}
	}
	return c
}

// A walker's velocity is its last stride's, worked out over the ticks it
// took (at most strideTicks of them); it falls to zero once the walker
// has stood strideMemory. Clients send updates at 10 to 30 a second, so
// a walker moves every few ticks, not every tick. A stride faster than
// maxStride is a jump the server made (a teleport, a correction), not a
// walk, and gives no velocity.
const (
	strideMemory = 0.25 // seconds
	maxStride    = 1000 // units a second: over three times walking pace
)

// gather finds this tick's walkers (tick, each dt seconds long) and
// buckets them. Actors in another worldOrCell than the plaza's are left
// out.
func (c *crowd) gather(tick uint64, dt float32) {
	c.list, c.cellOf = c.list[:0], c.cellOf[:0]
	memory := uint64(max(math.Round(strideMemory/float64(dt)), 1))
	q := c.query.Query()
	for q.NextTable() {
		ids, transforms, clients := q.GetColumns()
		for r := range ids {
			t := &transforms[r]
			if t.WorldOrCell != 0 || (c.players && clients[r].Session == 0) {
				continue
			}
			w := walker{id: ids[r].ID, x: t.X, y: t.Y}
			if c.strides != nil {
				w.vx, w.vy = c.observe(clients[r].Slot, ids[r].ID, t, tick, dt, memory)
			}
			c.list = append(c.list, w)
			cx, cy := c.field.cellOf(t.X, t.Y)
			c.cellOf = append(c.cellOf, c.field.index(cx, cy))
		}
	}
	c.cells.build(c.field.cells(), c.cellOf)
}

// observe updates the stride of actor id, the player of session slot,
// from where it stands this tick and returns its velocity.
func (c *crowd) observe(slot, id uint32, t *components.Transform, tick uint64, dt float32, memory uint64) (vx, vy float32) {
	if int(slot) >= len(c.strides) {
		c.strides = append(c.strides, make([]stride, int(slot)+1-len(c.strides)+64)...)
	}
	s := &c.strides[slot]
	switch {
	case !s.seen || s.id != id || s.world != t.WorldOrCell:
		*s = stride{id: id, x: t.X, y: t.Y, world: t.WorldOrCell, at: tick, seen: true}
	case t.X != s.x || t.Y != s.y:
		took := float32(min(max(tick-s.at, 1), memory)) * dt
		s.vx, s.vy = (t.X-s.x)/took, (t.Y-s.y)/took
		if s.vx*s.vx+s.vy*s.vy > maxStride*maxStride {
			s.vx, s.vy = 0, 0
		}
		s.x, s.y, s.at = t.X, t.Y, tick
	case tick-s.at > memory:
		s.vx, s.vy = 0, 0
	}
	return s.vx, s.vy
}

// near calls fn with every walker in the 3 x 3 cells around (cx, cy), cell
// by cell, each cell's in the order the query found them.
func (c *crowd) near(cx, cy int32, fn func(w *walker)) {
	for y := max(cy-1, 0); y <= min(cy+1, c.field.cols-1); y++ {
		for x := max(cx-1, 0); x <= min(cx+1, c.field.cols-1); x++ {
			for _, i := range c.cells.in(c.field.index(x, y)) {
				fn(&c.list[i])
			}
		}
	}
}

// anyNear reports whether any walker stands in the 3 x 3 cells around
// (cx, cy).
func (c *crowd) anyNear(cx, cy int32) bool {
	for y := max(cy-1, 0); y <= min(cy+1, c.field.cols-1); y++ {
		x0, x1 := c.field.index(max(cx-1, 0), y), c.field.index(min(cx+1, c.field.cols-1), y)
		if c.cells.start[x1+1] > c.cells.start[x0] {
			return true
		}
	}
	return false
}
