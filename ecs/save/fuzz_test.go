package save_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

// FuzzSaveFilesAreKeptOrRefused reads any file as a save, with its
// checksums made right first (reseal): a checksum guards against a disk's
// damage, not against a file written wrong or on purpose, which can carry
// right checksums over any contents. Whatever the bytes:
//
//   - Read accepts the file or refuses it with a *FormatError naming the
//     part;
//   - a file Read accepts and Restore places is kept whole: a save of the
//     restored world, with the players File.Kept hands back, holds every
//     actor the file held;
//   - Load, which reads and places at once, agrees: it fails exactly where
//     Read or Restore does, and where it succeeds its world is the one
//     Restore built, save for save the same bytes.
//
// Nothing may panic or ask for memory the file cannot account for.
func FuzzSaveFilesAreKeptOrRefused(f *testing.F) {
	for v := 1; v <= save.Version; v++ {
		data, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("world-v%d.save", v)))
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		data = reseal(data)
		dir := t.TempDir()
		path := filepath.Join(dir, "world.save")
		require.NoError(t, os.WriteFile(path, data, 0o644))

		file, readErr := save.Read(path)
		var formatErr *save.FormatError
		if readErr != nil {
			require.True(t, errors.As(readErr, &formatErr), "Read refuses with a FormatError: %v", readErr)
		}
		var restored *ecs.World
		var kept []*save.Kept
		var restoreErr, keptErr error
		if readErr == nil {
			restored = ecs.NewWorld(64)
			if restoreErr = file.Restore(restored, gameTypes()); restoreErr == nil {
				kept, keptErr = file.Kept(gameTypes())
			}
		}
		placed := readErr == nil && restoreErr == nil
		if placed && keptErr == nil {
			again := saveWith(t, mustSaver(t, restored), t.TempDir(), file.Tick(), save.Players{Kept: kept})
			assert.Equal(t, file.Actors(), again.Actors+again.Players, "every actor of an accepted file is kept")
		}

		// Load does not decode the players' game columns (Kept does): it
		// places what Read and Restore place, and refuses what they refuse.
		loaded := ecs.NewWorld(64)
		_, loadErr := save.Load(path, loaded, gameTypes())
		require.Equal(t, placed, loadErr == nil, "Load refuses what Read or Restore refuses, and only that: %v", loadErr)
		if placed {
			a := saveWith(t, mustSaver(t, restored), t.TempDir(), 1, save.Players{})
			b := saveWith(t, mustSaver(t, loaded), t.TempDir(), 1, save.Players{})
			ab, err := os.ReadFile(a.Path)
			require.NoError(t, err)
			bb, err := os.ReadFile(b.Path)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(ab, bb), "Load builds the world Restore builds")
		}
	})
}

// mustSaver returns a Saver of w with the game's types.
func mustSaver(t *testing.T, w *ecs.World) *save.Saver {
	t.Helper()
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	return s
}

// reseal returns data with every checksum of the save format made right,
// as far as its lengths lead: the header's, the type table's, each
// block's and the whole file's in the trailer (format.go). A length that
// runs past the end stops it there.
func reseal(data []byte) []byte {
	const headerSize, blockHead, trailerSize = 48, 18, 16
	d := bytes.Clone(data)
	le := binary.LittleEndian
	table := crc32.MakeTable(crc32.Castagnoli)
	seal := func(at, from int) { le.PutUint32(d[at:], crc32.Checksum(d[from:at], table)) }
	if len(d) < headerSize {
		return d
	}
	seal(headerSize-4, 0)
	at := headerSize
	for range le.Uint32(d[28:]) {
		if at >= len(d) {
			return d
		}
		at += 1 + int(d[at])
		if at+10 > len(d) {
			return d
		}
		at += 10 + int(le.Uint16(d[at+8:]))
	}
	if at+4 > len(d) {
		return d
	}
	seal(at, headerSize)
	at += 4
	for range le.Uint32(d[32:]) {
		start := at
		if at+blockHead > len(d) {
			return d
		}
		at += blockHead + 2*int(le.Uint16(d[at+16:]))
		if at+8 > len(d) {
			return d
		}
		n := le.Uint64(d[at:])
		if n > uint64(len(d)) || at+8+int(n)+4 > len(d) {
			return d
		}
		at += 8 + int(n)
		seal(at, start)
		at += 4
	}
	if at+trailerSize <= len(d) {
		seal(at+trailerSize-4, 0)
	}
	return d
}
