package grid

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// MinSeparation is the smallest cluster separation, in chunks, that
// [Partitioner.Partition] uses; smaller requests are clamped up to it.
//
// Why 3: movement validation caps one update just below one chunk, so within
// a tick an actor can step into the next chunk and be seen from one chunk
// beyond that: its relay reach is 2 chunks. Chunks in different clusters are
// more than S chunks apart, so with S >= 3 they are at least 4 apart, beyond
// that reach with a chunk to spare. Every possible recipient of a cluster
// member is then in the same cluster, and clusters can be processed
// independently.
const MinSeparation = 3

// Cluster is one connected group of occupied chunks: chunks of the same
// worldOrCell linked by steps of at most the separation (Chebyshev distance
// in chunks).
type Cluster struct {
	// Lowest is the cluster's smallest chunk by [Less]. Clusters are ordered
	// by it, which is what makes the partition independent of input order.
	Lowest AreaKey
	// Members are the indices into the keys passed to Partition of the views
	// in this cluster, ascending, that is in submission order.
	Members []int32
}

// Partitioner groups occupied chunks into [Cluster] values. It keeps its
// buffers between calls, so once it has seen a population of a given size,
// partitioning a population no larger allocates nothing.
//
// The zero value is ready to use. A Partitioner is not safe for concurrent
// use; give each tick goroutine its own.
type Partitioner struct {
	views     []view     // input entries sorted by key, then index
	nodeOf    []int32    // input index -> chunk node
	chunks    []AreaKey  // distinct keys in Less order; node i is chunks[i]
	rows      []int32    // start node of each (worldOrCell, Y) row, then len(chunks)
	runOf     []int32    // chunk node -> its run (see linkRows)
	runX      [][2]int32 // per run: the X of its first and last chunk
	rowRuns   []int32    // first run of each row, then the number of runs
	parent    []int32    // union-find forest over runs
	size      []int32    // component size, valid at roots; in collect, root -> cluster index
	clusterOf []int32    // chunk node -> cluster index
	ends      []int32    // per cluster: end of its span in members
	members   []int32
	clusters  []Cluster
}

// view is one input entry packed so that comparing (hi, lo) as unsigned
// integers orders by worldOrCell, Y, X (the [Less] order) and then by input
// index: hi = worldOrCell<<32 | Y, lo = X<<32 | index, with X and Y's sign
// bits flipped so that negative coordinates sort first. Packed, a compare
// is two integer comparisons, which is what makes the sort cheap.
type view struct {
	hi, lo uint64
}

const signBit = 1 << 31

func packView(k AreaKey, index int32) view {
	return view{
		hi: RowOrder(k.WorldOrCell, k.Y),
		lo: uint64(uint32(k.X)^signBit)<<32 | uint64(uint32(index)),
	}
}

// RowOrder packs a row of chunks (worldOrCell, then Y) into one integer
// that orders rows as [Less] does, Y's sign bit flipped so that negative
// rows come first: comparing two rows is then one comparison.
func RowOrder(worldOrCell uint32, y int32) uint64 {
	return uint64(worldOrCell)<<32 | uint64(uint32(y)^signBit)
}

func (v view) key() AreaKey {
	return AreaKey{
		WorldOrCell: uint32(v.hi >> 32),
		X:           int32(uint32(v.lo>>32) ^ signBit),
		Y:           int32(uint32(v.hi) ^ signBit),
	}
}

func (v view) index() int32 {
	return int32(uint32(v.lo))
}

func compareViews(a, b view) int {
	if a.hi != b.hi {
		return cmp.Compare(a.hi, b.hi)
	}
	return cmp.Compare(a.lo, b.lo)
}

// Partition returns the connected components of the chunks in keys under
// "same worldOrCell and Chebyshev distance <= separation". separation is
// clamped up to [MinSeparation].
//
// keys holds one entry per occupied chunk view in submission order; a key may
// repeat (a chunk with several tables), and all its views land in the same
// cluster. Each input index appears in exactly one cluster's Members.
// Clusters are ordered by [Cluster.Lowest]; the result depends only on the
// multiset of keys and their indices, never on how the work is scheduled.
//
// The returned slice and every Members slice belong to p and stay valid only
// until the next call to Partition; copy what you keep longer. Partition
// panics if keys has more than math.MaxInt32 entries.
//
// Cost: O(n log n) to sort the n views (O(n) when keys come sorted, as a
// snapshot's do), O(u) over the u distinct chunks to find the runs of each
// row (chunks no more than the separation apart), then O(r * min(
// separation, rows)) over the r runs to link them (see linkRows): in a
// densely occupied world, where a row is one run, a few unions a row, not
// a dozen a chunk.
func (p *Partitioner) Partition(keys []AreaKey, separation int) []Cluster {
	if len(keys) > math.MaxInt32 {
		panic(fmt.Sprintf("grid: Partition takes at most %d chunk views, got %d", math.MaxInt32, len(keys)))
	}
	// No two chunks are more than 2^32-1 apart, so capping s there changes
	// nothing and keeps X-s and X+s inside int64.
	s := min(int64(max(separation, MinSeparation)), 1<<32)
	p.sortChunks(keys)
	p.linkRows(s)
	return p.collect(len(keys))
}

// sortChunks sorts the views by key and builds the distinct chunks, the row
// index over them and each view's chunk node.
func (p *Partitioner) sortChunks(keys []AreaKey) {
	p.views = resize(p.views, len(keys))
	for i, k := range keys {
		p.views[i] = packView(k, int32(i))
	}
	slices.SortFunc(p.views, compareViews)

	p.nodeOf = resize(p.nodeOf, len(keys))
	p.chunks = p.chunks[:0]
	p.rows = p.rows[:0]
	for _, v := range p.views {
		k := v.key()
		if n := len(p.chunks); n == 0 || p.chunks[n-1] != k {
			if n == 0 || !sameRow(p.chunks[n-1], k) {
				p.rows = append(p.rows, int32(n))
			}
			p.chunks = append(p.chunks, k)
		}
		p.nodeOf[v.index()] = int32(len(p.chunks) - 1)
	}
	p.rows = append(p.rows, int32(len(p.chunks)))
}

func sameRow(a, b AreaKey) bool {
	return a.WorldOrCell == b.WorldOrCell && a.Y == b.Y
}

// linkRows unions every pair of chunks within s. Within a row, chunks
// whose neighbours are no more than s apart form a run, every pair of it
// connected through the chunks between: runs, not chunks, are the nodes of
// the union-find, numbered in one pass without a union. Two runs of rows
// at most s apart hold a pair of chunks within s of each other exactly
// when their spans, each widened by s, overlap: a run's chunks are no
// more than s apart, so every stretch of 2s+1 columns across its span
// holds one of them. Runs of a row are ordered and disjoint, so one sweep
// over the runs of two rows links all such pairs: in a densely occupied
// world a row is one run, and two rows cost one union.
func (p *Partitioner) linkRows(s int64) {
	p.runOf = resize(p.runOf, len(p.chunks))
	p.runX = p.runX[:0]
	p.rowRuns = resize(p.rowRuns, len(p.rows))
	for r := 0; r+1 < len(p.rows); r++ {
		lo, hi := p.rows[r], p.rows[r+1]
		p.rowRuns[r] = int32(len(p.runX))
		p.runX = append(p.runX, [2]int32{p.chunks[lo].X, p.chunks[lo].X})
		for i := lo; i < hi; i++ {
			x := p.chunks[i].X
			if last := &p.runX[len(p.runX)-1]; int64(x)-int64(last[1]) > s {
				p.runX = append(p.runX, [2]int32{x, x})
			} else {
				last[1] = x
			}
			p.runOf[i] = int32(len(p.runX) - 1)
		}
	}
	p.rowRuns[len(p.rows)-1] = int32(len(p.runX))
	p.parent = resize(p.parent, len(p.runX))
	p.size = resize(p.size, len(p.runX))
	for i := range p.parent {
		p.parent[i] = int32(i)
		p.size[i] = 1
	}
	for r := 0; r+1 < len(p.rows); r++ {
		base := p.chunks[p.rows[r]]
		for r2 := r + 1; r2+1 < len(p.rows); r2++ {
			first := p.chunks[p.rows[r2]]
			if first.WorldOrCell != base.WorldOrCell || int64(first.Y)-int64(base.Y) > s {
				break
			}
			p.linkRowRuns(p.rowRuns[r], p.rowRuns[r+1], p.rowRuns[r2], p.rowRuns[r2+1], s)
		}
	}
}

// linkRowRuns links every run of [aLo, aHi) with every run of [bLo, bHi)
// whose span, widened by s, overlaps its own (see linkRows). Both rows'
// runs ascend, so the first b-run an a-run may reach only moves right.
func (p *Partitioner) linkRowRuns(aLo, aHi, bLo, bHi int32, s int64) {
	b := bLo
	for a := aLo; a < aHi; a++ {
		lo, hi := int64(p.runX[a][0])-s, int64(p.runX[a][1])+s
		for b < bHi && int64(p.runX[b][1]) < lo {
			b++
		}
		for c := b; c < bHi && int64(p.runX[c][0]) <= hi; c++ {
			p.union(a, c)
		}
	}
}

// find returns the root of x's component, pointing every node on the way
// straight at it (path compression).
func (p *Partitioner) find(x int32) int32 {
	root := x
	for p.parent[root] != root {
		root = p.parent[root]
	}
	for x != root {
		next := p.parent[x]
		p.parent[x] = root
		x = next
	}
	return root
}

// union merges the components of a and b, hanging the smaller under the
// larger (union by size) so trees stay shallow.
func (p *Partitioner) union(a, b int32) {
	ra, rb := p.find(a), p.find(b)
	if ra == rb {
		return
	}
	if p.size[ra] < p.size[rb] {
		ra, rb = rb, ra
	}
	p.parent[rb] = ra
	p.size[ra] += p.size[rb]
}

// collect numbers the components in order of their lowest chunk and lists
// each one's views in submission order with a counting sort.
func (p *Partitioner) collect(views int) []Cluster {
	p.clusters = p.clusters[:0]
	p.clusterOf = resize(p.clusterOf, len(p.chunks))
	// The components' sizes are no longer needed: size now maps a root run
	// to its cluster, -1 until the cluster is numbered.
	clusterOfRoot := p.size
	for i := range clusterOfRoot {
		clusterOfRoot[i] = -1
	}
	// Nodes are in Less order, so a component's first node is its lowest
	// chunk.
	for i := range p.chunks {
		root := p.find(p.runOf[i])
		if clusterOfRoot[root] < 0 {
			clusterOfRoot[root] = int32(len(p.clusters))
			p.clusters = append(p.clusters, Cluster{Lowest: p.chunks[i]})
		}
		p.clusterOf[i] = clusterOfRoot[root]
	}

	p.ends = resize(p.ends, len(p.clusters))
	clear(p.ends)
	for i := range views {
		p.ends[p.clusterOf[p.nodeOf[i]]]++
	}
	start := int32(0)
	for c, n := range p.ends {
		p.ends[c] = start // the fill cursor, which ends at the span's end
		start += n
	}
	p.members = resize(p.members, views)
	for i := range views {
		c := p.clusterOf[p.nodeOf[i]]
		p.members[p.ends[c]] = int32(i)
		p.ends[c]++
	}
	start = 0
	for c, end := range p.ends {
		p.clusters[c].Members = p.members[start:end:end]
		start = end
	}
	return p.clusters
}

// resize returns buf with length n, reusing its array when it is big enough.
// The contents are unspecified.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}
