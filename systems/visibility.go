package systems

import (
	"sort"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
)

// visibility derives appear and disappear messages from one Apply's
// changes. Only pairs with at least one changed actor can change
// visibility, so the cost follows chunk crossings, spawns and despawns,
// never the number of pairs in a crowd.
type visibility struct {
	changed []changedActor
	index   idTable         // actor id -> index in changed
	views   []ecs.ChunkView // after the Apply, in key order
	// fresh: views is the last Apply's snapshot, of generation gen
	// (World.SnapshotGen), not yet handed to the next frame.
	fresh bool
	gen   uint64
}

// idTable maps the actor ids of one Apply's changes to their index in
// visibility.changed: open addressing with linear probing, cleared and
// sized for each Apply. Every actor in a changed actor's stencils is
// looked up in it, so it must cost less than a Go map's hashing: the join
// is serial, and in a roaming world this lookup is most of it.
type idTable struct {
	ids   []uint32 // 0 where empty: actor ids start at 1
	at    []int32
	shift uint
}

// reset empties t, sized for up to n ids.
func (t *idTable) reset(n int) {
	size, bits := 16, uint(4)
	for size < 2*n {
		size, bits = size*2, bits+1
	}
	t.ids = resizeSlice(t.ids, size)
	t.at = resizeSlice(t.at, size)
	clear(t.ids)
	t.shift = 32 - bits
}

// slot returns where id is, or the empty slot where it would go.
func (t *idTable) slot(id uint32) int {
	mask := len(t.ids) - 1
	i := int((id * 0x9e3779b1) >> t.shift) // Fibonacci hashing: consecutive ids spread out
	for t.ids[i] != id && t.ids[i] != 0 {
		i = (i + 1) & mask
	}
	return i
}

// get returns id's index, if it has one.
func (t *idTable) get(id uint32) (int32, bool) {
	i := t.slot(id)
	return t.at[i], t.ids[i] == id
}

// put gives id index at; id must not be in t.
func (t *idTable) put(id uint32, at int32) {
	i := t.slot(id)
	t.ids[i], t.at[i] = id, at
}

// changedActor is one actor touched by the Apply: where it was before
// (hasOld) and where it is after (hasNew).
type changedActor struct {
	id             uint32
	session        uint64
	old, new       grid.AreaKey
	hasOld, hasNew bool
	appear         wire.Appear // its state after the Apply (hasNew)
}

// deriveVisibility sends Welcome to newly spawned players, corrections to
// teleported ones, then Appear and Disappear frames for exactly the pairs
// whose 3x3 stencil visibility changed, to both sides of each pair that
// have a client. Pairs are visited in the order of the Apply's changes, so
// every client's reliable stream is reproducible. The Appears and
// Disappears leave last, together, on the pool when there are many
// (fanOut, begun by the join).
func (p *Pipeline) deriveVisibility() {
	v := &p.vis
	changes := p.report.Changes
	p.stats.Appears, p.stats.Disappears, p.stats.PropsSent, p.stats.PropUpdates = 0, 0, 0, 0
	if len(changes) == 0 {
		return
	}
	v.index.reset(len(changes))
	v.changed = v.changed[:0]
	for _, c := range changes {
		if c.Prop { // props are in sight by distance, not by chunk (tellProps)
			continue
		}
		i, ok := v.index.get(c.ID.ID)
		if !ok {
			i = int32(len(v.changed))
			v.index.put(c.ID.ID, i)
			v.changed = append(v.changed, changedActor{id: c.ID.ID, old: c.From, hasOld: c.Kind != ecs.Spawned})
		}
		a := &v.changed[i]
		a.session = c.Session
		a.new, a.hasNew = c.To, c.Kind != ecs.Despawned
		if c.Kind == ecs.Teleported {
			if c.Session != 0 {
				p.sendCorrection(c.ID)
			}
			p.markTeleported(c.ID)
		}
	}
	v.views = p.world.Snapshot(v.views)
	v.fresh, v.gen = true, p.world.SnapshotGen()
	for i := range v.changed {
		a := &v.changed[i]
		if a.hasNew {
			a.appear = p.appearOf(components.ActorID{ID: a.id})
		}
	}
	for _, c := range changes {
		if c.Kind == ecs.Spawned && !c.Prop {
			i, _ := v.index.get(c.ID.ID)
			p.welcome(&v.changed[i])
		}
	}
	for i := range v.changed {
		p.pairsOf(int32(i))
	}
	p.fan.flush()
}

// markTeleported has the relay send a teleported actor's new position in
// the next tick, as it sends an accepted move, to everyone in range (within
// one window of each one's period): an observer who saw the actor before
// the jump and still sees it after gets no Appear, and an actor without a
// client, or a client standing still, sends no update that would carry
// the new position.
func (p *Pipeline) markTeleported(id components.ActorID) {
	if e, ok := p.world.Entity(id); ok { // not despawned in the same Apply
		p.inputs.Get(e).ChangedTick = p.frame.Tick + 1
	}
}

// welcome admits a freshly spawned player: its session is now playing and
// learns its actor id and spawn point before anything about others.
func (p *Pipeline) welcome(a *changedActor) {
	if !a.hasNew || a.session == 0 {
		return
	}
	s := p.sessions.Get(wire.SessionID(a.session))
	if s == nil || s.state != joining {
		return
	}
	e, ok := p.world.Entity(components.ActorID{ID: a.id})
	if !ok {
		return
	}
	s.state, s.entity, s.kept = playing, e, nil
	p.sendWelcome(wire.SessionID(a.session), a.appear)
}

// sendWelcome tells session it plays actor ap.Actor, which stands as ap
// says, and, while the server runs slowed, at what rate.
func (p *Pipeline) sendWelcome(session wire.SessionID, ap wire.Appear) {
	p.out = wire.AppendWelcome(p.out[:0], wire.Welcome{
		Actor: ap.Actor, TickRate: uint16(p.cfg.TickRate), Tick: uint32(p.frame.Tick),
		X: ap.X, Y: ap.Y, Z: ap.Z, Yaw: ap.Yaw, WorldOrCell: ap.WorldOrCell,
	})
	p.transport.SendReliable(session, p.out)
	if p.rateTold != 0 { // the server is slowed: the newcomer hears it at once
		p.out = wire.AppendRate(p.out[:0], wire.Rate{Nominal: uint16(p.cfg.TickRate), Centihertz: p.rateTold})
		p.transport.SendReliable(session, p.out)
	}
}

// pairsOf visits every actor whose visibility with changed actor i may have
// changed, once: those now in its new stencil, those now in the chunks of
// its old stencil that the new one does not cover, and changed actors that
// were in its old stencil and are now in neither (they left the world, or
// moved out of it as i did: each in the other's old stencil, in neither's
// new one, which the walks of the stencils as they are now do not find).
func (p *Pipeline) pairsOf(i int32) {
	v := &p.vis
	a := &v.changed[i]
	if a.hasNew {
		p.pairsInStencil(i, a.new, nil)
	}
	if a.hasOld {
		var covered *grid.AreaKey
		if a.hasNew {
			covered = &a.new
		}
		p.pairsInStencil(i, a.old, covered)
		for j := range v.changed {
			b := &v.changed[j]
			if !b.hasOld || !grid.Visible(a.old, b.old) {
				continue
			}
			walked := b.hasNew && (grid.Visible(a.old, b.new) || a.hasNew && grid.Visible(a.new, b.new))
			if !walked {
				p.pair(i, int32(j), b.id, nil, 0)
			}
		}
	}
}

// pairsInStencil visits the actors now in the 3x3 stencil around key,
// except in the chunks of the stencil around covered (when not nil), which
// were visited already. The views are in key order, so each row of the
// stencil is one run of them, found by a binary search: no index of chunks
// to build every tick.
func (p *Pipeline) pairsInStencil(i int32, key grid.AreaKey, covered *grid.AreaKey) {
	v := &p.vis
	p.eachStencilView(key, func(view *ecs.ChunkView) {
		if covered != nil && grid.Visible(*covered, view.Key) {
			return
		}
		for r := range view.Len() {
			j, ok := v.index.get(view.IDs[r].ID)
			if !ok {
				j = -1
			}
			p.pair(i, j, view.IDs[r].ID, view, r)
		}
	})
}

// eachStencilView calls fn with each of the views (p.vis.views, after the
// Apply, in key order) in the 3x3 stencil around key: each row of the
// stencil is one run of them, found by a binary search.
func (p *Pipeline) eachStencilView(key grid.AreaKey, fn func(view *ecs.ChunkView)) {
	views := p.vis.views
	for dy := int32(-1); dy <= 1; dy++ {
		first := grid.AreaKey{WorldOrCell: key.WorldOrCell, X: key.X - 1, Y: key.Y + dy}
		vi := sort.Search(len(views), func(n int) bool { return !grid.Less(views[n].Key, first) })
		for ; vi < len(views); vi++ {
			view := &views[vi]
			if k := view.Key; k.WorldOrCell != first.WorldOrCell || k.Y != first.Y || k.X > key.X+1 {
				break
			}
			fn(view)
		}
	}
}

// pair compares the visibility of changed actor i and actor id (changed
// actor j, or j < 0 for an unchanged actor found in view at row) before and
// after the Apply, and sends the difference to both sides. A pair of two
// changed actors is handled by the one that comes first; i with itself is
// no pair.
func (p *Pipeline) pair(i, j int32, id uint32, view *ecs.ChunkView, row int) {
	v := &p.vis
	if j >= 0 && j <= i {
		return
	}
	a := &v.changed[i]
	var b changedActor
	if j >= 0 {
		b = v.changed[j]
	} else {
		b = changedActor{id: id, old: view.Key, new: view.Key, hasOld: true, hasNew: true}
	}
	before := a.hasOld && b.hasOld && grid.Visible(a.old, b.old)
	after := a.hasNew && b.hasNew && grid.Visible(a.new, b.new)
	if before != after && j < 0 { // an unchanged actor's row, read only for a message
		b.session = view.Clients[row].Session
		b.appear = appearAt(view, row)
	}
	switch {
	case after && !before:
		p.queueAppear(b.session, a.appear)
		p.queueAppear(a.session, b.appear)
	case before && !after:
		if b.hasNew {
			p.queueDisappear(b.session, a.id)
		}
		if a.hasNew {
			p.queueDisappear(a.session, b.id)
		}
	}
}

// queueAppear queues for session (none: 0) the Appear ap, for the join's
// next flush (fanOut).
func (p *Pipeline) queueAppear(session uint64, ap wire.Appear) {
	if session == 0 {
		return
	}
	p.out = wire.AppendAppear(p.out[:0], ap)
	p.fan.queue(session, p.out)
	p.stats.Appears++
}

// queueDisappear is queueAppear for a Disappear of actor.
func (p *Pipeline) queueDisappear(session uint64, actor uint32) {
	if session == 0 {
		return
	}
	p.out = wire.AppendDisappear(p.out[:0], wire.Disappear{Actor: actor})
	p.fan.queue(session, p.out)
	p.stats.Disappears++
}

// appearOf reads a live actor's current state.
// appearAt is the Appear of the actor in view's row.
func appearAt(view *ecs.ChunkView, row int) wire.Appear {
	t := &view.Transforms[row]
	return wire.Appear{Actor: view.IDs[row].ID, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell, Flags: view.Animations[row].Flags}
}

func (p *Pipeline) appearOf(id components.ActorID) wire.Appear {
	e, ok := p.world.Entity(id)
	if !ok {
		return wire.Appear{Actor: id.ID}
	}
	t := p.transforms.Get(e)
	return wire.Appear{Actor: id.ID, X: t.X, Y: t.Y, Z: t.Z, Yaw: t.Yaw, WorldOrCell: t.WorldOrCell, Flags: p.anims.Get(e).Flags}
}
