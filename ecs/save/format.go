package save

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

// The file format, version 4. Every number is little endian.
//
//	header      magic "THRONGSV", version u32, tick u64, nextID u32,
//	            chunkSize f32, types u32, blocks u32, actors u64,
//	            CRC32C of the bytes before it u32
//	type table  per type: name length u8, name, version u32, size u32
//	            (0: coded, or a marker), layout length u16, layout; then
//	            the CRC32C of the table u32
//	blocks      per chunk table: worldOrCell u32, x i32, y i32, rows u32,
//	            columns u16, per column its type's index u16, payload
//	            length u64; the payload; the CRC32C of the block's header
//	            and payload u32. A plain column is rows values of its
//	            type's size; a coded one is rows of (length u32, bytes); a
//	            marker's holds no bytes.
//	trailer     magic "THRONGEN", blocks u32, CRC32C of the whole file
//	            before it u32
//
// The first six types of every file are Throng's own (builtinTypes): an
// actor's ActorID, Transform and Animation, a player's name, the prop
// marker and the relevance class. A block's first three columns are the
// first three types. Its fourth may say what its rows are: a players'
// block has the name type there, its rows players' actors, kept for their
// players' return rather than placed in the world; a props' block has the
// prop marker (size 0, layout "marker", no bytes), its rows props, which
// go back into the world's prop tables. The other blocks' rows are the
// world's actors. Every block then has the class column: each row's
// relevance class (components.Client.Class), one byte below
// components.MaxClasses, so that an NPC or a prop of a game's own class
// comes back in it, and a player's actor is kept with its own. The game's
// types and columns follow, each block's in the order of the type table.
// The actors count of the header counts every block's rows.
//
// Version 3 had no class column (five of Throng's own types), version 2
// no prop marker either (four, no props' blocks), and version 1 no name
// type (three, no players' blocks); this build reads them all, and gives
// their actors the class a spawn gives: ClassPlayer to a player's,
// ClassNPC to the others, ClassProp to a prop.
const (
	magic    = "THRONGSV"
	endMagic = "THRONGEN"
	// Version is the format version this build writes. It reads every
	// version from 1 up to it.
	Version = 4

	headerSize      = 8 + 4 + 8 + 4 + 4 + 4 + 4 + 8 + 4
	trailerSize     = 8 + 4 + 4
	blockHeadFixed  = 4 + 4 + 4 + 4 + 2 + 8
	builtinPrefix   = "throng."
	maxBlockColumns = 1 << 12
	// minBlockBytes is the least a block takes: its header with Throng's
	// three columns, and its checksum.
	minBlockBytes = blockHeadFixed + 2*builtinColumns + 4
	// minRowBytes is the least an actor takes: its ID, Transform and
	// Animation (every version since the first).
	minRowBytes = 4 + 20 + 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// builtin describes one of Throng's own columns in the type table.
type builtin struct {
	name    string
	version uint32
	size    int
	layout  string
}

// builtinTypes are Throng's own types, first in every type table: the
// columns every block starts with (an actor's ActorID, Transform and
// Animation), then a player's name, the fourth column of a players'
// block, the prop marker, the fourth column of a props' block, and the
// relevance class, the column after those of every block.
var builtinTypes = [...]builtin{
	{"throng.ActorID", 1, 4, "{ID@0:uint32}"},
	{"throng.Transform", 1, 20, "{X@0:float32,Y@4:float32,Z@8:float32,Yaw@12:float32,WorldOrCell@16:uint32}"},
	{"throng.Animation", 1, 2, "{Flags@0:uint16}"},
	{"throng.Player", 1, 0, "coded"},
	{"throng.Prop", 1, 0, "marker"},
	{"throng.Class", 1, 1, "{Class@0:uint8}"},
}

const (
	colID = iota
	colTransform
	colAnimation
	builtinColumns // the columns of every block
	// colKind is the fourth column of a players' block (of type
	// playerType) or of a props' block (propType).
	colKind    = builtinColumns
	playerType = 3
	propType   = 4
	// classType is the type of every block's class column, which follows
	// the first three and the kind, if any.
	classType = 5
	// firstGame is the type table index of the game's first type.
	firstGame = len(builtinTypes)
)

// builtinsIn returns how many of Throng's own types a file of the given
// version starts its type table with.
func builtinsIn(version uint32) int {
	switch version {
	case 1:
		return builtinColumns
	case 2:
		return playerType + 1
	case 3:
		return propType + 1
	}
	return len(builtinTypes)
}

// header is a file's first section.
type header struct {
	version   uint32
	tick      uint64
	nextID    uint32
	chunkSize float32
	types     uint32
	blocks    uint32
	actors    uint64
}

func (h *header) append(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, magic...)
	dst = binary.LittleEndian.AppendUint32(dst, h.version)
	dst = binary.LittleEndian.AppendUint64(dst, h.tick)
	dst = binary.LittleEndian.AppendUint32(dst, h.nextID)
	dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(h.chunkSize))
	dst = binary.LittleEndian.AppendUint32(dst, h.types)
	dst = binary.LittleEndian.AppendUint32(dst, h.blocks)
	dst = binary.LittleEndian.AppendUint64(dst, h.actors)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// fileType is a type table entry.
type fileType struct {
	name    string
	version uint32
	size    int
	layout  string
}

func appendTypes(dst []byte, types []fileType) []byte {
	start := len(dst)
	for _, t := range types {
		dst = append(dst, byte(len(t.name)))
		dst = append(dst, t.name...)
		dst = binary.LittleEndian.AppendUint32(dst, t.version)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(t.size))
		dst = binary.LittleEndian.AppendUint16(dst, uint16(len(t.layout)))
		dst = append(dst, t.layout...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// FormatError is a save file Throng cannot read: its path, the part where
// reading stopped (the header, the type table, a block by number and
// chunk, the trailer, or the manifest) and what is wrong there. Nothing of
// such a file is loaded.
type FormatError struct {
	Path string
	Part string
	What string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("save: %s: %s: %s", e.Path, e.Part, e.What)
}

// nonFinite returns the first row of a block whose Transform is not finite
// (its position or yaw NaN or infinite: ecs.Finite), or -1. payload is
// the block's: rows ActorIDs, then rows Transforms of 20 bytes, X, Y, Z
// and Yaw first.
func nonFinite(payload []byte, rows int) int {
	ts := payload[4*rows : 24*rows]
	f := func(at int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(ts[at:])) }
	for r := range rows {
		if at := 20 * r; !ecs.Finite(components.Transform{X: f(at), Y: f(at + 4), Z: f(at + 8), Yaw: f(at + 12)}) {
			return r
		}
	}
	return -1
}

// nonFiniteError says which actor of a block stands at no place.
func nonFiniteError(payload []byte, row int) string {
	return fmt.Sprintf("actor %d (row %d) stands at a place that is not finite",
		binary.LittleEndian.Uint32(payload[4*row:]), row)
}
