package gateway

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMessagesDecodeToTheirEntriesAndBadOnesWhole: a message's entries
// come back as added; a message broken anywhere is refused whole.
func TestMessagesDecodeToTheirEntriesAndBadOnesWhole(t *testing.T) {
	var m message
	m.reset("gw")
	require.True(t, m.empty())
	m.add(opened, 3, nil)
	m.add(frame, 3, []byte{1, 2, 3})
	m.add(closed, 3, []byte("bye"))
	name, entries, err := decode(m.b)
	require.NoError(t, err)
	assert.Equal(t, "gw", name)
	type entry struct {
		k kind
		s uint64
		p string
	}
	var got []entry
	eachEntry(entries, func(k kind, s uint64, p []byte) { got = append(got, entry{k, s, string(p)}) })
	assert.Equal(t, []entry{{opened, 3, ""}, {frame, 3, "\x01\x02\x03"}, {closed, 3, "bye"}}, got)

	good := m.b
	spoil := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	at := len("gw") + 2 // the first entry
	for name, bad := range map[string][]byte{
		"empty":           nil,
		"another version": spoil(func(b []byte) []byte { b[0] = 2; return b }),
		"no name":         spoil(func(b []byte) []byte { b[1] = 0; return b }),
		"a name too long": spoil(func(b []byte) []byte { b[1] = 200; return b }),
		"an unknown kind": spoil(func(b []byte) []byte { b[at] = 9; return b }),
		"session 0":       spoil(func(b []byte) []byte { binary.LittleEndian.PutUint64(b[at+1:], 0); return b }),
		"cut short":       good[:len(good)-1],
		"a stray byte":    append(append([]byte(nil), good...), 0),
		"a frame too short": spoil(func(b []byte) []byte {
			e := at + entryHead // the frame entry
			binary.LittleEndian.PutUint32(b[e+9:], 1)
			return b[:e+entryHead+1]
		}),
	} {
		_, _, err := decode(bad)
		assert.ErrorIs(t, err, errMalformed, name)
	}
}
