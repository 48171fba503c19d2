package link

import "sync/atomic"

// Hold holds a tick's movement batches until the tick ends, for a
// transport that implements wire.Flusher. The relay posts each session's
// batches while it runs; woken at once, the sessions' writers would run
// their system calls on the cores the tick is using, and slow it. Held,
// they are woken by the server's Flush after the tick. Until a server has
// flushed once, nothing is held: a program that drives the transport
// without Flush sees every batch go at once.
type Hold[C Session] struct {
	on   atomic.Bool
	open []C // Flush's
}

// Wake returns the channel a post of movement batches wakes: the
// session's writer's own (wake), or, once the server flushes, the one
// Flush releases (held). Both have a capacity of one.
func (h *Hold[C]) Wake(wake, held chan struct{}) chan struct{} {
	if h.on.Load() {
		return held
	}
	return wake
}

// Flush holds batches from now on, and releases those held: for each open
// session of t, release(session), which calls [Release] with its
// channels. The server calls it from the tick goroutine only.
func (h *Hold[C]) Flush(t *Table[C], release func(C)) {
	h.on.Store(true)
	h.open = t.AppendOpen(h.open[:0])
	for _, c := range h.open {
		release(c)
	}
	clear(h.open)
}

// Release wakes a writer whose batches were held.
func Release(held, wake chan struct{}) {
	select {
	case <-held:
		Wake(wake)
	default:
	}
}
