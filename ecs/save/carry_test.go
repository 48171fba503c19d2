package save_test

import (
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/ecs/save"
)

// TestCarriedComponentsArriveOnAnotherWorld carries an entity's plain and
// coded components to an entity of another world: the values arrive, a
// value the receiver cannot take is left out with the reason while the
// others arrive, and a list cut anywhere is refused whole.
func TestCarriedComponentsArriveOnAnotherWorld(t *testing.T) {
	from := ark.NewWorld()
	e := from.NewEntity()
	ark.NewMap[Health](from).Add(e, &Health{Points: 7, Max: 9, Poisoned: true})
	ark.NewMap[Label](from).Add(e, &Label{Text: "smith"})
	list := save.AppendCarried([]byte{0xAA}, from, e, gameTypes())[1:]
	n, err := save.CarriedLen(append(list, 1, 2, 3))
	require.NoError(t, err)
	assert.Equal(t, len(list), n, "the list knows its own end")

	to := ark.NewWorld()
	got := to.NewEntity()
	ark.NewMap[Health](to).Add(got, &Health{Points: 1}) // set in place
	left, err := save.GiveCarried(to, got, list, gameTypes())
	require.NoError(t, err)
	assert.Zero(t, left)
	assert.Equal(t, Health{Points: 7, Max: 9, Poisoned: true}, *ark.NewMap[Health](to).Get(got))
	assert.Equal(t, "smith", ark.NewMap[Label](to).Get(got).Text)

	// A receiver with the label in another version, and without the
	// health: neither is given, and the error says why for each.
	other := ark.NewWorld()
	o := other.NewEntity()
	left, err = save.GiveCarried(other, o, list, []save.Type{save.Coded[Label]("game.label", 3, labelCodec{})})
	assert.Equal(t, 2, left)
	assert.ErrorContains(t, err, `"game.health" is not a registered type here`)
	assert.ErrorContains(t, err, `"game.label" came in version 2, registered here as 3`)
	assert.False(t, ark.NewMap[Label](other).Has(o))

	// A label its codec refuses is left out; the health still arrives.
	bad := ark.NewWorld()
	be := bad.NewEntity()
	ark.NewMap[Label](from).Get(e).Text = "a\x00b"
	left, err = save.GiveCarried(bad, be, save.AppendCarried(nil, from, e, gameTypes()), gameTypes())
	assert.Equal(t, 1, left)
	assert.ErrorContains(t, err, "a label holds no NUL")
	assert.True(t, ark.NewMap[Health](bad).Has(be))
	assert.False(t, ark.NewMap[Label](bad).Has(be))

	for cut := range len(list) {
		_, err := save.CarriedLen(list[:cut])
		assert.ErrorIs(t, err, save.ErrCarriedMalformed, "cut at %d", cut)
		left, err := save.GiveCarried(bad, be, list[:cut], gameTypes())
		assert.ErrorIs(t, err, save.ErrCarriedMalformed, "cut at %d", cut)
		assert.Zero(t, left)
	}

	// DropCarried leaves an entity none of the types.
	save.DropCarried(to, got, gameTypes())
	assert.False(t, ark.NewMap[Health](to).Has(got))
	assert.False(t, ark.NewMap[Label](to).Has(got))
	assert.Equal(t, []byte{0}, save.AppendCarried(nil, to, got, gameTypes()), "nothing to carry")
}
