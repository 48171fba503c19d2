package systems

import (
	"time"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
)

// clusterLoads is adaptive throttling's memory: per cluster (named by its
// lowest chunk, which is stable while the crowd stays), the smoothed cost
// of its shards and its pressure level.
type clusterLoads struct {
	byKey  map[grid.AreaKey]*clusterLoad
	levels []uint8         // per cluster of this tick
	costs  []time.Duration // per cluster of this tick
	// extra is a test hook: cost added to a cluster's measured cost, to
	// force pressure without a machine that is really overloaded.
	extra func(lowest grid.AreaKey) time.Duration
	// phase is the smoothed wall time of the parallel phase, in
	// microseconds: while it is within the budget no cluster is pressed,
	// whatever its share, so a preempted unit on a busy machine cannot
	// throttle a small crowd.
	phase interest.EWMA
	// work is the smoothed wall time of whole ticks, in microseconds
	// (Pipeline.ObserveWork): while it is within Config.PressWorkShare of
	// the tick period, the tick keeps its rate and no cluster is pressed
	// either, however long its relay phase.
	work interest.EWMA
}

// DefaultPressWorkShare is the share of the tick period that ticks must
// take, smoothed, for pressure to rise when Config.PressWorkShare is 0:
// below it the server keeps its rate with room to spare, and shedding
// relays would take updates from players for nothing.
const DefaultPressWorkShare = 0.7

type clusterLoad struct {
	cost     interest.EWMA
	pressure interest.Pressure
	seen     uint64
}

// forgetAfter is how many ticks a cluster that is no longer there keeps its
// load, so a crowd that splits and merges again keeps its pressure.
const forgetAfter = 256

// levelsFor looks up the pressure level of each of this tick's clusters.
func (l *clusterLoads) levelsFor(f *Frame) {
	if l.byKey == nil {
		l.byKey = make(map[grid.AreaKey]*clusterLoad)
	}
	l.levels = resizeSlice(l.levels, len(f.clusters))
	l.costs = resizeSlice(l.costs, len(f.clusters))
	for i, c := range f.clusters {
		load := l.byKey[c.Lowest]
		if load == nil {
			load = &clusterLoad{cost: interest.EWMA{Alpha: interest.DefaultAlpha}}
			l.byKey[c.Lowest] = load
		}
		load.seen = f.Tick
		l.levels[i] = load.pressure.Level()
	}
	for i := range f.shards {
		sh := &f.shards[i]
		sh.Level = 0
		if !sh.Sweep {
			sh.Level = l.levels[sh.Cluster]
		}
	}
}

// observeLoads feeds this tick's measured costs to each cluster's EWMA and
// pressure. A cluster's cost is its shards' summed time, scaled so that the
// clusters together account for the parallel phase's wall time; its share
// of the budget is the budget times its share of the actors. While the
// parallel phase, smoothed, is over the budget and whole ticks, smoothed,
// take more than Config.PressWorkShare of the tick period, a cluster
// costing more than its share, smoothed, gains a level of pressure;
// otherwise every
// cluster calms down. So pressure rises only for what it can shed, the
// relay's work, and only when that work threatens the tick rate: a slow
// system of the game's own lengthens ticks but not the relay phase, and
// a relay phase over its budget in ticks with room to spare costs no one
// their rate.
func (p *Pipeline) observeLoads(wall, busy time.Duration) (highest int) {
	l := &p.loads
	f := &p.frame
	if p.cfg.Throttle.MaxLevel() == 0 || p.cfg.BudgetMicros <= 0 || f.Len() == 0 {
		return 0
	}
	clear(l.costs)
	for i, sh := range f.shards {
		if !sh.Sweep {
			l.costs[sh.Cluster] += p.shardMoveTime[i] + p.shardRelayTime[i]
		}
	}
	scale := 1.0
	if busy > 0 {
		scale = float64(wall) / float64(busy)
	}
	rule := interest.PressureRule{MaxLevel: p.cfg.Throttle.MaxLevel()}
	if l.phase.Alpha == 0 {
		l.phase.Alpha = interest.DefaultAlpha
	}
	phase := float64(wall)
	work := l.work.Value()
	for i, c := range f.clusters {
		load := l.byKey[c.Lowest]
		cost := float64(l.costs[i]) * scale
		if l.extra != nil {
			extra := float64(l.extra(c.Lowest))
			cost += extra
			phase += extra
			work += extra / float64(time.Microsecond)
		}
		load.cost.Observe(cost / float64(time.Microsecond))
	}
	l.phase.Observe(phase / float64(time.Microsecond))
	period := 1e6 / float64(max(p.cfg.TickRate, 1))
	share := p.cfg.PressWorkShare
	if !(share > 0) {
		share = DefaultPressWorkShare
	}
	over := l.phase.Value() > float64(p.cfg.BudgetMicros) && work > share*period
	for i, c := range f.clusters {
		load := l.byKey[c.Lowest]
		smoothed := load.cost.Value()
		if !over {
			smoothed = 0 // the phase is within budget: a calm tick for everyone
		}
		share := float64(p.cfg.BudgetMicros) * float64(f.clusterSize[i]) / float64(f.Len())
		highest = max(highest, int(load.pressure.Update(rule, smoothed, share)))
	}
	if f.Tick%forgetAfter == 0 {
		for k, load := range l.byKey {
			if load.seen+forgetAfter < f.Tick {
				delete(l.byKey, k)
			}
		}
	}
	return highest
}

// ObserveWork tells the pipeline how long the last tick took, start to end:
// pressure rises only while ticks, smoothed, take more than
// Config.PressWorkShare of the tick period (see observeLoads). The server
// calls it after each tick.
func (p *Pipeline) ObserveWork(d time.Duration) {
	if p.loads.work.Alpha == 0 {
		p.loads.work.Alpha = interest.DefaultAlpha
	}
	p.loads.work.Observe(float64(d) / float64(time.Microsecond))
}
