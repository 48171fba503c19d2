package systems

import (
	"math"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/scheduler"
)

// A look is one player's prop sight taken again (props.go): the props
// that came into it and left it, found by walking the chunks around the
// old and the new sight point, on the pool when many players look in one
// tick.

// runLooks runs this tick's looks: in units of consecutive looks on the
// pool, each unit with its own buffer and counts, or all on the tick
// goroutine when they are few or t is nil. Each session's frames come
// from one look, so the split never changes a byte a client gets.
func (p *Pipeline) runLooks(t *scheduler.Tick) {
	ps := &p.sight
	n := 1
	if t != nil && !p.inline && len(ps.looks) >= minLooksToOffload {
		n = max(min(len(p.units), len(ps.looks)/(minLooksToOffload/2)), 1)
	}
	if len(ps.lookers) < n {
		ps.lookers = append(ps.lookers, make([]looker, n-len(ps.lookers))...)
	}
	ps.job = lookJob{p: p, n: n}
	if n == 1 {
		ps.job.RunUnit(0)
	} else {
		ps.lookUnits = ps.lookUnits[:0]
		for u := range n {
			ps.lookUnits = append(ps.lookUnits, scheduler.Unit{Key: lookKeySalt ^ uint64(u), Cost: float64(len(ps.looks) / n)})
		}
		t.Parallel(&ps.job, ps.lookUnits)
	}
	for u := range n {
		lk := &ps.lookers[u]
		p.stats.PropsSent += lk.props
		p.stats.Disappears += lk.disappears
		lk.props, lk.disappears = 0, 0
	}
}

// lookKeySalt keeps the looks' units apart from the join's other keys in
// the pool's cost table.
const lookKeySalt = 0x510e527fade682d1

// lookJob runs the looks: unit u the u-th of n slices of them.
type lookJob struct {
	p *Pipeline
	n int
}

func (j *lookJob) RunUnit(u int) {
	ps := &j.p.sight
	lk := &ps.lookers[u]
	for i := len(ps.looks) * u / j.n; i < len(ps.looks)*(u+1)/j.n; i++ {
		lk.look(j.p, &ps.looks[i])
	}
}

// looker is one unit's state: its frame buffer and what it sent.
type looker struct {
	out               []byte
	props, disappears int
}

// look tells one session what came into its sight and what left it as
// its point moved from l.old to l.next: it walks the props of the chunks
// around either point once, the square around both when they are near
// (the usual step), each square apart when they are not.
func (lk *looker) look(p *Pipeline, l *look) {
	lo, hi := p.sightChunks(l.next)
	if l.old.actor == 0 {
		lk.lookIn(p, l, lo, hi, nil)
		return
	}
	olo, ohi := p.sightChunks(l.old)
	if l.old.world == l.next.world && olo.X <= hi.X+1 && lo.X <= ohi.X+1 && olo.Y <= hi.Y+1 && lo.Y <= ohi.Y+1 {
		lo.X, lo.Y = min(lo.X, olo.X), min(lo.Y, olo.Y)
		hi.X, hi.Y = max(hi.X, ohi.X), max(hi.Y, ohi.Y)
		lk.lookIn(p, l, lo, hi, nil)
		return
	}
	lk.lookIn(p, l, lo, hi, nil)
	if l.old.world != l.next.world {
		lk.lookIn(p, l, olo, ohi, nil)
	} else {
		lk.lookIn(p, l, olo, ohi, &[2]grid.AreaKey{lo, hi})
	}
}

// lookIn compares, for every prop in the chunks from lo to hi (skipping
// those from skip[0] to skip[1]), whether l.old and l.next see it, and
// tells l.session the difference. A chunk that lies wholly within both
// sights, or wholly outside both, holds no difference and is passed over.
func (lk *looker) lookIn(p *Pipeline, l *look, lo, hi grid.AreaKey, skip *[2]grid.AreaKey) {
	reach := p.sight.reach
	r2, size := reach*reach, p.cfg.ChunkSize
	world := lo.WorldOrCell
	nx, ny := l.next.x, l.next.y
	if l.next.actor == 0 || l.next.world != world {
		nx, ny = inf, inf
	}
	ox, oy := l.old.x, l.old.y
	if l.old.actor == 0 || l.old.world != world {
		ox, oy = inf, inf
	}
	g := p.sight.places.worlds[world]
	if g == nil {
		return
	}
	for y := lo.Y; y <= hi.Y; y++ {
		for x := lo.X; x <= hi.X; x++ {
			if skip != nil && x >= skip[0].X && x <= skip[1].X && y >= skip[0].Y && y <= skip[1].Y {
				continue
			}
			bx, by := float32(x)*size, float32(y)*size
			inNew, outNew := boxInDisc(bx, by, size, nx, ny, r2)
			inOld, outOld := boxInDisc(bx, by, size, ox, oy, r2)
			if (inNew && inOld) || (outNew && outOld) {
				continue
			}
			c := g.at(x, y)
			if c == nil {
				continue
			}
			xs, ys := c.xs, c.ys[:len(c.xs)]
			for i, px := range xs {
				py := ys[i]
				dnx, dny, dox, doy := px-nx, py-ny, px-ox, py-oy
				sees, seen := dnx*dnx+dny*dny <= r2, dox*dox+doy*doy <= r2
				if sees == seen {
					continue
				}
				if sees {
					lk.out = wire.AppendProp(lk.out[:0], c.props[i])
					lk.props++
				} else {
					lk.out = wire.AppendDisappear(lk.out[:0], wire.Disappear{Actor: c.props[i].Actor})
					lk.disappears++
				}
				p.transport.SendReliable(l.session, lk.out)
			}
		}
	}
}

// inf stands for a sight point that sees nothing: every distance to it is
// infinite.
var inf = float32(math.Inf(1))

// boxInDisc reports whether the square of side size at (bx, by) lies
// wholly within the disc of squared radius r2 around (x, y), and whether
// wholly outside it. The square is taken a unit larger on every side, so
// that a prop that rounding put on a chunk's edge is never passed over.
func boxInDisc(bx, by, size, x, y, r2 float32) (in, out bool) {
	fx := max(x-bx, bx+size-x) + 1 // the farthest edge in x, and in y
	fy := max(y-by, by+size-y) + 1
	nx := max(bx-x-1, 0, x-(bx+size)-1) // the nearest, 0 within the box
	ny := max(by-y-1, 0, y-(by+size)-1)
	return fx*fx+fy*fy <= r2, nx*nx+ny*ny > r2
}

// sightChunks returns the corner chunks of the square of chunks that a
// sight point's reach touches.
func (p *Pipeline) sightChunks(pt sightPoint) (lo, hi grid.AreaKey) {
	r, size := p.sight.reach, p.cfg.ChunkSize
	lo = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x-r, size), Y: chunkOf(pt.y-r, size)}
	hi = grid.AreaKey{WorldOrCell: pt.world, X: chunkOf(pt.x+r, size), Y: chunkOf(pt.y+r, size)}
	return lo, hi
}

func chunkOf(v, size float32) int32 {
	return int32(math.Floor(float64(v / size)))
}
