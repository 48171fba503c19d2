package scheduler

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
)

// Item is one entry of a system's access declaration; make them with
// [Read], [Write], [ReadResource], [WriteResource] and [Structural], and
// combine them with [Uses].
type Item struct {
	typ        reflect.Type
	resource   string
	write      bool
	structural bool
}

// Read declares that a system reads component type T (as stored, for example
// Read[components.Transform]()).
func Read[T any]() Item { return Item{typ: reflect.TypeFor[T]()} }

// Write declares that a system writes component type T. Writing implies
// reading.
func Write[T any]() Item { return Item{typ: reflect.TypeFor[T](), write: true} }

// ReadResource declares that a system reads the named shared resource (a
// snapshot, a session table, an outbox: anything that is not a component).
// It panics on an empty name.
func ReadResource(name string) Item { return Item{resource: resourceName(name)} }

// WriteResource declares that a system writes the named shared resource. It
// panics on an empty name.
func WriteResource(name string) Item { return Item{resource: resourceName(name), write: true} }

// Structural declares that a system changes the world's structure (creates
// or removes entities, adds or removes components, changes relations). A
// structural system conflicts with every other system, so it always runs
// alone in its stage, on the tick goroutine.
func Structural() Item { return Item{structural: true} }

func resourceName(name string) string {
	if name == "" {
		panic("scheduler: a resource needs a name, got \"\"")
	}
	return name
}

// Access is what a system touches in a tick: the component types and
// resources it reads and writes, and whether it is structural. The zero
// Access touches nothing and conflicts with nothing but structural systems.
type Access struct {
	reads, writes     []reflect.Type // sorted, no type in both
	readRes, writeRes []string       // sorted, no name in both
	structural        bool
}

// Uses builds an Access from items. Duplicates are merged and a write of
// something subsumes a read of it, so the order of items does not matter.
func Uses(items ...Item) Access {
	var a Access
	for _, it := range items {
		switch {
		case it.structural:
			a.structural = true
		case it.typ != nil && it.write:
			a.writes = append(a.writes, it.typ)
		case it.typ != nil:
			a.reads = append(a.reads, it.typ)
		case it.resource != "" && it.write:
			a.writeRes = append(a.writeRes, it.resource)
		case it.resource != "":
			a.readRes = append(a.readRes, it.resource)
		}
	}
	a.writes = sortTypes(a.writes)
	a.reads = slices.DeleteFunc(sortTypes(a.reads), func(t reflect.Type) bool {
		return slices.Contains(a.writes, t)
	})
	slices.Sort(a.writeRes)
	a.writeRes = slices.Compact(a.writeRes)
	slices.Sort(a.readRes)
	a.readRes = slices.Compact(a.readRes)
	a.readRes = slices.DeleteFunc(a.readRes, func(s string) bool {
		return slices.Contains(a.writeRes, s)
	})
	return a
}

// sortTypes orders types by name (then package path, for equal names) and
// removes duplicates, so an Access prints the same on every build.
func sortTypes(ts []reflect.Type) []reflect.Type {
	slices.SortFunc(ts, func(a, b reflect.Type) int {
		return cmp.Or(cmp.Compare(a.String(), b.String()), cmp.Compare(a.PkgPath(), b.PkgPath()))
	})
	return slices.Compact(ts)
}

// IsStructural reports whether the access declares structural changes.
func (a Access) IsStructural() bool { return a.structural }

// ConflictsWith reports whether systems with accesses a and b must not run at
// the same time: one writes what the other reads or writes (component type or
// resource), or either is structural.
func (a Access) ConflictsWith(b Access) bool {
	_, ok := a.conflict(b, "", "")
	return ok
}

// conflict explains the first conflict found between system an (access a)
// and system bn (access b).
func (a Access) conflict(b Access, an, bn string) (why string, ok bool) {
	switch {
	case a.structural && b.structural:
		return "both are structural", true
	case a.structural:
		return an + " is structural", true
	case b.structural:
		return bn + " is structural", true
	}
	if why, ok := overlap(a.writes, b.writes, b.reads, a.reads, reflect.Type.String, an, bn, ""); ok {
		return why, true
	}
	return overlap(a.writeRes, b.writeRes, b.readRes, a.readRes, func(s string) string { return s }, an, bn, "resource ")
}

// overlap finds a write/write or write/read clash between a's writes (aw)
// and b's accesses, or b's writes (bw) and a's reads (ar).
func overlap[T comparable](aw, bw, br, ar []T, name func(T) string, an, bn, kind string) (string, bool) {
	for _, x := range aw {
		if slices.Contains(bw, x) {
			return "both write " + kind + name(x), true
		}
		if slices.Contains(br, x) {
			return an + " writes " + kind + name(x) + ", " + bn + " reads it", true
		}
	}
	for _, x := range bw {
		if slices.Contains(ar, x) {
			return bn + " writes " + kind + name(x) + ", " + an + " reads it", true
		}
	}
	return "", false
}

// String lists the access: "reads A, B; writes C; reads resource r; writes
// resource w; structural", or "touches nothing".
func (a Access) String() string {
	var parts []string
	add := func(verb string, names []string) {
		if len(names) > 0 {
			parts = append(parts, verb+" "+strings.Join(names, ", "))
		}
	}
	add("reads", typeNames(a.reads))
	add("writes", typeNames(a.writes))
	add("reads resource", a.readRes)
	add("writes resource", a.writeRes)
	if a.structural {
		parts = append(parts, "structural")
	}
	if len(parts) == 0 {
		return "touches nothing"
	}
	return strings.Join(parts, "; ")
}

func typeNames(ts []reflect.Type) []string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.String()
	}
	return names
}
