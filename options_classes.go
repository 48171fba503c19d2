package throng

import (
	"fmt"
	"math"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/systems"
)

// Throng's own relevance classes, by name in the "classes" section; a
// game's own classes follow them, numbered from 3 in the order the section
// lists them.
const (
	ClassPlayer = "player"
	ClassNPC    = "npc"
	ClassProp   = "prop"
)

// DefaultUnitsPerMetre converts the "classes" section's metres to world
// units when unitsPerMetre is not set: 70, where a 4,096-unit chunk is
// 58.5 m.
const DefaultUnitsPerMetre = 70

// DefaultNPCBudgetRank is the "npc" class's budgetRank unless the section
// says otherwise: under a client's budget, players come before NPCs.
const DefaultNPCBudgetRank = 1

// MaxBudgetRank is the lowest rank a class may take: its periods are
// stretched 2^7 times its recipient's spread, to the cap of 255 ticks.
const MaxBudgetRank = 7

// ClassOptions is one entry of the "classes" section: how a relevance
// class of actors is seen. Every actor has a class (its
// components.Client.Class): a player's actor is of class "player" unless
// the game's Admit says otherwise (Entry.Class), an actor spawned without
// a client is an "npc", a prop a "prop", unless its spawn names another
// (find a class's number with [Server.Class]).
type ClassOptions struct {
	// Name is the class's name, unique in the section: "player", "npc" and
	// "prop" configure Throng's own classes, any other name adds a class of
	// the game's. Key "name".
	Name string `json:"name"`
	// InterestTiers is the interest table the class's senders follow,
	// each step in units (beyondUnits) or metres (beyondMetres): how often
	// a recipient at a distance hears one of them. Empty means the
	// players' table (parallelism.interestTiers), which "player" always
	// follows: set that one there. Key "interestTiers".
	InterestTiers []ClassTier `json:"interestTiers,omitempty"`
	// BudgetRank orders the classes under a client's per-connection budget
	// (connection.maxRecordsPerTick): when a client's due records pass its
	// budget, the periods of a class of rank k are stretched 2^k times as
	// much as rank 0's, so at equal distance a player (rank 0) is heard
	// twice as often as an NPC (rank 1), and none waits longer than its
	// stretched period (at most 255 ticks). 0 to 7. Key "budgetRank"; nil
	// means [DefaultNPCBudgetRank] for "npc", 0 for the others.
	BudgetRank *int `json:"budgetRank,omitempty"`
	// RadiusUnits or RadiusMetres is how near a player the class's actors
	// matter. A player sees every prop of the class within it (and none
	// beyond it plus twice props.slackUnits); nil means props.radiusUnits.
	// A player hears no movement of an actor of the class (a player's, an
	// NPC) beyond it, though the actor still appears and disappears with
	// the 3x3 chunk stencil; nil means the whole stencil. Above 0; at most
	// one of the two. Keys "radiusUnits", "radiusMetres".
	RadiusUnits  *float32 `json:"radiusUnits,omitempty"`
	RadiusMetres *float32 `json:"radiusMetres,omitempty"`
}

// ClassTier is one step of a class's interest table, as [InterestTier]
// with its distance in units or in metres (exactly one of the two).
type ClassTier struct {
	BeyondUnits  *float32 `json:"beyondUnits,omitempty"`
	BeyondMetres *float32 `json:"beyondMetres,omitempty"`
	// Period is how many ticks apart updates are sent; 1 is every tick.
	Period int `json:"period"`
}

// ClassSettings is one class resolved; [Settings].Classes lists them by
// number, Throng's three first.
type ClassSettings struct {
	Name string
	// InterestTiers is the class's own table in units; nil: the players'.
	InterestTiers []InterestTier
	BudgetRank    int
	// RadiusUnits is the class's radius; 0 when not given (props then
	// take props.radiusUnits, moving actors the whole stencil).
	RadiusUnits float32
}

// resolveClasses resolves the "classes" section: Throng's three classes,
// then the game's.
func resolveClasses(r *resolver, given []ClassOptions, unitsPerMetre *float32) ([]ClassSettings, float32) {
	perMetre := r.distance("unitsPerMetre", unitsPerMetre, DefaultUnitsPerMetre)
	if unitsPerMetre != nil && *unitsPerMetre == 0 {
		r.fail("unitsPerMetre", "must be above 0")
	}
	classes := []ClassSettings{
		{Name: ClassPlayer},
		{Name: ClassNPC, BudgetRank: DefaultNPCBudgetRank},
		{Name: ClassProp},
	}
	seen := map[string]bool{}
	for i, c := range given {
		at := fmt.Sprintf("classes[%d].", i)
		if c.Name == "" {
			r.fail(at+"name", "must name the class")
			continue
		}
		if seen[c.Name] {
			r.fail(at+"name", "%q is listed twice", c.Name)
			continue
		}
		seen[c.Name] = true
		k := classIndex(classes, c.Name)
		if k < 0 {
			if len(classes) == components.MaxClasses {
				r.fail(at+"name", "%q is past the %d classes a server has (3 of them Throng's)", c.Name, components.MaxClasses)
				continue
			}
			k = len(classes)
			classes = append(classes, ClassSettings{Name: c.Name})
		}
		cl := &classes[k]
		if c.BudgetRank != nil {
			cl.BudgetRank = *c.BudgetRank
			if cl.BudgetRank < 0 || cl.BudgetRank > MaxBudgetRank {
				r.fail(at+"budgetRank", "must be 0 to %d, got %d", MaxBudgetRank, cl.BudgetRank)
			}
		}
		switch {
		case c.RadiusUnits != nil && c.RadiusMetres != nil:
			r.fail(at+"radiusMetres", "give radiusUnits or radiusMetres, not both")
		case c.RadiusUnits != nil:
			cl.RadiusUnits = r.positive(at+"radiusUnits", *c.RadiusUnits)
		case c.RadiusMetres != nil:
			cl.RadiusUnits = r.positive(at+"radiusMetres", *c.RadiusMetres) * perMetre
		}
		if len(c.InterestTiers) == 0 {
			continue
		}
		if c.Name == ClassPlayer {
			r.fail(at+"interestTiers", "the players' table is parallelism.interestTiers")
			continue
		}
		steps := make([]InterestTier, len(c.InterestTiers))
		for j, t := range c.InterestTiers {
			key := fmt.Sprintf("%sinterestTiers[%d].", at, j)
			switch {
			case (t.BeyondUnits == nil) == (t.BeyondMetres == nil):
				r.fail(key+"beyondUnits", "give beyondUnits or beyondMetres, one of the two")
			case t.BeyondUnits != nil:
				steps[j].BeyondUnits = *t.BeyondUnits
			default:
				steps[j].BeyondUnits = *t.BeyondMetres * perMetre
			}
			steps[j].Period = t.Period
		}
		cl.InterestTiers = r.tiers(at+"interestTiers", steps)
	}
	return classes, perMetre
}

// positive returns v, failing key unless it is above 0 and finite.
func (r *resolver) positive(key string, v float32) float32 {
	if f := float64(v); !(f > 0) || math.IsInf(f, 0) {
		r.fail(key, "must be a positive finite number, got %v", v)
	}
	return v
}

func classIndex(classes []ClassSettings, name string) int {
	for k, c := range classes {
		if c.Name == name {
			return k
		}
	}
	return -1
}

// Class returns the number of the relevance class named name (see
// [ClassOptions]): what an actor's components.Client.Class, or Admit's
// Entry.Class, holds to be of that class.
func (s *Server) Class(name string) (uint8, bool) {
	k := classIndex(s.settings.Classes, name)
	return uint8(max(k, 0)), k >= 0
}

// buildClasses turns the resolved classes into the pipeline's: each one's
// table (none of its own unless given; with interest management off, no
// class has one), rank and radius.
func buildClasses(settings Settings) ([]systems.Class, error) {
	out := make([]systems.Class, len(settings.Classes))
	for k, c := range settings.Classes {
		out[k] = systems.Class{Rank: uint8(c.BudgetRank), Radius: c.RadiusUnits}
		if c.InterestTiers == nil || !settings.Parallelism.InterestManagement {
			continue
		}
		steps := make([]interest.Step, len(c.InterestTiers))
		for i, t := range c.InterestTiers {
			steps[i] = interest.Step{BeyondUnits: t.BeyondUnits, Period: uint8(min(t.Period, 255))}
		}
		tiers, err := interest.NewTiers(steps, MaxSkipTicks)
		if err != nil {
			return nil, fmt.Errorf("throng: class %q: interest tiers: %w", c.Name, err)
		}
		out[k].Tiers, out[k].OwnTiers = tiers, true
	}
	return out, nil
}
