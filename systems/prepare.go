package systems

import (
	"hash/maphash"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
)

// ShardPlan says how Prepare cuts clusters into work units.
type ShardPlan struct {
	// Separation is clusterSeparationChunks (clamped up to grid.MinSeparation
	// by the partitioner).
	Separation int
	// MinClusterActors: clusters smaller than this are swept together into
	// shared units instead of getting their own.
	MinClusterActors int
	// MinShardActors is the fewest actors in one shard (at least 1).
	MinShardActors int
	// ShardsPerCluster caps the shards of one cluster (at least 1).
	ShardsPerCluster int
}

// prepare lays out tick in f from w's chunk views, which the caller has
// put in f.views (a Snapshot of w): the cluster partition, the canonical
// actor order with positions and ids, each chunk's occupied stencil, and
// the shards. It runs on the tick goroutine and allocates nothing once the
// population has been seen. Pipeline.prepare takes the same steps, and may
// leave the placing to Move's units (deferPlace).
func (f *Frame) prepare(w *ecs.World, tick uint64, plan ShardPlan) {
	f.begin(w, tick, plan)
	f.placeRange(0, int32(f.Len()), &f.layoutCounts)
	f.end(plan)
}

// begin starts prepare: the partition, the frame's size and its groups
// (groupChunks).
func (f *Frame) begin(w *ecs.World, tick uint64, plan ShardPlan) {
	f.Tick = tick
	f.keys = f.keys[:0]
	f.viewAt = f.viewAt[:0]
	n := 0
	for i := range f.views {
		f.keys = append(f.keys, f.views[i].Key)
		f.viewAt = append(f.viewAt, int32(n))
		n += f.views[i].Len()
	}
	f.clusters = f.part.Partition(f.keys, plan.Separation)
	f.resize(n)
	f.viewGroup = resizeSlice(f.viewGroup, len(f.views))
	f.groupChunks(w.ChunkSize())
}

// end ends prepare once the cells are placed: the stencils' parts and the
// shards.
func (f *Frame) end(plan ShardPlan) {
	f.linkStencils()
	f.cut(plan)
}

// groupChunks assigns the chunks their canonical ranges: cluster by
// cluster, chunk by chunk (the views of one chunk form one group), each
// with its cell grid, its views (members) and its cells, counted
// (countGroup) and numbered in order. Its actors are placed in them after
// (placeRange): within a chunk cell by cell, rows of one cell in view and
// table order. A sparse world's chunks are one cell each, counted
// without reading an actor.
func (f *Frame) groupChunks(chunkSize float32) {
	f.groups = f.groups[:0]
	f.members = f.members[:0]
	f.biggest = 0
	f.clusterSize = resizeSlice(f.clusterSize, len(f.clusters))
	var at int32
	for ci, c := range f.clusters {
		start := at
		for m := 0; m < len(c.Members); {
			key := f.views[c.Members[m]].Key
			end, n := m, 0
			g := int32(len(f.groups))
			for end < len(c.Members) && f.views[c.Members[end]].Key == key {
				n += f.views[c.Members[end]].Len()
				f.viewGroup[c.Members[end]] = g
				end++
			}
			f.groups = append(f.groups, group{key: key, actors: span{at, at + int32(n)}, side: uint8(cellsPerSide(n)),
				viewsLo: int32(len(f.members)), viewsHi: int32(len(f.members) + end - m)})
			f.members = append(f.members, c.Members[m:end]...)
			at += int32(n)
			m = end
		}
		f.clusterSize[ci] = at - start
		f.biggest = max(f.biggest, int(at-start))
	}
	f.cellOf = resizeSlice(f.cellOf, int(at))
	var cells int32
	for gi := range f.groups {
		n := f.countGroup(int32(gi), chunkSize, &f.layoutCounts)
		g := &f.groups[gi]
		g.cellsLo = cells
		cells += n
		g.cellsHi = cells
	}
	f.cells = resizeSlice(f.cells, int(cells))
}

// placeRange places the actors lo to hi-1 in their cells (placeGroup),
// and writes the cells of the chunks whose first actor is among them.
// Move's units place their own shards this way in a big world on the
// pool (Frame.deferPlace). scratch is the caller's.
func (f *Frame) placeRange(lo, hi int32, scratch *[]int32) {
	// The first group ending past lo: groups hold ascending actors.
	i, j := 0, len(f.groups)
	for i < j {
		m := int(uint(i+j) >> 1)
		if f.groups[m].actors.hi <= lo {
			i = m + 1
		} else {
			j = m
		}
	}
	for g := i; g < len(f.groups) && f.groups[g].actors.lo < hi; g++ {
		f.placeGroup(int32(g), lo, hi, scratch)
	}
}

// deferPlaceChunks is the fewest chunks for which a tick on the pool
// leaves the placing of actors to Move's units (Frame.deferPlace): in a
// world of thousands of chunks, a tenth of a millisecond on the tick
// goroutine.
const deferPlaceChunks = 1024

// maxCellsPerSide caps the cell grid of a chunk (8 x 8).
const maxCellsPerSide = 8

// maxCellActors is about the most actors a cell of a crowded chunk gets:
// the relay decides a cell that straddles two interest bands as a bit set
// of at most maskActors senders, and a chunk's cells are not all equally
// full.
const maxCellActors = 45

// cellsPerSide chooses a chunk's cell grid from its population: one cell
// for a handful, 2 x 2 from 24 actors, 4 x 4 from 96, 5 x 5 from 300, and
// from 1,126 as many a side as keep cells at maxCellActors or under (6 x 6,
// then 7 x 7 from 1,621, 8 x 8 from 2,206 on).
//
// Finer cells leave fewer pairs to the cells that straddle an interest
// band's edge; coarser ones cost less a recipient (fewer cells to visit,
// longer block copies). The steps are where BenchmarkTick's square crowds
// found the balance with the default tiers (docs/performance.md); past
// maxCellActors a cell no longer fits the bit sets.
func cellsPerSide(n int) int {
	switch {
	case n < 24:
		return 1
	case n < 96:
		return 2
	case n < 300:
		return 4
	}
	k := 5
	for k < maxCellsPerSide && n > k*k*maxCellActors {
		k++
	}
	return k
}

// countGroup sorts the actors of group g (a chunk) into the cells of its
// k x k grid, by their position at the start of the tick: the cell of
// each in f.cellOf (in the order of its views' rows, from its first
// actor's index), and returns how many of its cells are occupied. With
// more than one kind of sender, and a grid or tables to split
// (Frame.sets), by cell and kind (bucketBySet). A sparse chunk of one kind
// is one cell, unsorted. Cells let the relay treat a whole block of
// senders at once; sorting by them makes each block contiguous. counts is
// scratch.
func (f *Frame) countGroup(gi int32, chunkSize float32, counts *[]int32) int32 {
	g := &f.groups[gi]
	k := int(g.side)
	g.mixed = 0
	if f.bySet(g) {
		return f.bucketBySet(g, chunkSize, counts)
	}
	if k == 1 {
		return 1
	}
	var seen [maxCellsPerSide * maxCellsPerSide]bool
	cellOf := f.cellOf[g.actors.lo:g.actors.hi]
	ox, oy := float32(g.key.X)*chunkSize, float32(g.key.Y)*chunkSize
	scale := float32(k) / chunkSize
	i := 0
	for _, v := range f.members[g.viewsLo:g.viewsHi] {
		for _, t := range f.views[v].Transforms {
			cx := min(max(int((t.X-ox)*scale), 0), k-1)
			cy := min(max(int((t.Y-oy)*scale), 0), k-1)
			c := uint16(cy*k + cx)
			cellOf[i] = c
			seen[c] = true
			i++
		}
	}
	n := int32(0)
	for _, in := range seen {
		n += int32(b2i(in))
	}
	return n
}

// bySet reports whether group g's actors are sorted by kind as well as by
// cell (bucketBySet).
func (f *Frame) bySet(g *group) bool { return f.sets > 1 && (g.side > 1 || f.tables > 1) }

// bucketBySet is countGroup's sort where classes follow tier tables of
// their own, or ranks under the budget (Frame.sets > 1): by cell, then by
// kind (Frame.classSet), so that every cell holds the senders of one kind
// and the relay decides a cell by its table and rank alone. A chunk of one
// cell (a sparse one) is split by table only: its kinds of one table share
// the cell (cell.mixed, the group's mixed bits by table), whose few
// senders the relay decides one by one where ranks matter (rankedPairs),
// so that ranks, which act only on recipients over their budget, do not
// double a sparse world's cells. It returns the group's occupied buckets;
// counts is scratch.
func (f *Frame) bucketBySet(g *group, chunkSize float32, counts *[]int32) int32 {
	k, sets := int(g.side), f.sets
	*counts = resizeSlice(*counts, k*k*sets)
	seen := *counts
	clear(seen)
	cellOf := f.cellOf[g.actors.lo:g.actors.hi]
	ox, oy := float32(g.key.X)*chunkSize, float32(g.key.Y)*chunkSize
	scale := float32(k) / chunkSize
	i := 0
	for _, v := range f.members[g.viewsLo:g.viewsHi] {
		view := &f.views[v]
		for r := range view.Clients {
			kind := f.classSet[view.Clients[r].Class%components.MaxClasses]
			if k == 1 { // one cell, by table (see above): no position needed
				// The cell's kind is its table's first (placeGroup): a
				// sender of any other kind makes it mixed, even where
				// the cell holds no sender of its own kind.
				bucket := f.tableKind[kind]
				if kind != bucket {
					g.mixed |= 1 << bucket
				}
				cellOf[i] = uint16(bucket)
				seen[bucket] = 1
				i++
				continue
			}
			t := &view.Transforms[r]
			cx := min(max(int((t.X-ox)*scale), 0), k-1)
			cy := min(max(int((t.Y-oy)*scale), 0), k-1)
			c := uint16((cy*k+cx)*sets + int(kind))
			cellOf[i] = c
			seen[c] = 1
			i++
		}
	}
	n := int32(0)
	for _, in := range seen {
		n += in
	}
	return n
}

// placeGroup puts those of group g's actors whose index is from lo to
// hi-1 in their cells (countGroup's), and, when its first actor is one
// of them, writes the group's cells from its first on (groupChunks): the
// end of a counting sort, each actor placed in its own. scratch is the
// caller's.
func (f *Frame) placeGroup(gi, lo, hi int32, scratch *[]int32) {
	g := &f.groups[gi]
	at, k := g.actors.lo, int(g.side)
	views := f.members[g.viewsLo:g.viewsHi]
	first := lo <= at && at < hi
	if !f.bySet(g) && k == 1 { // a sparse chunk is one cell: no sorting
		if first {
			// Of one table, it may hold kinds of every rank: mixed while
			// any kind is ranked (bucketBySet), without reading a class
			// here.
			f.cells[g.cellsLo] = cell{actors: g.actors, mixed: f.anyRanked}
		}
		a := at
		for _, v := range views {
			n := int32(f.views[v].Len())
			for r := max(lo-a, 0); r < min(hi-a, n); r++ {
				f.cellIdx[a+r] = g.cellsLo
				f.place(a+r, v, int(r), gi)
			}
			a += n
		}
		return
	}
	sets := 1
	if f.bySet(g) {
		sets = f.sets
	}
	*scratch = resizeSlice(*scratch, k*k*sets+1)
	counts := *scratch
	clear(counts)
	cellOf := f.cellOf[g.actors.lo:g.actors.hi]
	for _, c := range cellOf {
		counts[c+1]++
	}
	next := g.cellsLo
	for c := 1; c <= k*k*sets; c++ {
		if counts[c] > 0 {
			cl := at + counts[c-1]
			for a := max(cl, lo); a < min(cl+counts[c], hi); a++ {
				f.cellIdx[a] = next
			}
			if first {
				set := (c - 1) % sets
				f.cells[next] = cell{actors: span{cl, cl + counts[c]}, kind: uint8(set), mixed: g.mixed>>set&1 != 0}
			}
			next++
		}
		counts[c] += counts[c-1]
	}
	i := 0
	for _, v := range views {
		for r := range f.views[v].Len() {
			a := at + counts[cellOf[i]]
			counts[cellOf[i]]++
			i++
			if lo <= a && a < hi {
				f.place(a, v, r, gi)
			}
		}
	}
}

// place puts row r of view v at canonical index a, in group g. The rest of
// the actor's row (its id and client) Move reads, in parallel: in a big
// world the rows are spread over thousands of tables, one cache miss each.
func (f *Frame) place(a, v int32, r int, g int32) {
	f.view[a], f.row[a], f.group[a] = v, int32(r), g
}

// linkStencils lists the occupied chunks in key order (sorted) and cuts
// them into the parts linkPart links: one part for a world of a few
// hundred chunks, linked here; more for a big world, whose parts Move's
// units link beside its shards (Pipeline.linking), as each part writes
// only its own chunks' groups and cells. The parts depend on the chunks
// alone, never on the workers.
func (f *Frame) linkStencils() {
	f.byKey = f.byKey[:0]
	f.sorted = f.sorted[:0]
	for v := range f.views {
		if g := f.viewGroup[v]; len(f.byKey) == 0 || f.byKey[len(f.byKey)-1] != g {
			f.byKey = append(f.byKey, g)
			gr := &f.groups[g]
			f.sorted = append(f.sorted, stencilKey{row: grid.RowOrder(gr.key.WorldOrCell, gr.key.Y), x: gr.key.X, cellsLo: gr.cellsLo, cellsHi: gr.cellsHi, actors: gr.actors.hi - gr.actors.lo})
		}
	}
	parts := 1
	if n := len(f.byKey); n >= 2*linkPartChunks {
		parts = min(maxLinkParts, n/linkPartChunks)
	}
	f.links = resizeSlice(f.links, parts)
	for k := range f.links {
		f.links[k].done = false
	}
}

// linkPartChunks is about the fewest chunks a part of the stencil links
// has (linkStencils): some tens of microseconds of walking, worth a unit
// of the pool. maxLinkParts caps the parts.
const (
	linkPartChunks = 512
	maxLinkParts   = 16
)

// stencilPart is a part of the chunks' stencil links: the cells of its
// chunks' stencils, the most senders one of them holds, and whether it has
// been linked this tick.
type stencilPart struct {
	cells      []int32
	maxSenders int32
	done       bool
}

// linkPart records, for every occupied chunk of part k, the occupied
// chunks of its 3x3 stencil, in stencil order, their cells and their
// actors (group.senders; the part's most in stencilPart.maxSenders). The
// stencil's nine keys ascend in key order (row by row, then by X), and
// the chunks are sorted by key, so each stencil row is a run of the
// key-sorted chunks: no hashing. Visiting the chunks in key order, the
// first chunk of each stencil row (worldOrCell, Y+dy, X-1) only moves
// forward: one cursor per row, found by a search for the part's first
// chunk, then walked, where a search per chunk and row would cost a third
// of Prepare in a world of thousands of chunks. The walk reads the
// chunks' keys and cells from sorted, in key order, rather than from each
// group, whose memory is scattered.
func (f *Frame) linkPart(k int) {
	lp := &f.links[k]
	cells := lp.cells[:0]
	sorted := f.sorted
	lo, hi := len(f.byKey)*k/len(f.links), len(f.byKey)*(k+1)/len(f.links)
	var cursor [3]int
	most := int32(0)
	for gi := lo; gi < hi; gi++ {
		me := sorted[gi]
		gr := &f.groups[f.byKey[gi]]
		gr.nst = 0
		gr.part = uint8(k)
		gr.nbrLo = int32(len(cells))
		senders := int32(0)
		for dy := range int32(3) {
			// Y and X wrap as int32 at the edges of the key space, as the
			// keys' own order (grid.Less) has them.
			row := grid.RowOrder(gr.key.WorldOrCell, gr.key.Y+dy-1)
			i := cursor[dy]
			if gi == lo {
				i = firstFrom(sorted, row, me.x-1)
			}
			for i < len(sorted) && (sorted[i].row < row || sorted[i].row == row && sorted[i].x < me.x-1) {
				i++
			}
			cursor[dy] = i
			for ; i < len(sorted); i++ {
				o := &sorted[i]
				if o.row != row || o.x > me.x+1 {
					break
				}
				gr.stencil[gr.nst] = f.byKey[i]
				gr.nst++
				senders += o.actors
				for c := o.cellsLo; c < o.cellsHi; c++ {
					cells = append(cells, c)
				}
			}
		}
		gr.nbrHi = int32(len(cells))
		gr.senders = senders
		most = max(most, senders)
	}
	lp.cells, lp.maxSenders, lp.done = cells, most, true
}

// firstFrom returns the index of the first chunk of sorted at or after
// (row, x) in key order, or len(sorted).
func firstFrom(sorted []stencilKey, row uint64, x int32) int {
	lo, hi := 0, len(sorted)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if sorted[m].row < row || sorted[m].row == row && sorted[m].x < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// linkRest links the parts not linked yet, in order.
func (f *Frame) linkRest() {
	for k := range f.links {
		if !f.links[k].done {
			f.linkPart(k)
		}
	}
}

// stencilKey is an occupied chunk as linkStencils walks them, in key
// order: its row (grid.RowOrder), its X, its cells and how many actors it
// has.
type stencilKey struct {
	row              uint64
	x                int32
	cellsLo, cellsHi int32
	actors           int32
}

// stencilCells returns the cells of g's 3x3 stencil in canonical order, as
// indices into f.cells.
func (f *Frame) stencilCells(g *group) []int32 { return f.links[g.part].cells[g.nbrLo:g.nbrHi] }

// cut splits clusters into shards: a cluster of n actors gets
// min(ShardsPerCluster, n/MinShardActors) shards of near-equal size; runs
// of clusters smaller than MinClusterActors are swept into shared shards.
func (f *Frame) cut(plan ShardPlan) {
	if f.seed == (maphash.Seed{}) {
		f.seed = maphash.MakeSeed()
	}
	minShard := max(plan.MinShardActors, 1)
	perCluster := max(plan.ShardsPerCluster, 1)
	f.shards = f.shards[:0]
	var at int32
	sweep := Shard{Lo: -1}
	flush := func() {
		if sweep.Lo >= 0 {
			f.shards = append(f.shards, sweep)
			sweep.Lo = -1
		}
	}
	for ci, c := range f.clusters {
		size := int32(0)
		for _, v := range c.Members {
			size += int32(f.views[v].Len())
		}
		lo, hi := at, at+size
		at = hi
		if int(size) < plan.MinClusterActors {
			if sweep.Lo < 0 {
				sweep = Shard{Lo: lo, Hi: hi, Cluster: int32(ci), Key: f.shardKey(c.Lowest, 0, 0), Sweep: true}
			}
			sweep.Hi = hi
			if int(sweep.Hi-sweep.Lo) >= minShard*perCluster {
				flush()
			}
			continue
		}
		flush()
		k := max(min(perCluster, int(size)/minShard), 1)
		for s := range k {
			a := lo + int32(int64(size)*int64(s)/int64(k))
			b := lo + int32(int64(size)*int64(s+1)/int64(k))
			f.shards = append(f.shards, Shard{Lo: a, Hi: b, Cluster: int32(ci), Key: f.shardKey(c.Lowest, s+1, k)})
		}
	}
	flush()
}

// shardKey names a shard across ticks: its cluster's lowest chunk, its
// index and the shard count. It is a hash, never zero.
func (f *Frame) shardKey(k grid.AreaKey, index, count int) uint64 {
	var h maphash.Hash
	h.SetSeed(f.seed)
	var b [20]byte
	put32(b[0:], k.WorldOrCell)
	put32(b[4:], uint32(k.X))
	put32(b[8:], uint32(k.Y))
	put32(b[12:], uint32(index))
	put32(b[16:], uint32(count))
	h.Write(b[:])
	return h.Sum64() | 1
}

func put32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}
