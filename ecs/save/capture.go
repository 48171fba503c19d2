package save

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// ErrBusy is returned by [Saver.Begin] while the last save is still being
// written.
var ErrBusy = errors.New("save: the last save is still being written")

// Saver takes saves of one [ecs.World]: [Saver.Begin] plans a picture of
// the world at a tick boundary, [Saver.CopyUnit] copies its columns (the
// freeze: the units may run on several goroutines at once), and
// [Saver.Write] hands the picture to a goroutine that writes it while the
// world ticks on. One save is written at a time.
//
// What a save keeps: every actor without a client (NPCs, whatever the
// game spawned), each with its ActorID, Transform, Animation, relevance
// class (components.Client.Class) and its components of the registered
// [Type]s; the props, the same way, as props (a load puts them back in the
// world's prop tables); the actors of named players, those in play as they
// stand and those kept while their players are away ([Players]), under the
// players' names; and the next ActorID, so that IDs are never reused. The
// class is world state, as the Transform is: it says how an actor ranks
// and how near it matters, and a game's own classes are choices no rule
// could make again at load, so a loaded NPC or prop is in the class it was
// saved in. What it does not keep is runtime state: guests' actors
// (players without a name), sessions, pending inputs (MoveInput), send
// counters, interest phases and owed records; a loaded actor starts as a
// freshly spawned one does, and a loaded player's actor waits for its
// player.
type Saver struct {
	world *ecs.World
	types []Type
	file  []fileType // the type table: builtinTypes, then types

	ids   []ark.ID // the types' Ark IDs
	views []ecs.ChunkView
	props []ecs.ChunkView // the prop tables (World.PropSnapshot)
	// The last picture's views, tables and columns, kept for the next
	// Begin: a table whose column buffers are the same as last time is
	// the same Ark table at the same capacity, so its game columns are
	// where they were, and its copy unit need not ask Ark for them. The
	// kept views hold those buffers alive, so that no other table can
	// have been given one of them since.
	prevViews  []ecs.ChunkView
	prevProps  []ecs.ChunkView
	prevTables []tablePic
	prevCols   []colPic

	busy  atomic.Bool
	pic   picture
	order []int // the write's order of the picture's tables
	// arenaHint is the arena size the next picture is expected to need:
	// the last one's and a quarter more, allocated and touched after the
	// last write so that the freeze does not grow it.
	arenaHint int
}

// picture is one save's capture: each table's columns copied into arena.
type picture struct {
	tick      uint64
	nextID    uint32
	chunkSize float32
	tables    []tablePic
	cols      []colPic
	names     []string // players' names by Client.Slot
	kept      []*Kept  // actors kept for players away
	units     []unitPic
	arena     []byte
}

// tablePic is one chunk table of the picture. Begin fills in what the
// world's snapshots (of actors, of props) say; the table's copy unit finds
// its columns, from colStart on, and lays them out in its region of the
// arena.
type tablePic struct {
	key              grid.AreaKey
	view             *ecs.ChunkView
	prop             bool           // a table of props: a props' block, no players
	ids              unsafe.Pointer // its ActorID column's buffer
	firstKept        uint32         // of its first row a save keeps (without a session), for the file's order
	prev             int            // the same table in the last picture, or -1
	rows             int
	region           int // arena offset of its columns, each at most maxStride bytes a row
	colStart, colEnd int // its columns in picture.cols
	clientCol        int // the column of its Client rows, or -1 (then it has a class column)
	players          int // rows with a session, counted by the writer
	named            int // of them, rows of named players
	unit             int
}

// colPic is one column of one table: where Ark keeps it and where the
// picture keeps its copy. A plain column is copied into the arena; a coded
// one is encoded into its unit's buffer. The class column (classType) is
// gathered from the Client rows, a byte of each, or, where the world knows
// the chunk's actors to be of one class (ecs.World.ClassIn), filled with
// it (src nil).
type colPic struct {
	typ    int // index in the type table; clientColumn for the Client rows
	src    unsafe.Pointer
	class  uint8 // the class column of a table of one class (src nil)
	stride int   // bytes a value in Ark's column
	off    int   // plain: arena offset
	start  int   // coded: offsets in the unit's buffer
	end    int
}

// width returns the bytes a value of c takes in the arena: its stride in
// Ark's column, but one for the class, a byte of each Client.
func (c *colPic) width() int {
	if c.typ == classType {
		return 1
	}
	return c.stride
}

// clientColumn marks the column of Client rows: copied to tell players
// from other actors, and for their classes; never written itself.
const clientColumn = -1

// unitPic is a run of tables copied by one CopyUnit call.
type unitPic struct {
	first, last int // tables [first, last)
	cost        float64
	coded       []byte
}

// NewSaver returns a Saver of w that keeps, besides Throng's own columns,
// the components of types. It fails if a type is invalid ([Type.Err]) or
// two share a name.
func NewSaver(w *ecs.World, types []Type) (*Saver, error) {
	s := &Saver{world: w}
	for _, b := range builtinTypes {
		s.file = append(s.file, fileType(b))
	}
	seen := map[string]bool{}
	for _, t := range types {
		if t.err != nil {
			return nil, t.err
		}
		if seen[t.name] {
			return nil, fmt.Errorf("save: type %q registered twice", t.name)
		}
		seen[t.name] = true
		s.types = append(s.types, t)
		s.ids = append(s.ids, ark.TypeID(w.Ark(), t.typ))
		size := t.size
		if t.coded() {
			size = 0
		}
		s.file = append(s.file, fileType{name: t.name, version: t.version, size: size, layout: t.layout})
	}
	return s, nil
}

// unitBytes is about how many bytes of columns one copy unit takes: small
// enough that the units of a large world spread over the cores, large
// enough that a unit's overhead is small beside its copying.
const unitBytes = 256 << 10

// Begin plans a picture of the world as it stands, with its players, at a
// tick boundary (between ticks, on the goroutine that ticks), and returns
// the number of copy units. tick is the tick the picture follows. It
// returns ErrBusy while the last save is being written. The world must not
// change until every unit has run.
//
// Begin itself only lists the world's chunk tables, the actors' and the
// props', and cuts them into units; finding each table's columns (the
// game's among them) is part of its unit's work, so that the pool shares
// it too. A prop table is copied as an actor table is, less its Client
// rows (a prop has no client), so a table of props at rest costs a save
// the copy of its columns and nothing per prop.
func (s *Saver) Begin(tick uint64, players Players) (int, error) {
	if !s.busy.CompareAndSwap(false, true) {
		return 0, ErrBusy
	}
	p := &s.pic
	p.tick, p.nextID, p.chunkSize = tick, s.world.NextID(), s.world.ChunkSize()
	p.names = append(p.names[:0], players.Names...)
	p.kept = append(p.kept[:0], players.Kept...)
	s.prevViews, s.views = s.views, s.prevViews
	s.prevProps, s.props = s.props, s.prevProps
	s.prevTables, p.tables = p.tables, s.prevTables
	s.prevCols, p.cols = p.cols, s.prevCols
	s.views = s.world.Snapshot(s.views[:0])
	s.props = s.world.PropSnapshot(s.props[:0])
	n := len(s.views) + len(s.props)
	p.tables = slices.Grow(p.tables[:0], n)[:n]
	width := s.maxColumns()
	p.cols = slices.Grow(p.cols[:0], n*width)[:n*width]
	stride := s.maxStride()
	off, j := 0, 0
	prev := s.prevTables
	views, props := s.views, s.props
	for i := range n {
		// The actors' tables and the props' merged, in the order both
		// lists are in.
		var v *ecs.ChunkView
		prop := len(views) == 0 || len(props) > 0 && viewBefore(&props[0], &views[0])
		if prop {
			v, props = &props[0], props[1:]
		} else {
			v, views = &views[0], views[1:]
		}
		t := tablePic{key: v.Key, view: v, prop: prop, ids: unsafe.Pointer(&v.IDs[0]), prev: -1, rows: v.Len(), region: off,
			colStart: i * width, colEnd: i * width, clientCol: -1}
		// Both pictures list tables in chunk order: one walk finds the
		// last picture's tables of t's chunk, and t among them by its
		// buffer. (Not by the ActorID of its first row, which would read
		// every table's memory here, on the tick goroutine.)
		for j < len(prev) && grid.Less(prev[j].key, t.key) {
			j++
		}
		for k := j; k < len(prev) && prev[k].key == t.key; k++ {
			if prev[k].ids == t.ids {
				t.prev = k
				break
			}
		}
		p.tables[i] = t
		off += v.Len() * stride
	}
	if cap(p.arena) < off {
		p.arena = make([]byte, off, max(off, s.arenaHint))
	}
	p.arena = p.arena[:off]
	return s.plan(stride), nil
}

// viewBefore reports whether a comes before b in the snapshots' order:
// by chunk, then by the ActorID of the first row.
func viewBefore(a, b *ecs.ChunkView) bool {
	if a.Key != b.Key {
		return grid.Less(a.Key, b.Key)
	}
	return a.IDs[0].ID < b.IDs[0].ID
}

// maxColumns returns the most columns a table can have: Throng's own, its
// Client rows or its classes, and every type of the game's.
func (s *Saver) maxColumns() int { return builtinColumns + 1 + len(s.types) }

// maxStride returns the most arena bytes a row can take: Throng's columns,
// the Client (or, in its place, the class: a byte), and every plain type
// of the game's (coded ones are encoded into their unit's buffer).
func (s *Saver) maxStride() int {
	n := 4 + 20 + 2 + int(unsafe.Sizeof(components.Client{}))
	for _, t := range s.types {
		if !t.coded() {
			n += t.size
		}
	}
	return n
}

// plan cuts the tables into units of about unitBytes of arena, their cost
// the bytes a row may take.
func (s *Saver) plan(stride int) int {
	p := &s.pic
	p.units = p.units[:0]
	u := unitPic{}
	bytes := 0
	for i := range p.tables {
		t := &p.tables[i]
		t.unit = len(p.units)
		bytes += t.rows * stride
		if bytes >= unitBytes || i == len(p.tables)-1 {
			u.last, u.cost = i+1, float64(bytes)
			p.units = append(p.units, u)
			u = unitPic{first: i + 1}
			bytes = 0
		}
	}
	for i := range p.units {
		p.units[i].coded = p.units[i].coded[:0]
	}
	return len(p.units)
}

// columns finds table t's columns: Throng's own; its Client rows where its
// chunk has players (to leave them out, and for every row's class), else
// its classes alone (a prop table's always: a prop has no client); and
// the game's, read from the table's first row (an Ark table keeps each
// component's values in one array, so the first row's address is the
// column's); the plain ones are laid out in t's region of the arena.
func (s *Saver) columns(t *tablePic) {
	p := &s.pic
	v := t.view
	cols := p.cols[t.colStart : t.colStart : t.colStart+s.maxColumns()]
	cols = append(cols,
		colPic{typ: colID, src: unsafe.Pointer(&v.IDs[0]), stride: 4},
		colPic{typ: colTransform, src: unsafe.Pointer(&v.Transforms[0]), stride: 20},
		colPic{typ: colAnimation, src: unsafe.Pointer(&v.Animations[0]), stride: 2},
	)
	client := colPic{typ: classType, src: unsafe.Pointer(&v.Clients[0]), stride: int(unsafe.Sizeof(components.Client{}))}
	switch class, one := s.world.ClassIn(v.Chunk, t.prop); {
	case !t.prop && s.world.ClientsIn(v.Chunk) > 0:
		t.clientCol = t.colStart + len(cols)
		client.typ = clientColumn
	case one:
		client.src, client.class = nil, class
	}
	cols = append(cols, client)
	if t.prev >= 0 {
		pt := &s.prevTables[t.prev]
		for _, c := range s.prevCols[pt.colStart:pt.colEnd] {
			if c.typ >= firstGame {
				cols = append(cols, colPic{typ: c.typ, src: c.src, stride: c.stride})
			}
		}
	} else {
		u := s.world.Ark().Unsafe()
		first := v.Entities[0]
		for ti, id := range s.ids {
			if u.Has(first, id) {
				cols = append(cols, colPic{typ: firstGame + ti, src: u.Get(first, id), stride: int(s.types[ti].typ.Size())})
			}
		}
	}
	off := t.region
	for c := range cols {
		col := &cols[c]
		if col.typ >= firstGame && s.types[col.typ-firstGame].coded() {
			continue
		}
		col.off = off
		off += t.rows * col.width()
	}
	t.colEnd = t.colStart + len(cols)
}

// UnitCost returns unit i's estimated cost, in bytes to copy.
func (s *Saver) UnitCost(i int) float64 { return s.pic.units[i].cost }

// CopyUnit finds unit i's columns and copies them into the picture: plain
// ones as bytes, the classes a byte of each Client row, coded ones
// encoded. Units may run at once on different goroutines.
func (s *Saver) CopyUnit(i int) {
	p := &s.pic
	u := &p.units[i]
	for ti := u.first; ti < u.last; ti++ {
		t := &p.tables[ti]
		s.columns(t)
		for c := t.colStart; c < t.colEnd; c++ {
			col := &p.cols[c]
			if col.typ == classType {
				dst := p.arena[col.off : col.off+t.rows]
				if col.src == nil {
					fillClass(dst, col.class)
					continue
				}
				copyClasses(dst, unsafe.Slice((*components.Client)(col.src), t.rows))
				continue
			}
			n := t.rows * col.stride
			if col.typ < firstGame || !s.types[col.typ-firstGame].coded() {
				copy(p.arena[col.off:col.off+n], unsafe.Slice((*byte)(col.src), n))
				continue
			}
			encode := s.types[col.typ-firstGame].encode
			col.start = len(u.coded)
			for r := range t.rows {
				at := len(u.coded)
				u.coded = append(u.coded, 0, 0, 0, 0)
				u.coded = encode(u.coded, unsafe.Add(col.src, r*col.stride))
				binary.LittleEndian.PutUint32(u.coded[at:], uint32(len(u.coded)-at-4))
			}
			col.end = len(u.coded)
		}
	}
}

// fillClass writes class into every byte of dst: the classes of a table
// whose actors are all of one.
func fillClass(dst []byte, class uint8) {
	for i := range dst {
		dst[i] = class
	}
}

// copyClasses copies each of clients' classes into dst: the one byte of a
// Client a save keeps of an actor without a session.
func copyClasses(dst []byte, clients []components.Client) {
	dst = dst[:len(clients)]
	for i := range clients {
		dst[i] = clients[i].Class
	}
}
