package ecs

import (
	"slices"

	"github.com/mlange-42/ark/ecs"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
)

// ChunkView is one Ark table of actors in one chunk: row i of every slice
// is the same actor. A chunk has one view per table, so more than one when
// users gave some of its actors components of their own.
//
// The slices alias Ark's storage. They are valid until the next
// [World.Apply] or any other structural change to the Ark world: do not
// keep them past the tick. During the parallel phase a worker may write the
// Transforms, Inputs and Animations rows of the actors it owns; it must not
// write Entities, IDs or Clients, nor reslice or append to any of them.
type ChunkView struct {
	Key        grid.AreaKey
	Chunk      ecs.Entity
	Entities   []ecs.Entity
	IDs        []components.ActorID
	Transforms []components.Transform
	Inputs     []components.MoveInput
	Animations []components.Animation
	Clients    []components.Client
}

// Len returns the number of actors in the view.
func (v *ChunkView) Len() int { return len(v.Entities) }

// Snapshot appends one [ChunkView] per non-empty (chunk, table) pair to
// dst[:0] and returns it. Views are ordered by chunk ([grid.Less]), then,
// within a chunk, by the ActorID in their first row. Rows are in Ark's table
// order (not ActorID order: a removal moves the table's last row into the
// gap), which depends only on the sequence of structural calls made on the
// World and its Ark world. So the same calls give the same views, row for
// row, on every run.
//
// Reuse dst across ticks: in steady state Snapshot allocates nothing.
// Snapshot is for the serial prepare phase; it may run under the guard but
// not concurrently with any other World method.
//
// A Snapshot taken with no structural change to any actor since the last
// one (no actor created, removed, given or stripped of a component or a
// relation target, whether through World or raw Ark calls: Ark's
// observers count them) copies the last one's views instead of querying
// every table again: they are still exact; a caller that kept that one
// may use it instead, when SnapshotGen says so (the pipeline's prepare
// takes its join's). One taken after changes that Applies alone made
// queries again only the tables of the chunks they touched, and merges
// them into the order it kept (see requery); after a raw Ark change to an
// actor, every table. Ark's World.Reset emits no events: do not call it on
// a World's Ark world.
func (w *World) Snapshot(dst []ChunkView) []ChunkView {
	if w.stale() {
		w.refresh(w.foreign || len(w.touched) > len(w.views)/requeryShare)
	}
	dst = slices.Grow(dst[:0], len(w.order))[:len(w.order)]
	for k, i := range w.order {
		dst[k] = w.views[i]
	}
	return dst
}

// SnapshotGen returns the generation of the views a Snapshot would give
// now: the same number as after an earlier Snapshot exactly when nothing
// has changed the views since (each Snapshot that must query tables again
// starts a new generation). A caller that kept an earlier Snapshot of the
// same generation may use it in place of a new one.
func (w *World) SnapshotGen() uint64 {
	if w.stale() {
		return w.shots + 1 // no Snapshot has had it yet
	}
	return w.shots
}

// stale reports whether the views must be brought up to date.
func (w *World) stale() bool {
	return w.shotAt != w.shape || w.chunksRemoved || len(w.unranked) > 0
}

// refresh brings the chunk order and the views up to date: every table
// queried again (full), or only the touched chunks' (requery).
func (w *World) refresh(full bool) {
	w.shots++
	if w.chunksRemoved || len(w.unranked) > 0 {
		w.rankChunks()
	}
	if full {
		w.query()
	} else {
		w.requery()
	}
}

// query takes the views from Ark's tables into w.views, in the tables'
// order, and puts their key order in w.order.
func (w *World) query() {
	clear(w.views) // no stale column buffers kept past their tables
	w.views = w.views[:0]
	w.viewChunk = w.viewChunk[:0]
	w.appendViews(w.filter.Query())
	w.orderViews()
	w.shot()
}

// requeryShare: Snapshot queries every table again once more than one
// view in requeryShare has a touched chunk (World.requery).
const requeryShare = 4

// requery brings the views up to date after Applies alone changed actors'
// shapes: only the tables of the chunks they touched changed (their rows,
// maybe their column buffers; tables came and went only there), so it
// drops those chunks' views and queries their tables again, each chunk by
// its relation target, and keeps every other view as it is: in a roaming
// world a few dozen actors change chunk a tick out of thousands of chunks,
// and querying every table again would make the snapshot grow with the
// map instead of with the change. The key order is kept too: the views
// kept stay in the order they had (their chunks' ranks keep their order),
// and the new ones are merged in (mergeOrder), where sorting every view
// again cost as much as the rest of the snapshot.
func (w *World) requery() {
	// Drop the touched chunks' views, each by moving the last view into
	// its place: a view is 168 bytes. at[p] is the index in the last
	// order of the view now at p, and pos its inverse (-1: dropped). The
	// walk reads the views' chunks from viewChunk, not from the views
	// (whose memory is a megabyte in a world of thousands of chunks).
	views, n := w.views, len(w.views)
	at := slices.Grow(w.viewAt[:0], n)[:n]
	pos := slices.Grow(w.viewPos[:0], n)[:n]
	for i := range at {
		at[i], pos[i] = int32(i), int32(i)
	}
	ids := w.viewChunk
	for i := 0; i < n; {
		if w.chunkSlots[ids[i]].mark == w.touchGen {
			n--
			pos[at[i]] = -1
			if i < n {
				views[i], ids[i], at[i] = views[n], ids[n], at[n]
				pos[at[i]] = int32(i)
			}
			continue
		}
		i++
	}
	clear(views[n:]) // no stale column buffers kept past their tables
	w.views, w.viewChunk = views[:n], ids[:n]
	w.viewAt, w.viewPos = at, pos
	// The views kept, in the last order.
	kept := w.order[:0]
	for _, o := range w.order {
		if p := pos[o]; p >= 0 {
			kept = append(kept, p)
		}
	}
	// A touched ID stands for whichever chunk holds it now: the one
	// touched may have been let go since, and its entity (or, removed,
	// its ID) given to a new chunk, over Applies with no Snapshot between
	// them. A slot whose entity was let go (parked or removed) is not
	// live until a chunk takes it again.
	for _, id := range w.touched {
		if c := &w.chunkSlots[id]; c.live {
			w.appendViews(w.chunkActors(c).Query())
		}
	}
	w.mergeOrder(kept, n)
	w.shot()
}

// mergeOrder puts in w.order the views of kept (in key order) and the
// views from index added on (the chunks queried again, none of kept's):
// those sorted by rank, then by the ActorID in their first row, and each
// put where a binary search by rank in kept places it.
func (w *World) mergeOrder(kept []int32, added int) {
	fresh := w.viewFresh[:0]
	for i := added; i < len(w.views); i++ {
		fresh = append(fresh, int32(i))
	}
	for k := 1; k < len(fresh); k++ { // a few dozen: insertion sort
		for j := k; j > 0 && w.viewBefore(fresh[j], fresh[j-1]); j-- {
			fresh[j-1], fresh[j] = fresh[j], fresh[j-1]
		}
	}
	out := slices.Grow(w.orderNext[:0], len(kept)+len(fresh))
	from := 0
	for _, v := range fresh {
		r := w.rankOf[w.viewChunk[v]]
		lo, hi := from, len(kept)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if w.rankOf[w.viewChunk[kept[m]]] < r {
				lo = m + 1
			} else {
				hi = m
			}
		}
		out = append(out, kept[from:lo]...)
		out = append(out, v)
		from = lo
	}
	out = append(out, kept[from:]...)
	w.orderNext, w.order = w.order, out
	w.viewFresh = fresh
}

// viewBefore reports whether view a goes before view b in key order: by
// its chunk's rank, then by the ActorID in its first row.
func (w *World) viewBefore(a, b int32) bool {
	ra, rb := w.rankOf[w.viewChunk[a]], w.rankOf[w.viewChunk[b]]
	if ra != rb {
		return ra < rb
	}
	return w.views[a].IDs[0].ID < w.views[b].IDs[0].ID
}

// appendViews appends a view per table of q, and closes it.
func (w *World) appendViews(q ecs.Query6[components.ActorID, components.Transform, components.MoveInput, components.Animation, components.Client, components.InChunk]) {
	for q.NextTable() {
		ids, transforms, inputs, animations, clients, _ := q.GetColumns()
		chunk := q.GetRelation(inChunkIndex)
		w.viewChunk = append(w.viewChunk, chunk.ID())
		w.views = append(w.views, ChunkView{
			Key:        w.ranked[w.rankOf[chunk.ID()]].key,
			Chunk:      chunk,
			Entities:   q.Entities(),
			IDs:        ids,
			Transforms: transforms,
			Inputs:     inputs,
			Animations: animations,
			Clients:    clients,
		})
	}
}

// shot starts counting changes afresh, the views ordered.
func (w *World) shot() {
	w.shotAt = w.shape
	w.foreign = false
	w.touched = w.touched[:0]
	w.touchGen++
	if w.touchGen == 0 { // wrapped: no mark may look current
		for i := range w.chunkSlots {
			w.chunkSlots[i].mark = 0
		}
		w.touchGen = 1
	}
}

// orderViews puts the views' key order in w.order: a counting sort on the
// chunks' ranks, O(tables + chunks) instead of a comparison sort, and
// without moving the views themselves (each is 168 bytes; Snapshot copies
// them once, in order, into the caller's slice). Tables of one chunk then
// go by the ActorID in their first row.
func (w *World) orderViews() {
	starts := slices.Grow(w.rankStarts[:0], len(w.ranked)+1)[:len(w.ranked)+1]
	clear(starts)
	for i := range w.views {
		starts[w.rankOf[w.views[i].Chunk.ID()]+1]++
	}
	for r := 1; r < len(starts); r++ {
		starts[r] += starts[r-1]
	}
	order := slices.Grow(w.order[:0], len(w.views))[:len(w.views)]
	for i := range w.views {
		r := w.rankOf[w.views[i].Chunk.ID()]
		order[starts[r]] = int32(i)
		starts[r]++
	}
	w.rankStarts = starts
	views := w.views
	for k := 1; k < len(order); k++ { // runs of one chunk are short: insertion sort
		for j := k; j > 0; j-- {
			a, b := &views[order[j-1]], &views[order[j]]
			if a.Chunk != b.Chunk || a.IDs[0].ID < b.IDs[0].ID {
				break
			}
			order[j-1], order[j] = order[j], order[j-1]
		}
	}
	w.order = order
}

// rankChunks brings the chunk order up to date: it runs in the first
// Snapshot after chunks were created or removed. It never sorts what is
// already in order.
//
// Removed chunks are dropped from the order in one pass that keeps the
// rest in place. Created chunks are merged in: sorted among themselves
// (usually there is one), then each, last first, is put where a binary
// search in the ranked chunks places it, moving the ranked chunks after it
// up in one copy. Every chunk moves at most once, and only those from the
// first removed or new one on are renumbered. So a new chunk costs
// O(log n) comparisons and a linear copy and renumbering, instead of the
// O(n log n) comparisons of a full sort, and while a crowd is still
// discovering its map that is every other tick.
// Only the first ranking, merging every chunk into an empty order, sorts
// them all.
func (w *World) rankChunks() {
	from := len(w.ranked) // ranks below from are unchanged
	if w.chunksRemoved {
		w.ranked, from = w.dropRemoved(w.ranked)
		w.chunksRemoved = false
	}
	added := w.unranked
	slices.SortFunc(added, func(a, b rankedChunk) int { return grid.Compare(a.key, b.key) })
	var top uint32
	for _, c := range added {
		top = max(top, c.entity.ID())
	}
	if int(top) >= len(w.rankOf) {
		w.rankOf = append(w.rankOf, make([]int32, int(top)+1-len(w.rankOf))...)
	}

	// ranked[:end] are the old chunks that stay put until the next
	// insertion; ranked[at:end] sort after added[j] and move up past it and
	// the j new chunks still to come before it.
	end := len(w.ranked)
	w.ranked = slices.Grow(w.ranked, len(added))[:end+len(added)]
	for j := len(added) - 1; j >= 0; j-- {
		at, _ := slices.BinarySearchFunc(w.ranked[:end], added[j].key, func(c rankedChunk, key grid.AreaKey) int {
			return grid.Compare(c.key, key)
		})
		copy(w.ranked[at+j+1:], w.ranked[at:end])
		w.ranked[at+j] = added[j]
		end = at
	}
	for rank := min(from, end); rank < len(w.ranked); rank++ {
		w.rankOf[w.ranked[rank].entity.ID()] = int32(rank)
	}
	w.unranked = added[:0]
}

// dropRemoved removes the chunks that are no longer in the index from cs,
// in place and keeping the order of the rest, and returns the shortened
// slice and the position of the first chunk dropped (len(cs) if none). A
// chunk let go had its entity parked or removed, and either bumped its
// slot's gen, so a comparison finds them without a map lookup. A chunk let
// go and created again, even with the same entity, is at a later gen, so
// its old entry goes while the new one waits in unranked.
func (w *World) dropRemoved(cs []rankedChunk) ([]rankedChunk, int) {
	first := len(cs)
	kept := cs[:0]
	for i, c := range cs {
		if w.chunkSlots[c.entity.ID()].gen == c.gen {
			kept = append(kept, c)
		} else {
			first = min(first, i)
		}
	}
	return kept, first
}

// PropsIn appends to dst one [ChunkView] per table of props in chunk key
// (none if the chunk has no entity) and returns it. The views are valid as
// Snapshot's are: until the next structural change. Props have tables of
// their own and no place in Snapshot's views, so that a tick's work over
// actors never touches them: a game's systems and the join ask for the
// props of the chunks they look at. It queries Ark, so call it in the
// serial phases, not under the guard.
func (w *World) PropsIn(key grid.AreaKey, dst []ChunkView) []ChunkView {
	c, ok := w.chunks[key]
	if !ok {
		return dst
	}
	q := w.chunkProps(&w.chunkSlots[c.entity.ID()]).Query()
	for q.NextTable() {
		ids, transforms, inputs, animations, clients, _ := q.GetColumns()
		dst = append(dst, ChunkView{
			Key: key, Chunk: c.entity, Entities: q.Entities(), IDs: ids, Transforms: transforms,
			Inputs: inputs, Animations: animations, Clients: clients,
		})
	}
	return dst
}
