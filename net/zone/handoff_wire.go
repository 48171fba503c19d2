package zone

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs/save"
)

// HandoffVersion is the version byte every hand-off message starts with.
const HandoffVersion = 6

// Kinds of hand-off request.
const (
	// Prepare asks the receiving zone to get ready to own an actor.
	Prepare uint8 = 1
	// Commit tells it to own the actor from now on.
	Commit uint8 = 2
)

// Kinds of hand-off answer.
const (
	// Ready answers a Prepare: the receiver holds the actor (as a ghost)
	// and will take it on Commit.
	Ready uint8 = 1
	// Committed answers a Commit: the receiver owns the actor.
	Committed uint8 = 2
	// Refused answers either: the receiver did nothing (fenced, the
	// sender replaced in the map, a stale sequence, a commit not
	// prepared, a place outside its zone).
	Refused uint8 = 3
)

// Hand-off request layout, little-endian:
//
//	0  version   u8  (HandoffVersion)
//	1  kind      u8  (Prepare or Commit)
//	2  zone      u16 the sending zone, the actor's owner
//	4  revision  u64 the map revision the sender holds its zone as of
//	12 seq       u64 the hand-off's sequence number, from the sender's counter
//	20 actor     u32 the actor's id in the sender's world
//	24 transform x, y, z, yaw f32, worldOrCell u32
//	44 flags     u16 animation flags
//	46 input     seq u32, x, y, z, yaw f32, worldOrCell u32, flags u16, pending u8
//	73 class     u8  the actor's relevance class (components.Client.Class)
//	74 client    u8  1 when the actor has a client, whose session follows it
//	             through the gateway (Options.Gateway); else 0
//	75 phase     u32 the key its pairs' phases hash (components.PhaseKey),
//	             which the receiver keeps (components.Client.Phase)
//	79 applied   u32 the last move the sender took from the player's
//	             session (a Commit of a player's actor); else 0
//	83 letGoAt   i64 when the sender let that session go, Unix
//	             nanoseconds by its clock (the same Commit); else 0
//	91 player    u16 length, then the bytes: the name its player is known
//	             by (a Commit of a named player's actor); else empty
//	   carried   the actor's components of the game's own, as
//	             ecs/save.AppendCarried lists them (a Commit); a Prepare's
//	             list is empty
const handoffRequestSize = 91

// maxPlayerName is the longest player name a hand-off carries: its length
// is a u16. A longer name travels as none (the player a guest there).
const maxPlayerName = 1<<16 - 1

// Hand-off answer layout, little-endian:
//
//	0  version u8  (HandoffVersion)
//	1  kind    u8  (Ready, Committed or Refused)
//	2  zone    u16 the answering zone
//	4  seq     u64 the request's sequence number
//	12 actor   u32 the actor's id in the requester's world
//	16 local   u32 its id in the answerer's world (0 when refused)
//	20 tick    u64 the answerer's tick: for Committed, the first tick its
//	           ghost batches list the actor as its own
const handoffAnswerSize = 28

// Reasons a hand-off message is refused by its decoder.
var (
	ErrHandoffMalformed = errors.New("zone: hand-off message of the wrong size, version or kind")
	ErrHandoffValue     = errors.New("zone: hand-off message with zone 0, actor 0, a place that is not finite, a class past components.MaxClasses or a pending or client flag other than 0 and 1")
)

// HandoffRequest is a Prepare or Commit: the actor's id with its owner
// and the state the receiver takes it on with.
type HandoffRequest struct {
	Kind      uint8
	Zone      ID
	Revision  uint64
	Seq       uint64
	Actor     uint32
	Transform components.Transform
	Animation components.Animation
	Input     components.MoveInput
	Class     uint8
	// Phase is the key the actor's pairs' phases hash
	// (components.PhaseKey): its receiver keeps it, so that the actor's
	// far pairs go on being sent on the ticks they were.
	Phase uint32
	// Client says the actor is a player's: its session is moved to the
	// receiver once the receiver has taken it.
	Client bool
	// Applied is the last move the sender took from the player's session,
	// and LetGoAt when it let the session go (Unix nanoseconds, its
	// clock): a player's Commit only. Applied is the MoveInput.Seq it
	// last gave the actor, sent apart from Input so that the receiver
	// can count moves a switch would apply twice; LetGoAt times the
	// switch.
	Applied uint32
	LetGoAt int64
	// Player is the name the player is known by (Commit only; "" for a
	// guest or an actor without a client).
	Player string
	// Carried lists the actor's components of the game's own (Commit
	// only): the types its server saves (throng.Options.SavedTypes), as
	// ecs/save.AppendCarried writes them. Nil or empty means none. A
	// decoded request's Carried is a part of the message it came in.
	Carried []byte
}

// HandoffAnswer answers one [HandoffRequest].
type HandoffAnswer struct {
	Kind  uint8
	Zone  ID
	Seq   uint64
	Actor uint32
	Local uint32
	Tick  uint64
}

// AppendHandoffRequest appends r's encoding to dst.
func AppendHandoffRequest(dst []byte, r HandoffRequest) []byte {
	le := binary.LittleEndian
	dst = append(dst, HandoffVersion, r.Kind)
	dst = le.AppendUint16(dst, uint16(r.Zone))
	dst = le.AppendUint64(dst, r.Revision)
	dst = le.AppendUint64(dst, r.Seq)
	dst = le.AppendUint32(dst, r.Actor)
	t := r.Transform
	dst = appendFloats(dst, t.X, t.Y, t.Z, t.Yaw)
	dst = le.AppendUint32(dst, t.WorldOrCell)
	dst = le.AppendUint16(dst, r.Animation.Flags)
	in := r.Input
	dst = le.AppendUint32(dst, in.Seq)
	dst = appendFloats(dst, in.X, in.Y, in.Z, in.Yaw)
	dst = le.AppendUint32(dst, in.WorldOrCell)
	dst = le.AppendUint16(dst, in.Flags)
	pending := byte(0)
	if in.Pending {
		pending = 1
	}
	client := byte(0)
	if r.Client {
		client = 1
	}
	dst = append(dst, pending, r.Class, client)
	dst = le.AppendUint32(dst, r.Phase)
	dst = le.AppendUint32(dst, r.Applied)
	dst = le.AppendUint64(dst, uint64(r.LetGoAt))
	player := r.Player
	if len(player) > maxPlayerName {
		player = ""
	}
	dst = le.AppendUint16(dst, uint16(len(player)))
	dst = append(dst, player...)
	if len(r.Carried) == 0 {
		return append(dst, 0)
	}
	return append(dst, r.Carried...)
}

func appendFloats(dst []byte, fs ...float32) []byte {
	for _, f := range fs {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
	}
	return dst
}

func float(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }

func finite(fs ...float32) bool {
	for _, f := range fs {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return false
		}
	}
	return true
}

// DecodeHandoffRequest decodes a request strictly: this version, a known
// kind, a player name and a carried list that end exactly where the
// message does, zone and actor not 0, a finite place, a class below
// components.MaxClasses, pending and client flags of 0 or 1 (so that a
// request has one encoding). A request that breaks a rule is dropped
// unanswered, as garbage is. The carried list's values are checked when
// the receiver gives them (ecs/save.GiveCarried).
func DecodeHandoffRequest(b []byte) (HandoffRequest, error) {
	if len(b) < handoffRequestSize+3 || b[0] != HandoffVersion || (b[1] != Prepare && b[1] != Commit) {
		return HandoffRequest{}, ErrHandoffMalformed
	}
	rest := b[handoffRequestSize:]
	nameLen := int(binary.LittleEndian.Uint16(rest))
	if len(rest) < 2+nameLen+1 {
		return HandoffRequest{}, ErrHandoffMalformed
	}
	carried := rest[2+nameLen:]
	if n, err := save.CarriedLen(carried); err != nil || n != len(carried) {
		return HandoffRequest{}, ErrHandoffMalformed
	}
	le := binary.LittleEndian
	r := HandoffRequest{
		Kind: b[1], Zone: ID(le.Uint16(b[2:])), Revision: le.Uint64(b[4:]), Seq: le.Uint64(b[12:]), Actor: le.Uint32(b[20:]),
		Transform: components.Transform{X: float(b[24:]), Y: float(b[28:]), Z: float(b[32:]), Yaw: float(b[36:]), WorldOrCell: le.Uint32(b[40:])},
		Animation: components.Animation{Flags: le.Uint16(b[44:])},
		Input: components.MoveInput{Seq: le.Uint32(b[46:]), X: float(b[50:]), Y: float(b[54:]), Z: float(b[58:]), Yaw: float(b[62:]),
			WorldOrCell: le.Uint32(b[66:]), Flags: le.Uint16(b[70:]), Pending: b[72] != 0},
		Class: b[73], Client: b[74] == 1, Phase: le.Uint32(b[75:]), Applied: le.Uint32(b[79:]), LetGoAt: int64(le.Uint64(b[83:])), Player: string(rest[2 : 2+nameLen]), Carried: carried,
	}
	t, in := r.Transform, r.Input
	if r.Zone == 0 || r.Actor == 0 || !finite(t.X, t.Y, t.Z, t.Yaw, in.X, in.Y, in.Z, in.Yaw) || r.Class >= components.MaxClasses || b[72] > 1 || b[74] > 1 {
		return HandoffRequest{}, ErrHandoffValue
	}
	return r, nil
}

// AppendHandoffAnswer appends a's encoding to dst.
func AppendHandoffAnswer(dst []byte, a HandoffAnswer) []byte {
	le := binary.LittleEndian
	dst = append(dst, HandoffVersion, a.Kind)
	dst = le.AppendUint16(dst, uint16(a.Zone))
	dst = le.AppendUint64(dst, a.Seq)
	dst = le.AppendUint32(dst, a.Actor)
	dst = le.AppendUint32(dst, a.Local)
	return le.AppendUint64(dst, a.Tick)
}

// DecodeHandoffAnswer decodes an answer strictly, as
// [DecodeHandoffRequest] does a request.
func DecodeHandoffAnswer(b []byte) (HandoffAnswer, error) {
	if len(b) != handoffAnswerSize || b[0] != HandoffVersion || b[1] < Ready || b[1] > Refused {
		return HandoffAnswer{}, ErrHandoffMalformed
	}
	le := binary.LittleEndian
	a := HandoffAnswer{Kind: b[1], Zone: ID(le.Uint16(b[2:])), Seq: le.Uint64(b[4:]), Actor: le.Uint32(b[12:]),
		Local: le.Uint32(b[16:]), Tick: le.Uint64(b[20:])}
	if a.Zone == 0 || a.Actor == 0 || (a.Kind != Refused && a.Local == 0) {
		return HandoffAnswer{}, ErrHandoffValue
	}
	return a, nil
}
