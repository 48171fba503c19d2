package zone_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// moveBorder publishes m and waits until every server has read it.
func (w *zones) moveBorder(m zone.Map) uint64 {
	rev, err := zone.PublishMap(testContext(w.t), w.js, "", m)
	require.NoError(w.t, err)
	for _, id := range w.order {
		s := w.servers[id].z
		require.Eventually(w.t, func() bool { r, _ := s.Revision(); return r >= rev }, 5*time.Second, time.Millisecond)
	}
	return rev
}

// TestActorsInChunksAMovedBorderGivesAwayAreHandedOver: the border between
// zones 1 and 2 moves one chunk west; zone 1's NPCs in that chunk are
// handed to zone 2, and the players on both sides see them throughout: no
// Disappear, no second Appear.
func TestActorsInChunksAMovedBorderGivesAwayAreHandedOver(t *testing.T) {
	w := startZones(t, twoZones)
	var npcs []components.ActorID
	for i := range 5 {
		npcs = append(npcs, w.spawn(1, 5000+float32(i)*300, 100))
	}
	p1 := w.join(1, 3000, 100)
	p2 := w.join(2, 8800, 100)
	players := []*viewer{p1, p2}
	step := func() {
		w.round()
		for _, p := range players {
			p.read()
		}
	}
	for range 3 {
		step()
	}
	for _, p := range players {
		require.Len(t, p.others(), 5, "the NPCs")
	}
	require.Equal(t, npcs, w.npcs(1))
	before := slices.Concat(p1.events, p2.events)

	moved := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	moved.Zones[0].Chunks.MaxX = 0
	moved.Zones[1].Chunks.MinX = 1
	w.moveBorder(moved)
	for range 8 {
		step()
	}
	assert.Empty(t, w.npcs(1), "zone 1 owns none")
	assert.Len(t, w.npcs(2), 5, "zone 2 owns the five")
	assert.Equal(t, before, slices.Concat(p1.events, p2.events), "no Appear or Disappear")
	for _, p := range players {
		assert.Len(t, p.others(), 5)
	}
	h1, h2 := w.servers[1].z.Stats().Handoffs, w.servers[2].z.Stats().Handoffs
	assert.Equal(t, uint64(5), h1.Committed, "%+v", h1)
	assert.Equal(t, uint64(5), h2.Taken, "%+v", h2)
}

// TestPlayersInChunksAMovedBorderGivesAwayMoveWithThem: two players of
// zone 1 stand in the column a moved border gives zone 2; zone 1 hands
// their actors over with their sessions, through the gateway: each is
// welcomed again by zone 2 on its one connection and walks on there,
// no move lost or applied twice.
func TestPlayersInChunksAMovedBorderGivesAwayMoveWithThem(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{})
	walkers := []*viewer{w.joinVia(1, 5000, 100), w.joinVia(1, 5000, 3000)}
	step := func() {
		w.round()
		for _, p := range walkers {
			p.read()
		}
	}
	for range 3 {
		step()
	}
	for _, p := range walkers {
		require.Len(t, p.welcomes, 1)
	}
	moved := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	moved.Zones[0].Chunks.MaxX = 0
	moved.Zones[1].Chunks.MinX = 1
	w.moveBorder(moved)
	seq := uint32(0)
	for range 12 {
		seq++
		for i, p := range walkers {
			require.NoError(t, p.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: 5000 + 10*float32(seq), Y: 100 + 2900*float32(i)})))
		}
		step()
	}
	for range 4 {
		step()
	}
	for _, p := range walkers {
		require.Len(t, p.welcomes, 2, "welcomed again, by zone 2")
		assert.Zero(t, p.corrections)
		_, closed := p.c.CloseReason()
		assert.False(t, closed, "one connection throughout")
	}
	h1, h2 := w.servers[1].z.Stats().Handoffs, w.servers[2].z.Stats().Handoffs
	assert.Equal(t, uint64(2), h1.Committed, "%+v", h1)
	assert.Equal(t, uint64(2), h2.SessionsTaken, "%+v", h2)
	assert.Zero(t, h2.InputsMissed+h2.InputsDuplicated+h2.SessionsLost, "%+v", h2)
	// Zone 2 applied every move, the last one included.
	var last []float32
	for _, cv := range w.servers[2].srv.World().Snapshot(nil) {
		for r := range cv.Len() {
			if cv.Clients[r].Session != 0 {
				assert.Equal(t, seq, cv.Inputs[r].Seq)
				last = append(last, cv.Transforms[r].X)
			}
		}
	}
	assert.Equal(t, []float32{5000 + 10*float32(seq), 5000 + 10*float32(seq)}, last)
}

// TestAHandoffMarginKeepsAnActorNearTheBorderWithItsOwner: with a margin
// of 1,000 units, zone 2's NPC stays zone 2's while it stands less than
// that past the border (at x 8,192), shown to zone 1's player as a ghost,
// and is handed to zone 1 once it goes deeper; walking back it stays zone
// 1's until it is as far past the border on the other side. A margin of a
// chunk or more is refused.
func TestAHandoffMarginKeepsAnActorNearTheBorderWithItsOwner(t *testing.T) {
	w := startZonesWith(t, twoZones, zone.Options{HandoffMargin: 1000})
	w.spawn(2, 8600, 100)
	p := w.join(1, 6000, 100)
	step := func() { w.round(); p.read() }
	step()
	owners := w.walkTo([]float32{8400, 8200, 8000, 7800, 7400, 7400, 7400}, step)
	assert.Equal(t, []zone.ID{2, 2, 2, 2, 2}, owners[:5], "within the margin (to 7,192) it stays zone 2's")
	require.Len(t, p.others(), 1, "zone 1's player sees it all along")
	assert.Len(t, w.npcs(2), 1)
	assert.Empty(t, w.npcs(1))

	owners = w.walkTo([]float32{7100, 7100, 7100, 7100}, step)
	assert.Equal(t, zone.ID(1), owners[len(owners)-1], "past the margin, handed to zone 1")
	owners = w.walkTo([]float32{8000, 8600, 9100, 9100, 9100}, step)
	assert.Equal(t, []zone.ID{1, 1, 1}, owners[:3], "back across the border, within the margin (to 9,192), zone 1's still")
	owners = w.walkTo([]float32{9300, 9300, 9300, 9300}, step)
	assert.Equal(t, zone.ID(2), owners[len(owners)-1])
	assert.Len(t, p.others(), 1)
	assert.Equal(t, []string{"appear " + itoa(p.others()[0])}, p.events, "no blink throughout")

	srv, err := throng.New(throng.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	nc, _ := connect(t, w.url)
	_, err = zone.New(testContext(t), srv, nc, zone.Options{Zone: 1, Name: "a", HandoffMargin: 4096})
	assert.ErrorContains(t, err, "HandoffMargin 4096")
}
