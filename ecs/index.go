package ecs

import "github.com/throng-go/throng/components"

// actorPageBits sets the page size of the actor index: 1,024 records.
const actorPageBits = 10

// actorIndex maps ActorIDs to their records. Throng issues IDs in
// sequence and never reuses one, so the index is a table of pages of
// consecutive IDs rather than a hash map: a lookup is two loads, actors
// spawned together share cache lines, and a page is dropped when its last
// actor goes, so that a server with churn keeps the pages of the IDs in
// use and a pointer for each older page.
type actorIndex struct {
	pages []*actorPage
	n     int
}

type actorPage struct {
	live int
	recs [1 << actorPageBits]actorRecord
}

// get returns id's record.
func (x *actorIndex) get(id components.ActorID) (actorRecord, bool) {
	p := int(id.ID >> actorPageBits)
	if p >= len(x.pages) || x.pages[p] == nil {
		return actorRecord{}, false
	}
	r := x.pages[p].recs[id.ID&(1<<actorPageBits-1)]
	return r, r.live
}

// put sets id's record and reports whether id was new.
func (x *actorIndex) put(id components.ActorID, rec actorRecord) bool {
	p := int(id.ID >> actorPageBits)
	if p >= len(x.pages) {
		x.pages = append(x.pages, make([]*actorPage, p+1-len(x.pages))...)
	}
	page := x.pages[p]
	if page == nil {
		page = new(actorPage)
		x.pages[p] = page
	}
	r := &page.recs[id.ID&(1<<actorPageBits-1)]
	fresh := !r.live
	*r = rec
	r.live = true
	if fresh {
		page.live++
		x.n++
	}
	return fresh
}

// drop removes id's record, and its page with the last one.
func (x *actorIndex) drop(id components.ActorID) {
	p := int(id.ID >> actorPageBits)
	if p >= len(x.pages) || x.pages[p] == nil {
		return
	}
	page := x.pages[p]
	r := &page.recs[id.ID&(1<<actorPageBits-1)]
	if !r.live {
		return
	}
	*r = actorRecord{}
	x.n--
	if page.live--; page.live == 0 {
		x.pages[p] = nil
	}
}

// reserve makes room for the pages of IDs below next.
func (x *actorIndex) reserve(next uint32) {
	if n := int(next>>actorPageBits) + 1; cap(x.pages) < n {
		x.pages = append(make([]*actorPage, 0, n), x.pages...)
	}
}
