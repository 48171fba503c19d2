package idtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

type session uint64

type rec struct {
	out string
	id  uint64
}

// TestTheTableFindsIdsAcrossPagesAndFreesEmptyOnes: ids over three pages
// are found with their values, dropped ones are not, a page whose ids all
// went is let go, an id numbered far past the pages is kept all the same,
// and Len counts what has a value throughout.
func TestTheTableFindsIdsAcrossPagesAndFreesEmptyOnes(t *testing.T) {
	var x Table[session, rec]
	for s := session(1); s <= 3000; s++ {
		out := "a"
		if s%2 == 0 {
			out = "b"
		}
		x.Put(s, rec{out: out, id: uint64(s) * 10})
	}
	x.Put(7, rec{out: "a", id: 70}) // again: still one
	assert.Equal(t, 3000, x.Len())
	for s := session(1); s < 2048; s++ {
		x.Drop(s)
	}
	x.Drop(2048)
	x.Drop(2048) // twice: nothing more
	assert.Nil(t, x.pages[0], "page 0: every id dropped")
	assert.Nil(t, x.pages[1], "page 1 too")
	assert.Equal(t, rec{}, x.Get(5))
	assert.Equal(t, rec{}, x.Get(2048))
	assert.Equal(t, rec{out: "a", id: 20490}, x.Get(2049))
	assert.Equal(t, rec{out: "b", id: 30000}, x.Get(3000))
	assert.Equal(t, rec{}, x.Get(3001), "never put")
	assert.Equal(t, rec{}, x.Get(1<<40), "far past the pages")
	assert.Equal(t, 3000-2048, x.pages[2].live)
	assert.Equal(t, 3000-2048, x.Len())

	far := session(1) << 50
	x.Put(far, rec{out: "a", id: 7})
	assert.Equal(t, rec{out: "a", id: 7}, x.Get(far))
	assert.Len(t, x.pages, 3, "no pages made for it")
	assert.Equal(t, 3000-2048+1, x.Len())
	seen := map[session]uint64{}
	x.Each(func(s session, r rec) {
		seen[s] = r.id
		if s == 3000 {
			x.Drop(s) // Each lets fn drop what it is given
		}
	})
	assert.Len(t, seen, 3000-2048+1)
	assert.Equal(t, uint64(7), seen[far])
	assert.Equal(t, uint64(20490), seen[2049])
	assert.Equal(t, rec{}, x.Get(3000))
	x.Drop(far)
	x.Drop(far)
	assert.Equal(t, rec{}, x.Get(far))
	assert.Equal(t, 3000-2048-1, x.Len())
}
