package gateway

import "github.com/throng-go/throng/net/wire"

// sendPageBits sets the size of a sendTable page: 1,024 sessions.
const sendPageBits = 10

// sendTable is the send path's index of the open sessions: what a frame
// sent to one needs (its gateway's outbox and the gateway's id for it),
// by SessionID. The transport numbers sessions in sequence and never
// reuses a number, so the table is pages of consecutive ids rather than
// a hash map: a send reads one entry instead of hashing the id and
// following a pointer to the session, which in a tick of thousands of
// recipients is a cache miss each. A page goes with its last session.
// Guarded by Transport.mu.
type sendTable struct {
	pages []*sendPage
}

type sendPage struct {
	live int
	recs [1 << sendPageBits]sendRec
}

// sendRec is an open session's entry; out is nil for none.
type sendRec struct {
	out *outbox
	id  uint64
}

func (x *sendTable) get(s wire.SessionID) sendRec {
	p := uint64(s) >> sendPageBits
	if p >= uint64(len(x.pages)) || x.pages[p] == nil {
		return sendRec{}
	}
	return x.pages[p].recs[uint64(s)&(1<<sendPageBits-1)]
}

func (x *sendTable) put(s wire.SessionID, r sendRec) {
	p := int(uint64(s) >> sendPageBits)
	if p >= len(x.pages) {
		x.pages = append(x.pages, make([]*sendPage, p+1-len(x.pages))...)
	}
	page := x.pages[p]
	if page == nil {
		page = new(sendPage)
		x.pages[p] = page
	}
	e := &page.recs[uint64(s)&(1<<sendPageBits-1)]
	if e.out == nil {
		page.live++
	}
	*e = r
}

func (x *sendTable) drop(s wire.SessionID) {
	p := uint64(s) >> sendPageBits
	if p >= uint64(len(x.pages)) || x.pages[p] == nil {
		return
	}
	page := x.pages[p]
	e := &page.recs[uint64(s)&(1<<sendPageBits-1)]
	if e.out == nil {
		return
	}
	*e = sendRec{}
	if page.live--; page.live == 0 {
		x.pages[p] = nil
	}
}
