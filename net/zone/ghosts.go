package zone

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/throng-go/throng/components"
)

// GhostVersion is the version byte every ghost batch starts with. A
// batch of another version is refused whole: zones of one world run one
// protocol.
const GhostVersion = 3

// Ghost batch layout, little-endian:
//
//	0  version    u8  (GhostVersion)
//	1  zone       u16 the sending zone
//	3  revision   u64 the map revision the sender holds its zone as of
//	11 tick       u64 the sender's tick
//	19 count      u32 actors that follow
//	23 worldOrCell u32 where every actor of the batch stands: the
//	              receiving zone's (an actor is lent only within its reach)
//	27 count x GhostSize bytes:
//	   id u32, x f32, y f32, z f32, yaw f32, flags u16, class u8
//	   (components.Client.Class: a neighbour shows a remote player's
//	   ghost as a player, by the players' tiers and rank)
const (
	ghostHeaderSize = 27
	// GhostSize is the size of one actor in a ghost batch.
	GhostSize = 23
)

// Ghost is one actor as its owner publishes it to a neighbouring zone:
// its id in the owner's world and what the neighbour's players see of it.
// Its WorldOrCell is its batch's (GhostHeader.WorldOrCell): AppendGhost
// leaves it out, GhostBatch.At fills it in.
type Ghost struct {
	ID          uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
	Flags       uint16
	Class       uint8 // its relevance class, below components.MaxClasses
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
	ErrGhostPosition = errors.New("zone: ghost with a position or yaw that is not finite")
	ErrGhostClass    = errors.New("zone: ghost with a class past components.MaxClasses")
)

// AppendGhostHeader appends a batch header announcing count actors; the
// caller then appends exactly count [AppendGhost] records.
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

// AppendGhost appends one actor record.
func AppendGhost(dst []byte, g Ghost) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, g.ID)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(g.X))
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(g.Y))
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(g.Z))
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(g.Yaw))
	dst = binary.LittleEndian.AppendUint16(dst, g.Flags)
	return append(dst, g.Class)
}

// GhostBatch is a decoded batch: its header and its records, which alias
// the decoded bytes (valid as long as they are).
type GhostBatch struct {
	GhostHeader
	records []byte
}

// Len returns the number of actors in the batch.
func (b *GhostBatch) Len() int { return len(b.records) / GhostSize }

// At returns actor i, 0 <= i < Len.
func (b *GhostBatch) At(i int) Ghost {
	r := b.records[i*GhostSize : (i+1)*GhostSize]
	return Ghost{
		ID:          binary.LittleEndian.Uint32(r),
		X:           math.Float32frombits(binary.LittleEndian.Uint32(r[4:])),
		Y:           math.Float32frombits(binary.LittleEndian.Uint32(r[8:])),
		Z:           math.Float32frombits(binary.LittleEndian.Uint32(r[12:])),
		Yaw:         math.Float32frombits(binary.LittleEndian.Uint32(r[16:])),
		WorldOrCell: b.WorldOrCell,
		Flags:       binary.LittleEndian.Uint16(r[20:]),
		Class:       r[22],
	}
}

// DecodeGhosts decodes a ghost batch strictly: the version must be
// GhostVersion, the length exactly the header plus count records, the
// zone not 0, and every record's actor id not 0, its position and yaw
// finite and its class below components.MaxClasses. A batch that breaks any rule is refused whole with one of the
// ErrGhost errors, since a sender that wrote one bad record cannot be
// trusted with the rest. DecodeGhosts never panics and never allocates.
func DecodeGhosts(b []byte) (GhostBatch, error) {
	if len(b) < ghostHeaderSize {
		return GhostBatch{}, ErrGhostShort
	}
	if b[0] != GhostVersion {
		return GhostBatch{}, ErrGhostVersion
	}
	count := uint64(binary.LittleEndian.Uint32(b[19:]))
	if uint64(len(b)-ghostHeaderSize) != count*GhostSize {
		return GhostBatch{}, ErrGhostLength
	}
	batch := GhostBatch{
		GhostHeader: GhostHeader{
			Zone:        ID(binary.LittleEndian.Uint16(b[1:])),
			Revision:    binary.LittleEndian.Uint64(b[3:]),
			Tick:        binary.LittleEndian.Uint64(b[11:]),
			WorldOrCell: binary.LittleEndian.Uint32(b[23:]),
		},
		records: b[ghostHeaderSize:],
	}
	if batch.Zone == 0 {
		return GhostBatch{}, ErrGhostZone
	}
	for r := batch.records; len(r) > 0; r = r[GhostSize:] {
		if binary.LittleEndian.Uint32(r) == 0 {
			return GhostBatch{}, ErrGhostActor
		}
		for off := 4; off < 20; off += 4 {
			if f := math.Float32frombits(binary.LittleEndian.Uint32(r[off:])); math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return GhostBatch{}, ErrGhostPosition
			}
		}
		if r[22] >= components.MaxClasses {
			return GhostBatch{}, ErrGhostClass
		}
	}
	return batch, nil
}
