package systems

import (
	"hash/maphash"

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

// Prepare snapshots the world into f for tick: chunk views, the cluster
// partition, the canonical actor order with positions and ids, each chunk's
// occupied stencil, and the shards. It runs on the tick goroutine and
// allocates nothing once the population has been seen.
func (f *Frame) Prepare(w *ecs.World, tick uint64, plan ShardPlan) {
	f.Tick = tick
	f.views = w.Snapshot(f.views)
	f.keys = f.keys[:0]
	n := 0
	for i := range f.views {
		f.keys = append(f.keys, f.views[i].Key)
		n += f.views[i].Len()
	}
	f.clusters = f.part.Partition(f.keys, plan.Separation)
	f.resize(n)
	f.layout()
	f.linkStencils()
	f.cut(plan)
}

// layout assigns canonical indices: cluster by cluster, views in order,
// rows in order; consecutive views of one chunk form one group.
func (f *Frame) layout() {
	f.groups = f.groups[:0]
	f.biggest = 0
	f.clusterSize = resizeSlice(f.clusterSize, len(f.clusters))
	var at int32
	for ci, c := range f.clusters {
		start := at
		for _, v := range c.Members {
			view := &f.views[v]
			if len(f.groups) == 0 || f.groups[len(f.groups)-1].key != view.Key || f.groups[len(f.groups)-1].actors.hi != at {
				f.groups = append(f.groups, group{key: view.Key, actors: span{at, at}})
			}
			g := int32(len(f.groups) - 1)
			for r := range view.Len() {
				f.view[at] = v
				f.row[at] = int32(r)
				f.group[at] = g
				f.id[at] = view.IDs[r].ID
				f.session[at] = view.Clients[r].Session
				at++
			}
			f.groups[g].actors.hi = at
		}
		f.clusterSize[ci] = at - start
		f.biggest = max(f.biggest, int(at-start))
	}
}

// linkStencils records, for every occupied chunk, the actor ranges of the
// occupied chunks of its 3x3 stencil, in stencil order.
func (f *Frame) linkStencils() {
	if f.groupIndex == nil {
		f.groupIndex = make(map[grid.AreaKey]int32, len(f.groups))
	}
	clear(f.groupIndex)
	for g := range f.groups {
		f.groupIndex[f.groups[g].key] = int32(g)
	}
	for g := range f.groups {
		gr := &f.groups[g]
		gr.nst = 0
		for _, k := range grid.Stencil(gr.key) {
			if o, ok := f.groupIndex[k]; ok {
				gr.stencil[gr.nst] = f.groups[o].actors
				gr.nst++
			}
		}
	}
}

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
