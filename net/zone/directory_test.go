package zone_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/zone"
)

// filedOnce waits until z counts one player filed. The count follows
// NATS' answer to the write, which may come after a watch has read the
// entry.
func filedOnce(t *testing.T, z *zone.Server) {
	t.Helper()
	require.Eventually(t, func() bool { return z.Stats().PlayersFiled >= 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), z.Stats().PlayersFiled)
}

// TestAReturningPlayerIsRoutedToTheZoneThatKeptIt: ann joins zone 1,
// gets a Purse, walks into zone 2 and leaves there; a guest leaves zone 1.
// The player directory, watched from before, names zone 2 for ann and no
// one else, and so does a watch started after. A new session of ann's
// sent where the directory says reaches zone 2, which hands her back her
// actor where she left it, Purse and all.
func TestAReturningPlayerIsRoutedToTheZoneThatKeptIt(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{})
	early, err := zone.WatchPlayers(testContext(t), w.js, "")
	require.NoError(t, err)
	t.Cleanup(early.Stop)

	ann := w.joinViaAs(1, 7800, 100, "ann")
	guest := w.joinVia(1, 7000, 100)
	step := func() {
		w.round()
		ann.read()
		guest.read()
	}
	for range 3 {
		step()
	}
	require.Len(t, ann.welcomes, 1)
	w.give(1, components.ActorID{ID: ann.welcomes[0]}, 42, "")
	walkEast(t, ann, step)
	owner, _, _, _ := w.walkerAt()
	require.Equal(t, zone.ID(2), owner)

	ann.c.Close()
	guest.c.Close()
	for range 3 {
		w.gw.Step()
		w.round()
	}
	require.Eventually(t, func() bool { _, ok := early.Zone("ann"); return ok }, 5*time.Second, time.Millisecond)
	z, _ := early.Zone("ann")
	assert.Equal(t, zone.ID(2), z, "zone 2 keeps ann")
	assert.Equal(t, 1, early.Len(), "a guest is not filed")
	filedOnce(t, w.servers[2].z)
	assert.Zero(t, w.servers[1].z.Stats().PlayersFiled, "zone 1 let ann go: it files nothing")

	late, err := zone.WatchPlayers(testContext(t), w.js, "")
	require.NoError(t, err)
	t.Cleanup(late.Stop)
	entry, ok := late.Zone("ann")
	require.True(t, ok, "a watch started later reads what was filed")
	require.Equal(t, zone.ID(2), entry)

	back := w.joinViaAs(entry, 8100, 300, "ann") // where a newcomer would spawn
	for range 3 {
		w.round()
		back.read()
	}
	require.Len(t, back.welcomes, 1, "zone 2 admits her")
	id := components.ActorID{ID: back.welcomes[0]}
	e, ok := w.servers[2].srv.World().Entity(id)
	require.True(t, ok, "her actor is zone 2's")
	assert.Equal(t, float32(8600), w.servers[2].moves.Get(e).X, "where she left it")
	purse, hasPurse, _, _ := w.purseOf(2, id)
	assert.True(t, hasPurse)
	assert.Equal(t, Purse{Gold: 42}, purse)
	_, kept := w.servers[2].srv.Kept("ann")
	assert.False(t, kept, "handed back, no longer kept")
}

// TestThePlayerDirectorySurvivesARestartOfTheNATSServer: the NATS server
// restarts (the same port and JetStream store after) under a watch of the
// directory; a player who leaves zone 2 then, while its server cannot yet
// reach NATS, is filed once it can, and the watch reads the entry.
func TestThePlayerDirectorySurvivesARestartOfTheNATSServer(t *testing.T) {
	w := startZones(t, twoZones)
	pw, err := zone.WatchPlayers(testContext(t), w.js, "")
	require.NoError(t, err)
	t.Cleanup(pw.Stop)
	bo := w.joinAs(2, 8300, 100, "bo")
	for range 3 {
		w.round()
		bo.read()
	}
	require.Len(t, bo.welcomes, 1)

	w.nats.Restart()
	bo.c.Close()
	require.Eventually(t, func() bool {
		for _, id := range w.order {
			w.servers[id].srv.Tick()
		}
		z, ok := pw.Zone("bo")
		return ok && z == 2
	}, 20*time.Second, 10*time.Millisecond, "the directory never named zone 2 for bo")
	filedOnce(t, w.servers[2].z)
	assert.Zero(t, w.servers[2].z.Stats().PlayersNotFiled)
}

// TestAZoneRestartedFromItsSaveFilesThePlayersItKeeps: zone 1 is saved
// while a named player plays there, and restarted from that save (its
// process died, and the player's session with it). The save keeps the
// player's actor; the restarted zone files the player in the directory,
// so that the player, joining again, is routed back to it.
func TestAZoneRestartedFromItsSaveFilesThePlayersItKeeps(t *testing.T) {
	w := startZones(t, twoZones)
	cy := w.joinAs(1, 7000, 100, "cy")
	for range 3 {
		w.round()
		cy.read()
	}
	require.Len(t, cy.welcomes, 1)
	srv, z := w.restartFromSave(1)
	_, kept := srv.Kept("cy")
	require.True(t, kept, "the save keeps cy's actor")

	pw, err := zone.WatchPlayers(testContext(t), w.js, "")
	require.NoError(t, err)
	t.Cleanup(pw.Stop)
	require.Eventually(t, func() bool { _, ok := pw.Zone("cy"); return ok }, 5*time.Second, time.Millisecond)
	at, _ := pw.Zone("cy")
	assert.Equal(t, zone.ID(1), at)
	filedOnce(t, z)
}
