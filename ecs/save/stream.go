package save

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/throng-go/throng/ecs"
)

// Load restores the save at path into w as [File.Restore] does, and
// returns the file, for [File.Kept]. path is a save directory (its latest
// save) or a save file, as for [Read], and the errors are Read's and
// Restore's.
//
// Load reads and checks the file on a goroutine of its own while the
// calling goroutine places the blocks already checked, so that reading,
// checksums and decoding overlap with building the world instead of
// coming before it. A block is placed only once its checksum and its
// columns have passed; a fault further on (a later block, the trailer,
// the whole file's checksum) is found after the blocks before it were
// placed. So load into a world you can throw away, as with Restore: on an
// error w holds part of the save.
func Load(path string, w *ecs.World, types []Type) (*File, error) {
	file, m, err := resolve(path)
	if err != nil {
		return nil, err
	}
	fh, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("save: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("save: %w", err)
	}
	l := newLoading(file, fh, st.Size())
	defer l.stop()
	if err := <-l.head; err != nil {
		return nil, err
	}
	f := l.p.f
	game, err := f.fits(w, types)
	if err != nil {
		return nil, err
	}
	r := f.restoring(w, game)
	f.reserve(w)
	for d := range l.ready {
		if err := f.place(r, d); err != nil {
			return nil, err
		}
		l.free <- d
	}
	if l.err != nil {
		return nil, l.err
	}
	if err := m.check(f); err != nil {
		return nil, err
	}
	w.ReserveIDs(f.header.nextID)
	return f, nil
}

// resolve returns the save file path names (the one its manifest names,
// for a directory) and the manifest, nil for a file.
func resolve(path string) (string, *manifest, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", nil, fmt.Errorf("save: %w", err)
	}
	if !st.IsDir() {
		return path, nil, nil
	}
	m, err := readManifest(path)
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(path, m.file), &m, nil
}

// check returns what is wrong with f, read whole, against the manifest
// that named it: its size and its tick. A nil manifest (a file named
// directly) passes.
func (m *manifest) check(f *File) error {
	switch {
	case m == nil:
	case f.size != m.bytes:
		return &FormatError{Path: f.path, Part: "trailer", What: fmt.Sprintf("%d bytes, the manifest says %d", f.size, m.bytes)}
	case f.header.tick != m.tick:
		return &FormatError{Path: f.path, Part: "header", What: fmt.Sprintf("tick %d, the manifest says %d", f.header.tick, m.tick)}
	}
	return nil
}

// loadAhead is how many checked and decoded blocks Load's reader may have
// waiting for the goroutine that places them.
const loadAhead = 16

// readPiece is the least Load's reader reads from the file at once.
const readPiece = 1 << 20

// loading is a Load's reader: a goroutine that reads the file piece by
// piece, checks each part as its bytes arrive, and hands each block that
// passed, decoded, to the goroutine that places it.
type loading struct {
	p     parser
	fh    io.Reader
	ioErr error // a read error other than the file's end
	head  chan error
	ready chan *decoded // closed when the reader is done; then err is final
	free  chan *decoded
	err   error
	quit  chan struct{}
	done  sync.WaitGroup
}

func newLoading(path string, fh io.Reader, size int64) *loading {
	l := &loading{
		p:     parser{f: &File{path: path, size: size}, r: reader{data: make([]byte, size)}},
		fh:    fh,
		head:  make(chan error, 1),
		ready: make(chan *decoded, loadAhead),
		free:  make(chan *decoded, loadAhead),
		quit:  make(chan struct{}),
	}
	l.p.r.more = l.more
	for range loadAhead {
		l.free <- &decoded{}
	}
	l.done.Add(1)
	go l.run()
	return l
}

// stop ends the reader, if it still runs, and waits for it.
func (l *loading) stop() {
	close(l.quit)
	l.done.Wait()
}

// more reads on until at least end bytes are read, or the file ends, and
// returns how many are.
func (l *loading) more(end int) int {
	r := &l.p.r
	want := min(len(r.data), max(end, r.avail+readPiece))
	n, err := io.ReadAtLeast(l.fh, r.data[r.avail:want], end-r.avail)
	r.avail += n
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		l.ioErr = err
	}
	return r.avail
}

// fail makes err the reader's outcome: a read error, where there was one,
// is what made the file look cut short.
func (l *loading) fail(err error) error {
	if l.ioErr != nil {
		return fmt.Errorf("save: %w", l.ioErr)
	}
	return err
}

func (l *loading) run() {
	defer l.done.Done()
	defer close(l.ready)
	p := &l.p
	if err := p.head(); err != nil {
		l.head <- l.fail(err)
		return
	}
	l.head <- nil
	f := p.f
	for i := range int(f.header.blocks) {
		b, err := p.block(i)
		if err != nil {
			l.err = l.fail(err)
			return
		}
		f.blocks = append(f.blocks, b)
		if f.players(&b) {
			continue // kept for their players: File.Kept reads them
		}
		var d *decoded
		select {
		case d = <-l.free:
		case <-l.quit:
			return
		}
		f.decode(&b, d)
		select {
		case l.ready <- d:
		case <-l.quit:
			return
		}
	}
	if err := p.tail(); err != nil {
		l.err = l.fail(err)
	}
}
