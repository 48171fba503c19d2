package systems

import (
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/scheduler"
)

// Names of the built-in systems, for pinning a user's system with
// scheduler.Before and scheduler.After.
const (
	IngestName  = "ingest"
	PrepareName = "prepare"
	MoveName    = "move"
	RelayName   = "relay"
	JoinName    = "join"
)

// Resources the built-in systems declare, so users' systems can declare
// the same and be ordered around them.
const (
	// TransportResource is the network transport and the session table.
	TransportResource = "transport"
	// FrameResource is the tick's snapshot and what Relay sent from it.
	FrameResource = "frame"
)

// Systems returns the five built-in systems in tick order, ready for a
// scheduler.Builder. Prepare leaves the world guarded and Join releases
// it, so systems scheduled between them see a locked world: they may read
// and write rows but not change structure.
func (p *Pipeline) Systems() []scheduler.System {
	return []scheduler.System{
		&ingestSystem{p}, &prepareSystem{p}, &moveSystem{p}, &relaySystem{p}, &joinSystem{p},
	}
}

type ingestSystem struct{ p *Pipeline }

func (s *ingestSystem) Name() string { return IngestName }

// Access: Ingest admits players and closes sessions, but the spawns and
// despawns that follow are queued in the ecs.World and applied by Join, and
// it queues them in Plan, on the tick goroutine, before any unit of its
// stage runs: it changes no structure while units run, so it is not
// structural, and its Move frames can be applied on the pool.
func (s *ingestSystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.MoveInput](), scheduler.WriteResource(TransportResource))
}

// Plan does Ingest's serial step and returns one unit per input bucket, or
// one unit for them all when the tick has few Move frames or runs inline.
func (s *ingestSystem) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	p := s.p
	moves := p.routeInputs(t.Number)
	p.inputsAlone = !p.cfg.Parallel || moves < max(p.cfg.MinActorsToOffload, p.minRouted)
	if p.inputsAlone {
		return append(units, scheduler.Unit{})
	}
	for b := range p.buckets {
		units = append(units, scheduler.Unit{Key: inputKeySalt ^ uint64(b+1), Cost: float64(len(p.buckets[b].moves))})
	}
	return units
}

// RunUnit applies input bucket i, or all of them in order.
func (s *ingestSystem) RunUnit(i int) {
	if !s.p.inputsAlone {
		s.p.applyInputs(i)
		return
	}
	for b := range s.p.buckets {
		s.p.applyInputs(b)
	}
}

// minInputsToOffload is the fewest players whose Move frames are routed
// to the input buckets, and with parallelism on applied on the pool. A
// frame costs tens of nanoseconds (more when its MoveInput row was last
// written on another core, or lies in one of a sparse world's many chunk
// tables); below a couple of thousand the extra pass, or pool run, costs
// about what it saves.
const minInputsToOffload = 2048

// inputKeySalt keeps the input buckets' keys apart from the shards' in the
// pool's cost table.
const inputKeySalt = 0x632be59bd9b4e019

type prepareSystem struct{ p *Pipeline }

func (s *prepareSystem) Name() string { return PrepareName }
func (s *prepareSystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.WriteResource(FrameResource), scheduler.Structural())
}
func (s *prepareSystem) RunSerial(t *scheduler.Tick) {
	s.p.prepare(t)
	s.p.world.Guard()
	s.p.parallelAt = time.Now()
}

type moveSystem struct{ p *Pipeline }

func (s *moveSystem) Name() string { return MoveName }
func (s *moveSystem) Access() scheduler.Access {
	return scheduler.Uses(
		scheduler.Write[components.Transform](), scheduler.Write[components.Animation](),
		scheduler.Write[components.MoveInput](), scheduler.WriteResource(FrameResource))
}
func (s *moveSystem) Plan(_ *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	units = s.p.plan(units, 0)
	if f := &s.p.frame; s.p.linking {
		// A part of the links costs about what Move does for half as
		// many actors as it has chunks.
		for k := range f.links {
			units = append(units, scheduler.Unit{Key: linkKeySalt ^ uint64(k+1), Cost: float64(len(f.byKey)/len(f.links)) / 2})
		}
	}
	return units
}

// RunUnit runs shard i's Move, or past the shards a part of the stencil
// links.
func (s *moveSystem) RunUnit(i int) {
	if n := len(s.p.frame.shards); s.p.linking && i >= n {
		s.p.frame.linkPart(i - n)
		return
	}
	s.p.runUnits(&s.p.move, i)
}

// linkKeySalt keeps the stencil links' unit keys apart from the shards'.
const linkKeySalt = 0x2545f4914f6cdd1d

type relaySystem struct{ p *Pipeline }

func (s *relaySystem) Name() string { return RelayName }
func (s *relaySystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.Transform](), scheduler.Read[components.Animation](),
		scheduler.WriteResource(FrameResource))
}
func (s *relaySystem) Plan(t *scheduler.Tick, units []scheduler.Unit) []scheduler.Unit {
	s.p.beginRelay(t)
	return s.p.plan(units, relayKeySalt)
}

// relayKeySalt keeps Relay's unit keys apart from Move's in the pool's cost
// table: the same shard costs very different amounts in the two phases.
const relayKeySalt = 0x9e3779b97f4a7c16

func (s *relaySystem) RunUnit(i int) { s.p.runUnits(&s.p.relay, i) }

type joinSystem struct{ p *Pipeline }

func (s *joinSystem) Name() string { return JoinName }
func (s *joinSystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.WriteResource(FrameResource), scheduler.WriteResource(TransportResource), scheduler.Structural())
}
func (s *joinSystem) RunSerial(t *scheduler.Tick) {
	s.p.world.Release()
	s.p.join(t)
}

// plan returns this tick's units: one per shard, or a single unit that
// runs every shard when the tick runs inline.
func (p *Pipeline) plan(units []scheduler.Unit, salt uint64) []scheduler.Unit {
	if p.inline {
		return append(units, scheduler.Unit{})
	}
	for _, u := range p.units {
		u.Key ^= salt
		units = append(units, u)
	}
	return units
}

// runUnits runs unit i of a phase: shard i, or all shards in order inline.
func (p *Pipeline) runUnits(job scheduler.Job, i int) {
	if !p.inline {
		job.RunUnit(i)
		return
	}
	for s := range p.frame.shards {
		job.RunUnit(s)
	}
}
