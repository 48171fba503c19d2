package systems

import (
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/scheduler"
)

// The relay's setup, on the tick goroutine once Move is done: the
// corrections, the cells' boxes, and the due lists or keyed spreads the
// tick's recipients will read.

// beginRelay prepares the Relay phase once Move is done, on the tick
// goroutine: it sends this tick's corrections (so a corrected client reads
// its correction before the tick's movement), then computes each cell's
// box around its actors' new positions and builds the due lists and the
// keyed spreads' keys (keySpreads): a unit a set or a spread (dueJob), run
// with t.Parallel (on the pool, when the relay system's
// Plan calls it) when there is enough to build and the tick is not run
// inline.
func (p *Pipeline) beginRelay(t *scheduler.Tick) {
	p.frame.linkRest() // Move's units linked them, unless it ran without the scheduler
	p.stats.Corrections = 0
	p.sendCorrections()
	// The spreads of clients over their budget, whose periods get lists
	// too, as the relay units left them at the end of the last tick (each
	// counts its recipients'): reading every session's spread here, on
	// the tick goroutine, pulled each session's line from the core that
	// relays to it, and back. A spread counted for a client gone since
	// only lists what nobody reads.
	var spreads, fit [256]int32
	for i := range p.scratch {
		for s, n := range p.scratch[i].spreads {
			spreads[s] += n
		}
		for s, n := range p.scratch[i].fitSpreads {
			fit[s] += n
		}
		clear(p.scratch[i].spreads[:])
		clear(p.scratch[i].fitSpreads[:])
	}
	f := &p.frame
	f.indexed = false
	if p.cfg.MaxRecordsPerTick > 0 {
		for i := range p.units {
			p.scratch[i].reserveOwed(p.owedRoom)
		}
		if p.stats.Owed > 0 { // the last tick left records owed: let those recipients look them up
			f.indexActors()
		}
		if p.cfg.NearestSenders > 0 {
			f.buildNearGrids(p.kindReach)
		}
	}
	d := &f.due
	clear(p.keyed[:])
	clear(p.byted[:])
	p.dueBuild.keys, p.dueBuild.bytes = p.dueBuild.keys[:0], p.dueBuild.bytes[:0]
	idle := !p.alwaysList && (p.listsIdle() || p.denseTick())
	p.keySpreads(&spreads, &fit)
	if idle {
		d.none()
	} else {
		d.plan(f.Tick, &spreads, len(f.cells), f.Len(), p.dense.ok && !p.alwaysList)
	}
	d.beginBuild(f)
	units := len(d.sets) + len(p.dueBuild.keys) + len(p.dueBuild.bytes)
	if units == 0 { // no set's unit to bound the cells: the boxes, for recipients that classify cells after all
		p.bound(t)
		return
	}
	if p.inline || units < 2 || f.Len()*units < minParallelDueWork {
		p.dueBuild.bounds = 1
		for j := range units + 1 {
			p.dueBuild.RunUnit(j)
		}
		return
	}
	p.dueBuild.bounds = boundParts(len(f.cells))
	p.dueUnits = p.dueUnits[:0]
	for _, set := range d.sets {
		p.dueUnits = append(p.dueUnits, scheduler.Unit{Key: dueKeySalt ^ (uint64(set.window)<<8 | uint64(set.mod)), Cost: float64(f.Len())})
	}
	for _, k := range p.dueBuild.keys {
		p.dueUnits = append(p.dueUnits, scheduler.Unit{Key: dueKeySalt ^ (1<<20 | uint64(k.spread)), Cost: float64(f.Len())})
	}
	for _, k := range p.dueBuild.bytes {
		p.dueUnits = append(p.dueUnits, scheduler.Unit{Key: dueKeySalt ^ (2<<20 | uint64(k.spread)), Cost: float64(f.Len())})
	}
	for k := range p.dueBuild.bounds {
		p.dueUnits = append(p.dueUnits, scheduler.Unit{Key: dueKeySalt ^ (3<<20 | uint64(k)), Cost: float64(f.Len() / p.dueBuild.bounds)})
	}
	t.Parallel(&p.dueBuild, p.dueUnits)
}

// bound computes the cells' boxes (Frame.boundCells) on a tick that
// builds no due lists, whose units would: on the pool through t, in parts
// of at least boundPartCells cells, when there are that many and the tick
// is not run inline (in a world of thousands of chunks, a tenth of a
// millisecond on the tick goroutine); the parts depend on the cells
// alone.
func (p *Pipeline) bound(t *scheduler.Tick) {
	f := &p.frame
	parts := boundParts(len(f.cells))
	if p.inline || parts < 2 {
		f.boundCells(0, len(f.cells))
		return
	}
	p.boundUnits = p.boundUnits[:0]
	for k := range parts {
		p.boundUnits = append(p.boundUnits, scheduler.Unit{Key: boundKeySalt ^ uint64(k), Cost: float64(len(f.cells) / parts)})
	}
	p.boundJob.f, p.boundJob.parts = f, parts
	t.Parallel(&p.boundJob, p.boundUnits)
}

// boundParts is how many parts the boxes of ncells cells are computed in
// on the pool: one for every boundPartCells cells, at least one, at most
// maxBoundParts.
func boundParts(ncells int) int {
	return max(min(ncells/boundPartCells, maxBoundParts), 1)
}

// boundPartCells is about the fewest cells a part of bound has: some tens
// of microseconds of work, worth a unit of the pool. maxBoundParts caps
// the parts; boundKeySalt keeps their units apart from Relay's in the
// pool's cost table.
const (
	boundPartCells = 1024
	maxBoundParts  = 16
	boundKeySalt   = 0x5be0cd19137e2179
)

// boundJob bounds part u of parts of the frame's cells.
type boundJob struct {
	f     *Frame
	parts int
}

func (j *boundJob) RunUnit(u int) {
	n := len(j.f.cells)
	j.f.boundCells(n*u/j.parts, n*(u+1)/j.parts)
}

// keySpreads chooses this tick's keyed spreads, among those in use
// (spreads, the last tick's census: fit counts the recipients whose
// stencils the due bytes fit, bytesFit), when no shard is under pressure
// the relay acts on: due keys of bits for the spreads laid out
// (spreadKeys) where some recipient's stencil the bytes do not fit, due
// bytes for every spread they take (byteSpread) where some recipient's
// they do.
// Those recipients take the dense walk, so spreads keeps for the due
// lists only the recipients that will read them: the keys are built
// instead (dueJob), one pass over the actors a spread. A tick under
// pressure lists them, as the recipients under it walk cells.
func (p *Pipeline) keySpreads(spreads, fit *[256]int32) {
	if p.alwaysList || p.pressed() {
		return
	}
	for s := range spreads {
		spreads[s] -= fit[s] // the recipients the bytes do not fit
	}
	for i := range p.spreadKeys {
		k := &p.spreadKeys[i]
		if spreads[k.spread] == 0 {
			continue
		}
		spreads[k.spread] = 0
		p.keyed[k.spread] = uint8(i + 1)
		for _, q := range k.periods {
			k.tickDue[q] = tickDue(q, p.frame.Tick)
		}
		p.dueBuild.keys = append(p.dueBuild.keys, k)
	}
	n := 0
	for s := range len(fit) {
		if fit[s] == 0 { // none, or not a byteSpread (the census counts none there)
			continue
		}
		if n == len(p.byteKeys) {
			p.byteKeys = append(p.byteKeys, byteKeys{})
		}
		p.byteKeys[n].lay(p, uint8(s), p.frame.Tick)
		n++
		p.byted[s] = uint8(n)
	}
	for i := range n { // once p.byteKeys has stopped growing
		p.dueBuild.bytes = append(p.dueBuild.bytes, &p.byteKeys[i])
	}
}

// listsIdle reports whether no recipient of the frame would read a due
// list: every group's stencil is small (maxSmallStencil) and every tier
// table's periods short, so that gatherSmall takes every recipient at
// spread 1, as in a sparse world. A recipient at a longer spread takes
// its spread's keys where the tick has them (keySpreads); else, or at a
// pressure level above 0, it decides its cells without lists
// (gatherCells), as a spread without lists does: the same senders.
func (p *Pipeline) listsIdle() bool {
	for i := range p.tierSets {
		if p.tierSets[i].Longest() >= interest.FastPeriods {
			return false
		}
	}
	for k := range p.frame.links {
		if p.frame.links[k].maxSenders > maxSmallStencil {
			return false
		}
	}
	return true
}

// denseTick reports whether every recipient of this tick takes the dense
// walk (gatherDense), which reads no due list: the walk is laid out, no
// client has a budget (whose spreads read lists) and no shard's cluster is
// under pressure the relay acts on (relayLevel).
func (p *Pipeline) denseTick() bool {
	return p.dense.ok && p.cfg.MaxRecordsPerTick <= 0 && !p.pressed()
}

// pressed reports whether some shard's cluster is under pressure the
// relay acts on (relayLevel): its recipients walk cells, not keys.
func (p *Pipeline) pressed() bool {
	for _, sh := range p.frame.shards {
		if p.relayLevel(sh.Level) > 0 {
			return true
		}
	}
	return false
}

// minParallelDueWork is the least work, in actors times sets, for which
// the due lists are built on the pool: below it a pool pass's handoff and
// tail cost more than the second core saves (BenchmarkBeginRelay finds the
// break-even).
const minParallelDueWork = 3000

// dueKeySalt keeps the due lists' units (one per set, keyed by its period
// and window) apart from Relay's in the pool's cost table: they share the
// relay system's key space.
const dueKeySalt = 0x3c6ef372fe94f82b

// dueJob builds the due lists and the keyed spreads' keys: unit j builds
// set j's lists (dueLists.buildSet), or past the sets the keys of keys[j
// less the sets], or past those the due bytes of bytes[j less both], or
// past all of them bounds a part of the cells, one of bounds. The boxes
// are units of their own, so that the pool can balance them against the
// lists instead of adding them to one list's unit.
type dueJob struct {
	f      *Frame
	keys   []*spreadKeys
	bytes  []*byteKeys
	bounds int
}

func (j *dueJob) RunUnit(u int) {
	f := j.f
	sets := len(f.due.sets)
	n := sets + len(j.keys) + len(j.bytes)
	if u >= n {
		part, nc := u-n, len(f.cells)
		f.boundCells(nc*part/j.bounds, nc*(part+1)/j.bounds)
		return
	}
	switch {
	case u < sets:
		f.due.buildSet(f, u)
	case u < sets+len(j.keys):
		j.keys[u-sets].build(f)
	default:
		j.bytes[u-sets-len(j.keys)].build(f)
	}
}
