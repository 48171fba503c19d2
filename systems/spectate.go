package systems

import (
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

// Spectacle is a picture of the last tick for an operator's window onto
// the server: every actor where it stands, each occupied chunk with its
// cluster, its work unit and the records its players were sent, and, for
// one watched player, what it was sent and what it is owed. Its slices
// are reused by the next [Pipeline.Spectate].
type Spectacle struct {
	Tick     uint64
	Actors   []SpectatedActor // in the tick's canonical order, then the props in chunk order
	Chunks   []SpectatedChunk // in key order
	Clusters int
	Shards   int
	// Watched is the watched player's actor (0: none, or gone), with the
	// senders of the records it was sent this tick and those it is owed
	// under the per-connection budget.
	Watched    uint32
	Sent, Owed []uint32
}

// SpectatedActor is one actor of a [Spectacle].
type SpectatedActor struct {
	ID   uint32
	X, Y float32
	Kind ActorKind
}

// ActorKind is what a [Spectacle] tells actors apart by: players are
// driven by a client, props were spawned as props (ecs.ActorSpec.Prop),
// and the other actors are NPCs.
type ActorKind uint8

// Actor kinds.
const (
	KindProp ActorKind = iota
	KindPlayer
	KindNPC
)

// SpectatedChunk is one occupied chunk of a [Spectacle].
type SpectatedChunk struct {
	Key     grid.AreaKey
	Actors  int32
	Cluster int32 // its cluster, numbered by the tick
	Shard   int32 // the work unit that relayed to its first actor
	Relays  int32 // records its players were sent this tick
}

// Watch names the player whose records [Pipeline.Spectate] reports, from
// the next tick on: its ActorID, 0 for none. Call it between ticks.
func (p *Pipeline) Watch(actor uint32) {
	p.watch = actor
	p.watchSent, p.watchOwed = p.watchSent[:0], p.watchOwed[:0]
	p.watched = 0
}

// watchRelay notes what the watched player was sent this tick (batch, its
// datagrams) and is owed. It runs in a relay unit; only the unit of the
// player's shard writes the pipeline's watch lists, and Spectate reads
// them after the tick's units are done. prepare clears watched, so that a
// player who left is not shown with its last tick's lists.
func (p *Pipeline) watchRelay(batch []byte, s *session) {
	p.watched = p.watch
	p.watchSent = p.watchSent[:0]
	for off := 0; off < len(batch); off += datagramSize {
		b, err := wire.DecodeBatch(batch[off:min(off+datagramSize, len(batch))])
		if err != nil {
			break
		}
		for i := range b.Len() {
			p.watchSent = append(p.watchSent, b.At(i).Actor)
		}
	}
	p.watchOwed = p.watchOwed[:0]
	if s != nil {
		p.watchOwed = s.backlog.AppendOwed(p.watchOwed)
	}
}

// Spectate fills sp with the last tick. It is for the tick boundary, on
// the goroutine that ticks; in steady state it allocates nothing.
func (p *Pipeline) Spectate(sp *Spectacle) {
	f := &p.frame
	sp.Tick = f.Tick
	n := f.Len()
	sp.Actors = resizeSlice(sp.Actors, n)
	for a := range n {
		kind := KindNPC
		if f.session[a] != 0 {
			kind = KindPlayer
		}
		sp.Actors[a] = SpectatedActor{ID: f.id[a], X: f.x[a], Y: f.y[a], Kind: kind}
	}
	p.spectProps = p.world.PropSnapshot(p.spectProps)
	for i := range p.spectProps {
		v := &p.spectProps[i]
		for r := range v.Inputs {
			in := &v.Inputs[r]
			sp.Actors = append(sp.Actors, SpectatedActor{ID: v.IDs[r].ID, X: in.X, Y: in.Y, Kind: KindProp})
		}
	}
	clear(p.spectProps) // no column buffers kept past the tick
	// Each group's cluster, from the clusters' member views.
	p.spectGroup = resizeSlice(p.spectGroup, len(f.groups))
	for ci := range f.clusters {
		for _, v := range f.clusters[ci].Members {
			p.spectGroup[f.viewGroup[v]] = int32(ci)
		}
	}
	// Each actor's shard.
	p.spectShard = resizeSlice(p.spectShard, n)
	for si, sh := range f.shards {
		for a := max(sh.Lo, 0); a < sh.Hi && int(a) < n; a++ {
			p.spectShard[a] = int32(si)
		}
	}
	sp.Chunks = resizeSlice(sp.Chunks, len(f.byKey))
	for k, gi := range f.byKey {
		g := &f.groups[gi]
		c := SpectatedChunk{Key: g.key, Actors: g.actors.hi - g.actors.lo, Cluster: p.spectGroup[gi], Shard: -1}
		if g.actors.lo < int32(n) {
			c.Shard = p.spectShard[g.actors.lo]
		}
		for a := g.actors.lo; a < g.actors.hi; a++ {
			c.Relays += f.relays[a]
		}
		sp.Chunks[k] = c
	}
	sp.Clusters, sp.Shards = len(f.clusters), len(f.shards)
	sp.Watched = 0
	sp.Sent, sp.Owed = append(sp.Sent[:0], p.watchSent...), append(sp.Owed[:0], p.watchOwed...)
	if p.watch != 0 && p.watched == p.watch {
		sp.Watched = p.watch
	}
}
