package zone

import (
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/throng-go/throng/grid"
)

// DefaultLoadEvery is Options.LoadEvery when it is 0: a load report a
// second at 30 Hz.
const DefaultLoadEvery = 30

// LoadSubject is the subject zone id publishes its load reports on; a
// [Coordinator] listens to every zone's (LoadSubject(prefix, "*")).
func LoadSubject(prefix string, id string) string { return prefix + ".load." + id }

// LoadVersion is the version byte every load report starts with.
const LoadVersion = 2

// LoadReport is what a zone server tells a coordinator of its load: how
// many of its own actors (its ghosts left out) stand in each column and
// each row of its rectangle of chunks, how many pairs of actors in sight
// of each other they make there, and how long its ticks take, as of the
// map revision it holds its zone as of. A border moved by one column or
// row moves the actors the report counts there, and their pairs.
type LoadReport struct {
	Zone     ID
	Revision uint64
	Tick     uint64
	// Actors counts all the zone's own actors, those standing outside
	// its rectangle (not handed off yet) included.
	Actors uint32
	// Pairs counts, for each of those actors, the other actors (its
	// ghosts included) standing in its chunk or one of the eight around
	// it: the pairs the zone's relay weighs each tick, which grow with
	// the square of a crowd where the actors grow with the crowd.
	Pairs uint64
	// Work is the zone server's mean tick time over its last full second
	// (throng.SecondStats.WorkAvg; 0 before one), to the microsecond: its
	// load as its host bears it, the game's own systems, its ghosts and a
	// slower machine included.
	Work time.Duration
	// Chunks is the rectangle the counts are for: the zone's as of
	// Revision.
	Chunks Rect
	// Columns[i] counts the actors in chunk column Chunks.MinX+i, Rows[j]
	// those in row Chunks.MinY+j; ColumnPairs and RowPairs their pairs
	// (as Pairs).
	Columns, Rows         []uint32
	ColumnPairs, RowPairs []uint64
}

// Load report layout, little-endian:
//
//	0  version  u8  (LoadVersion)
//	1  zone     u16
//	3  revision u64
//	11 tick     u64
//	19 actors   u32
//	23 pairs    u64
//	31 work     u32 microseconds
//	35 chunks   minX, minY, maxX, maxY i32
//	51 columns  u32 each, maxX-minX+1 of them
//	   rows     u32 each, maxY-minY+1 of them
//	   column pairs u64 each, one a column
//	   row pairs    u64 each, one a row
const loadHeaderSize = 51

// maxLoadSide bounds a reported rectangle's side, so that a report stays
// well within a NATS message.
const maxLoadSide = 1 << 14

// ErrLoadMalformed is a load report of the wrong size, version or shape.
var ErrLoadMalformed = errors.New("zone: load report of the wrong size, version or shape")

// AppendLoadReport appends r's encoding to dst: a pair count for each
// of r.Columns and r.Rows, 0 for those ColumnPairs and RowPairs lack (a
// report of a game's own making that counts no pairs).
func AppendLoadReport(dst []byte, r LoadReport) []byte {
	le := binary.LittleEndian
	dst = append(dst, LoadVersion)
	dst = le.AppendUint16(dst, uint16(r.Zone))
	dst = le.AppendUint64(dst, r.Revision)
	dst = le.AppendUint64(dst, r.Tick)
	dst = le.AppendUint32(dst, r.Actors)
	dst = le.AppendUint64(dst, r.Pairs)
	dst = le.AppendUint32(dst, uint32(min(max(r.Work/time.Microsecond, 0), math.MaxUint32)))
	for _, v := range []int32{r.Chunks.MinX, r.Chunks.MinY, r.Chunks.MaxX, r.Chunks.MaxY} {
		dst = le.AppendUint32(dst, uint32(v))
	}
	for _, c := range r.Columns {
		dst = le.AppendUint32(dst, c)
	}
	for _, c := range r.Rows {
		dst = le.AppendUint32(dst, c)
	}
	for i := range r.Columns {
		dst = le.AppendUint64(dst, pairAt(r.ColumnPairs, i))
	}
	for i := range r.Rows {
		dst = le.AppendUint64(dst, pairAt(r.RowPairs, i))
	}
	return dst
}

// pairAt is s[i], or 0 past s's end.
func pairAt(s []uint64, i int) uint64 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// DecodeLoadReport decodes a report strictly: this version, zone not 0, a
// rectangle of at most maxLoadSide chunks a side, and exactly one count
// per column and row, and one pair count for each. Columns, Rows,
// ColumnPairs and RowPairs are appended to the slices r already holds
// (r's own, reused).
func DecodeLoadReport(b []byte, r *LoadReport) error {
	le := binary.LittleEndian
	if len(b) < loadHeaderSize || b[0] != LoadVersion {
		return ErrLoadMalformed
	}
	c := Rect{MinX: int32(le.Uint32(b[35:])), MinY: int32(le.Uint32(b[39:])), MaxX: int32(le.Uint32(b[43:])), MaxY: int32(le.Uint32(b[47:]))}
	w, h := int64(c.MaxX)-int64(c.MinX)+1, int64(c.MaxY)-int64(c.MinY)+1
	zone := ID(le.Uint16(b[1:]))
	if zone == 0 || w < 1 || h < 1 || w > maxLoadSide || h > maxLoadSide || int64(len(b)) != loadHeaderSize+12*(w+h) {
		return ErrLoadMalformed
	}
	r.Zone, r.Revision, r.Tick, r.Actors, r.Pairs, r.Chunks = zone, le.Uint64(b[3:]), le.Uint64(b[11:]), le.Uint32(b[19:]), le.Uint64(b[23:]), c
	r.Work = time.Duration(le.Uint32(b[31:])) * time.Microsecond
	b = b[loadHeaderSize:]
	r.Columns, b = counts32(r.Columns[:0], b, w)
	r.Rows, b = counts32(r.Rows[:0], b, h)
	r.ColumnPairs, b = counts64(r.ColumnPairs[:0], b, w)
	r.RowPairs, _ = counts64(r.RowPairs[:0], b, h)
	return nil
}

// counts32 appends n little-endian u32 from b to dst, and returns b past them.
func counts32(dst []uint32, b []byte, n int64) ([]uint32, []byte) {
	for i := range n {
		dst = append(dst, binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst, b[4*n:]
}

// counts64 appends n little-endian u64 from b to dst, and returns b past them.
func counts64(dst []uint64, b []byte, n int64) ([]uint64, []byte) {
	for i := range n {
		dst = append(dst, binary.LittleEndian.Uint64(b[8*i:]))
	}
	return dst, b[8*n:]
}

// loadReporter is the zone server's side: its report, built every
// Options.LoadEvery ticks by the publisher from the views it walks.
type loadReporter struct {
	report  LoadReport
	msg     []byte
	subject string
	// all counts the actors of each chunk the publisher holds a view
	// of, ghosts included, and own each view's own actors: for the pairs.
	all map[grid.AreaKey]uint32
	own []uint32
}

// reportLoad counts the zone's own actors in the views the publisher
// holds (ghosts left out) by column and row of me's rectangle, and their
// pairs with the actors of their chunk and the eight around it (ghosts
// in), and publishes the report as of revision.
func (z *Server) reportLoad(me Zone, revision, tick uint64) {
	l := &z.load
	r := &l.report
	c := me.Chunks
	w, h := int(int64(c.MaxX)-int64(c.MinX)+1), int(int64(c.MaxY)-int64(c.MinY)+1)
	if w > maxLoadSide || h > maxLoadSide {
		return // a zone too large to report on: no coordinator moves its borders
	}
	cols, rows := slices.Grow(r.Columns[:0], w)[:w], slices.Grow(r.Rows[:0], h)[:h]
	colPairs, rowPairs := slices.Grow(r.ColumnPairs[:0], w)[:w], slices.Grow(r.RowPairs[:0], h)[:h]
	clear(cols)
	clear(rows)
	clear(colPairs)
	clear(rowPairs)
	*r = LoadReport{Zone: z.opts.Zone, Revision: revision, Tick: tick, Chunks: c, Columns: cols, Rows: rows,
		ColumnPairs: colPairs, RowPairs: rowPairs, Work: z.srv.Stats().Second.WorkAvg}
	if l.all == nil {
		l.all = map[grid.AreaKey]uint32{}
	}
	clear(l.all)
	l.own = l.own[:0]
	for vi := range z.pub.views {
		cv := &z.pub.views[vi]
		n := uint32(0)
		for i := range cv.Len() {
			if lent := z.ghosts.local.Get(cv.IDs[i].ID).zone != 0; !lent {
				n++
			}
		}
		l.own = append(l.own, n)
		l.all[cv.Key] += uint32(cv.Len())
		r.Actors += n
	}
	for vi := range z.pub.views {
		cv := &z.pub.views[vi]
		n := l.own[vi]
		if n == 0 {
			continue
		}
		seen := uint64(0) // the actors around, each of the n among them
		for dy := int32(-1); dy <= 1; dy++ {
			for dx := int32(-1); dx <= 1; dx++ {
				k := cv.Key
				k.X, k.Y = k.X+dx, k.Y+dy
				seen += uint64(l.all[k])
			}
		}
		pairs := uint64(n) * (seen - 1)
		r.Pairs += pairs
		if me.Reach(cv.Key) != 0 {
			continue
		}
		x, y := int64(cv.Key.X)-int64(c.MinX), int64(cv.Key.Y)-int64(c.MinY)
		r.Columns[x] += n
		r.Rows[y] += n
		r.ColumnPairs[x] += pairs
		r.RowPairs[y] += pairs
	}
	if l.subject == "" {
		l.subject = LoadSubject(z.prefix, strconv.Itoa(int(z.opts.Zone)))
	}
	l.msg = AppendLoadReport(l.msg[:0], *r)
	if z.nc.Publish(l.subject, l.msg) == nil {
		z.stats.loadReports.Add(1)
	}
}
