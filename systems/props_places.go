package systems

import "github.com/throng-go/throng/grid"

// The props' places: what the looks read (props_look.go), a flat copy of
// every prop's place as told, by chunk.

// refreshPlaces brings the props' places up to date for this tick's
// looks, on the tick goroutine (the looks only read them): all of them the
// first time, then the chunks where props changed.
func (p *Pipeline) refreshPlaces() {
	ps := &p.sight
	if !ps.built {
		ps.built = true
		ps.views = p.world.PropSnapshot(ps.views)
		for i := range ps.views {
			if i == 0 || ps.views[i].Key != ps.views[i-1].Key {
				ps.dirty = append(ps.dirty, ps.views[i].Key)
			}
		}
		clear(ps.views) // no column buffers kept past the tick
	}
	for _, key := range ps.dirty {
		c := ps.places.add(key)
		c.dirty = false
		c.props, c.xs, c.ys, c.reach2 = c.props[:0], c.xs[:0], c.ys[:0], c.reach2[:0]
		ps.views = p.world.PropsIn(key, ps.views[:0])
		for vi := range ps.views {
			v := &ps.views[vi]
			for r := range v.Inputs {
				in := &v.Inputs[r]
				c.props = append(c.props, propOf(v.IDs[r].ID, in))
				c.xs, c.ys = append(c.xs, in.X), append(c.ys, in.Y)
				reach := ps.reachOf(v.Clients[r].Class)
				c.reach2 = append(c.reach2, reach*reach)
			}
		}
		clear(ps.views)
	}
	ps.dirty = ps.dirty[:0]
}

// placeIndex finds a chunk's places by its key: per worldOrCell, a dense
// grid over the chunks that ever held props, grown as they come, so that
// a look finds each of its chunks by arithmetic instead of hashing.
type placeIndex struct {
	worlds map[uint32]*placeGrid
}

// placeGrid is one worldOrCell's chunks from (x0, y0), w by h.
type placeGrid struct {
	x0, y0, w, h int32
	cells        []*propChunk
}

// at returns the places of chunk (x, y), or nil.
func (g *placeGrid) at(x, y int32) *propChunk {
	x, y = x-g.x0, y-g.y0
	if x < 0 || y < 0 || x >= g.w || y >= g.h {
		return nil
	}
	return g.cells[y*g.w+x]
}

// add returns the places of chunk key, made empty if it had none.
func (ix *placeIndex) add(key grid.AreaKey) *propChunk {
	g := ix.worlds[key.WorldOrCell]
	if g == nil {
		g = &placeGrid{x0: key.X, y0: key.Y}
		ix.worlds[key.WorldOrCell] = g
	}
	if c := g.at(key.X, key.Y); c != nil {
		return c
	}
	if key.X < g.x0 || key.Y < g.y0 || key.X >= g.x0+g.w || key.Y >= g.y0+g.h {
		g.grow(key.X, key.Y)
	}
	c := &propChunk{}
	g.cells[(key.Y-g.y0)*g.w+key.X-g.x0] = c
	return c
}

// grow widens g to hold chunk (x, y), with room to spare on the side it
// grew toward, so that a world discovered chunk by chunk regrows its grid
// a logarithmic number of times.
func (g *placeGrid) grow(x, y int32) {
	x0, y0, x1, y1 := g.x0, g.y0, g.x0+g.w, g.y0+g.h
	if g.w == 0 {
		x0, y0, x1, y1 = x, y, x+1, y+1
	}
	if x < x0 {
		x0 = x - (x1-x0)/2
	}
	if x >= x1 {
		x1 = x + 1 + (x1-x0)/2
	}
	if y < y0 {
		y0 = y - (y1-y0)/2
	}
	if y >= y1 {
		y1 = y + 1 + (y1-y0)/2
	}
	cells := make([]*propChunk, int(x1-x0)*int(y1-y0))
	for cy := range g.h {
		for cx := range g.w {
			cells[int(g.y0+cy-y0)*int(x1-x0)+int(g.x0+cx-x0)] = g.cells[cy*g.w+cx]
		}
	}
	g.x0, g.y0, g.w, g.h, g.cells = x0, y0, x1-x0, y1-y0, cells
}

// staleChunk lists chunk key's places to be built again, once.
func (ps *propSight) staleChunk(key grid.AreaKey) {
	if !ps.built {
		return // the first build takes every chunk
	}
	c := ps.places.add(key)
	if !c.dirty {
		c.dirty = true
		ps.dirty = append(ps.dirty, key)
	}
}
