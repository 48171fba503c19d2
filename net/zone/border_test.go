package zone_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/zone"
)

// TestAPlayerNearABorderSeesActorsAcrossIt: a player in zone 1 next to
// zone 2 is shown zone 2's NPC standing across the border (Appear), gets
// its movement one tick after its owner moved it, and is told it is gone
// (Disappear) when it walks out of reach and when it is despawned. An
// NPC far from the border is never sent.
func TestAPlayerNearABorderSeesActorsAcrossIt(t *testing.T) {
	w := startZones(t, twoZones)
	listed := w.spy()
	walker := w.spawn(2, 8300, 100)  // chunk (2, 0): borders zone 1
	leaver := w.spawn(2, 8400, 5000) // chunk (2, 1)
	far := w.spawn(2, 15000, 100)    // chunk (3, 0): two chunks from zone 1
	p := w.join(1, 8000, 100)        // chunk (1, 0)

	w.round() // zone 1 admits the player; zone 2 sends its border NPCs
	w.round() // zone 1 spawns them as ghosts; the join shows them
	p.read()
	require.NotZero(t, p.self)
	require.Len(t, p.others(), 2, "the two NPCs by the border, not the far one")
	assert.Equal(t, 2, w.servers[1].z.Stats().Ghosts)
	// Client-less actors by class: a ghost keeps its owner's class, so a
	// remote player is seen by the players' tiers and rank.
	classes := func(id zone.ID) map[uint8]int {
		n := map[uint8]int{}
		for _, v := range w.servers[id].srv.World().Snapshot(nil) {
			for _, c := range v.Clients {
				if c.Session == 0 {
					n[c.Class]++
				}
			}
		}
		return n
	}
	assert.Equal(t, map[uint8]int{components.ClassNPC: 2}, classes(1), "zone 1: the NPCs' ghosts")
	assert.Equal(t, map[uint8]int{components.ClassNPC: 3, components.ClassPlayer: 1}, classes(2), "zone 2: its NPCs, and zone 1's player's ghost")

	// Only the walker moves, so every record is its ghost's.
	records := func() (xs []float32) {
		for _, r := range p.xs {
			xs = append(xs, r...)
		}
		return xs
	}
	var want []float32
	for x := float32(8350); x <= 8550; x += 50 {
		w.walk(2, walker, x)
		w.round()
		p.read()
		assert.Equal(t, want, records(), "the ghost follows its owner one tick later")
		want = append(want, x)
	}
	w.round()
	p.read()
	require.Len(t, p.xs, 1)
	assert.Equal(t, want, records(), "one record per move, in the tick after it")
	var ghost uint32
	for id := range p.xs {
		ghost = id
	}
	p.events = nil

	// Walking away: out of reach once in chunk 3.
	for x := float32(9500); x < 12288+1000; x += 1000 {
		w.walk(2, walker, x)
		w.round()
		p.read()
	}
	w.round()
	p.read()
	assert.Equal(t, []string{"disappear " + itoa(ghost)}, p.events, "the walker left the border band")

	w.servers[2].srv.World().Despawn(leaver)
	w.round()
	p.read()
	w.round()
	p.read()
	assert.Len(t, p.events, 2, "the leaver is gone too: %v", p.events)
	assert.Empty(t, p.others())
	assert.Zero(t, w.servers[1].z.Stats().Ghosts)

	got := listed()
	assert.NotContains(t, got[2], far.ID, "an NPC two chunks from the border is never sent")
	assert.Contains(t, got[2], walker.ID)
	assert.Equal(t, map[uint32]int{p.self: int(w.tick)}, got[1], "zone 1 sends its own player, from the tick of its join on")
}
