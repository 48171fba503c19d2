package wire

import (
	"encoding/binary"
	"math"
)

// Version is the wire format version. It is the first byte of every frame
// and datagram; a decoder rejects any other value with [ErrVersion], except
// in a [Refuse] frame (see [DecodeRefuse]).
const Version = 1

// HeaderSize is the size of the header every frame starts with: the version
// byte, then the [Type] byte.
const HeaderSize = 2

// Type says what a frame is. It is the second byte of every frame. The high
// nibble says who sends it and how: 0x0_ client to server, 0x1_ server to
// client on the reliable stream, 0x2_ server to client as an unreliable
// datagram.
type Type uint8

// Frame types.
const (
	TypeHello      Type = 0x01 // client -> server: handshake ([Hello])
	TypeMove       Type = 0x02 // client -> server: movement update ([Move])
	TypeCommand    Type = 0x03 // client -> server, reliable: a game's own command (opaque payload)
	TypeWelcome    Type = 0x10 // server -> client, reliable: admitted ([Welcome])
	TypeAppear     Type = 0x11 // server -> client, reliable: an actor enters view ([Appear])
	TypeDisappear  Type = 0x12 // server -> client, reliable: an actor leaves view ([Disappear])
	TypeCorrection Type = 0x13 // server -> client, reliable: rejected move ([Correction])
	TypeRefuse     Type = 0x14 // server -> client, reliable: turned away ([Refuse])
	TypeEvent      Type = 0x15 // server -> client, reliable: a game's own event (opaque payload)
	TypeRate       Type = 0x16 // server -> client, reliable: the rate the server ticks at now ([Rate])
	TypeProp       Type = 0x17 // server -> client, reliable: a prop in view, new or changed ([Prop])
	TypeBatch      Type = 0x20 // server -> client, datagram: movement records ([Batch])
)

// String returns the frame type's name, or "Type(0xNN)" for an unknown one.
func (t Type) String() string {
	switch t {
	case TypeHello:
		return "Hello"
	case TypeMove:
		return "Move"
	case TypeCommand:
		return "Command"
	case TypeEvent:
		return "Event"
	case TypeWelcome:
		return "Welcome"
	case TypeAppear:
		return "Appear"
	case TypeDisappear:
		return "Disappear"
	case TypeCorrection:
		return "Correction"
	case TypeRefuse:
		return "Refuse"
	case TypeRate:
		return "Rate"
	case TypeProp:
		return "Prop"
	case TypeBatch:
		return "Batch"
	}
	const hex = "0123456789abcdef"
	return "Type(0x" + string([]byte{hex[t>>4], hex[t&0xf]}) + ")"
}

// CodecError is what the decoders and the [StreamReader] return. Its values
// are constants, so returning one never allocates; compare with == or
// errors.Is.
type CodecError uint8

// Codec errors. Each names what was wrong with the input. The codec does
// not judge values (NaN positions, unknown actors): the server validates.
const (
	ErrShort        CodecError = iota + 1 // the frame ends before its last field
	ErrTrailing                           // bytes follow the frame's last field
	ErrVersion                            // the first byte is not Version
	ErrUnknownType                        // the type byte names no frame
	ErrWrongType                          // a per-type decoder got another frame type
	ErrBatchCount                         // a batch's count does not match its length
	ErrTokenTooLong                       // a Hello token is longer than MaxTokenLen
	ErrStreamLength                       // a stream length prefix is below HeaderSize or above the reader's limit
)

// Error returns a message starting with "wire: ".
func (e CodecError) Error() string {
	switch e {
	case ErrShort:
		return "wire: frame too short"
	case ErrTrailing:
		return "wire: trailing bytes after frame"
	case ErrVersion:
		return "wire: unsupported wire version"
	case ErrUnknownType:
		return "wire: unknown frame type"
	case ErrWrongType:
		return "wire: frame is of another type"
	case ErrBatchCount:
		return "wire: batch record count does not match its length"
	case ErrTokenTooLong:
		return "wire: hello token longer than 64 bytes"
	case ErrStreamLength:
		return "wire: stream frame length out of range"
	}
	return "wire: codec error"
}

// Sizes of the fixed-size frames, header included.
const (
	MoveSize       = HeaderSize + 4 + 4*4 + 4 + 2 // 28
	WelcomeSize    = HeaderSize + 4 + 2 + 4 + 4*4 + 4
	AppearSize     = HeaderSize + 4 + 4*4 + 4 + 2
	DisappearSize  = HeaderSize + 4
	CorrectionSize = HeaderSize + 4 + 4*4 + 4
	RateSize       = HeaderSize + 2 + 2
	PropSize       = AppearSize
)

// MaxTokenLen is the longest token a [Hello] carries, in bytes.
const MaxTokenLen = 64

// MaxReasonLen is the longest reason a [Refuse] carries, in bytes; longer
// reasons are cut by [AppendRefuse].
const MaxReasonLen = 255

// Hello is the client's handshake, the first frame it sends.
type Hello struct {
	// Protocol is the game's own protocol version, chosen by the server's
	// author (0 is a valid value). The wire version travels separately as
	// the frame's first byte.
	Protocol uint16
	// Token identifies the player (a name in development mode, an
	// authentication token otherwise), at most MaxTokenLen bytes. A decoded
	// Token aliases the frame: copy it to keep it past the frame's lifetime.
	Token []byte
}

// Move is a client's movement update for its own actor.
type Move struct {
	Seq         uint32  // increases with every update the client sends
	X, Y, Z     float32 // position in world units
	Yaw         float32 // facing, radians
	WorldOrCell uint32  // worldspace or interior cell the client believes it is in
	Flags       uint16  // animation flags, relayed untouched
}

// Welcome admits a client: it tells the client which actor it drives and
// where the server placed it.
type Welcome struct {
	Actor       uint32  // the client's own actor id
	TickRate    uint16  // server ticks per second
	Tick        uint32  // the server tick the client was admitted at (low 32 bits)
	X, Y, Z     float32 // spawn position
	Yaw         float32 // spawn facing, radians
	WorldOrCell uint32
}

// Appear tells a client about an actor that entered its view (spawned, or
// moved into range). A client gets an actor's Appear before any movement
// record for it.
type Appear struct {
	Actor       uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
	Flags       uint16
}

// Prop tells a client about a prop within its sight: the prop came into
// it (spawned, or within reach as either moved) or changed (moved, or its
// flags did: a door opened). The newest Prop for an actor is its state; a
// [Disappear] ends it. Props are sent on the reliable stream, in the tick
// they change, to every client within the server's prop radius, and no
// movement record is ever sent for one. Its layout is Appear's.
type Prop struct {
	Actor       uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
	Flags       uint16
}

// Disappear tells a client that an actor left its view or the world; no more
// movement records for it follow until a new [Appear].
type Disappear struct {
	Actor uint32
}

// Correction rejects a client's movement: the server keeps its actor at the
// authoritative position given here. Seq is the rejected update's sequence
// number.
type Correction struct {
	Seq         uint32
	X, Y, Z     float32
	Yaw         float32
	WorldOrCell uint32
}

// RefuseCode says why a client was turned away, in a form a program can act
// on; the [Refuse] reason is for people.
type RefuseCode uint8

// Refuse codes.
const (
	RefuseUnspecified RefuseCode = 0 // any other reason; read the text
	RefuseBusy        RefuseCode = 1 // the server is over budget; retry later
	RefuseProtocol    RefuseCode = 2 // the client speaks another wire version or game protocol
	RefuseToken       RefuseCode = 3 // the token was not accepted
)

// Refuse turns a client away before or instead of a [Welcome]. Its layout is
// the same in every wire version, so any client can read why it was refused.
type Refuse struct {
	Code RefuseCode
	// Reason is human-readable text, at most MaxReasonLen bytes. A decoded
	// Reason aliases the frame.
	Reason []byte
}

// AppendCommand appends a Command frame carrying payload: the header, then
// the payload's bytes, which Throng never reads. A frame travels whole on
// the reliable stream, so payload must keep it within the transports'
// frame limit (DefaultMaxStreamFrame: 1,022 bytes of payload).
func AppendCommand(dst, payload []byte) []byte {
	return append(appendHeader(dst, TypeCommand), payload...)
}

// DecodeCommand returns a Command frame's payload, aliasing b.
func DecodeCommand(b []byte) ([]byte, error) { return decodePayload(b, TypeCommand) }

// AppendEvent appends an Event frame carrying payload (see AppendCommand).
func AppendEvent(dst, payload []byte) []byte {
	return append(appendHeader(dst, TypeEvent), payload...)
}

// DecodeEvent returns an Event frame's payload, aliasing b.
func DecodeEvent(b []byte) ([]byte, error) { return decodePayload(b, TypeEvent) }

// decodePayload returns what follows the header of a frame of type t.
func decodePayload(b []byte, t Type) ([]byte, error) {
	if err := checkHeader(b, t); err != nil {
		return nil, err
	}
	return b[HeaderSize:], nil
}

func appendHeader(dst []byte, t Type) []byte {
	return append(dst, Version, byte(t))
}

func appendF32(dst []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
}

func f32(b []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b))
}

// appendPlace appends where an actor stands, as Move, Welcome, Appear and
// Correction carry it: x, y, z, yaw, then the worldOrCell (20 bytes).
func appendPlace(dst []byte, x, y, z, yaw float32, worldOrCell uint32) []byte {
	dst = appendF32(dst, x)
	dst = appendF32(dst, y)
	dst = appendF32(dst, z)
	dst = appendF32(dst, yaw)
	return binary.LittleEndian.AppendUint32(dst, worldOrCell)
}

// readPlace reads what appendPlace wrote; b holds at least 20 bytes.
func readPlace(b []byte) (x, y, z, yaw float32, worldOrCell uint32) {
	_ = b[19]
	return f32(b), f32(b[4:]), f32(b[8:]), f32(b[12:]), binary.LittleEndian.Uint32(b[16:])
}

// checkHeader checks the version and type bytes of b against t.
func checkHeader(b []byte, t Type) error {
	if len(b) < HeaderSize {
		return ErrShort
	}
	if b[0] != Version && t != TypeRefuse {
		return ErrVersion
	}
	if Type(b[1]) != t {
		return ErrWrongType
	}
	return nil
}

// checkFixed checks the header and that b is exactly size bytes long.
func checkFixed(b []byte, t Type, size int) error {
	if err := checkHeader(b, t); err != nil {
		return err
	}
	if len(b) < size {
		return ErrShort
	}
	if len(b) > size {
		return ErrTrailing
	}
	return nil
}

// PeekType returns the type of frame b after checking its header: ErrShort
// for fewer than HeaderSize bytes, ErrVersion for another wire version
// (except a Refuse), ErrUnknownType for a type this version does not define.
// It does not check the rest of the frame.
func PeekType(b []byte) (Type, error) {
	if len(b) < HeaderSize {
		return 0, ErrShort
	}
	t := Type(b[1])
	if b[0] != Version && t != TypeRefuse {
		return 0, ErrVersion
	}
	switch t {
	case TypeHello, TypeMove, TypeCommand, TypeWelcome, TypeAppear, TypeDisappear,
		TypeCorrection, TypeRefuse, TypeEvent, TypeRate, TypeProp, TypeBatch:
		return t, nil
	}
	return 0, ErrUnknownType
}
