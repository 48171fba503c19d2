package systems

import (
	"math"
	mathbits "math/bits"
	"slices"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// The tick's news as the tellers decide them (props_look.go). A plaza's
// sessions each look at hundreds of news a tick; taken one at a time, a
// news costs its struct's loads, branches on its tests that no predictor
// learns, and for a nudge its period's search and a division by it. So
// the news are laid out once a tick as entries, one per news and chunk it
// is filed under, in groups of eight a column a field (newsGroup), with
// what a session needs precomputed: the squared reach of each place (-1
// for a place it has not) and a nudge's residues. A session decides every
// entry of the chunks in its sight without a branch per entry, eight an
// instruction with AVX2 (newsDue8), into bit sets over the news of those
// it is told (told) and those it loses (lost); an entry filed twice sets
// the same bits twice. Walking the sets' bits then writes the frames,
// encoded once a tick, in the news' order.
//
// A nudge is due, as the relay's pairs, when the phase (the prop's sender
// half plus the viewer's recipient half) plus the tick is a multiple of
// the period of its distance's band. With the halves below
// interest.PhaseModulus and the sum not passing 2^32, that is: the
// residue of half+tick modulo the period (one byte a band, computed once
// a tick for each nudge) is the viewer's want, the residue that makes its
// own half a multiple (one byte a band, once a tick for each session and
// kind). Within 2*PhaseModulus ticks of the tick counter's wrap the rule
// is taken as written, with a division (newsFast).

// newsGroup is eight entries, a column a field, as the vector kernel
// reads them. A run's last group is filled with entries no one sees or
// saw.
type newsGroup struct {
	wasX, wasY, nowX, nowY [8]float32
	// wasR2 and nowR2 are the reach squared, or -1 where the news has no
	// such place: no squared distance, and no NaN, is within it.
	wasR2, nowR2 [8]float32
	wasW, nowW   [8]uint32
	always       [8]uint32 // all ones where a viewer who saw the prop is told it on any tick: not a nudge
	kind         [8]uint32 // the class's kind (Pipeline.tierSets)
	// resLo and resHi are a nudge's residues of half+tick modulo its
	// bands' periods, a byte a band: bands 0 to 3 and 4 to 7.
	resLo, resHi [8]uint32
	half         [8]uint32 // a nudge's sender half (the rule as written, near the wrap)
	at           [8]int32  // the news' index in propSight.news
}

// newsFrameSize and lostFrameSize are a told Prop's and a Disappear's
// frames behind their length prefixes.
const (
	newsFrameSize = wire.StreamPrefixSize + wire.PropSize
	lostFrameSize = wire.StreamPrefixSize + wire.DisappearSize
)

// newsKinds is a kind's tier table as the news are decided by it: the
// limits (limSq[1..7], index 0 not compared) and the bands' periods.
type newsKinds struct {
	limSq   [interest.MaxSteps + 1]float32
	periods [interest.MaxSteps + 1]uint8
}

// newsFast says whether at tick a nudge's phase is decided by residues:
// no half+half+tick passes 2^32.
func newsFast(tick uint32) bool { return tick <= math.MaxUint32-2*interest.PhaseModulus }

// layNews lays out the tick's news as groups of entries: by chunk, a run
// of groups each (newsRuns), when they are filed by chunk (newsKeys), else
// in the news' order, in one run. It also takes the kinds' tables and
// encodes each news' frames.
func (ps *propSight) layNews(p *Pipeline) {
	tick := uint32(p.frame.Tick)
	ps.kinds = ps.kinds[:0]
	for i := range p.tierSets {
		var k newsKinds
		k.limSq, k.periods = p.tierSets[i].Bands()
		ps.kinds = append(ps.kinds, k)
	}
	ps.nudgeKinds = 0
	ps.groups, ps.newsRuns = ps.groups[:0], ps.newsRuns[:0]
	if len(ps.newsKeys) == 0 {
		for i := range ps.news {
			ps.addEntry(i, i%8, tick)
		}
		ps.newsRuns = append(ps.newsRuns, newsRun{hi: int32(len(ps.groups))})
	}
	for lo := 0; lo < len(ps.newsKeys); {
		key, run := ps.newsKeys[lo].key, int32(len(ps.groups))
		for e := 0; lo < len(ps.newsKeys) && ps.newsKeys[lo].key == key; lo, e = lo+1, e+1 {
			ps.addEntry(int(ps.newsKeys[lo].at), e%8, tick) // a run starts a group of its own
		}
		ps.newsRuns = append(ps.newsRuns, newsRun{key: key, lo: run, hi: int32(len(ps.groups))})
	}
	// The vector kernel's limits: each kind's by lane, as many as the
	// nudges' kinds have (the bands of other news are not asked).
	ps.limits = 0
	for k := range ps.lims {
		for kind := range 8 {
			ps.lims[k][kind] = float32(math.Inf(1))
			if kind < len(ps.kinds) {
				ps.lims[k][kind] = ps.kinds[kind].limSq[k+1]
				if ps.nudgeKinds>>kind&1 != 0 && !math.IsInf(float64(ps.lims[k][kind]), 1) {
					ps.limits = max(ps.limits, int64(k+1))
				}
			}
		}
	}
	ps.toldFrames = resizeSlice(ps.toldFrames, len(ps.news)*newsFrameSize)
	ps.lostFrames = resizeSlice(ps.lostFrames, len(ps.news)*lostFrameSize)
	for i := range ps.news {
		nw := &ps.news[i]
		f := ps.toldFrames[i*newsFrameSize:][:0]
		f = append(f, wire.PropSize, 0)
		wire.AppendProp(f, nw.now)
		f = ps.lostFrames[i*lostFrameSize:][:0]
		f = append(f, wire.DisappearSize, 0)
		wire.AppendDisappear(f, wire.Disappear{Actor: nw.was.Actor})
	}
}

// emptyGroup is a group of entries no one sees or saw.
var emptyGroup = func() (g newsGroup) {
	for i := range 8 {
		g.wasR2[i], g.nowR2[i] = -1, -1
	}
	return g
}()

// addEntry lays out news i as entry e of the last group, a new one when e
// is 0.
func (ps *propSight) addEntry(i, e int, tick uint32) {
	if e == 0 {
		ps.groups = append(ps.groups, emptyGroup)
	}
	g := &ps.groups[len(ps.groups)-1]
	nw := &ps.news[i]
	g.at[e] = int32(i)
	r2 := nw.reach * nw.reach
	g.wasX[e], g.wasY[e], g.wasW[e] = nw.was.X, nw.was.Y, nw.was.WorldOrCell
	if nw.hadWas {
		g.wasR2[e] = r2
	}
	g.nowX[e], g.nowY[e], g.nowW[e] = nw.now.X, nw.now.Y, nw.now.WorldOrCell
	if nw.hasNow {
		g.nowR2[e] = r2
	}
	g.kind[e], g.always[e] = uint32(nw.kind), math.MaxUint32
	if nw.nudge {
		g.always[e], g.half[e] = 0, nw.half
		ps.nudgeKinds |= 1 << nw.kind
		if newsFast(tick) {
			res := residuesBy(&ps.kinds[nw.kind].periods, nw.half+tick)
			g.resLo[e], g.resHi[e] = uint32(res), uint32(res>>32)
		}
	}
}

// residuesBy returns v's residues modulo each band's period, a byte a
// band (0 for period 1).
func residuesBy(periods *[interest.MaxSteps + 1]uint8, v uint32) (res uint64) {
	for b, per := range periods {
		if per > 1 {
			res |= uint64(v%uint32(per)) << (8 * b)
		}
	}
	return res
}

// wantsBy returns, a byte a band, the residue modulo each band's period
// that a sender's half+tick must have for the phase with the recipient
// half rhalf to be a multiple of the period (0 for period 1).
func wantsBy(periods *[interest.MaxSteps + 1]uint8, rhalf uint32) (want uint64) {
	for b, per := range periods {
		if p := uint32(per); p > 1 {
			want |= uint64((p-rhalf%p)%p) << (8 * b)
		}
	}
	return want
}

// newsKernel is one session as the news are decided for it: its sight
// point before its look, its recipient half, the tick, and for each kind
// of nudge its wants (wantsBy), by kind as the vector kernel permutes
// them (wantLo, wantHi: kinds 0 to 7) and in full (want).
type newsKernel struct {
	x, y           float32
	world          uint32
	rhalf, tick    uint32
	fast           bool
	limits         int64
	lims           *[interest.MaxSteps][8]float32
	wantLo, wantHi [8]uint32
	want           [components.MaxClasses]uint64
}

// tellNews adds to the session's frames what the news change in the
// sight of the point before (rhalf its recipient half): a told prop's
// state where it sees the prop now (a nudge only when due, to a viewer
// who saw it), a Disappear where it saw the prop and does not now.
func (tl *teller) tellNews(p *Pipeline, before *sightPoint, rhalf uint32) {
	ps := &p.sight
	k := &tl.kernel
	k.x, k.y, k.world, k.rhalf = before.x, before.y, before.world, rhalf
	k.tick = uint32(p.frame.Tick)
	k.fast = newsFast(k.tick)
	k.limits, k.lims = ps.limits, &ps.lims
	for kinds := ps.nudgeKinds; kinds != 0; kinds &= kinds - 1 {
		kind := mathbits.TrailingZeros64(kinds)
		k.want[kind] = wantsBy(&ps.kinds[kind].periods, rhalf)
		if kind < 8 {
			k.wantLo[kind], k.wantHi[kind] = uint32(k.want[kind]), uint32(k.want[kind]>>32)
		}
	}
	words := (len(ps.news) + 63) / 64
	tl.told, tl.lost = resizeSlice(tl.told, words), resizeSlice(tl.lost, words)
	clear(tl.told)
	clear(tl.lost)
	runs := ps.newsRuns
	if len(ps.newsKeys) == 0 {
		tl.decide(ps, runs[0].lo, runs[0].hi)
	} else {
		lo, hi := p.sightChunks(*before)
		for y := lo.Y; y <= hi.Y; y++ {
			first := grid.AreaKey{WorldOrCell: lo.WorldOrCell, X: lo.X, Y: y}
			i, _ := slices.BinarySearchFunc(runs, first, func(r newsRun, key grid.AreaKey) int { return grid.Compare(r.key, key) })
			for ; i < len(runs) && runs[i].key.WorldOrCell == lo.WorldOrCell && runs[i].key.Y == y && runs[i].key.X <= hi.X; i++ {
				tl.decide(ps, runs[i].lo, runs[i].hi)
			}
		}
	}
	tl.writeNews(ps)
}

// decide decides the groups lo to hi for the session of tl.kernel into
// tl.told and tl.lost: eight entries an instruction with AVX2 where every
// kind has its lane (the kernel permutes eight), nudges' phases by
// residues and the tables of up to eight bands each; else one by one.
func (tl *teller) decide(ps *propSight, lo, hi int32) {
	groups := ps.groups[lo:hi]
	if len(groups) == 0 {
		return
	}
	tl.masks = resizeSlice(tl.masks, 2*len(groups))
	if useAVX2 && tl.kernel.fast && len(ps.kinds) <= 8 {
		newsDue8(&tl.masks[0], &groups[0], len(groups), &tl.kernel)
	} else {
		decideNews(tl.masks, groups, &tl.kernel, ps.kinds)
	}
	told, lost := tl.told, tl.lost
	for g := range groups {
		at := &groups[g].at
		for m := tl.masks[2*g]; m != 0; m &= m - 1 {
			i := at[mathbits.TrailingZeros8(m)]
			told[i>>6] |= 1 << (i & 63)
		}
		for m := tl.masks[2*g+1]; m != 0; m &= m - 1 {
			i := at[mathbits.TrailingZeros8(m)]
			lost[i>>6] |= 1 << (i & 63)
		}
	}
}

// decideNews decides the entries of groups for the viewer k, one at a
// time, into two bytes of masks a group: a bit an entry told, then a bit
// an entry lost.
func decideNews(masks []byte, groups []newsGroup, k *newsKernel, kinds []newsKinds) {
	for gi := range groups {
		g := &groups[gi]
		var told, lost uint64
		for e := range 8 {
			dx, dy := g.wasX[e]-k.x, g.wasY[e]-k.y
			seen := b2u(g.wasW[e] == k.world) & b2u(dx*dx+dy*dy <= g.wasR2[e])
			dx, dy = g.nowX[e]-k.x, g.nowY[e]-k.y
			d2 := dx*dx + dy*dy
			sees := b2u(g.nowW[e] == k.world) & b2u(d2 <= g.nowR2[e])
			kind := g.kind[e] % components.MaxClasses
			t := &kinds[kind]
			band := b2u(d2 >= t.limSq[4]) << 2
			band |= b2u(d2 >= t.limSq[band|2]) << 1
			band |= b2u(d2 >= t.limSq[band|1])
			var due uint64
			if k.fast {
				res := uint64(g.resLo[e]) | uint64(g.resHi[e])<<32
				due = b2u(uint8((res^k.want[kind])>>(8*band)) == 0)
			} else {
				per := uint32(t.periods[band])
				due = b2u(per <= 1 || (g.half[e]+k.rhalf+k.tick)%per == 0)
			}
			told |= (sees & (uint64(g.always[e]&1) | (seen ^ 1) | due)) << e
			lost |= (seen &^ sees) << e
		}
		masks[2*gi], masks[2*gi+1] = byte(told), byte(lost)
	}
}

// b2u is 1 for true and 0 for false, without a branch.
func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// writeNews appends the frames of the news told and lost (tl.told,
// tl.lost), in the news' order.
func (tl *teller) writeNews(ps *propSight) {
	props, lost := 0, 0
	for w := range tl.told {
		props += mathbits.OnesCount64(tl.told[w])
		lost += mathbits.OnesCount64(tl.lost[w])
	}
	if props+lost == 0 {
		return
	}
	tl.out = slices.Grow(tl.out, props*newsFrameSize+lost*lostFrameSize)
	for w, t := range tl.told {
		l := tl.lost[w]
		for bits := t | l; bits != 0; bits &= bits - 1 {
			b := mathbits.TrailingZeros64(bits)
			i := w*64 + b
			if t>>b&1 != 0 {
				tl.out = append(tl.out, ps.toldFrames[i*newsFrameSize:][:newsFrameSize]...)
			} else {
				tl.out = append(tl.out, ps.lostFrames[i*lostFrameSize:][:lostFrameSize]...)
			}
		}
	}
	tl.props += props
	tl.disappears += lost
}
