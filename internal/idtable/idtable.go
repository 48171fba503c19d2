// Package idtable maps ids that are numbered in sequence and seldom reused
// (sessions, actors) to values, for the lookups made for every frame,
// datagram or actor of a tick.
package idtable

// pageBits sets the size of a Table's page: 1,024 ids.
const pageBits = 10

// maxPages bounds a Table's pages: ids past maxPages pages (a billion) go
// to a map instead.
const maxPages = 1 << 20

// Table maps ids of type K to values of T. Its ids are numbered in
// sequence and seldom reused (a transport's sessions, a world's actors),
// so it is pages of consecutive ids rather than a hash map: a lookup
// reads one entry instead of hashing the id and probing, which with
// thousands of ids is a cache miss each. A page goes with its last entry.
// The zero T is "none": put a non-zero value. Ids numbered sparsely, far
// past the pages, still work: those go to a map. The zero Table is empty
// and ready; it is not safe for concurrent use.
type Table[K ~uint32 | ~uint64, T comparable] struct {
	pages []*page[T]
	far   map[K]T
	n     int
}

type page[T comparable] struct {
	live int
	vals [1 << pageBits]T
}

// Len returns how many ids have a value.
func (x *Table[K, T]) Len() int { return x.n }

// Get returns k's value, or the zero T.
func (x *Table[K, T]) Get(k K) T {
	p := uint64(k) >> pageBits
	if p >= uint64(len(x.pages)) {
		if p >= maxPages {
			return x.far[k]
		}
		var none T
		return none
	}
	if pg := x.pages[p]; pg != nil {
		return pg.vals[uint64(k)&(1<<pageBits-1)]
	}
	var none T
	return none
}

// Put sets k's value to v, which must not be the zero T (see Drop).
func (x *Table[K, T]) Put(k K, v T) {
	p := uint64(k) >> pageBits
	if p >= maxPages {
		if x.far == nil {
			x.far = map[K]T{}
		}
		if _, ok := x.far[k]; !ok {
			x.n++
		}
		x.far[k] = v
		return
	}
	if p >= uint64(len(x.pages)) {
		x.pages = append(x.pages, make([]*page[T], p+1-uint64(len(x.pages)))...)
	}
	pg := x.pages[p]
	if pg == nil {
		pg = new(page[T])
		x.pages[p] = pg
	}
	e := &pg.vals[uint64(k)&(1<<pageBits-1)]
	var none T
	if *e == none {
		pg.live++
		x.n++
	}
	*e = v
}

// Drop forgets k.
func (x *Table[K, T]) Drop(k K) {
	p := uint64(k) >> pageBits
	if p >= maxPages {
		if _, ok := x.far[k]; ok {
			x.n--
			delete(x.far, k)
		}
		return
	}
	if p >= uint64(len(x.pages)) || x.pages[p] == nil {
		return
	}
	pg := x.pages[p]
	e := &pg.vals[uint64(k)&(1<<pageBits-1)]
	var none T
	if *e == none {
		return
	}
	*e = none
	x.n--
	if pg.live--; pg.live == 0 {
		x.pages[p] = nil
	}
}

// Each calls fn with every id and its value, in no set order; fn may drop
// the id it is given. It walks every page, so it suits tables whose ids
// are dense, not the ids a few of many make sparse.
func (x *Table[K, T]) Each(fn func(k K, v T)) {
	var none T
	for p, pg := range x.pages {
		if pg == nil {
			continue
		}
		for i := range pg.vals {
			if v := pg.vals[i]; v != none {
				fn(K(p<<pageBits|i), v)
			}
		}
	}
	for k, v := range x.far {
		fn(k, v)
	}
}
