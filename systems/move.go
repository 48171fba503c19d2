package systems

import (
	"math"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/net/wire"
)

// moveJob is the Move phase as a pool job: unit i is shard i's senders.
type moveJob struct{ p *Pipeline }

// RunUnit validates and applies the pending update of every actor in shard
// i, writes the actor's own Transform/Animation/MoveInput rows, and encodes
// its movement record for this tick.
func (j *moveJob) RunUnit(i int) {
	start := time.Now()
	f := &j.p.frame
	sh := f.shards[i]
	if f.deferPlace {
		f.placeRange(sh.Lo, sh.Hi, &j.p.scratch[i].layout)
	}
	if sh.Hi > sh.Lo && cacheline.Claiming {
		// What Move writes for its shard, every core read in the last
		// relay: the lines are shared, and each store would wait for the
		// other cores' copies to be invalidated, one line after another.
		// Asked for at once, the invalidations overlap.
		cacheline.Claim(f.x[sh.Lo:sh.Hi])
		cacheline.Claim(f.y[sh.Lo:sh.Hi])
		cacheline.Claim(f.z[sh.Lo:sh.Hi])
		cacheline.Claim(f.changed[sh.Lo:sh.Hi])
		cacheline.Claim(f.records[int(sh.Lo)*wire.RecordSize : int(sh.Hi)*wire.RecordSize])
	}
	for a := sh.Lo; a < sh.Hi; a++ {
		// The rows of the actor moveAhead places on, asked for now: a
		// shard's actors are in cell order, their rows in the table's, so
		// each row is a miss the CPU cannot predict, and its MoveInput was
		// just written by ingest, often on another core.
		if pa := a + moveAhead; cacheline.Claiming && pa < sh.Hi {
			v := &f.views[f.view[pa]]
			r := f.row[pa]
			cacheline.Claim(v.Inputs[r : r+1])
			cacheline.Claim(v.Transforms[r : r+1])
			// Its Animation row is read for the record and rarely
			// written: in a sparse world, a table's rows are a miss each,
			// and unasked for, the flags' load would dominate Move.
			cacheline.Read(v.Animations[r : r+1])
			if f.view[pa] != f.view[pa-1] {
				// The first actor of another table: its ids and clients,
				// only read, are not where the last actor's were. In a
				// sparse world each table has a few actors and these
				// would be a miss each; in a crowd's one table they are
				// not.
				cacheline.Read(v.IDs[r : r+1])
				cacheline.Read(v.Clients[r : r+1])
			}
		}
		j.p.moveActor(a)
	}
	j.p.shardMoveTime[i] = time.Since(start)
}

// phaseMemo is an actor's phase as Move derives it from its phase key
// (components.PhaseKey), which alone decides it: its sender half,
// residues and due key's residue bits (Frame.phases).
type phaseMemo struct {
	ok                bool
	key, half, resKey uint32
	res               interest.Residues
}

func (p *Pipeline) moveActor(a int32) {
	f := &p.frame
	view := &f.views[f.view[a]]
	r := f.row[a]
	t := &view.Transforms[r]
	in := &view.Inputs[r]
	anim := &view.Animations[r]
	id, client := view.IDs[r].ID, view.Clients[r]
	var sess *session
	if client.Session != 0 {
		sess = p.slots[client.Slot] // Ingest and Join change slots, never Move
	}
	// What an actor keeps from tick to tick (its id, session, phase) is
	// stored only when it differs: every core reads these lines in the
	// relay, and a store, even of the same value, takes the line from the
	// other cores' caches.
	key := components.PhaseKey(view.IDs[r], client)
	ph := &f.phases[f.viewAt[f.view[a]]+r]
	if !ph.ok || ph.key != key {
		half := interest.SenderHalf(key)
		*ph = phaseMemo{ok: true, key: key, half: half, res: interest.HalfResidues(half)}
		ph.resKey = p.dense.resKey(f.due.tierPeriods, &ph.res)
	}
	if f.id[a] != id || f.key[a] != key {
		f.id[a], f.key[a] = id, key
		f.half[a], f.res[a] = ph.half, ph.res
	}
	setIfChanged(&f.session[a], client.Session)
	setIfChanged(&f.slot[a], client.Slot)
	setIfChanged(&f.class[a], client.Class%components.MaxClasses)
	setIfChanged(&f.sess[a], sess)
	v := NoUpdate
	if in.Pending {
		v = validate(t, in, p.cfg.ChunkSize)
		if v == Accepted && p.cfg.Limits.MaxSpeed > 0 {
			v = p.spend(t, in, f.Tick)
		}
		if v == Accepted {
			t.X, t.Y, t.Z, t.Yaw = in.X, in.Y, in.Z, in.Yaw
			// Animation rows are two bytes, 32 a cache line, in table order,
			// not the shard's: a store of the same flags would take the line
			// from the core moving the neighbours.
			setIfChanged(&anim.Flags, in.Flags)
			in.ChangedTick = f.Tick
		}
		in.Pending = false
	} else if client.Session == 0 && moved(t, anim, in) {
		// An actor without a client (an NPC, a prop) moves when a server
		// system writes its Transform or Animation: its MoveInput holds
		// what it had when it was last relayed, and a difference is this
		// tick's update, relayed as an accepted move is. A Transform the
		// system left not finite goes back to that place, and is counted
		// (Stats.NonFinite): relayed, it would lie at no distance from
		// anyone, and the actor would vanish without a word.
		if !ecs.Finite(*t) {
			t.X, t.Y, t.Z, t.Yaw, t.WorldOrCell = in.X, in.Y, in.Z, in.Yaw, in.WorldOrCell
			v = RejectNotFinite
		}
		if moved(t, anim, in) {
			in.X, in.Y, in.Z, in.Yaw, in.WorldOrCell, in.Flags = t.X, t.Y, t.Z, t.Yaw, t.WorldOrCell, anim.Flags
			in.ChangedTick = f.Tick
		}
	}
	setIfChanged(&f.verdict[a], v)
	f.x[a], f.y[a], f.z[a] = t.X, t.Y, t.Z
	setIfChanged(&f.changed[a], in.ChangedTick)
	setIfChanged(&f.dueKey[a], p.dense.dueKey(ph.resKey, in.ChangedTick, f.Tick))
	setIfChanged(&f.crossed[a], !view.Key.Holds(t.WorldOrCell, t.X, t.Y, p.world.ChunkSize()))
	if p.sight.watching {
		setIfChanged(&f.look[a], client.Session != 0 && p.sight.pastSlack(client.Slot, id, t))
	}
	wire.PutRecord(f.recordOf(a), wire.Record{Actor: id, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, Flags: anim.Flags})
}

// spend checks an update against the speed limit: the actor's allowance
// (as of its last accepted update, ChangedTick) has grown by MaxSpeed for
// every tick since, to at most a second's worth, and the step must fit in
// it. On success the step is spent (the allowance is then as of this
// tick, which the accepted update makes ChangedTick).
func (p *Pipeline) spend(t *components.Transform, in *components.MoveInput, tick uint64) Verdict {
	perTick := p.cfg.Limits.MaxSpeed / float32(p.cfg.TickRate)
	full := p.cfg.Limits.MaxSpeed // one second's travel
	allow := full
	if in.ChangedTick != 0 && in.ChangedTick <= tick {
		allow = min(in.Allowance+float32(tick-in.ChangedTick)*perTick, full)
	}
	dx, dy, dz := in.X-t.X, in.Y-t.Y, in.Z-t.Z
	step := float32(math.Sqrt(float64(dx*dx + dy*dy + dz*dz)))
	if step > allow {
		return RejectTooFast
	}
	in.Allowance = allow - step
	return Accepted
}

// moved reports whether a client-less actor's Transform or Animation
// differs from what its MoveInput says was last relayed.
func moved(t *components.Transform, anim *components.Animation, in *components.MoveInput) bool {
	return t.X != in.X || t.Y != in.Y || t.Z != in.Z || t.Yaw != in.Yaw ||
		t.WorldOrCell != in.WorldOrCell || anim.Flags != in.Flags
}

// setIfChanged stores v at dst unless dst already holds it.
func setIfChanged[T comparable](dst *T, v T) {
	if *dst != v {
		*dst = v
	}
}

// validate decides whether the server accepts a client's update: every
// number finite, the same worldOrCell (only the server moves actors between
// them, with Teleport), and a step shorter than one chunk, which is what
// keeps an actor's reach within 2 chunks per tick and the clusters safe.
// An actor whose own Transform a system left not finite has no place to
// step from: its client's update, finite and in its worldOrCell, gives it
// one (until then the join leaves it in its chunk, ecs.ApplyReport's
// NonFinite).
func validate(t *components.Transform, in *components.MoveInput, chunkSize float32) Verdict {
	if !ecs.Finite(components.Transform{X: in.X, Y: in.Y, Z: in.Z, Yaw: in.Yaw}) {
		return RejectNotFinite
	}
	if in.WorldOrCell != t.WorldOrCell {
		return RejectWorldChange
	}
	if !ecs.Finite(*t) {
		return Accepted
	}
	dx := float64(in.X) - float64(t.X)
	dy := float64(in.Y) - float64(t.Y)
	dz := float64(in.Z) - float64(t.Z)
	limit := float64(chunkSize)
	if dx*dx+dy*dy+dz*dz >= limit*limit {
		return RejectTooFar
	}
	return Accepted
}

// moveAhead is how many actors ahead Move asks for rows: enough for the
// misses to overlap, few enough that the lines are still there.
const moveAhead = 8
