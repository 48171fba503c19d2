package zone

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"

	"github.com/throng-go/throng/components"
)

// Commands to ghosts.
//
// A player sees its neighbours' actors as ghosts, and a game's command
// may name one (a player trades with, or strikes, an NPC across the
// border). The ghost is not where the actor's state lives: its owner's
// game must act on the command. [Server.Forward] sends it there; the
// owner's game reads it from [Server.Commands], naming its own actor.

// CommandVersion is the version byte every forwarded command starts with.
const CommandVersion = 1

// Forwarded command layout, little-endian:
//
//	0  version   u8  (CommandVersion)
//	1  zone      u16 the zone that sent this message
//	3  origin    u16 the zone whose game forwarded the command first
//	5  revision  u64 the map revision the sender holds its zone as of
//	13 actor     u32 the actor it is for, by the receiver's id for it
//	17 from      u32 the actor that sent it, by the origin's id; 0 for none
//	21 hops      u8  how many times it was passed on before
//	22 payload   the game's bytes, at most MaxCommandPayload
const commandHeaderSize = 22

// MaxCommandPayload is the longest payload a forwarded command carries.
const MaxCommandPayload = 4096

// maxCommandHops is how many times a command may be passed on: its
// addressee was handed off while it travelled, and the zone it reached
// sends it to the new owner.
const maxCommandHops = 2

// Reasons a forwarded command is refused by [DecodeCommand].
var (
	ErrCommandShort   = errors.New("zone: forwarded command shorter than its header")
	ErrCommandVersion = errors.New("zone: forwarded command of an unknown version")
	ErrCommandZone    = errors.New("zone: forwarded command from zone 0")
	ErrCommandActor   = errors.New("zone: forwarded command for actor 0")
	ErrCommandLength  = errors.New("zone: forwarded command payload too long")
)

// RemoteCommand is a command a neighbour's game sent to an actor of this
// zone's world.
type RemoteCommand struct {
	Origin  ID                 // the zone whose game forwarded it
	From    uint32             // the actor that sent it, by Origin's id; 0 for none
	Actor   components.ActorID // the actor of ours it is for
	Payload []byte
	zone    ID // the zone that sent this message (Origin, or one that passed it on)
	rev     uint64
	hops    uint8
}

// CommandSubject is the subject zone id receives forwarded commands on.
func CommandSubject(prefix string, id ID) string {
	return prefix + ".commands." + strconv.Itoa(int(id))
}

// AppendCommand appends a forwarded command from zone, as of revision:
// c's Origin, From, Actor and Payload, passed on hops times before.
func AppendCommand(dst []byte, zone ID, revision uint64, c RemoteCommand, hops uint8) []byte {
	le := binary.LittleEndian
	dst = append(dst, CommandVersion)
	dst = le.AppendUint16(dst, uint16(zone))
	dst = le.AppendUint16(dst, uint16(c.Origin))
	dst = le.AppendUint64(dst, revision)
	dst = le.AppendUint32(dst, c.Actor.ID)
	dst = le.AppendUint32(dst, c.From)
	dst = append(dst, hops)
	return append(dst, c.Payload...)
}

// DecodeCommand decodes a forwarded command strictly: the payload
// aliases b.
func DecodeCommand(b []byte) (RemoteCommand, error) {
	switch {
	case len(b) < commandHeaderSize:
		return RemoteCommand{}, ErrCommandShort
	case b[0] != CommandVersion:
		return RemoteCommand{}, ErrCommandVersion
	case len(b)-commandHeaderSize > MaxCommandPayload:
		return RemoteCommand{}, ErrCommandLength
	}
	le := binary.LittleEndian
	c := RemoteCommand{
		zone: ID(le.Uint16(b[1:])), Origin: ID(le.Uint16(b[3:])), rev: le.Uint64(b[5:]),
		Actor: components.ActorID{ID: le.Uint32(b[13:])}, From: le.Uint32(b[17:]), hops: b[21],
		Payload: b[commandHeaderSize:],
	}
	switch {
	case c.zone == 0 || c.Origin == 0:
		return RemoteCommand{}, ErrCommandZone
	case c.Actor.ID == 0:
		return RemoteCommand{}, ErrCommandActor
	}
	return c, nil
}

// commandBox holds the commands received since the last tick took them:
// NATS' delivery goroutine fills it, the apply system empties it.
type commandBox struct {
	mu       sync.Mutex
	received []RemoteCommand
	closed   bool
	taken    []RemoteCommand // the last take's, kept until the next
	tick     []RemoteCommand // this tick's, for Commands
	buf      []byte
}

// receiveCommand is the command subscription's handler.
func (z *Server) receiveCommand(msg *nats.Msg) {
	c, err := DecodeCommand(msg.Data)
	if err != nil || c.zone == z.opts.Zone {
		z.stats.cmdDropped.Add(1)
		return
	}
	box := &z.cmds
	box.mu.Lock()
	if !box.closed {
		// msg.Data is ours to keep: the payload may alias it.
		box.received = append(box.received, c)
	}
	box.mu.Unlock()
	// Counted once it is where the next tick takes it from, so that a
	// count seen says the command is there.
	z.stats.cmdArrived.Add(1)
}

// Forward sends a command of the game's for actor id of this world,
// which must be a ghost, to the zone that owns it, from actor from (0 for
// none): the owner's game reads it from its [Server.Commands] in its next
// tick, naming its own actor. It returns the owner. Call it from the
// tick's goroutine (a system, or between ticks).
func (z *Server) Forward(id, from components.ActorID, payload []byte) (ID, error) {
	owner, remote, ok := z.Ghost(id)
	if !ok {
		return 0, fmt.Errorf("zone: actor %d is not a ghost: it is this zone's own, or unknown", id.ID)
	}
	if len(payload) > MaxCommandPayload {
		return 0, fmt.Errorf("zone: a command of %d bytes, more than %d", len(payload), MaxCommandPayload)
	}
	c := RemoteCommand{Origin: z.opts.Zone, From: from.ID, Actor: components.ActorID{ID: remote}, Payload: payload}
	if err := z.sendCommand(owner, c, 0); err != nil {
		return 0, err
	}
	return owner, nil
}

// sendCommand publishes c to zone to, passed on hops times before.
func (z *Server) sendCommand(to ID, c RemoteCommand, hops uint8) error {
	box := &z.cmds
	box.buf = AppendCommand(box.buf[:0], z.opts.Zone, z.watch.load().revision, c, hops)
	if err := z.nc.Publish(CommandSubject(z.prefix, to), box.buf); err != nil {
		return fmt.Errorf("zone: forwarding a command: %w", err)
	}
	z.stats.cmdSent.Add(1)
	return nil
}

// Commands returns the commands neighbours' games sent this zone's
// actors, taken at the start of this tick (by the apply system, before
// Prepare), in the order they arrived. A game's system that reads them
// runs after [ApplyName]. The slice and the payloads are valid until the
// next tick's apply.
func (z *Server) Commands() []RemoteCommand { return z.cmds.tick }

// takeCommands delivers the commands received since the last tick:
// those for an actor of ours to Commands; those for an actor that has
// since become a ghost here (handed off while the command travelled) on
// to its new owner, at most maxCommandHops times; those from a zone the
// view does not believe (not a neighbour, or sent as of a revision older
// than the one from which the map has named its zone's owner)
// refused; those for an actor we no longer hold counted lost.
func (z *Server) takeCommands(v *view, me Zone) {
	box := &z.cmds
	box.mu.Lock()
	box.received, box.taken = box.taken[:0], box.received
	box.mu.Unlock()
	box.tick = box.tick[:0]
	for _, c := range box.taken {
		since, ok := v.since[c.zone]
		if !ok || c.rev < since || !neighbour(v, me, c.zone) {
			z.stats.cmdRefused.Add(1)
			continue
		}
		if owner, remote, ghost := z.Ghost(c.Actor); ghost {
			if c.hops >= maxCommandHops {
				z.stats.cmdLost.Add(1)
				continue
			}
			passed := c
			passed.Actor = components.ActorID{ID: remote}
			if z.sendCommand(owner, passed, c.hops+1) != nil {
				z.stats.cmdLost.Add(1)
			}
			continue
		}
		if _, ok := z.ghosts.world.Entity(c.Actor); !ok {
			z.stats.cmdLost.Add(1)
			continue
		}
		z.stats.cmdReceived.Add(1)
		box.tick = append(box.tick, c)
	}
}

// refuseCommands refuses every command received since the last tick: a
// fenced server holds no zone to deliver them in.
func (z *Server) refuseCommands() {
	box := &z.cmds
	box.mu.Lock()
	n := len(box.received)
	box.received = box.received[:0]
	box.mu.Unlock()
	box.tick = box.tick[:0]
	z.stats.cmdRefused.Add(uint64(n))
}
