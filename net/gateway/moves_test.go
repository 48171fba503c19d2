package gateway

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestASessionsLatestMovesAreKeptInOrder: fewer moves than the gateway
// keeps come back all, in order; past it, the latest keptMoves, oldest
// first.
func TestASessionsLatestMovesAreKeptInOrder(t *testing.T) {
	kept := func(m *moves) (out []string) {
		m.each(func(f []byte) { out = append(out, string(f)) })
		return out
	}
	var m moves
	assert.Empty(t, kept(&m))
	var want []string
	for i := range 3 {
		m.add(fmt.Appendf(nil, "move %d", i))
		want = append(want, fmt.Sprintf("move %d", i))
	}
	assert.Equal(t, want, kept(&m))
	for i := 3; i < keptMoves*2+5; i++ {
		m.add(fmt.Appendf(nil, "move %d", i))
		want = append(want, fmt.Sprintf("move %d", i))
	}
	assert.Equal(t, want[len(want)-keptMoves:], kept(&m))
}
