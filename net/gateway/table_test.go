package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/net/wire"
)

// TestTheSessionTableFindsOpenSessionsAcrossPagesAndFreesEmptyOnes:
// sessions over three pages are found with their outbox and gateway id,
// closed ones are not, a page whose sessions all closed is let go, and a
// session numbered far past the pages is kept all the same.
func TestTheSessionTableFindsOpenSessionsAcrossPagesAndFreesEmptyOnes(t *testing.T) {
	var x sessionTable[sendRec]
	a, b := &outbox{subject: "a"}, &outbox{subject: "b"}
	for s := wire.SessionID(1); s <= 3000; s++ {
		out := a
		if s%2 == 0 {
			out = b
		}
		x.put(s, sendRec{out: out, id: uint64(s) * 10})
	}
	for s := wire.SessionID(1); s < 2048; s++ {
		x.drop(s)
	}
	x.drop(2048)
	x.drop(2048) // twice: nothing more
	assert.Nil(t, x.pages[0], "page 0: every session closed")
	assert.Nil(t, x.pages[1], "page 1 too")
	assert.Equal(t, sendRec{}, x.get(5))
	assert.Equal(t, sendRec{}, x.get(2048))
	assert.Equal(t, sendRec{out: a, id: 20490}, x.get(2049))
	assert.Equal(t, sendRec{out: b, id: 30000}, x.get(3000))
	assert.Equal(t, sendRec{}, x.get(3001), "never opened")
	assert.Equal(t, sendRec{}, x.get(1<<40), "far past the pages")
	assert.Equal(t, 3000-2048, x.pages[2].live)

	far := wire.SessionID(1) << 50
	x.put(far, sendRec{out: a, id: 7})
	assert.Equal(t, sendRec{out: a, id: 7}, x.get(far))
	assert.Len(t, x.pages, 3, "no pages made for it")
	seen := map[wire.SessionID]uint64{}
	x.each(func(s wire.SessionID, r sendRec) {
		seen[s] = r.id
		if s == 3000 {
			x.drop(s) // each lets fn drop what it is given
		}
	})
	assert.Len(t, seen, 3000-2048+1)
	assert.Equal(t, uint64(7), seen[far])
	assert.Equal(t, uint64(20490), seen[2049])
	assert.Equal(t, sendRec{}, x.get(3000))
	x.drop(far)
	assert.Equal(t, sendRec{}, x.get(far))
}
