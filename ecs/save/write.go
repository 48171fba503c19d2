package save

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/throng-go/throng/components"
)

// Result is what a finished save wrote.
type Result struct {
	Path   string        // the save file
	Tick   uint64        // the tick boundary it pictures
	Actors int           // actors kept
	Bytes  int64         // the file's size
	Write  time.Duration // encoding, checksums, writing and fsync, in the background
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
	for i := range p.tables {
		t := &p.tables[i]
		t.players = 0
		for _, c := range p.clients(t) {
			if c.Session != 0 {
				t.players++
			}
		}
		if kept := t.rows - t.players; kept > 0 {
			blocks++
			res.Actors += kept
		}
	}
	tmp := res.Path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return res, fmt.Errorf("save: %w", err)
	}
	fw := &fileWriter{w: bufio.NewWriterSize(f, 1<<20)}
	h := header{version: Version, tick: p.tick, nextID: p.nextID, chunkSize: p.chunkSize,
		types: uint32(len(s.file)), blocks: uint32(blocks), actors: uint64(res.Actors)}
	fw.write(h.append(nil))
	fw.write(appendTypes(nil, s.file))
	var scratch, head []byte
	for i := range p.tables {
		if t := &p.tables[i]; t.rows > t.players {
			head, scratch = s.writeBlock(fw, t, head, scratch)
		}
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

// writeBlock writes table t's block: the rows without a session.
func (s *Saver) writeBlock(fw *fileWriter, t *tablePic, head, scratch []byte) ([]byte, []byte) {
	p := &s.pic
	u := &p.units[t.unit]
	keep := t.rows - t.players
	var clients []components.Client
	if t.players > 0 {
		clients = p.clients(t)
	}
	// The columns' bytes, with the players' rows left out.
	scratch = scratch[:0]
	var types [maxBlockColumns]int
	ncols := 0
	for c := t.colStart; c < t.colEnd; c++ {
		col := &p.cols[c]
		if col.typ == clientColumn {
			continue
		}
		if col.typ >= builtinColumns && s.types[col.typ-builtinColumns].coded() {
			data := u.coded[col.start:col.end]
			for r := 0; r < t.rows; r++ {
				n := 4 + int(binary.LittleEndian.Uint32(data))
				if clients == nil || clients[r].Session == 0 {
					scratch = append(scratch, data[:n]...)
				}
				data = data[n:]
			}
		} else {
			data := p.arena[col.off : col.off+t.rows*col.stride]
			if clients == nil {
				scratch = append(scratch, data...)
			} else {
				for r := 0; r < t.rows; r++ {
					if clients[r].Session == 0 {
						scratch = append(scratch, data[r*col.stride:(r+1)*col.stride]...)
					}
				}
			}
		}
		types[ncols] = col.typ
		ncols++
	}
	head = head[:0]
	head = binary.LittleEndian.AppendUint32(head, t.key.WorldOrCell)
	head = binary.LittleEndian.AppendUint32(head, uint32(t.key.X))
	head = binary.LittleEndian.AppendUint32(head, uint32(t.key.Y))
	head = binary.LittleEndian.AppendUint32(head, uint32(keep))
	head = binary.LittleEndian.AppendUint16(head, uint16(ncols))
	for _, typ := range types[:ncols] {
		head = binary.LittleEndian.AppendUint16(head, uint16(typ))
	}
	head = binary.LittleEndian.AppendUint64(head, uint64(len(scratch)))
	crc := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, scratch)
	fw.write(head)
	fw.write(scratch)
	fw.write(binary.LittleEndian.AppendUint32(head[:0], crc))
	return head, scratch
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
