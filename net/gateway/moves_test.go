package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/net/wire"
)

// TestASessionsLatestMovesAreKeptInOrder: fewer moves than the gateway
// keeps come back all, in order; past it, the latest keptMoves, oldest
// first; a frame of another size than a Move's is not kept.
func TestASessionsLatestMovesAreKeptInOrder(t *testing.T) {
	kept := func(m *moves) (out []string) {
		m.each(func(f []byte) { out = append(out, string(f)) })
		return out
	}
	move := func(i int) []byte { return wire.AppendMove(nil, wire.Move{Seq: uint32(i), X: float32(i)}) }
	var m moves
	assert.Empty(t, kept(&m))
	var want []string
	for i := range 3 {
		m.add(move(i))
		want = append(want, string(move(i)))
	}
	assert.Equal(t, want, kept(&m))
	m.add(append(move(99), 0)) // a byte too long: no server would take it
	assert.Equal(t, want, kept(&m))
	for i := 3; i < keptMoves*2+5; i++ {
		m.add(move(i))
		want = append(want, string(move(i)))
	}
	assert.Equal(t, want[len(want)-keptMoves:], kept(&m))
}
