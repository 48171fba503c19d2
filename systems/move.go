package systems

import (
	"math"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
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
	for a := sh.Lo; a < sh.Hi; a++ {
		j.p.moveActor(a)
	}
	j.p.shardMoveTime[i] = time.Since(start)
}

func (p *Pipeline) moveActor(a int32) {
	f := &p.frame
	view := &f.views[f.view[a]]
	r := f.row[a]
	t := &view.Transforms[r]
	in := &view.Inputs[r]
	anim := &view.Animations[r]
	id, client := view.IDs[r].ID, view.Clients[r]
	f.id[a], f.session[a], f.slot[a] = id, client.Session, client.Slot
	f.sess[a] = nil
	if client.Session != 0 {
		f.sess[a] = p.slots[client.Slot] // Ingest and Join change slots, never Move
	}
	v := NoUpdate
	if in.Pending {
		v = validate(t, in, p.cfg.ChunkSize)
		if v == Accepted {
			t.X, t.Y, t.Z, t.Yaw = in.X, in.Y, in.Z, in.Yaw
			anim.Flags = in.Flags
			in.ChangedTick = f.Tick
		}
		in.Pending = false
	}
	f.verdict[a] = v
	f.x[a], f.y[a], f.z[a] = t.X, t.Y, t.Z
	f.changed[a] = in.ChangedTick
	f.crossed[a] = p.world.KeyOf(*t) != view.Key
	net.PutRecord(f.recordOf(a), net.Record{Actor: id, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, Flags: anim.Flags})
	half := interest.SenderHalf(id)
	f.half[a] = half
	f.res[a] = interest.HalfResidues(half)
}

// validate decides whether the server accepts a client's update: every
// number finite, the same worldOrCell (only the server moves actors between
// them, with Teleport), and a step shorter than one chunk, which is what
// keeps an actor's reach within 2 chunks per tick and the clusters safe.
func validate(t *components.Transform, in *components.MoveInput, chunkSize float32) Verdict {
	if !finite(in.X) || !finite(in.Y) || !finite(in.Z) || !finite(in.Yaw) {
		return RejectNotFinite
	}
	if in.WorldOrCell != t.WorldOrCell {
		return RejectWorldChange
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

func finite(v float32) bool {
	return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
}
