package ecs

import (
	"cmp"
	"slices"

	"github.com/throng-go/throng/grid"
)

// PropSnapshot appends to dst[:0] one [ChunkView] per non-empty table of
// props, in every chunk, and returns it: what [World.Snapshot] is for the
// other actors, for a caller that needs every prop at once (a save).
// Views are ordered as Snapshot's are, by chunk ([grid.Less]), then by the
// ActorID in their first row, so the same calls give the same views on
// every run, and a list of both merges by that order. The views are valid
// as Snapshot's are: until the next structural change.
//
// A world without props returns at once. Otherwise it queries every prop
// table and sorts them: it is for the rare caller (a save, the spectator
// window), not for every tick, which asks [World.PropsIn] for the chunks
// it looks at. It queries Ark, so call it in the serial phases, not under
// the guard.
func (w *World) PropSnapshot(dst []ChunkView) []ChunkView {
	dst = dst[:0]
	if w.props == 0 {
		return dst
	}
	q := w.propFilter.Query()
	for q.NextTable() {
		ids, transforms, inputs, animations, clients, _ := q.GetColumns()
		chunk := q.GetRelation(inChunkIndex)
		c := w.chunkMap.Get(chunk)
		dst = append(dst, ChunkView{
			Key: grid.AreaKey{WorldOrCell: c.WorldOrCell, X: c.X, Y: c.Y}, Chunk: chunk, Entities: q.Entities(),
			IDs: ids, Transforms: transforms, Inputs: inputs, Animations: animations, Clients: clients,
		})
	}
	slices.SortFunc(dst, func(a, b ChunkView) int {
		return cmp.Or(grid.Compare(a.Key, b.Key), cmp.Compare(a.IDs[0].ID, b.IDs[0].ID))
	})
	return dst
}
