package zone_test

import (
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// Purse is a plain component of a test game's own.
type Purse struct{ Gold uint32 }

// Title is a coded one.
type Title struct{ Text string }

type titleCodec struct{}

func (titleCodec) Append(dst []byte, v *Title) []byte { return append(dst, v.Text...) }
func (titleCodec) Decode(src []byte, v *Title) error  { v.Text = string(src); return nil }

// give gives the actor id of zone z's world a Purse of gold (or sets
// the one it has) and, when title is not "", a Title.
func (w *zones) give(z zone.ID, id components.ActorID, gold uint32, title string) {
	world := w.servers[z].srv.World()
	e, ok := world.Entity(id)
	require.True(w.t, ok)
	if purses := ark.NewMap[Purse](world.Ark()); purses.Has(e) {
		purses.Get(e).Gold = gold
	} else {
		purses.Add(e, &Purse{Gold: gold})
	}
	if title != "" {
		ark.NewMap[Title](world.Ark()).Add(e, &Title{Text: title})
	}
}

// purseOf returns the Purse and Title of actor id in zone z's world, and
// whether it has each.
func (w *zones) purseOf(z zone.ID, id components.ActorID) (Purse, bool, string, bool) {
	world := w.servers[z].srv.World()
	e, ok := world.Entity(id)
	require.True(w.t, ok)
	var p Purse
	var title string
	purses, titles := ark.NewMap[Purse](world.Ark()), ark.NewMap[Title](world.Ark())
	hasPurse, hasTitle := purses.Has(e), titles.Has(e)
	if hasPurse {
		p = *purses.Get(e)
	}
	if hasTitle {
		title = titles.Get(e).Text
	}
	return p, hasPurse, title, hasTitle
}

// walkEast walks player v, standing at x 7800 of twoZones' zone 1, to x
// 8600 in zone 2, a step a round, and waits six rounds more.
func walkEast(t *testing.T, v *viewer, step func()) {
	seq := uint32(0)
	for x := float32(7850); x <= 8600; x += 50 {
		seq++
		require.NoError(t, v.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: 100})))
		step()
	}
	for range 6 {
		step()
	}
}

// TestAPlayersNameAndComponentsCrossTheBorderWithIt: a named player
// with a Purse and a Title of the game's own walks from zone 1 into zone
// 2. Zone 2's actor for it has both, with their values; zone 1's ghost of
// it has neither (zone 2 keeps them now). The player leaves on zone 2,
// which keeps its actor under its name, as the server it joined would
// have; zone 1, which let it go, keeps nothing.
func TestAPlayersNameAndComponentsCrossTheBorderWithIt(t *testing.T) {
	w := startGatewayZones(t, twoZones, zone.Options{})
	ann := w.joinViaAs(1, 7800, 100, "ann")
	step := func() {
		w.round()
		ann.read()
	}
	for range 3 {
		step()
	}
	require.Len(t, ann.welcomes, 1)
	first := components.ActorID{ID: ann.welcomes[0]}
	w.give(1, first, 42, "smith")

	walkEast(t, ann, step)
	owner, id, _, at := w.walkerAt()
	require.Equal(t, zone.ID(2), owner, "zone 2 owns the player now")
	require.Equal(t, float32(8600), at.X)
	require.Len(t, ann.welcomes, 2)
	purse, hasPurse, title, hasTitle := w.purseOf(2, id)
	assert.True(t, hasPurse && hasTitle, "the player's actor on zone 2 has its Purse and Title")
	assert.Equal(t, Purse{Gold: 42}, purse)
	assert.Equal(t, "smith", title)
	_, hasPurse, _, hasTitle = w.purseOf(1, first)
	assert.False(t, hasPurse || hasTitle, "zone 1's ghost of it keeps neither")
	assert.Zero(t, w.servers[2].z.Stats().Handoffs.ComponentsLeft)

	ann.c.Close()
	for range 3 {
		w.gw.Step()
		w.round()
	}
	k, kept := w.servers[2].srv.Kept("ann")
	require.True(t, kept, "zone 2 keeps ann, who left there, under her name")
	assert.Equal(t, float32(8600), k.Transform.X)
	_, kept = w.servers[1].srv.Kept("ann")
	assert.False(t, kept, "zone 1 let her go: it keeps nothing")
}

// TestAnActorsComponentsTheReceiverDoesNotKnowAreCountedNotFatal: zone 2
// saves a Title zone 1 does not know, and a Purse of another version.
// Its NPC with both walks into zone 1: zone 1 takes the NPC without them,
// counting both.
func TestAnActorsComponentsTheReceiverDoesNotKnowAreCountedNotFatal(t *testing.T) {
	typesOf[1] = []save.Type{save.Plain[Purse]("test.purse", 2)}
	t.Cleanup(func() { delete(typesOf, 1) })
	w := startZones(t, twoZones)
	npc := w.spawn(2, 8600, 100)
	w.round()
	w.give(2, npc, 7, "miller")
	owners := w.walkTo(append(span(8500, 7800, -100), 7800, 7800, 7800), w.round)
	require.Equal(t, zone.ID(1), owners[len(owners)-1])
	taken := w.npcs(1)
	require.Len(t, taken, 1)
	_, hasPurse, _, hasTitle := w.purseOf(1, taken[0])
	assert.False(t, hasPurse || hasTitle)
	assert.Equal(t, uint64(2), w.servers[1].z.Stats().Handoffs.ComponentsLeft)
	assert.Equal(t, uint64(1), w.servers[1].z.Stats().Handoffs.Taken)
}

// TestAnNPCsComponentsCrossTheBorderWithIt: an NPC with a Purse walks
// from zone 2 into zone 1 and back; each owner in turn holds its Purse,
// with a value zone 1 changed while it owned the NPC.
func TestAnNPCsComponentsCrossTheBorderWithIt(t *testing.T) {
	w := startZones(t, twoZones)
	npc := w.spawn(2, 8600, 100)
	w.round()
	w.give(2, npc, 7, "")
	w.walkTo(append(span(8500, 7800, -100), 7800, 7800, 7800), w.round)
	taken := w.npcs(1)
	require.Len(t, taken, 1)
	purse, hasPurse, _, hasTitle := w.purseOf(1, taken[0])
	require.True(t, hasPurse)
	assert.False(t, hasTitle)
	assert.Equal(t, Purse{Gold: 7}, purse)
	_, hasPurse, _, _ = w.purseOf(2, npc)
	assert.False(t, hasPurse, "zone 2's ghost keeps no Purse")

	w.give(1, taken[0], 9, "")
	w.walkTo(append(span(7900, 8700, 100), 8700, 8700, 8700), w.round)
	require.Equal(t, []components.ActorID{npc}, w.npcs(2))
	purse, hasPurse, _, _ = w.purseOf(2, npc)
	require.True(t, hasPurse)
	assert.Equal(t, Purse{Gold: 9}, purse, "the value zone 1 gave it came back")
	_, hasPurse, _, _ = w.purseOf(1, taken[0])
	assert.False(t, hasPurse)
}
