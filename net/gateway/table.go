package gateway

import "github.com/throng-go/throng/net/wire"

// tablePageBits sets the size of a sessionTable page: 1,024 sessions.
const tablePageBits = 10

// tablePages bounds a sessionTable's pages: sessions numbered past
// tablePages pages (a billion) go to a map instead.
const tablePages = 1 << 20

// sessionTable maps sessions to values of T, for the lookups made for
// every frame or datagram. Transports number sessions in sequence and
// seldom reuse a number, so the table is pages of consecutive ids rather
// than a hash map: a lookup reads one entry instead of hashing the id and
// probing, which with thousands of sessions is a cache miss each. A page
// goes with its last entry. The zero T is "none": put a non-zero value.
// A transport that numbers sessions sparsely, far past the pages, still
// works: those go to a map.
type sessionTable[T comparable] struct {
	pages []*tablePage[T]
	far   map[wire.SessionID]T
}

type tablePage[T comparable] struct {
	live int
	vals [1 << tablePageBits]T
}

// get returns s's value, or the zero T.
func (x *sessionTable[T]) get(s wire.SessionID) T {
	p := uint64(s) >> tablePageBits
	if p >= uint64(len(x.pages)) {
		if p >= tablePages {
			return x.far[s]
		}
		var none T
		return none
	}
	if page := x.pages[p]; page != nil {
		return page.vals[uint64(s)&(1<<tablePageBits-1)]
	}
	var none T
	return none
}

// put sets s's value to v, which must not be the zero T (see drop).
func (x *sessionTable[T]) put(s wire.SessionID, v T) {
	p := uint64(s) >> tablePageBits
	if p >= tablePages {
		if x.far == nil {
			x.far = map[wire.SessionID]T{}
		}
		x.far[s] = v
		return
	}
	if p >= uint64(len(x.pages)) {
		x.pages = append(x.pages, make([]*tablePage[T], p+1-uint64(len(x.pages)))...)
	}
	page := x.pages[p]
	if page == nil {
		page = new(tablePage[T])
		x.pages[p] = page
	}
	e := &page.vals[uint64(s)&(1<<tablePageBits-1)]
	var none T
	if *e == none {
		page.live++
	}
	*e = v
}

// drop forgets s.
func (x *sessionTable[T]) drop(s wire.SessionID) {
	p := uint64(s) >> tablePageBits
	if p >= tablePages {
		delete(x.far, s)
		return
	}
	if p >= uint64(len(x.pages)) || x.pages[p] == nil {
		return
	}
	page := x.pages[p]
	e := &page.vals[uint64(s)&(1<<tablePageBits-1)]
	var none T
	if *e == none {
		return
	}
	*e = none
	if page.live--; page.live == 0 {
		x.pages[p] = nil
	}
}

// each calls fn with every session and its value, in no set order; fn
// may drop the session it is given.
func (x *sessionTable[T]) each(fn func(s wire.SessionID, v T)) {
	var none T
	for p, page := range x.pages {
		if page == nil {
			continue
		}
		for i := range page.vals {
			if v := page.vals[i]; v != none {
				fn(wire.SessionID(p<<tablePageBits|i), v)
			}
		}
	}
	for s, v := range x.far {
		fn(s, v)
	}
}

// sendRec is what sending to an open session needs (Transport's send
// table): its gateway's outbox and the gateway's id for it.
type sendRec struct {
	out *outbox
	id  uint64
}
