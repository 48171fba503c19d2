package systems

import (
	"hash/maphash"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// span is a half-open range [lo, hi) of flat actor indices.
type span struct{ lo, hi int32 }

// group is one occupied chunk of the frame: the flat range of its actors
// (all its tables, which are adjacent), its occupied cells, and the
// occupied chunks of its 3x3 stencil, itself included.
type group struct {
	key              grid.AreaKey
	actors           span
	cellsLo, cellsHi int32    // its cells in Frame.cells
	stencil          [9]int32 // occupied stencil chunks, as group indices
	nbrLo, nbrHi     int32    // the cells of those chunks in its part's (Frame.links)
	senders          int32    // the actors of those chunks (Frame.stencilSenders)
	viewsLo, viewsHi int32    // its views in Frame.members
	mixed            uint16   // a one-cell chunk by kind: the tables whose cell holds kinds of more than one rank
	nst              uint8    // used entries of stencil
	part             uint8    // its part of the stencil links
	side             uint8    // cells per side of its grid
}

// sees reports whether group other is among g's stencil chunks: whether
// g's players see its actors.
func (g *group) sees(other int32) bool {
	for _, o := range g.stencil[:g.nst] {
		if o == other {
			return true
		}
	}
	return false
}

// cell is one occupied cell of a chunk's grid: its actors (contiguous in
// canonical order) and, once Move has run, the box around their positions
// and whether every one of them changed this tick.
type cell struct {
	actors   span
	min, max [3]float32
	fresh    bool
	kind     uint8 // its senders' kind (Pipeline.tierSets, kindRank, kindReach)
	mixed    bool  // it holds kinds of its table other than kind, of other ranks (bucketBySet)
}

// Shard is one work unit of Move and Relay: a contiguous range of the
// frame's canonical actor order, inside one cluster (or a sweep of small
// clusters).
type Shard struct {
	Lo, Hi  int32
	Cluster int32  // index of the (first) cluster it belongs to
	Key     uint64 // identity across ticks for the pool's cost model
	// Sweep marks a unit of several small clusters, which are never
	// throttled.
	Sweep bool
	// Level is the throttle pressure of the shard's cluster this tick.
	Level uint8
}

// Verdict is what Move decided about an actor's pending update.
type Verdict uint8

// Verdicts. Anything from RejectNotFinite on sends the client a correction.
const (
	NoUpdate Verdict = iota
	Accepted
	RejectNotFinite
	RejectTooFar
	RejectWorldChange
	RejectTooFast // over Limits.MaxSpeed
)

// Frame is one tick's snapshot, laid out flat for the parallel phase. The
// canonical order of actors is cluster by cluster (clusters by lowest chunk),
// chunk views in key order within a cluster, rows in table order: everything
// that reaches the wire follows it, so shard and worker counts never change
// a byte.
//
// Prepare lays it out on the tick goroutine; Move fills in and writes
// only the rows of its own shard (each actor's id, client and state);
// Relay reads everything and writes only its recipients' relay counts
// (their batches are built in each unit's own buffer and handed to the
// transport at once); Join reads it on the tick goroutine again.
type Frame struct {
	Tick  uint64
	views []ecs.ChunkView
	keys  []grid.AreaKey

	// Per actor, canonical order.
	view    []int32
	row     []int32
	group   []int32
	x, y, z []float32
	id      []uint32
	key     []uint32 // per actor: the number its phases hash (components.PhaseKey)
	changed []uint64
	session []uint64
	slot    []uint32 // per actor: its Client.Slot
	verdict []Verdict
	crossed []bool
	look    []bool              // per player: past its prop sight's slack (Pipeline.pastSlack), while the world has props
	records []byte              // per actor: its movement record (wire.RecordSize bytes), encoded once by Move
	cellIdx []int32             // per actor: its cell in cells
	res     []interest.Residues // per actor: its sender phase residues
	half    []uint32            // per actor: its sender half of the pair phase (interest.SenderHalf)
	// phases keeps each actor's phase (phaseMemo) by its view's row, not
	// by its canonical index: an actor crossing a cell moves every actor
	// between its two cells up or down one index, and in a crowd most
	// indices change hands each tick while rows do not. viewAt is each
	// view's first entry in phases.
	phases []phaseMemo
	viewAt []int32
	// Per actor, its due key this tick (denseLayout.dueKey), read a group
	// of sixteen past the end (denseCopy16).
	dueKey []uint32
	relays []int32 // per recipient: records in its batch

	groups []group
	cells  []cell
	// Per group, its grid for finding nearest senders (relay_near.go),
	// with the actors by bucket and the buckets' offsets; nearFill is the
	// build's scratch. Built in BeginRelay while nearest senders are on.
	near                []nearGrid
	nearIdx             []int32
	nearX, nearY, nearZ []float32
	nearReach           []float32
	nearOff             []int32
	nearFill            []int32
	cellOf              []uint16 // per actor, in its group's view order: its cell's bucket (countGroup)
	members             []int32  // the groups' views, group by group (group.viewsLo)
	layoutCounts        []int32  // the layout's counting sort's scratch
	// deferPlace: the actors are placed by Move's units, each its own
	// shard's (placeRange), not by Prepare.
	deferPlace bool
	// sets is the number of kinds of sender (Pipeline.tierSets), and
	// classSet each class's kind: with more than one, cells are split by
	// kind (bucketBySet). class is each actor's Client.Class, which Move
	// fills.
	sets     int
	classSet [components.MaxClasses]uint8
	// kindTable is each kind's table among the distinct ones, the
	// players' 0: kinds of one table differ only in rank.
	kindTable [components.MaxClasses]uint8
	// tableKind is, for each kind, the first kind of its table; tables
	// counts the tables, anyRanked says a kind has a rank.
	tableKind   [components.MaxClasses]uint8
	tables      int
	anyRanked   bool
	class       []uint8
	links       []stencilPart // the chunks' stencil links, in parts (linkStencils)
	viewGroup   []int32       // per view: its group
	byKey       []int32       // groups in key order
	sorted      []stencilKey  // per entry of byKey: its key and cells (linkStencils)
	part        grid.Partitioner
	clusters    []grid.Cluster
	shards      []Shard
	clusterSize []int32    // actors per cluster
	sess        []*session // per actor: its client's session, or nil
	due         dueLists   // per cell, period and residue: the senders due (see due.go)
	// index maps actor ids to their frame index, on ticks after one that
	// left records owed (indexed): recipients over their budget look up
	// the senders they owe (Pipeline.pickOwed).
	index   idTable
	indexed bool
	biggest int
	seed    maphash.Seed
}

// indexActors fills index with every actor of the frame.
func (f *Frame) indexActors() {
	f.index.reset(len(f.id))
	for a, id := range f.id {
		f.index.put(id, int32(a))
	}
	f.indexed = true
}

// Len returns the number of actors in the frame.
func (f *Frame) Len() int { return len(f.id) }

// Shards returns this tick's work units; valid until the next Prepare.
func (f *Frame) Shards() []Shard { return f.shards }

// Clusters returns the number of clusters and the size, in actors, of the
// biggest one.
func (f *Frame) Clusters() (count, biggest int) { return len(f.clusters), f.biggest }

// recordOf returns actor i's encoded movement record.
func (f *Frame) recordOf(i int32) []byte {
	return f.records[int(i)*wire.RecordSize : int(i+1)*wire.RecordSize]
}

// resize sets every per-actor slice to n entries, reusing capacity.
func (f *Frame) resize(n int) {
	f.view = resizeSlice(f.view, n)
	f.row = resizeSlice(f.row, n)
	f.group = resizeSlice(f.group, n)
	f.x = padded(f.x, n)
	f.y = padded(f.y, n)
	f.z = padded(f.z, n)
	f.id = resizeSlice(f.id, n)
	f.key = resizeSlice(f.key, n)
	f.changed = resizeSlice(f.changed, n)
	f.session = resizeSlice(f.session, n)
	f.slot = resizeSlice(f.slot, n)
	f.class = resizeSlice(f.class, n)
	f.verdict = resizeSlice(f.verdict, n)
	f.crossed = resizeSlice(f.crossed, n)
	f.look = resizeSlice(f.look, n)
	f.records = resizeSlice(f.records, n*wire.RecordSize+denseOverrun)[:n*wire.RecordSize]
	f.cellIdx = resizeSlice(f.cellIdx, n)
	f.res = resizeSlice(f.res, n)
	f.half = resizeSlice(f.half, n)
	f.phases = resizeSlice(f.phases, n)
	f.dueKey = padded(f.dueKey, n)
	f.relays = resizeSlice(f.relays, n)
	f.sess = resizeSlice(f.sess, n)
}

func resizeSlice[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}
