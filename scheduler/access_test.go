package scheduler_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/scheduler"
)

type (
	Position struct{ X, Y float64 }
	Velocity struct{ X, Y float64 }
	Health   struct{ HP float32 }
)

func TestAccessConflictRules(t *testing.T) {
	S := scheduler.Uses
	cases := []struct {
		name     string
		a, b     scheduler.Access
		conflict bool
	}{
		{"read/read of a component", S(scheduler.Read[Position]()), S(scheduler.Read[Position]()), false},
		{"write/read of a component", S(scheduler.Write[Position]()), S(scheduler.Read[Position]()), true},
		{"read/write of a component", S(scheduler.Read[Position]()), S(scheduler.Write[Position]()), true},
		{"write/write of a component", S(scheduler.Write[Position]()), S(scheduler.Write[Position]()), true},
		{"writes of different components", S(scheduler.Write[Position]()), S(scheduler.Write[Velocity]()), false},
		{"a pointer type is another type", S(scheduler.Write[Position]()), S(scheduler.Read[*Position]()), false},
		{"read/read of a resource", S(scheduler.ReadResource("outbox")), S(scheduler.ReadResource("outbox")), false},
		{"write/read of a resource", S(scheduler.WriteResource("outbox")), S(scheduler.ReadResource("outbox")), true},
		{"write/write of a resource", S(scheduler.WriteResource("outbox")), S(scheduler.WriteResource("outbox")), true},
		{"resources are not components", S(scheduler.WriteResource("Position")), S(scheduler.Read[Position]()), false},
		{"structural against nothing", S(scheduler.Structural()), S(), true},
		{"nothing against structural", S(), S(scheduler.Structural()), true},
		{"nothing against nothing", S(), S(), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.conflict, c.a.ConflictsWith(c.b), c.name)
		assert.Equal(t, c.conflict, c.b.ConflictsWith(c.a), c.name+" (swapped)")
	}
}

func TestAccessIsTheSameWhateverTheDeclarationOrder(t *testing.T) {
	a := scheduler.Uses(scheduler.Read[Velocity](), scheduler.Write[Position](), scheduler.Read[Position](),
		scheduler.ReadResource("snapshot"), scheduler.Read[Velocity]())
	b := scheduler.Uses(scheduler.ReadResource("snapshot"), scheduler.Read[Position](), scheduler.Write[Position](),
		scheduler.Read[Velocity]())
	assert.Equal(t, a, b)
	assert.Equal(t, "reads scheduler_test.Velocity; writes scheduler_test.Position; reads resource snapshot", a.String())
	assert.Equal(t, "touches nothing", scheduler.Uses().String())
	assert.Equal(t, "structural", scheduler.Uses(scheduler.Structural()).String())
	assert.True(t, scheduler.Uses(scheduler.Structural()).IsStructural())
	assert.PanicsWithValue(t, `scheduler: a resource needs a name, got ""`, func() { scheduler.ReadResource("") })
}
