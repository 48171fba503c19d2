package ecs

import "fmt"

// Guard locks the Ark world for the parallel phase, by holding an Ark query
// open without iterating it. Until [World.Release], workers may read the
// views of the last [World.Snapshot] and write the rows they own; any
// structural change panics instead of moving rows under their feet: World's
// Spawn, Despawn, Relocate, Teleport and Apply with a message saying what to
// do instead, Ark's own calls (NewEntity, RemoveEntity, Add, ...) with
// Ark's "locked world" message.
//
// Guard and Release belong to the tick goroutine. Guard panics if the world
// is already guarded.
func (w *World) Guard() {
	if w.guarded {
		panic("ecs: Guard called while the world is already guarded; call Release once after each parallel phase")
	}
	w.guard = w.guardFilter.Query()
	w.guarded = true
}

// Release ends the guard taken by [World.Guard]. It panics if the world is
// not guarded.
func (w *World) Release() {
	if !w.guarded {
		panic("ecs: Release called without Guard")
	}
	w.guard.Close()
	w.guarded = false
}

// Guarded reports whether the world is between Guard and Release.
func (w *World) Guarded() bool { return w.guarded }

func (w *World) checkUnguarded(op string) {
	if w.guarded {
		panicGuarded(op)
	}
}

// panicGuarded is outlined so that the checks stay cheap to inline.
func panicGuarded(op string) {
	if op == "Apply" {
		panic("ecs: Apply called while the world is guarded for the parallel phase; " +
			"call Release when the workers have joined, then Apply in the join")
	}
	panic(fmt.Sprintf("ecs: %s called while the world is guarded for the parallel phase; "+
		"queue structural changes from serial systems (Ingest/Join), or collect them per worker "+
		"and queue them in the join", op))
}
