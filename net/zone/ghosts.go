package zone

import (
	"encoding/binary"
	"errors"
	"math"
	"math/bits"

	"github.com/throng-go/throng/components"
)

// GhostVersion is the version byte every ghost batch starts with. A
// batch of another version is refused whole: zones of one world run one
// protocol.
const GhostVersion = 5

// Ghost batch layout, little-endian:
//
//	0  version    u8  (GhostVersion)
//	1  zone       u16 the sending zone
//	3  revision   u64 the map revision the sender holds its zone as of
//	11 tick       u64 the sender's tick
//	19 count      u32 actors that follow
//	23 worldOrCell u32 where every actor of the batch stands: the
//	              receiving zone's (an actor is lent only within its reach)
//	27 count records, each:
//	   id u32, fields u8 (GhostFields: which of the rest follow), then
//	   those of x f32, y f32, z f32, yaw f32, flags u16, class u8
//	   (components.Client.Class: a neighbour shows a remote player's
//	   ghost as a player, by the players' tiers and rank), phase u32
//	   (components.PhaseKey: a neighbour sends the ghost's pairs on the
//	   ticks its owner would) that fields names, in that order
//
// Every actor lent is listed in every batch, so that one a batch leaves
// out is one the neighbour must stop showing; but a record carries only
// the fields that changed in the sender's last GhostRepeat ticks (all of
// them for an actor it did not list to that zone in its previous batch):
// a field left out is the value the receiver heard in any batch of those
// ticks. An actor standing still costs its id and a byte, one walking the
// id, a byte and its x and y. A receiver that heard nothing of the actor
// in those ticks (it missed batches, or restarted) may hold an older value
// of a field left out; every GhostKeyEvery ticks, and after a tick in
// which the sender sent that zone nothing, the batch lists every actor
// whole.
const (
	ghostHeaderSize = 27
	// GhostSize is the size of a whole record (every field present);
	// MinGhostSize that of a record of an actor unchanged in the
	// sender's last GhostRepeat ticks.
	GhostSize    = 4 + 1 + 4*4 + 2 + 1 + 4
	MinGhostSize = 4 + 1
	// GhostRepeat is how many of the sender's ticks a changed field is
	// sent in, so that a receiver that takes only the newest batch of
	// several misses none.
	GhostRepeat = 4
	// GhostKeyEvery is how often, in the sender's ticks, a batch lists
	// every actor whole.
	GhostKeyEvery = 30
)

// GhostFields says which fields of an actor a ghost record carries.
type GhostFields uint8

// The fields of a ghost record, in the order they follow its id.
const (
	GhostX GhostFields = 1 << iota
	GhostY
	GhostZ
	GhostYaw
	GhostFlags
	GhostClass
	GhostPhase
	// GhostAll is a whole record.
	GhostAll = GhostX | GhostY | GhostZ | GhostYaw | GhostFlags | GhostClass | GhostPhase
	// ghostFields is the number of fields.
	ghostFields = 7
)

// size returns the bytes of a record carrying f (f within GhostAll).
func (f GhostFields) size() int {
	n := MinGhostSize
	n += 4 * bits.OnesCount8(uint8(f&(GhostX|GhostY|GhostZ|GhostYaw)))
	if f&GhostFlags != 0 {
		n += 2
	}
	if f&GhostClass != 0 {
		n++
	}
	if f&GhostPhase != 0 {
		n += 4
	}
	return n
}

// Ghost is one actor as its owner publishes it to a neighbouring zone:
// its id in the owner's world and what the neighbour's players see of it.
// Its WorldOrCell is its batch's (GhostHeader.WorldOrCell): a record
// leaves it out, GhostCursor.Next fills it in.
type Ghost struct {
	ID          uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
	Flags       uint16
	Class       uint8  // its relevance class, below components.MaxClasses
	Phase       uint32 // the key its pairs' phases hash (components.PhaseKey)
}

// Changed returns the fields of g that differ from base's: bit for bit,
// so that a record written with them and read over base gives g exactly.
func (g Ghost) Changed(base Ghost) GhostFields {
	var f GhostFields
	f |= field(math.Float32bits(g.X) != math.Float32bits(base.X), GhostX)
	f |= field(math.Float32bits(g.Y) != math.Float32bits(base.Y), GhostY)
	f |= field(math.Float32bits(g.Z) != math.Float32bits(base.Z), GhostZ)
	f |= field(math.Float32bits(g.Yaw) != math.Float32bits(base.Yaw), GhostYaw)
	f |= field(g.Flags != base.Flags, GhostFlags)
	f |= field(g.Class != base.Class, GhostClass)
	f |= field(g.Phase != base.Phase, GhostPhase)
	return f
}

func field(b bool, f GhostFields) GhostFields {
	if b {
		return f
	}
	return 0
}

// GhostRecord is one record of a batch: the actor, of which only Fields
// (and its ID) were sent.
type GhostRecord struct {
	Ghost
	Fields GhostFields
}

// Over returns the actor the record describes given base, the same
// actor as last heard from its sender: the record's fields, and base's
// where it leaves them out.
func (r GhostRecord) Over(base Ghost) Ghost {
	g := base
	g.ID, g.WorldOrCell = r.ID, r.WorldOrCell
	take(&g.X, r.X, r.Fields&GhostX)
	take(&g.Y, r.Y, r.Fields&GhostY)
	take(&g.Z, r.Z, r.Fields&GhostZ)
	take(&g.Yaw, r.Yaw, r.Fields&GhostYaw)
	take(&g.Flags, r.Flags, r.Fields&GhostFlags)
	take(&g.Class, r.Class, r.Fields&GhostClass)
	take(&g.Phase, r.Phase, r.Fields&GhostPhase)
	return g
}

// take sets *dst to v when sent is not 0.
func take[T any](dst *T, v T, sent GhostFields) {
	if sent != 0 {
		*dst = v
	}
}

// GhostHeader is what a ghost batch says about itself.
type GhostHeader struct {
	Zone        ID
	Revision    uint64
	Tick        uint64
	WorldOrCell uint32
}

// Reasons a ghost batch is refused by [DecodeGhosts].
var (
	ErrGhostShort    = errors.New("zone: ghost batch shorter than its header")
	ErrGhostVersion  = errors.New("zone: ghost batch of an unknown version")
	ErrGhostLength   = errors.New("zone: ghost batch length does not match its count")
	ErrGhostZone     = errors.New("zone: ghost batch from zone 0")
	ErrGhostActor    = errors.New("zone: ghost with actor id 0")
	ErrGhostFields   = errors.New("zone: ghost record naming fields that do not exist")
	ErrGhostPosition = errors.New("zone: ghost with a position or yaw that is not finite")
	ErrGhostClass    = errors.New("zone: ghost with a class past components.MaxClasses")
)

// AppendGhostHeader appends a batch header announcing count actors; the
// caller then appends exactly count records.
func AppendGhostHeader(dst []byte, h GhostHeader, count int) []byte {
	dst = append(dst, GhostVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(h.Zone))
	dst = binary.LittleEndian.AppendUint64(dst, h.Revision)
	dst = binary.LittleEndian.AppendUint64(dst, h.Tick)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(count))
	return binary.LittleEndian.AppendUint32(dst, h.WorldOrCell)
}

// SetGhostCount rewrites the count of the batch that starts at b[0], for
// a sender that learns the count only after appending the records.
func SetGhostCount(b []byte, count int) {
	binary.LittleEndian.PutUint32(b[19:], uint32(count))
}

// AppendGhost appends one actor's whole record.
func AppendGhost(dst []byte, g Ghost) []byte {
	return AppendGhostRecord(dst, GhostRecord{Ghost: g, Fields: GhostAll})
}

// AppendGhostRecord appends r: its id, its Fields (within GhostAll) and
// those of its values.
func AppendGhostRecord(dst []byte, r GhostRecord) []byte {
	f := r.Fields & GhostAll
	dst = binary.LittleEndian.AppendUint32(dst, r.ID)
	dst = append(dst, uint8(f))
	for _, v := range [...]struct {
		bit GhostFields
		val float32
	}{{GhostX, r.X}, {GhostY, r.Y}, {GhostZ, r.Z}, {GhostYaw, r.Yaw}} {
		if f&v.bit != 0 {
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v.val))
		}
	}
	if f&GhostFlags != 0 {
		dst = binary.LittleEndian.AppendUint16(dst, r.Flags)
	}
	if f&GhostClass != 0 {
		dst = append(dst, r.Class)
	}
	if f&GhostPhase != 0 {
		dst = binary.LittleEndian.AppendUint32(dst, r.Phase)
	}
	return dst
}

// GhostBatch is a decoded batch: its header and its records, which alias
// the decoded bytes (valid as long as they are).
type GhostBatch struct {
	GhostHeader
	count   int
	records []byte
}

// Len returns the number of actors in the batch.
func (b *GhostBatch) Len() int { return b.count }

// Records returns a cursor over the batch's records, in order.
func (b *GhostBatch) Records() GhostCursor {
	return GhostCursor{rest: b.records, worldOrCell: b.WorldOrCell}
}

// GhostCursor reads a decoded batch's records one after another.
type GhostCursor struct {
	rest        []byte
	worldOrCell uint32
}

// Next returns the next record, and false after the last. Only a cursor
// of a batch DecodeGhosts accepted may be read.
func (c *GhostCursor) Next() (GhostRecord, bool) {
	if len(c.rest) < MinGhostSize {
		return GhostRecord{}, false
	}
	r := c.rest
	rec := GhostRecord{Ghost: Ghost{ID: binary.LittleEndian.Uint32(r), WorldOrCell: c.worldOrCell}, Fields: GhostFields(r[4])}
	at := MinGhostSize
	for _, v := range [...]struct {
		bit GhostFields
		val *float32
	}{{GhostX, &rec.X}, {GhostY, &rec.Y}, {GhostZ, &rec.Z}, {GhostYaw, &rec.Yaw}} {
		if rec.Fields&v.bit != 0 {
			*v.val = math.Float32frombits(binary.LittleEndian.Uint32(r[at:]))
			at += 4
		}
	}
	if rec.Fields&GhostFlags != 0 {
		rec.Flags = binary.LittleEndian.Uint16(r[at:])
		at += 2
	}
	if rec.Fields&GhostClass != 0 {
		rec.Class = r[at]
		at++
	}
	if rec.Fields&GhostPhase != 0 {
		rec.Phase = binary.LittleEndian.Uint32(r[at:])
		at += 4
	}
	c.rest = r[at:]
	return rec, true
}

// DecodeGhosts decodes a ghost batch strictly: the version must be
// GhostVersion, the length exactly the header plus count records, the
// zone not 0, and every record's actor id not 0, its fields within
// GhostAll, its position and yaw finite and its class below
// components.MaxClasses. A batch that breaks any rule is refused whole
// with one of the ErrGhost errors, since a sender that wrote one bad
// record cannot be trusted with the rest. DecodeGhosts never panics and
// never allocates.
func DecodeGhosts(b []byte) (GhostBatch, error) {
	if len(b) < ghostHeaderSize {
		return GhostBatch{}, ErrGhostShort
	}
	if b[0] != GhostVersion {
		return GhostBatch{}, ErrGhostVersion
	}
	count := uint64(binary.LittleEndian.Uint32(b[19:]))
	if count > uint64(len(b)-ghostHeaderSize)/MinGhostSize {
		return GhostBatch{}, ErrGhostLength
	}
	batch := GhostBatch{
		GhostHeader: GhostHeader{
			Zone:        ID(binary.LittleEndian.Uint16(b[1:])),
			Revision:    binary.LittleEndian.Uint64(b[3:]),
			Tick:        binary.LittleEndian.Uint64(b[11:]),
			WorldOrCell: binary.LittleEndian.Uint32(b[23:]),
		},
		count:   int(count),
		records: b[ghostHeaderSize:],
	}
	if batch.Zone == 0 {
		return GhostBatch{}, ErrGhostZone
	}
	r := batch.records
	for range count {
		if len(r) < MinGhostSize {
			return GhostBatch{}, ErrGhostLength
		}
		if binary.LittleEndian.Uint32(r) == 0 {
			return GhostBatch{}, ErrGhostActor
		}
		f := GhostFields(r[4])
		if f&^GhostAll != 0 {
			return GhostBatch{}, ErrGhostFields
		}
		size := f.size()
		if len(r) < size {
			return GhostBatch{}, ErrGhostLength
		}
		floats := bits.OnesCount8(uint8(f & (GhostX | GhostY | GhostZ | GhostYaw)))
		for off := MinGhostSize; off < MinGhostSize+4*floats; off += 4 {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(r[off:])); math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return GhostBatch{}, ErrGhostPosition
			}
		}
		class := MinGhostSize + 4*floats // the class byte, after the flags if they are there
		if f&GhostFlags != 0 {
			class += 2
		}
		if f&GhostClass != 0 && r[class] >= components.MaxClasses {
			return GhostBatch{}, ErrGhostClass
		}
		r = r[size:]
	}
	if len(r) != 0 {
		return GhostBatch{}, ErrGhostLength
	}
	return batch, nil
}
