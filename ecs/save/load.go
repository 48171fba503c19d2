package save

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"reflect"
	"slices"
	"unsafe"

	ark "github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// File is a save read into memory, every checksum checked.
type File struct {
	path     string
	builtins int // how many of Throng's own types the file has
	size     int64
	header   header
	types    []fileType
	blocks   []block
}

// block is one chunk table of a File.
type block struct {
	key     grid.AreaKey
	rows    int
	columns []uint16
	payload []byte
}

// Path returns the file read.
func (f *File) Path() string { return f.path }

// Tick returns the tick boundary the save pictures.
func (f *File) Tick() uint64 { return f.header.tick }

// Actors returns the number of actors in the save, players' included.
func (f *File) Actors() int { return int(f.header.actors) }

// Version returns the file's format version.
func (f *File) Version() uint32 { return f.header.version }

// ChunkSize returns the chunk size of the world that saved the file.
func (f *File) ChunkSize() float32 { return f.header.chunkSize }

// Read reads a save: path is a save directory, whose manifest names its
// latest save, or a save file. It checks the whole file (magic, version,
// every block's checksum, the trailer) before returning it, and returns a
// [*FormatError] naming the part that is wrong if anything is.
func Read(path string) (*File, error) {
	file, m, err := resolve(path)
	if err != nil {
		return nil, err
	}
	f, err := parseFile(file)
	if err != nil {
		return nil, err
	}
	if err := m.check(f); err != nil {
		return nil, err
	}
	return f, nil
}

// reader walks a file's bytes. data is the whole file's size; its bytes
// up to avail are read. more, if set, reads on until avail reaches at
// least end or the file ends, and returns the new avail: a file read as
// it is parsed (Load). Without it, data is read whole.
type reader struct {
	data  []byte
	avail int
	at    int
	more  func(end int) int
}

func (r *reader) take(n int) ([]byte, bool) {
	if n < 0 || len(r.data)-r.at < n {
		return nil, false
	}
	if r.avail-r.at < n && r.more != nil {
		r.avail = r.more(r.at + n)
	}
	if r.avail-r.at < n {
		return nil, false
	}
	b := r.data[r.at : r.at+n]
	r.at += n
	return b, true
}

// parseFile reads and checks the save file at path.
func parseFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("save: %w", err)
	}
	p := &parser{f: &File{path: path, size: int64(len(data))}, r: reader{data: data, avail: len(data)}}
	if err := p.head(); err != nil {
		return nil, err
	}
	for i := range int(p.f.header.blocks) {
		b, err := p.block(i)
		if err != nil {
			return nil, err
		}
		p.f.blocks = append(p.f.blocks, b)
	}
	if err := p.tail(); err != nil {
		return nil, err
	}
	return p.f, nil
}

// parser checks a file's parts in order as it reads them: the header and
// the type table (head), each block, and the trailer (tail).
type parser struct {
	f      *File
	r      reader
	actors uint64 // the blocks' rows so far
}

// bad returns a FormatError naming part of the file.
func (p *parser) bad(part, format string, args ...any) error {
	return &FormatError{Path: p.f.path, Part: part, What: fmt.Sprintf(format, args...)}
}

// head reads and checks the header and the type table.
func (p *parser) head() error {
	f, r, data := p.f, &p.r, p.r.data
	// The header.
	hb, ok := r.take(headerSize)
	if !ok {
		return p.bad("header", "truncated: the file is %d bytes, a header alone is %d", len(data), headerSize)
	}
	if string(hb[:8]) != magic {
		return p.bad("header", "not a Throng save (magic %q)", hb[:8])
	}
	le := binary.LittleEndian
	h := &f.header
	h.version = le.Uint32(hb[8:])
	if h.version == 0 || h.version > Version {
		return p.bad("header", "format version %d; this build reads versions 1 to %d", h.version, Version)
	}
	if got, want := crc32.Checksum(hb[:headerSize-4], castagnoli), le.Uint32(hb[headerSize-4:]); got != want {
		return p.bad("header", "checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	h.tick = le.Uint64(hb[12:])
	h.nextID = le.Uint32(hb[20:])
	h.chunkSize = math.Float32frombits(le.Uint32(hb[24:]))
	h.types = le.Uint32(hb[28:])
	h.blocks = le.Uint32(hb[32:])
	h.actors = le.Uint64(hb[36:])
	if !(h.chunkSize > 0) || math.IsInf(float64(h.chunkSize), 1) {
		return p.bad("header", "chunk size %v is not positive and finite", h.chunkSize)
	}
	f.builtins = builtinsIn(h.version)
	if h.types < uint32(f.builtins) || h.types > maxBlockColumns {
		return p.bad("header", "%d types (at least %d, at most %d)", h.types, f.builtins, maxBlockColumns)
	}
	// The type table.
	start := r.at
	for i := range int(h.types) {
		var t fileType
		nb, ok := r.take(1)
		var name, rest, layout []byte
		if ok {
			name, ok = r.take(int(nb[0]))
		}
		if ok {
			rest, ok = r.take(10)
		}
		if ok {
			layout, ok = r.take(int(le.Uint16(rest[8:])))
		}
		if !ok {
			return p.bad("type table", "truncated in type %d", i)
		}
		t.name, t.version, t.size, t.layout = string(name), le.Uint32(rest), int(le.Uint32(rest[4:])), string(layout)
		f.types = append(f.types, t)
	}
	end := r.at
	cb, ok := r.take(4)
	if !ok {
		return p.bad("type table", "truncated before its checksum")
	}
	if got, want := crc32.Checksum(data[start:end], castagnoli), le.Uint32(cb); got != want {
		return p.bad("type table", "checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	for i, b := range builtinTypes[:f.builtins] {
		if t := f.types[i]; t.name != b.name || t.version != b.version || t.size != b.size {
			return p.bad("type table", "type %d is %q version %d size %d, not Throng's %q version %d size %d",
				i, t.name, t.version, t.size, b.name, b.version, b.size)
		}
	}
	return nil
}

// block reads and checks block i.
func (p *parser) block(i int) (block, error) {
	f, r, data := p.f, &p.r, p.r.data
	le := binary.LittleEndian
	part := fmt.Sprintf("block %d", i)
	start := r.at
	head, ok := r.take(blockHeadFixed - 8)
	if !ok {
		return block{}, p.bad(part, "truncated in its header")
	}
	b := block{key: grid.AreaKey{WorldOrCell: le.Uint32(head), X: int32(le.Uint32(head[4:])), Y: int32(le.Uint32(head[8:]))},
		rows: int(le.Uint32(head[12:]))}
	part = fmt.Sprintf("block %d (chunk %d/%d/%d)", i, b.key.WorldOrCell, b.key.X, b.key.Y)
	ncols := int(le.Uint16(head[16:]))
	cols, ok := r.take(2 * ncols)
	var lb []byte
	if ok {
		lb, ok = r.take(8)
	}
	if !ok {
		return block{}, p.bad(part, "truncated in its header")
	}
	n := le.Uint64(lb)
	if n > uint64(len(data)) {
		return block{}, p.bad(part, "payload of %d bytes in a file of %d", n, len(data))
	}
	payload, ok := r.take(int(n))
	var sum []byte
	if ok {
		sum, ok = r.take(4)
	}
	if !ok {
		return block{}, p.bad(part, "truncated: the file ends inside it")
	}
	if got, want := crc32.Checksum(data[start:r.at-4], castagnoli), le.Uint32(sum); got != want {
		return block{}, p.bad(part, "checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	b.payload = payload
	for c := range ncols {
		b.columns = append(b.columns, le.Uint16(cols[2*c:]))
	}
	if err := f.checkBlock(&b); err != "" {
		return block{}, p.bad(part, "%s", err)
	}
	p.actors += uint64(b.rows)
	return b, nil
}

// tail reads and checks the trailer, once every block is read.
func (p *parser) tail() error {
	h, r, data := &p.f.header, &p.r, p.r.data
	le := binary.LittleEndian
	tail, ok := r.take(trailerSize)
	if !ok {
		return p.bad("trailer", "truncated: the file ends before its trailer")
	}
	if string(tail[:8]) != endMagic || le.Uint32(tail[8:]) != h.blocks {
		return p.bad("trailer", "does not close %d blocks", h.blocks)
	}
	if got, want := crc32.Checksum(data[:r.at-4], castagnoli), le.Uint32(tail[12:]); got != want {
		return p.bad("trailer", "file checksum mismatch (stored %08x, computed %08x)", want, got)
	}
	if r.at != len(data) {
		return p.bad("trailer", "%d bytes after the end", len(data)-r.at)
	}
	if p.actors != h.actors {
		return p.bad("header", "says %d actors, the blocks hold %d", h.actors, p.actors)
	}
	return nil
}

// checkBlock checks that b's columns are known types, Throng's own first
// (a player's name or the prop marker fourth in a players' or a props'
// block, then the class column where the file has one), then the game's
// in the order of the type table, that its payload holds exactly its
// rows, that every Transform is finite and every class below
// components.MaxClasses; it returns what is wrong.
func (f *File) checkBlock(b *block) string {
	if len(b.columns) < builtinColumns {
		return fmt.Sprintf("%d columns, fewer than Throng's own %d", len(b.columns), builtinColumns)
	}
	classAt := f.classColumn(b)
	if classAt >= len(b.columns) {
		return fmt.Sprintf("%d columns, no class column", len(b.columns))
	}
	need := 0
	data := b.payload
	for c, typ := range b.columns {
		ok := true
		switch {
		case c < builtinColumns:
			ok = int(typ) == c
		case c == colKind && f.kind(typ):
		case c == classAt:
			ok = typ == classType
		default:
			ok = int(typ) >= f.builtins && int(typ) > int(b.columns[c-1])
		}
		if !ok {
			return fmt.Sprintf("column %d is of type %d, out of place", c, typ)
		}
		if int(typ) >= len(f.types) {
			return fmt.Sprintf("column %d is of type %d; the table has %d", c, typ, len(f.types))
		}
		if f.marker(typ) {
			continue
		}
		if size := f.types[typ].size; size > 0 {
			need = b.rows * size
			if len(data) < need {
				return fmt.Sprintf("column %d (%s) is cut short", c, f.types[typ].name)
			}
			if c == colTransform {
				if r := nonFinite(b.payload, b.rows); r >= 0 { // the ActorIDs before them are whole
					return nonFiniteError(b.payload, r)
				}
			}
			if c == classAt {
				for r, class := range data[:need] {
					if class >= components.MaxClasses {
						// The ActorIDs, the first column, are whole.
						return fmt.Sprintf("actor %d (row %d) has class %d; classes are below components.MaxClasses (%d)",
							binary.LittleEndian.Uint32(b.payload[4*r:]), r, class, components.MaxClasses)
					}
				}
			}
			data = data[need:]
			continue
		}
		for r := 0; r < b.rows; r++ {
			if len(data) < 4 || len(data)-4 < int(binary.LittleEndian.Uint32(data)) {
				return fmt.Sprintf("column %d (%s) is cut short at row %d", c, f.types[typ].name, r)
			}
			data = data[4+int(binary.LittleEndian.Uint32(data)):]
		}
	}
	if len(data) != 0 {
		return fmt.Sprintf("%d bytes after its columns", len(data))
	}
	return ""
}

// kind reports whether typ is one of the types that say what a block's
// rows are: the player's name, the prop marker. An older file's index of
// either is a type of the game's.
func (f *File) kind(typ uint16) bool {
	return int(typ) < f.builtins && (typ == playerType || typ == propType)
}

// marker reports whether typ is the prop marker, whose column holds no
// bytes.
func (f *File) marker(typ uint16) bool { return typ == propType && f.builtins > propType }

// classColumn returns the index of b's class column, which follows
// Throng's first three and the kind, if any; -1 if the file's version has
// none.
func (f *File) classColumn(b *block) int {
	if f.builtins <= classType {
		return -1
	}
	if len(b.columns) > colKind && f.kind(b.columns[colKind]) {
		return colKind + 1
	}
	return colKind
}

// gameColumn returns the index of b's first column of the game's: the
// one after Throng's own.
func (f *File) gameColumn(b *block) int {
	if c := f.classColumn(b); c >= 0 {
		return c + 1
	}
	if len(b.columns) > colKind && f.kind(b.columns[colKind]) {
		return colKind + 1
	}
	return colKind
}

// players reports whether b is a players' block.
func (f *File) players(b *block) bool {
	return len(b.columns) > colKind && b.columns[colKind] == playerType && f.kind(playerType)
}

// props reports whether b is a props' block.
func (f *File) props(b *block) bool {
	return len(b.columns) > colKind && f.marker(b.columns[colKind])
}

// gameTypes matches the file's types of the game's own with types, by
// name: the match for each file index (nil for Throng's own), or an error
// naming a type the game has not registered or registers in another
// version or shape.
func (f *File) gameTypes(types []Type) ([]*Type, error) {
	game := make([]*Type, len(f.types))
	for i := f.builtins; i < len(f.types); i++ {
		ft := f.types[i]
		t := findType(types, ft.name)
		switch {
		case t == nil:
			return nil, fmt.Errorf("save: %s holds components of type %q, which the game has not registered", f.path, ft.name)
		case t.err != nil:
			return nil, t.err
		case t.version != ft.version:
			return nil, fmt.Errorf("save: %s holds %q version %d; the game registers version %d", f.path, ft.name, ft.version, t.version)
		case t.coded() != (ft.size == 0), !t.coded() && (t.size != ft.size || t.layout != ft.layout):
			return nil, fmt.Errorf("save: %s holds %q version %d laid out as %s (%d bytes); the game's is %s (%d bytes): bump its version",
				f.path, ft.name, ft.version, ft.layout, ft.size, t.layout, t.size)
		}
		game[i] = t
	}
	return game, nil
}

// columnStarts returns where each of b's columns starts in its payload.
func (f *File) columnStarts(b *block, at []int) []int {
	at = at[:0]
	off := 0
	for _, typ := range b.columns {
		at = append(at, off)
		if f.marker(typ) {
			continue
		}
		if size := f.types[typ].size; size > 0 {
			off += b.rows * size
			continue
		}
		for range b.rows {
			off += 4 + int(binary.LittleEndian.Uint32(b.payload[off:]))
		}
	}
	return at
}

// actorAt reads row r's ActorID, Transform and Animation, and its class
// from column class (none: -1, ClassPlayer, which a restore makes the
// class a spawn gives).
func actorAt(p []byte, at []int, class, r int) ecs.SavedActor {
	le := binary.LittleEndian
	t := p[at[colTransform]+20*r:]
	a := ecs.SavedActor{
		ID: components.ActorID{ID: le.Uint32(p[at[colID]+4*r:])},
		Transform: components.Transform{
			X: math.Float32frombits(le.Uint32(t)), Y: math.Float32frombits(le.Uint32(t[4:])),
			Z: math.Float32frombits(le.Uint32(t[8:])), Yaw: math.Float32frombits(le.Uint32(t[12:])),
			WorldOrCell: le.Uint32(t[16:]),
		},
		Animation: components.Animation{Flags: le.Uint16(p[at[colAnimation]+2*r:])},
	}
	if class >= 0 {
		a.Class = p[at[class]+r]
	}
	return a
}

// Kept returns the players' actors the file holds, kept under their
// players' names, with their components of types (which must include
// every type of the game's that the file holds, as for [File.Restore]).
// They are not in the world a Restore fills: a server hands each back when
// its player returns.
func (f *File) Kept(types []Type) ([]*Kept, error) {
	game, err := f.gameTypes(types)
	if err != nil {
		return nil, err
	}
	var out []*Kept
	var at []int
	for bi := range f.blocks {
		b := &f.blocks[bi]
		if !f.players(b) {
			continue
		}
		at = f.columnStarts(b, at)
		class := f.classColumn(b)
		cols := make([][]byte, len(b.columns))
		for c := range b.columns {
			cols[c] = b.payload[at[c]:]
		}
		for r := range b.rows {
			a := actorAt(b.payload, at, class, r)
			// From a file without classes, Class is ClassPlayer: a player's.
			k := &Kept{ID: a.ID, Transform: a.Transform, Animation: a.Animation, Class: a.Class}
			for c := colKind; c < len(b.columns); c++ {
				if c == class {
					continue
				}
				typ := b.columns[c]
				var v []byte
				if size := f.types[typ].size; size > 0 {
					v, cols[c] = cols[c][:size:size], cols[c][size:]
				} else {
					n := int(binary.LittleEndian.Uint32(cols[c]))
					v, cols[c] = cols[c][4:4+n:4+n], cols[c][4+n:]
				}
				if c == colKind {
					k.Player = string(v)
					continue
				}
				t := game[typ]
				if t.coded() {
					// Decoded now, so that a bad value fails the load, not
					// the player's return.
					if err := t.decode(v, reflect.New(t.typ).UnsafePointer()); err != nil {
						return nil, fmt.Errorf("save: %s: player %q: decoding %q: %w", f.path, k.Player, t.name, err)
					}
				}
				k.values = append(k.values, keptValue{name: t.name, data: bytes.Clone(v)})
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// Restore places the file's actors in w, which must hold no actors yet
// (a server's world before its first tick), with their components of
// types, which must include every type of the game's that the file holds,
// with the same version and layout, each in its relevance class (from a
// file older than version 4, which kept none, the class a spawn gives:
// ClassNPC, or ClassProp for a prop). Props go back as props, into the
// world's prop tables. Players' actors are not placed: they wait for their
// players ([File.Kept]). It checks all of that before placing anything,
// and places a block (a chunk table) at a time, with
// [ecs.World.RestoreBlock] or [ecs.World.RestoreProps]. An actor the world
// refuses (a repeated ID, say, in a file that was written wrong) or a
// codec's Decode error stops it halfway, so restore into a world you can
// throw away.
//
// A prop whose Transform the game had moved out of its chunk without
// [ecs.World.Update] when the save was taken is placed in the chunk its
// Transform lies in, as that Update would have; so a save of such a world
// loads, and its next save lists that prop in its new chunk.
func (f *File) Restore(w *ecs.World, types []Type) error {
	game, err := f.fits(w, types)
	if err != nil {
		return err
	}
	r := f.restoring(w, game)
	f.reserve(w)
	var d decoded
	for bi := range f.blocks {
		b := &f.blocks[bi]
		if f.players(b) {
			continue
		}
		f.decode(b, &d)
		if err := f.place(r, &d); err != nil {
			return err
		}
	}
	w.ReserveIDs(f.header.nextID)
	return nil
}

// fits checks that the file can be restored into w with types: w holds
// no actors and has the file's chunk size, and types match the file's of
// the game's ([File.gameTypes], whose match it returns).
func (f *File) fits(w *ecs.World, types []Type) ([]*Type, error) {
	if w.Len() != 0 {
		return nil, fmt.Errorf("save: restore into a world that already has %d actors", w.Len())
	}
	if w.ChunkSize() != f.header.chunkSize {
		return nil, fmt.Errorf("save: %s was saved with chunks of %v units, this world's are %v", f.path, f.header.chunkSize, w.ChunkSize())
	}
	return f.gameTypes(types)
}

// reserve makes room in w for the file's actors and chunks, as many as
// its header says, but no more than its bytes can hold: Load reserves
// before it reads the blocks that back the header's counts, and a header's
// checksum says it is as written, not that its writer told the truth. A
// count past that is refused once the blocks are read.
func (f *File) reserve(w *ecs.World) {
	body := uint64(max(f.size-headerSize-trailerSize, 0))
	w.Reserve(int(min(f.header.actors, body/minRowBytes)), int(min(uint64(f.header.blocks), body/minBlockBytes)))
}

// restoring is a Restore under way: the world, the game's types by file
// index with their Ark IDs, and scratch reused from block to block.
type restoring struct {
	w      *ecs.World
	game   []*Type
	ids    []ark.ID
	extra  []ark.ID
	cursor []int // a coded column's next value
}

// restoring starts a restore into w of the game's types game.
func (f *File) restoring(w *ecs.World, game []*Type) *restoring {
	r := &restoring{w: w, game: game, ids: make([]ark.ID, len(f.types))}
	for i, t := range game {
		if t != nil {
			r.ids[i] = ark.TypeID(w.Ark(), t.typ)
		}
	}
	return r
}

// decoded is a block ready to be placed: where each of its columns starts
// in its payload, and its actors read from them.
type decoded struct {
	b      block
	at     []int
	actors []ecs.SavedActor
}

// decode reads block b's actors into d.
func (f *File) decode(b *block, d *decoded) {
	d.b = *b
	d.at = f.columnStarts(b, d.at)
	class := f.classColumn(b)
	d.actors = slices.Grow(d.actors[:0], b.rows)[:b.rows]
	for i := range d.actors {
		d.actors[i] = actorAt(b.payload, d.at, class, i)
	}
}

// place restores the decoded block d: its actors, then their components
// of the game's. A block of no rows places nothing (Throng writes none,
// but the format allows it).
func (f *File) place(r *restoring, d *decoded) error {
	b := &d.b
	if b.rows == 0 {
		return nil
	}
	first := f.gameColumn(b)
	prop := f.props(b)
	r.extra = r.extra[:0]
	for _, typ := range b.columns[first:] {
		r.extra = append(r.extra, r.ids[typ])
	}
	r.cursor = append(r.cursor[:0], d.at...)
	actors := d.actors
	fail := func(err error) error {
		return fmt.Errorf("save: %s: block of chunk %d/%d/%d: %w", f.path, b.key.WorldOrCell, b.key.X, b.key.Y, err)
	}
	if !prop || !r.strays(b.key, actors) {
		restore := r.w.RestoreBlock
		if prop {
			restore = r.w.RestoreProps
		}
		entities, err := restore(b.key, actors, r.extra)
		if err != nil {
			return fail(err)
		}
		return f.fill(r, d, first, 0, entities)
	}
	// A prop the game moved out of its chunk without an Update goes to
	// the chunk it stands in: the block's props are placed one at a time.
	for i := range actors {
		entities, err := r.w.RestoreProps(r.w.KeyOf(actors[i].Transform), actors[i:i+1], r.extra)
		if err != nil {
			return fail(err)
		}
		if err := f.fill(r, d, first, i, entities); err != nil {
			return err
		}
	}
	return nil
}

// fill gives entities, rows from on of block d placed in one run of an Ark
// table's rows, their components of the game's, read from b's columns
// first on: a plain column is one copy; a coded one is decoded value by
// value from r.cursor on.
func (f *File) fill(r *restoring, d *decoded, first, from int, entities []ark.Entity) error {
	le := binary.LittleEndian
	u := r.w.Ark().Unsafe()
	b := &d.b
	p := b.payload
	for c := first; c < len(b.columns); c++ {
		t, id := r.game[b.columns[c]], r.ids[b.columns[c]]
		dst := u.Get(entities[0], id)
		if !t.coded() {
			n := len(entities) * t.size
			at := d.at[c] + from*t.size
			copy(unsafe.Slice((*byte)(dst), n), p[at:at+n])
			continue
		}
		stride := t.typ.Size()
		for i := range entities {
			n := int(le.Uint32(p[r.cursor[c]:]))
			v := p[r.cursor[c]+4 : r.cursor[c]+4+n]
			r.cursor[c] += 4 + n
			if err := t.decode(v, unsafe.Add(dst, uintptr(i)*stride)); err != nil {
				return fmt.Errorf("save: %s: actor %d: decoding %q: %w", f.path, d.actors[from+i].ID.ID, t.name, err)
			}
		}
	}
	return nil
}

// strays reports whether a prop of actors stands outside chunk key, the
// chunk of their block: moved by the game without an Update before the
// save.
func (r *restoring) strays(key grid.AreaKey, actors []ecs.SavedActor) bool {
	for i := range actors {
		if r.w.KeyOf(actors[i].Transform) != key {
			return true
		}
	}
	return false
}
