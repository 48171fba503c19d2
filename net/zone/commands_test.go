package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/zone"
)

// ghostOf returns zone at's id for its ghost of zone owner's actor id.
func (w *zones) ghostOf(at, owner zone.ID, id components.ActorID) components.ActorID {
	w.t.Helper()
	z := w.servers[at].z
	for _, cv := range w.servers[at].srv.World().Snapshot(nil) {
		for r := range cv.Len() {
			if o, rid, ok := z.Ghost(cv.IDs[r]); ok && o == owner && rid == id.ID {
				return cv.IDs[r]
			}
		}
	}
	w.t.Fatalf("zone %d holds no ghost of zone %d's actor %d", at, owner, id.ID)
	return components.ActorID{}
}

// TestCommandsToAGhostReachItsOwner: zone 1's game forwards a command
// its player sent to a ghost, zone 2's NPC, and zone 2's game reads it in
// its next tick, naming its own NPC and zone 1's player; forwarding to an
// actor that is not a ghost is an error; a command that reaches a zone
// whose actor has become a ghost there meanwhile is passed on to the new
// owner; malformed messages are dropped and counted, and a command from
// a zone that is not a neighbour is refused.
func TestCommandsToAGhostReachItsOwner(t *testing.T) {
	w := startZones(t, twoZones)
	npc := w.spawn(2, 8600, 100)
	p1 := w.join(1, 7000, 100)
	for range 3 {
		w.round()
		p1.read()
	}
	z1, z2 := w.servers[1].z, w.servers[2].z
	ghost := w.ghostOf(1, 2, npc)

	owner, err := z1.Forward(ghost, components.ActorID{ID: p1.self}, []byte("trade"))
	require.NoError(t, err)
	assert.Equal(t, zone.ID(2), owner)
	require.Eventually(t, func() bool { return z2.Stats().Commands.Arrived == 1 }, 5*time.Second, time.Millisecond)
	_, err = z1.Forward(components.ActorID{ID: p1.self}, components.ActorID{}, []byte("x"))
	assert.ErrorContains(t, err, "not a ghost")
	_, err = z1.Forward(ghost, components.ActorID{}, make([]byte, zone.MaxCommandPayload+1))
	assert.ErrorContains(t, err, "more than")

	w.round()
	require.Len(t, z2.Commands(), 1)
	c := z2.Commands()[0]
	assert.Equal(t, zone.ID(1), c.Origin)
	assert.Equal(t, p1.self, c.From)
	assert.Equal(t, npc, c.Actor)
	assert.Equal(t, "trade", string(c.Payload))
	assert.Empty(t, z1.Commands())
	w.round()
	assert.Empty(t, z2.Commands(), "a command is read in one tick")

	// Zone 1's own NPC, lent to zone 2 as a ghost: a command that reaches
	// zone 2 for that ghost (its sender believed zone 2 owned it) goes on
	// to zone 1.
	mine := w.spawn(1, 7900, 100)
	for range 3 {
		w.round()
	}
	theirs := w.ghostOf(2, 1, mine)
	rev, _ := z1.Revision()
	nc, _ := connect(t, w.url)
	msg := zone.AppendCommand(nil, 1, rev, zone.RemoteCommand{Origin: 1, From: 77, Actor: theirs, Payload: []byte("again")}, 0)
	require.NoError(t, nc.Publish(zone.CommandSubject("throng", 2), msg))
	// Junk, a command from a zone that is not on the map, and one for an
	// actor zone 2 does not hold.
	require.NoError(t, nc.Publish(zone.CommandSubject("throng", 2), []byte{1, 2, 3}))
	require.NoError(t, nc.Publish(zone.CommandSubject("throng", 2), zone.AppendCommand(nil, 9, rev, zone.RemoteCommand{Origin: 9, Actor: npc}, 0)))
	require.NoError(t, nc.Publish(zone.CommandSubject("throng", 2), zone.AppendCommand(nil, 1, rev, zone.RemoteCommand{Origin: 1, Actor: components.ActorID{ID: 999}}, 0)))
	require.NoError(t, nc.Flush())
	require.Eventually(t, func() bool {
		s := z2.Stats().Commands
		return s.Arrived == 4 && s.Dropped == 1
	}, 5*time.Second, time.Millisecond)
	w.round() // zone 2 passes it on
	// It crosses NATS on its own time: zone 1 reads it in the first tick
	// after it arrived.
	require.Eventually(t, func() bool { return z1.Stats().Commands.Arrived == 1 }, 5*time.Second, time.Millisecond)
	w.round() // zone 1 reads it
	require.Len(t, z1.Commands(), 1)
	c = z1.Commands()[0]
	assert.Equal(t, mine, c.Actor)
	assert.Equal(t, zone.ID(1), c.Origin)
	assert.Equal(t, uint32(77), c.From)
	assert.Equal(t, "again", string(c.Payload))

	s2 := z2.Stats().Commands
	assert.Equal(t, zone.CommandStats{Sent: 1, Arrived: 4, Received: 1, Dropped: 1, Refused: 1, Lost: 1}, s2)
	assert.Equal(t, zone.CommandStats{Sent: 1, Arrived: 1, Received: 1}, z1.Stats().Commands)
}

func TestForwardedCommandsDecodeStrictly(t *testing.T) {
	good := zone.AppendCommand(nil, 3, 17, zone.RemoteCommand{Origin: 2, From: 5, Actor: components.ActorID{ID: 9}, Payload: []byte("hi")}, 1)
	c, err := zone.DecodeCommand(good)
	require.NoError(t, err)
	assert.Equal(t, zone.ID(2), c.Origin)
	assert.Equal(t, uint32(5), c.From)
	assert.Equal(t, components.ActorID{ID: 9}, c.Actor)
	assert.Equal(t, "hi", string(c.Payload))
	spoil := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for want, bad := range map[error][]byte{
		zone.ErrCommandShort:   good[:21],
		zone.ErrCommandVersion: spoil(func(b []byte) []byte { b[0] = 7; return b }),
		zone.ErrCommandZone:    zone.AppendCommand(nil, 0, 1, zone.RemoteCommand{Origin: 2, Actor: components.ActorID{ID: 9}}, 0),
		zone.ErrCommandActor:   zone.AppendCommand(nil, 3, 1, zone.RemoteCommand{Origin: 2}, 0),
		zone.ErrCommandLength:  zone.AppendCommand(nil, 3, 1, zone.RemoteCommand{Origin: 2, Actor: components.ActorID{ID: 9}, Payload: make([]byte, zone.MaxCommandPayload+1)}, 0),
	} {
		_, err := zone.DecodeCommand(bad)
		assert.ErrorIs(t, err, want)
	}
}
