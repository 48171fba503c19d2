package save

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ManifestName is the file in a save directory that names its latest
// complete save. It is replaced only once that save is durable.
const ManifestName = "MANIFEST"

// manifest is the content of a save directory's MANIFEST: a few lines of
// "key value", so that an operator can read which save is current.
type manifest struct {
	file  string
	bytes int64
	tick  uint64
}

const manifestHeading = "throng save manifest 1"

func (m manifest) text() []byte {
	return fmt.Appendf(nil, "%s\nfile %s\nbytes %d\ntick %d\n", manifestHeading, m.file, m.bytes, m.tick)
}

// writeManifest replaces dir's manifest with m: a temporary file, fsync,
// rename, then an fsync of the directory.
func writeManifest(dir string, m manifest) error {
	path := filepath.Join(dir, ManifestName)
	tmp := path + ".tmp"
	err := func() error {
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(m.text()); err != nil {
			f.Close()
			return err
		}
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		return syncDir(dir)
	}()
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("save: writing the manifest of %s: %w", dir, err)
	}
	return nil
}

// readManifest reads dir's manifest.
func readManifest(dir string) (manifest, error) {
	path := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return manifest{}, fmt.Errorf("save: %s has no save (no %s)", dir, ManifestName)
		}
		return manifest{}, fmt.Errorf("save: %w", err)
	}
	bad := func(what string) (manifest, error) {
		return manifest{}, &FormatError{Path: path, Part: "manifest", What: what}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != manifestHeading {
		return bad("not a Throng save manifest (first line is not " + strconv.Quote(manifestHeading) + ")")
	}
	var m manifest
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			return bad("line " + strconv.Quote(sc.Text()) + " is not \"key value\"")
		}
		switch key {
		case "file":
			if value != filepath.Base(value) || value == "." || value == ".." {
				return bad("file " + strconv.Quote(value) + " is not a name in the directory")
			}
			m.file = value
		case "bytes":
			m.bytes, err = strconv.ParseInt(value, 10, 64)
		case "tick":
			m.tick, err = strconv.ParseUint(value, 10, 64)
		}
		if err != nil {
			return bad(key + ": " + err.Error())
		}
	}
	if m.file == "" {
		return bad("names no file")
	}
	return m, nil
}
