package zone

import (
	"slices"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/internal/cacheline"
	"github.com/throng-go/throng/scheduler"
)

// publisher builds one batch per neighbour per tick, reusing its buffers.
type publisher struct {
	views      []ecs.ChunkView
	neighbours []ID
	zones      []Zone   // the neighbours' entries, index for index
	batches    [][]byte // the neighbours' batches, index for index
	counts     []int
	reach      []int // neighbours a chunk view is within reach of
	subjects   map[ID]string
	// told is, per neighbour, what its batches said of our actors and
	// when each field last changed: which fields the next batch's
	// records carry (GhostVersion). toldNow and key are the neighbours'
	// entries and whether this tick's batch is a keyframe, index for
	// index.
	told    map[ID]*told
	toldNow []*told
	key     []bool
	wanted  []ID // the neighbours that asked for a keyframe (keyRequests)
}

// told is what our batches said of our actors to one neighbour. An
// actor's entry is a slot of slots, found through index; a batch lists
// the actors in nearly the order the last one did (the chunks' views in
// their order, each table's rows in theirs), so an actor is first looked
// for in the slot after the last one found, in the last batch's order,
// and only then in the map.
type told struct {
	last  uint64 // the tick of the last batch sent to it; 0 if it was not sent
	index map[uint32]int32
	slots []toldActor
	free  []int32 // slots of actors forgotten
	order []int32 // the slots in the order the last batch listed them
	next  []int32 // this batch's, being built
	at    int32   // the position in order of the actor last found
}

// toldActor is an actor as a batch last listed it, that batch's tick, and
// the tick each of its fields last changed (by GhostFields bit); pos is
// its position in the last batch's order (stale when it was not listed).
type toldActor struct {
	g       Ghost
	listed  uint64
	changed [ghostFields]uint64
	pos     int32
}

// state returns neighbour id's told, made on first use.
func (p *publisher) state(id ID) *told {
	st := p.told[id]
	if st == nil {
		st = &told{index: map[uint32]int32{}, at: -1}
		if p.told == nil {
			p.told = map[ID]*told{}
		}
		p.told[id] = st
	}
	return st
}

// find returns actor id's slot, the slot after the last one found in the
// last batch's order if it is id's, and whether it has one.
func (st *told) find(id uint32) (int32, bool) {
	s, ok := st.findAt(id)
	// The slots lie where they were first given, not in the batch's
	// order: the one likely two actors on is asked for now.
	if k := int(st.at) + 2; k >= 2 && k < len(st.order) {
		cacheline.ClaimOne(&st.slots[st.order[k]])
	}
	return s, ok
}

func (st *told) findAt(id uint32) (int32, bool) {
	if n := st.at + 1; n >= 0 && int(n) < len(st.order) {
		if s := st.order[n]; st.slots[s].g.ID == id {
			st.at = n
			return s, true
		}
	}
	s, ok := st.index[id]
	if ok {
		st.at = st.slots[s].pos
	}
	return s, ok
}

// add gives actor id a slot.
func (st *told) add(id uint32) int32 {
	var s int32
	if n := len(st.free); n > 0 {
		s, st.free = st.free[n-1], st.free[:n-1]
		st.slots[s] = toldActor{}
	} else {
		s = int32(len(st.slots))
		st.slots = append(st.slots, toldActor{})
	}
	st.slots[s].pos = -1
	st.index[id] = s
	return s
}

// listed ends a batch of tick: its order is the next batch's guide; after
// a keyframe the actors it did not list are forgotten.
func (st *told) listed(tick uint64, key bool) {
	st.order, st.next = st.next, st.order[:0]
	for k, s := range st.order {
		st.slots[s].pos = int32(k)
	}
	st.at = -1
	if !key {
		return
	}
	for id, s := range st.index {
		if st.slots[s].listed != tick {
			delete(st.index, id)
			st.free = append(st.free, s)
		}
	}
}

// appendTo appends g's record to neighbour i's batch of tick: whole in a
// keyframe, else the fields that changed in the last GhostRepeat ticks,
// every field counting as changed when the previous batch did not list g.
func (p *publisher) appendTo(i int, g Ghost, tick uint64) {
	st := p.toldNow[i]
	s, ok := st.find(g.ID)
	if !ok {
		s = st.add(g.ID)
	}
	st.next = append(st.next, s)
	a := &st.slots[s]
	if !ok || a.listed != st.last {
		for f := range a.changed {
			a.changed[f] = tick
		}
	} else {
		diff := g.Changed(a.g)
		for f := range a.changed {
			if diff&(1<<f) != 0 {
				a.changed[f] = tick
			}
		}
	}
	fields := GhostAll
	if !p.key[i] {
		fields = 0
		for f, at := range a.changed {
			if at+GhostRepeat > tick {
				fields |= 1 << f
			}
		}
	}
	a.g, a.listed = g, tick
	p.batches[i] = AppendGhostRecord(p.batches[i], GhostRecord{Ghost: g, Fields: fields})
}

// subject returns zone id's ghost subject, built once.
func (p *publisher) subject(prefix string, id ID) string {
	s, ok := p.subjects[id]
	if !ok {
		s = GhostSubject(prefix, id)
		p.subjects[id] = s
	}
	return s
}

type publishSystem struct{ z *Server }

func (s *publishSystem) Name() string { return PublishName }

// Access: reads the actors as the join left them.
func (s *publishSystem) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Read[components.Transform](), scheduler.Read[components.Animation]())
}

// RunSerial offers each neighbour the actors of ours that stand in its
// chunks (a hand-off; see docs/zones.md: those with a client only when
// their sessions come through a gateway, Options.Gateway), and sends
// each neighbour the actors of ours that stand within
// its reach (in its zone or the ring of chunks around it, the 3x3
// stencil), one batch per neighbour, an empty one included: an actor a
// batch does not list is one the neighbour must stop showing. Ghosts
// are never sent on: their owner lends them to whom it borders.
//
// It also files in the player directory the players who left in this
// tick's ingest, as kept here.
func (s *publishSystem) RunSerial(t *scheduler.Tick) {
	z := s.z
	for _, player := range z.srv.LeftThisTick() {
		z.dir.file(player)
	}
	v := z.tickView()
	z.stats.revision.Store(v.revision)
	if !v.holds(z.opts.Zone, z.opts.Name) {
		z.stats.holds.Store(false)
		z.stats.fencedTicks.Add(1)
		return
	}
	z.stats.holds.Store(true)
	p := &z.pub
	p.neighbours = v.m.Neighbours(z.opts.Zone, p.neighbours)
	n := len(p.neighbours)
	p.zones = p.zones[:0]
	for len(p.batches) < n {
		p.batches = append(p.batches, nil)
	}
	p.counts = slices.Grow(p.counts[:0], n)[:n]
	clear(p.counts)
	header := GhostHeader{Zone: z.opts.Zone, Revision: v.revision, Tick: t.Number}
	p.toldNow, p.key = p.toldNow[:0], p.key[:0]
	p.wanted = z.keys.takeWanted(p.wanted[:0])
	for i, id := range p.neighbours {
		nz, _ := v.m.Zone(id)
		p.zones = append(p.zones, nz)
		st := p.state(id)
		p.toldNow = append(p.toldNow, st)
		p.key = append(p.key, t.Number%GhostKeyEvery == 0 || st.last == 0 || st.last+1 != t.Number || slices.Contains(p.wanted, id))
		header.WorldOrCell = nz.WorldOrCell
		p.batches[i] = AppendGhostHeader(p.batches[i][:0], header, 0)
	}
	me, _ := v.m.Zone(z.opts.Zone)
	p.views = z.ghosts.world.Snapshot(p.views)
	for vi := range p.views {
		cv := &p.views[vi]
		if vi+1 < len(p.views) {
			// A chunk's table holds a few actors: the next one's columns
			// are asked for while this one's are read.
			next := &p.views[vi+1]
			cacheline.Read(next.IDs)
			cacheline.Read(next.Clients)
			cacheline.Read(next.Transforms)
			cacheline.Read(next.Animations)
		}
		p.reach = p.reach[:0]
		var owner ID // the neighbour whose chunk this is, if any
		for i := range p.zones {
			if r := p.zones[i].Reach(cv.Key); r == 0 {
				owner = p.zones[i].ID
				p.reach = append(p.reach, i)
			} else if r == 1 {
				p.reach = append(p.reach, i)
			}
		}
		if len(p.reach) == 0 {
			continue
		}
		for r := range cv.Len() {
			// A ghost never has a client (a session is let go before its
			// actor is handed over, and attached after it is taken), so
			// only a client-less actor is looked for among them.
			if cv.Clients[r].Session == 0 {
				if lent := z.ghosts.local.Get(cv.IDs[r].ID).zone != 0; lent {
					continue
				}
			}
			tr := &cv.Transforms[r]
			if owner != 0 && !z.hand.awaits(cv.IDs[r]) && (cv.Clients[r].Session == 0 || z.opts.Gateway != nil) && z.pastMargin(me, tr) {
				z.offer(owner, v.revision, cv.IDs[r], *tr, cv.Animations[r], cv.Inputs[r], cv.Clients[r])
			}
			g := Ghost{ID: cv.IDs[r].ID, X: tr.X, Y: tr.Y, Z: tr.Z, Yaw: tr.Yaw, Flags: cv.Animations[r].Flags, Class: cv.Clients[r].Class,
				Phase: components.PhaseKey(cv.IDs[r], cv.Clients[r])}
			for _, i := range p.reach {
				p.appendTo(i, g, t.Number)
				p.counts[i]++
			}
		}
	}
	if every := z.opts.LoadEvery; every > 0 && t.Number%uint64(every) == 0 {
		z.reportLoad(me, v.revision, t.Number)
	}
	for i, id := range p.neighbours {
		SetGhostCount(p.batches[i], p.counts[i])
		st := p.toldNow[i]
		st.listed(t.Number, p.key[i])
		// Publish copies the batch into the connection's buffer; a send
		// that fails (the connection closed) is left to the next tick,
		// which is then a keyframe.
		st.last = 0
		if err := z.nc.Publish(p.subject(z.prefix, id), p.batches[i]); err == nil {
			st.last = t.Number
			z.stats.sent.Add(1)
			z.stats.sentActors.Add(uint64(p.counts[i]))
			z.stats.sentBytes.Add(uint64(len(p.batches[i])))
		}
	}
}

// pastMargin reports whether t stands at least Options.HandoffMargin
// past zone me's border (the Chebyshev distance, in world units, from
// its rectangle of chunks): far enough to be handed off.
func (z *Server) pastMargin(me Zone, t *components.Transform) bool {
	margin := float64(z.opts.HandoffMargin)
	if margin <= 0 {
		return true
	}
	cs := float64(z.ghosts.world.ChunkSize())
	x, y := float64(t.X), float64(t.Y)
	dx := max(float64(me.Chunks.MinX)*cs-x, x-float64(int64(me.Chunks.MaxX)+1)*cs, 0)
	dy := max(float64(me.Chunks.MinY)*cs-y, y-float64(int64(me.Chunks.MaxY)+1)*cs, 0)
	return max(dx, dy) >= margin
}
