package zone

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/throng-go/throng/grid"
)

// ID names a zone. 0 is no zone: a chunk no zone holds is owned by none.
type ID uint16

// Rect is a rectangle of chunks, corners included: chunk (x, y) is in it
// when MinX <= x <= MaxX and MinY <= y <= MaxY.
type Rect struct {
	MinX int32 `json:"minX"`
	MinY int32 `json:"minY"`
	MaxX int32 `json:"maxX"`
	MaxY int32 `json:"maxY"`
}

// Zone is one entry of a [Map]: the rectangle of chunks, in one
// worldOrCell, that one zone server owns.
type Zone struct {
	// ID is the zone's name on the wire and in NATS subjects; not 0.
	ID ID `json:"id"`
	// Owner names the zone server that holds the zone (its
	// [Options.Name]). Giving a zone to another owner is how a map
	// reassigns it: the old owner is fenced off from then on.
	Owner       string `json:"owner"`
	WorldOrCell uint32 `json:"worldOrCell"`
	Chunks      Rect   `json:"chunks"`
}

// Reach returns the Chebyshev distance, in chunks, from chunk k to the
// zone's nearest chunk: 0 inside it, 1 in the ring around it (the chunks
// whose actors its players can see), and -1 for a chunk of another
// worldOrCell, which no distance reaches.
func (z Zone) Reach(k grid.AreaKey) int64 {
	if k.WorldOrCell != z.WorldOrCell {
		return -1
	}
	dx := max(int64(z.Chunks.MinX)-int64(k.X), 0, int64(k.X)-int64(z.Chunks.MaxX))
	dy := max(int64(z.Chunks.MinY)-int64(k.Y), 0, int64(k.Y)-int64(z.Chunks.MaxY))
	return max(dx, dy)
}

// Within reports whether an actor in chunk k is within interest reach of
// the zone: in it or in the ring of chunks around it, where the 3x3
// stencil lets the zone's players see it.
func (z Zone) Within(k grid.AreaKey) bool {
	r := z.Reach(k)
	return r >= 0 && r <= 1
}

// Map cuts the chunk map into zones. The zero Map has no zones and owns
// no chunk. A Map is plain data: decode one from settings with
// [DecodeMap], publish it with [PublishMap], check it with
// [Map.Validate]. Its methods scan the zones in order, which is cheap
// for the tens of zones a world is cut into.
type Map struct {
	Zones []Zone `json:"zones"`
}

// DecodeMap decodes a map from JSON strictly (an unknown key is an error
// that names it, and so is anything but spaces after the map) and
// validates it.
func DecodeMap(data []byte) (Map, error) {
	var m Map
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return Map{}, fmt.Errorf("zone: map: %w", err)
	}
	// More would miss a stray ']' or '}' after the map: only the end of
	// the input may follow it.
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		return Map{}, fmt.Errorf("zone: map: bytes after the JSON value, which takes the first %d", end)
	}
	return m, m.Validate()
}

// Validate returns an error naming the first problem: a zone with ID 0
// or without an owner, two zones with one ID, a rectangle whose minimum
// exceeds its maximum, or two zones of one worldOrCell that share a
// chunk. A map with no zones is valid and owns nothing.
func (m Map) Validate() error {
	for i, z := range m.Zones {
		switch {
		case z.ID == 0:
			return fmt.Errorf("zone: map: zone %d (of %d) has id 0; ids start at 1", i, len(m.Zones))
		case z.Owner == "":
			return fmt.Errorf("zone: map: zone %d has no owner", z.ID)
		case z.Chunks.MinX > z.Chunks.MaxX || z.Chunks.MinY > z.Chunks.MaxY:
			return fmt.Errorf("zone: map: zone %d: chunks min (%d, %d) exceeds max (%d, %d)",
				z.ID, z.Chunks.MinX, z.Chunks.MinY, z.Chunks.MaxX, z.Chunks.MaxY)
		}
		for _, o := range m.Zones[:i] {
			if o.ID == z.ID {
				return fmt.Errorf("zone: map: zone id %d is used twice", z.ID)
			}
			if overlap(o, z) {
				return fmt.Errorf("zone: map: zones %d and %d overlap in worldOrCell %d", o.ID, z.ID, z.WorldOrCell)
			}
		}
	}
	return nil
}

func overlap(a, b Zone) bool {
	return a.WorldOrCell == b.WorldOrCell &&
		a.Chunks.MinX <= b.Chunks.MaxX && b.Chunks.MinX <= a.Chunks.MaxX &&
		a.Chunks.MinY <= b.Chunks.MaxY && b.Chunks.MinY <= a.Chunks.MaxY
}

// Zone returns the zone with the given id.
func (m Map) Zone(id ID) (Zone, bool) {
	for _, z := range m.Zones {
		if z.ID == id {
			return z, true
		}
	}
	return Zone{}, false
}

// Owner returns the zone that holds chunk key; false for a chunk no zone
// holds. On a valid map at most one zone holds any chunk.
func (m Map) Owner(key grid.AreaKey) (Zone, bool) {
	for _, z := range m.Zones {
		if z.Reach(key) == 0 {
			return z, true
		}
	}
	return Zone{}, false
}

// Neighbours appends to dst[:0], in ascending order, the ids of the zones
// that border zone id, sides or corners, in its worldOrCell: those whose
// players can see some of its chunks through the 3x3 stencil. An unknown
// id has none.
func (m Map) Neighbours(id ID, dst []ID) []ID {
	dst = dst[:0]
	z, ok := m.Zone(id)
	if !ok {
		return dst
	}
	for _, o := range m.Zones {
		if o.ID != id && o.WorldOrCell == z.WorldOrCell && touch(z.Chunks, o.Chunks) {
			dst = append(dst, o.ID)
		}
	}
	slices.Sort(dst)
	return dst
}

// touch reports whether two rectangles are at most one chunk apart on
// each axis: a chunk of one sees a chunk of the other.
func touch(a, b Rect) bool {
	return int64(a.MinX) <= int64(b.MaxX)+1 && int64(b.MinX) <= int64(a.MaxX)+1 &&
		int64(a.MinY) <= int64(b.MaxY)+1 && int64(b.MinY) <= int64(a.MaxY)+1
}
