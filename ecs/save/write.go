package save

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
)

// Result is what a finished save wrote.
type Result struct {
	Path    string        // the save file
	Tick    uint64        // the tick boundary it pictures
	Actors  int           // actors kept, props included, players' left out
	Props   int           // of Actors, the props
	Players int           // players' actors kept: in play and away
	Bytes   int64         // the file's size
	Write   time.Duration // encoding, checksums, writing and fsync, in the background
}

// Pending is a save being written in the background.
type Pending struct {
	done chan struct{}
	res  Result
	err  error
}

// Wait blocks until the save is written (or failed) and returns its result.
func (p *Pending) Wait() (Result, error) {
	<-p.done
	return p.res, p.err
}

// Done is closed once the save is written or failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Write starts writing the picture the copy units took into dir, on a
// goroutine of its own, and returns at once. Once the file is durable
// (written, fsynced, renamed, the directory fsynced) the manifest is
// replaced the same way to name it, and the saves beyond the newest keep
// are removed. A crash at any moment leaves the manifest naming a complete
// save: the new one or the one before.
func (s *Saver) Write(dir string, keep int) *Pending {
	p := &Pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		defer s.busy.Store(false)
		start := time.Now()
		p.res, p.err = s.write(dir, max(keep, 1))
		p.res.Write = time.Since(start)
		s.prepareArena()
	}()
	return p
}

// prepareArena sizes the arena for the next save from this one (a quarter
// more) and touches every page of it, so that the next freeze neither
// grows nor faults it in.
func (s *Saver) prepareArena() {
	p := &s.pic
	s.arenaHint = len(p.arena) + len(p.arena)/4
	if cap(p.arena) < s.arenaHint {
		p.arena = make([]byte, 0, s.arenaHint)
	}
	full := p.arena[:cap(p.arena)]
	for i := 0; i < len(full); i += 4096 {
		full[i] = 0
	}
}

// fileWriter writes a save file, keeping the CRC32C of all it wrote.
type fileWriter struct {
	w   *bufio.Writer
	crc uint32
	n   int64
	err error
}

func (f *fileWriter) write(b []byte) {
	if f.err != nil {
		return
	}
	f.crc = crc32.Update(f.crc, castagnoli, b)
	f.n += int64(len(b))
	_, f.err = f.w.Write(b)
}

func (s *Saver) write(dir string, keep int) (Result, error) {
	p := &s.pic
	name := fmt.Sprintf("world-%016d.save", p.tick)
	res := Result{Path: filepath.Join(dir, name), Tick: p.tick}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		// A new save directory: make its entry in the parent durable too.
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return res, fmt.Errorf("save: %w", err)
		}
		if err := syncDir(filepath.Dir(dir)); err != nil {
			return res, fmt.Errorf("save: %w", err)
		}
	}
	blocks := 0
	order := s.order[:0]
	for i := range p.tables {
		t := &p.tables[i]
		order = append(order, i)
		t.players, t.named = 0, 0
		clients := p.clients(t)
		for _, c := range clients {
			if c.Session != 0 {
				t.players++
				if p.name(c) != "" {
					t.named++
				}
			}
		}
		r := max(0, slices.IndexFunc(clients, func(c components.Client) bool { return c.Session == 0 }))
		t.firstKept = binary.LittleEndian.Uint32(p.arena[p.cols[t.colStart].off+4*r:])
		if kept := t.rows - t.players; kept > 0 {
			blocks++
			res.Actors += kept
			if t.prop {
				res.Props += kept
			}
		}
		if t.named > 0 {
			blocks++
			res.Players += t.named
		}
	}
	groups := s.groupKept()
	blocks += len(groups)
	res.Players += len(p.kept)
	tmp := res.Path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return res, fmt.Errorf("save: %w", err)
	}
	fw := &fileWriter{w: bufio.NewWriterSize(f, 1<<20)}
	h := header{version: Version, tick: p.tick, nextID: p.nextID, chunkSize: p.chunkSize,
		types: uint32(len(s.file)), blocks: uint32(blocks), actors: uint64(res.Actors + res.Players)}
	fw.write(h.append(nil))
	fw.write(appendTypes(nil, s.file))
	// A chunk's blocks follow the ActorID of their first row kept: the
	// order the tables of a world loaded from this save list in, whose
	// first rows are those, so that its save writes the blocks in this
	// order again. (A table's first row may be a player's, left out.)
	slices.SortStableFunc(order, func(a, b int) int {
		ta, tb := &p.tables[a], &p.tables[b]
		switch {
		case ta.key == tb.key:
			return cmp.Compare(ta.firstKept, tb.firstKept)
		case grid.Less(ta.key, tb.key):
			return -1
		}
		return 1
	})
	s.order = order
	var scratch, head []byte
	for _, i := range order {
		t := &p.tables[i]
		if t.rows > t.players {
			head, scratch = s.writeBlock(fw, t, false, head, scratch)
		}
		if t.named > 0 {
			head, scratch = s.writeBlock(fw, t, true, head, scratch)
		}
	}
	for _, g := range groups {
		head, scratch = s.writeKept(fw, g, head, scratch)
	}
	tail := append([]byte(endMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(tail[8:], uint32(blocks))
	fw.write(tail)
	fw.write(binary.LittleEndian.AppendUint32(nil, fw.crc))
	if fw.err == nil {
		fw.err = fw.w.Flush()
	}
	if fw.err == nil {
		fw.err = f.Sync()
	}
	if err := f.Close(); fw.err == nil {
		fw.err = err
	}
	if fw.err == nil {
		fw.err = os.Rename(tmp, res.Path)
	}
	if fw.err == nil {
		fw.err = syncDir(dir)
	}
	if fw.err != nil {
		os.Remove(tmp)
		return res, fmt.Errorf("save: writing %s: %w", res.Path, fw.err)
	}
	res.Bytes = fw.n
	if err := writeManifest(dir, manifest{file: name, bytes: fw.n, tick: p.tick}); err != nil {
		return res, err
	}
	prune(dir, name, keep)
	return res, nil
}

// writeBlock writes a block of table t: its rows without a session (a
// prop table's, marked as props), or with players its rows of named
// players, with their names; each row with its class.
func (s *Saver) writeBlock(fw *fileWriter, t *tablePic, players bool, head, scratch []byte) ([]byte, []byte) {
	p := &s.pic
	u := &p.units[t.unit]
	rows := t.rows - t.players
	if players {
		rows = t.named
	}
	var clients []components.Client
	if t.players > 0 {
		clients = p.clients(t)
	}
	in := func(r int) bool {
		if players {
			return clients[r].Session != 0 && p.name(clients[r]) != ""
		}
		return clients == nil || clients[r].Session == 0
	}
	// The columns' bytes, of the rows in the block.
	scratch = scratch[:0]
	var types [maxBlockColumns]int
	ncols := 0
	classAt := 0 // where the class column starts in scratch
	for c := t.colStart; c < t.colEnd; c++ {
		col := &p.cols[c]
		if col.typ == clientColumn || col.typ == classType {
			classAt = len(scratch)
		}
		if col.typ == clientColumn {
			// The rows' classes, from their Client rows.
			for r, c := range p.clients(t) {
				if in(r) {
					scratch = append(scratch, c.Class)
				}
			}
			types[ncols] = classType
			ncols++
			continue
		}
		if col.typ >= firstGame && s.types[col.typ-firstGame].coded() {
			data := u.coded[col.start:col.end]
			for r := 0; r < t.rows; r++ {
				n := 4 + int(binary.LittleEndian.Uint32(data))
				if in(r) {
					scratch = append(scratch, data[:n]...)
				}
				data = data[n:]
			}
		} else {
			w := col.width()
			data := p.arena[col.off : col.off+t.rows*w]
			if clients == nil {
				scratch = append(scratch, data...)
			} else {
				for r := 0; r < t.rows; r++ {
					if in(r) {
						scratch = append(scratch, data[r*w:(r+1)*w]...)
					}
				}
			}
		}
		types[ncols] = col.typ
		ncols++
		if players && col.typ == colAnimation {
			for r := 0; r < t.rows; r++ {
				if in(r) {
					scratch = appendCoded(scratch, []byte(p.name(clients[r])))
				}
			}
			types[ncols] = playerType
			ncols++
		}
		if t.prop && col.typ == colAnimation {
			types[ncols] = propType // a marker: no bytes
			ncols++
		}
	}
	fw.checkRows(scratch, classAt, rows)
	return writeBlockBytes(fw, t.key, rows, types[:ncols], head, scratch)
}

// checkRows fails the write if a row of a block has a Transform that is
// not finite or a class at or past components.MaxClasses (what the game
// wrote into a row itself): Read would refuse the file. payload is the
// block's, which starts with its ActorIDs and Transforms; its class
// column starts at classAt.
func (f *fileWriter) checkRows(payload []byte, classAt, rows int) {
	if r := nonFinite(payload, rows); r >= 0 && f.err == nil {
		f.err = errors.New(nonFiniteError(payload, r))
	}
	for r, c := range payload[classAt : classAt+rows] {
		if c >= components.MaxClasses && f.err == nil {
			f.err = fmt.Errorf("actor %d has class %d, past components.MaxClasses (%d)",
				binary.LittleEndian.Uint32(payload[4*r:]), c, components.MaxClasses)
		}
	}
}

// writeBlockBytes writes a block: its header, then payload, then checksum.
func writeBlockBytes(fw *fileWriter, key grid.AreaKey, rows int, types []int, head, payload []byte) ([]byte, []byte) {
	head = head[:0]
	head = binary.LittleEndian.AppendUint32(head, key.WorldOrCell)
	head = binary.LittleEndian.AppendUint32(head, uint32(key.X))
	head = binary.LittleEndian.AppendUint32(head, uint32(key.Y))
	head = binary.LittleEndian.AppendUint32(head, uint32(rows))
	head = binary.LittleEndian.AppendUint16(head, uint16(len(types)))
	for _, typ := range types {
		head = binary.LittleEndian.AppendUint16(head, uint16(typ))
	}
	head = binary.LittleEndian.AppendUint64(head, uint64(len(payload)))
	crc := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, payload)
	fw.write(head)
	fw.write(payload)
	fw.write(binary.LittleEndian.AppendUint32(head[:0], crc))
	return head, payload
}

// appendCoded appends a coded value: its length, then its bytes.
func appendCoded(dst, v []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	return append(dst, v...)
}

// name returns the name of the player whose actor has Client c, "" for a
// guest.
func (p *picture) name(c components.Client) string {
	if int(c.Slot) < len(p.names) {
		return p.names[c.Slot]
	}
	return ""
}

// keptGroup is a block's worth of kept actors: in one chunk, with the same
// components.
type keptGroup struct {
	key   grid.AreaKey
	types []int // the file's type indexes of their game components
	kept  []keptRow
}

type keptRow struct {
	k      *Kept
	values []int // k.values' indexes, in the order of types
}

// groupKept sorts the kept actors into blocks: by chunk, then by the set
// of their game components, each block's rows by player name. A value of a
// type the Saver does not know (no longer registered) cannot be described
// in the type table and is left out.
func (s *Saver) groupKept() []keptGroup {
	p := &s.pic
	index := map[string]int{}
	for i, t := range s.types {
		index[t.name] = firstGame + i
	}
	type entry struct {
		key  grid.AreaKey
		sig  string
		row  keptRow
		typs []int
	}
	entries := make([]entry, 0, len(p.kept))
	for _, k := range p.kept {
		e := entry{key: grid.KeyOf(k.Transform.WorldOrCell, k.Transform.X, k.Transform.Y, p.chunkSize), row: keptRow{k: k}}
		order := make([]int, 0, len(k.values))
		for vi, v := range k.values {
			if _, ok := index[v.name]; ok {
				order = append(order, vi)
			}
		}
		slices.SortFunc(order, func(a, b int) int { return index[k.values[a].name] - index[k.values[b].name] })
		var sig strings.Builder
		for _, vi := range order {
			typ := index[k.values[vi].name]
			e.typs = append(e.typs, typ)
			fmt.Fprintf(&sig, "%d,", typ)
		}
		e.sig, e.row.values = sig.String(), order
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.key != b.key {
			if grid.Less(a.key, b.key) {
				return -1
			}
			return 1
		}
		return cmp.Or(strings.Compare(a.sig, b.sig), strings.Compare(a.row.k.Player, b.row.k.Player))
	})
	var groups []keptGroup
	for i, e := range entries {
		if i == 0 || e.key != entries[i-1].key || e.sig != entries[i-1].sig {
			groups = append(groups, keptGroup{key: e.key, types: e.typs})
		}
		g := &groups[len(groups)-1]
		g.kept = append(g.kept, e.row)
	}
	return groups
}

// writeKept writes a block of kept actors.
func (s *Saver) writeKept(fw *fileWriter, g keptGroup, head, scratch []byte) ([]byte, []byte) {
	le := binary.LittleEndian
	scratch = scratch[:0]
	for _, r := range g.kept {
		scratch = le.AppendUint32(scratch, r.k.ID.ID)
	}
	for _, r := range g.kept {
		t := &r.k.Transform
		for _, f := range [...]float32{t.X, t.Y, t.Z, t.Yaw} {
			scratch = le.AppendUint32(scratch, math.Float32bits(f))
		}
		scratch = le.AppendUint32(scratch, t.WorldOrCell)
	}
	for _, r := range g.kept {
		scratch = le.AppendUint16(scratch, r.k.Animation.Flags)
	}
	for _, r := range g.kept {
		scratch = appendCoded(scratch, []byte(r.k.Player))
	}
	classAt := len(scratch)
	for _, r := range g.kept {
		scratch = append(scratch, r.k.Class)
	}
	fw.checkRows(scratch, classAt, len(g.kept))
	types := append([]int{colID, colTransform, colAnimation, playerType, classType}, g.types...)
	for c := range g.types {
		coded := s.types[g.types[c]-firstGame].coded()
		for _, r := range g.kept {
			v := r.k.values[r.values[c]].data
			if coded {
				scratch = appendCoded(scratch, v)
			} else {
				scratch = append(scratch, v...)
			}
		}
	}
	return writeBlockBytes(fw, g.key, len(g.kept), types, head, scratch)
}

// clients returns the copy of t's Client rows, or nil when its chunk had
// no players.
func (p *picture) clients(t *tablePic) []components.Client {
	if t.clientCol < 0 {
		return nil
	}
	return unsafe.Slice((*components.Client)(unsafe.Pointer(&p.arena[p.cols[t.clientCol].off])), t.rows)
}

// syncDir fsyncs a directory, making the renames in it durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// prune removes the saves in dir beyond the newest keep, newest by the time
// they were written (not by tick: a server started afresh into an old
// directory counts ticks from 0 again), never the one named current, and
// leftovers of writes that did not finish.
func prune(dir, current string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type saved struct {
		name    string
		written time.Time
	}
	var saves []saved
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".save.tmp") && strings.TrimSuffix(name, ".tmp") != current:
			os.Remove(filepath.Join(dir, name))
		case strings.HasPrefix(name, "world-") && strings.HasSuffix(name, ".save") && name != current:
			if info, err := e.Info(); err == nil {
				saves = append(saves, saved{name, info.ModTime()})
			}
		}
	}
	slices.SortFunc(saves, func(a, b saved) int { // oldest first
		if c := a.written.Compare(b.written); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	for len(saves) > keep-1 {
		os.Remove(filepath.Join(dir, saves[0].name))
		saves = saves[1:]
	}
}
