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
func (w *World) Snapshot(dst []ChunkView) []ChunkView {
	if w.ranksStale {
		w.rankChunks()
	}
	w.views = w.views[:0]
	q := w.filter.Query()
	for q.NextTable() {
		ids, transforms, inputs, animations, clients, _ := q.GetColumns()
		chunk := q.GetRelation(inChunkIndex)
		w.views = append(w.views, ChunkView{
			Key:        w.rankKeys[w.rankOf[chunk.ID()]],
			Chunk:      chunk,
			Entities:   q.Entities(),
			IDs:        ids,
			Transforms: transforms,
			Inputs:     inputs,
			Animations: animations,
			Clients:    clients,
		})
	}
	dst = w.sortViews(dst)
	clear(w.views) // do not pin Ark's old column buffers between ticks
	return dst
}

// sortViews copies w.views into dst in key order: a counting sort on the
// chunks' ranks, O(tables + chunks) per tick instead of a comparison sort.
// Tables of one chunk then go by the ActorID in their first row.
func (w *World) sortViews(dst []ChunkView) []ChunkView {
	starts := slices.Grow(w.rankStarts[:0], len(w.rankKeys)+1)[:len(w.rankKeys)+1]
	clear(starts)
	for i := range w.views {
		starts[w.rankOf[w.views[i].Chunk.ID()]+1]++
	}
	for r := 1; r < len(starts); r++ {
		starts[r] += starts[r-1]
	}
	dst = slices.Grow(dst[:0], len(w.views))[:len(w.views)]
	for i := range w.views {
		r := w.rankOf[w.views[i].Chunk.ID()]
		dst[starts[r]] = w.views[i]
		starts[r]++
	}
	w.rankStarts = starts
	for i := 1; i < len(dst); i++ { // runs of one chunk are short: insertion sort
		for j := i; j > 0 && dst[j-1].Chunk == dst[j].Chunk && dst[j-1].IDs[0].ID > dst[j].IDs[0].ID; j-- {
			dst[j-1], dst[j] = dst[j], dst[j-1]
		}
	}
	return dst
}

// rankChunks numbers the chunk entities in key order ([grid.Less]). It runs
// in the first Snapshot after the set of chunks changed. Empty chunks are
// kept while they do not outnumber the occupied ones (see
// [EmptyChunkReserve]), so once a population has spread over its area that
// is rare next to ticks, even while it roams.
func (w *World) rankChunks() {
	w.rankKeys = w.rankKeys[:0]
	for key := range w.chunks {
		w.rankKeys = append(w.rankKeys, key)
	}
	slices.SortFunc(w.rankKeys, compareKeys)
	for rank, key := range w.rankKeys {
		id := int(w.chunks[key].entity.ID())
		if id >= len(w.rankOf) {
			w.rankOf = append(w.rankOf, make([]int32, id+1-len(w.rankOf))...)
		}
		w.rankOf[id] = int32(rank)
	}
	w.ranksStale = false
}

func compareKeys(a, b grid.AreaKey) int {
	switch {
	case grid.Less(a, b):
		return -1
	case grid.Less(b, a):
		return 1
	}
	return 0
}
