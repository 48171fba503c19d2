package scheduler

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
)

// Placement pins a system relative to another, named system; make one with
// [Before] or [After] and pass it to [Builder.Add].
type Placement struct {
	after  bool
	target string
}

// Before pins a system to finish before the named system starts: it runs in
// an earlier stage.
func Before(name string) Placement { return Placement{target: name} }

// After pins a system to start after the named system has finished: it runs
// in a later stage.
func After(name string) Placement { return Placement{after: true, target: name} }

// Builder collects systems and turns them into a [Schedule]. The zero
// Builder is ready to use.
type Builder struct {
	regs []registration
}

type registration struct {
	sys  System
	pins []Placement
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder { return &Builder{} }

// Add registers sys, optionally pinned before or after other systems, and
// returns b for chaining. Registration order matters: systems whose access
// conflicts run in the order they were added, unless a pin says otherwise.
// Mistakes (nil, duplicate names, unknown pin targets) are reported by Build.
func (b *Builder) Add(sys System, pins ...Placement) *Builder {
	b.regs = append(b.regs, registration{sys: sys, pins: append([]Placement(nil), pins...)})
	return b
}

// Schedule is the built plan: an ordered list of stages, each a set of
// systems that may run at the same time. Build it once at start-up and call
// Run every tick. Run must not be called concurrently with itself.
type Schedule struct {
	stages []stage
}

type member struct {
	name     string
	access   Access
	serial   SerialSystem
	parallel ParallelSystem
	salt     uint64 // keeps this system's unit keys apart from others' in the pool
	stage    int
	why      string // what put it in its stage, for String
	plan     []Unit // reused Plan buffer
	took     SystemTime
}

// edge says system from runs in an earlier stage than system to, and why.
type edge struct {
	from, to int
	why      string
}

// Build checks the registrations and assigns every system to a stage, as
// early as these rules allow: a system runs in a later stage than every
// system it is pinned after, and than every earlier-registered system it
// conflicts with, unless pins (directly or through other systems) order the
// two the other way; then the pins win. Within a stage, systems are listed
// in registration order. The result depends only on the registrations, so
// the same registrations build the same schedule every time. Errors name
// every problem found: a nil system, an empty or duplicate name, a system
// that is neither a SerialSystem nor a ParallelSystem (or both), a
// structural ParallelSystem, a pin to an unknown system or to itself, and
// pins that form a cycle.
func (b *Builder) Build() (*Schedule, error) {
	members, errs := b.members()
	pins, pinErrs := b.pinEdges(members)
	if err := errors.Join(append(errs, pinErrs...)...); err != nil {
		return nil, err
	}
	g, err := newPrecedence(members, pins)
	if err != nil {
		return nil, err
	}
	g.addConflicts(members)
	g.assignStages(members)
	s := &Schedule{}
	for _, m := range members { // registration order within a stage
		for len(s.stages) <= m.stage {
			s.stages = append(s.stages, stage{})
		}
		s.stages[m.stage].members = append(s.stages[m.stage].members, m)
	}
	for i := len(s.stages) - 2; i >= 0; i-- {
		next := &s.stages[i+1]
		s.stages[i].poolAfter = next.poolAfter || !next.direct()
	}
	return s, nil
}

func (b *Builder) members() ([]*member, []error) {
	var errs []error
	members := make([]*member, len(b.regs))
	seen := make(map[string]bool)
	for i, r := range b.regs {
		m := &member{}
		members[i] = m
		if r.sys == nil {
			errs = append(errs, fmt.Errorf("scheduler: system #%d is nil", i))
			continue
		}
		m.name = r.sys.Name()
		m.access = r.sys.Access()
		m.serial, _ = r.sys.(SerialSystem)
		m.parallel, _ = r.sys.(ParallelSystem)
		switch {
		case m.name == "":
			errs = append(errs, fmt.Errorf("scheduler: system #%d (%T) has an empty name", i, r.sys))
		case seen[m.name]:
			errs = append(errs, fmt.Errorf("scheduler: two systems are named %q; names must be unique", m.name))
		}
		seen[m.name] = true
		switch {
		case m.serial == nil && m.parallel == nil:
			errs = append(errs, fmt.Errorf("scheduler: system %q (%T) has neither RunSerial nor Plan and RunUnit", m.name, r.sys))
		case m.serial != nil && m.parallel != nil:
			errs = append(errs, fmt.Errorf("scheduler: system %q (%T) is both a SerialSystem and a ParallelSystem; implement one", m.name, r.sys))
		case m.parallel != nil && m.access.structural:
			errs = append(errs, fmt.Errorf("scheduler: system %q is parallel and structural; structural changes run on the tick goroutine, so make it a SerialSystem", m.name))
		}
		h := fnv.New64a()
		h.Write([]byte(m.name))
		m.salt = h.Sum64()
	}
	return members, errs
}

// pinEdges turns placements into "from runs in an earlier stage than to".
func (b *Builder) pinEdges(members []*member) ([]edge, []error) {
	byName := make(map[string]int, len(members))
	for i, m := range members {
		if _, dup := byName[m.name]; !dup && m.name != "" {
			byName[m.name] = i
		}
	}
	var edges []edge
	var errs []error
	for i, r := range b.regs {
		for _, p := range r.pins {
			word := "before"
			if p.after {
				word = "after"
			}
			t, ok := byName[p.target]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("scheduler: system %q is pinned %s %q, which is not registered", members[i].name, word, p.target))
			case t == i:
				errs = append(errs, fmt.Errorf("scheduler: system %q is pinned %s itself", members[i].name, word))
			case p.after:
				edges = append(edges, edge{from: t, to: i, why: "pinned after " + p.target})
			default:
				edges = append(edges, edge{from: i, to: t, why: members[i].name + " is pinned before " + p.target})
			}
		}
	}
	return edges, errs
}

// precedence is the "runs in an earlier stage than" relation between
// systems, as a DAG over registration indices.
type precedence struct {
	before [][]bool   // before[i][j]: i runs in an earlier stage than j
	why    [][]string // the reason for before[i][j], for String
}

// newPrecedence starts the graph from the pins and rejects pin cycles.
func newPrecedence(members []*member, pins []edge) (*precedence, error) {
	n := len(members)
	g := &precedence{before: make([][]bool, n), why: make([][]string, n)}
	for i := range n {
		g.before[i] = make([]bool, n)
		g.why[i] = make([]string, n)
	}
	for _, e := range pins {
		if !g.before[e.from][e.to] {
			g.before[e.from][e.to], g.why[e.from][e.to] = true, e.why
		}
	}
	if cyc := g.cycle(); len(cyc) > 0 {
		names := make([]string, len(cyc))
		for k, i := range cyc {
			names[k] = fmt.Sprintf("%q", members[i].name)
		}
		return nil, fmt.Errorf("scheduler: pins form a cycle among %s", strings.Join(names, ", "))
	}
	return g, nil
}

// cycle returns the systems on (or between) cycles: what is left after
// repeatedly removing systems with no remaining predecessor, then those with
// no remaining successor.
func (g *precedence) cycle() []int {
	n := len(g.before)
	left := make([]bool, n)
	for i := range left {
		left[i] = true
	}
	peel := func(has func(i, j int) bool) {
		for changed := true; changed; {
			changed = false
			for i := range n {
				if !left[i] {
					continue
				}
				free := true
				for j := range n {
					if left[j] && has(i, j) {
						free = false
						break
					}
				}
				if free {
					left[i], changed = false, true
				}
			}
		}
	}
	peel(func(i, j int) bool { return g.before[j][i] }) // no predecessor left
	peel(func(i, j int) bool { return g.before[i][j] }) // no successor left
	var cyc []int
	for i, l := range left {
		if l {
			cyc = append(cyc, i)
		}
	}
	return cyc
}

// reaches reports whether a path of "before" edges leads from a to b.
func (g *precedence) reaches(a, b int) bool {
	seen := make([]bool, len(g.before))
	stack := []int{a}
	seen[a] = true
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for j, e := range g.before[i] {
			if e && !seen[j] {
				if j == b {
					return true
				}
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	return false
}

// addConflicts orders every conflicting pair: by registration, unless the
// graph already orders the later system first (through pins). Adding an edge
// only where no path runs the other way keeps the graph acyclic.
func (g *precedence) addConflicts(members []*member) {
	for j := range members {
		for i := range j {
			why, ok := members[i].access.conflict(members[j].access, members[i].name, members[j].name)
			if !ok || g.before[i][j] || g.reaches(j, i) {
				continue
			}
			g.before[i][j], g.why[i][j] = true, "after "+members[i].name+": "+why
		}
	}
}

// assignStages puts every system one stage after its latest predecessor
// (the longest path to it) and records the reason from the first such
// predecessor in registration order.
func (g *precedence) assignStages(members []*member) {
	n := len(members)
	done := make([]bool, n)
	for placed := 0; placed < n; {
		for j := range n {
			if done[j] {
				continue
			}
			ready, stage := true, 0
			for i := range n {
				if g.before[i][j] {
					if !done[i] {
						ready = false
						break
					}
					stage = max(stage, members[i].stage+1)
				}
			}
			if !ready {
				continue
			}
			members[j].stage = stage
			for i := range n {
				if g.before[i][j] && members[i].stage == stage-1 {
					members[j].why = g.why[i][j]
					break
				}
			}
			done[j] = true
			placed++
		}
	}
}
