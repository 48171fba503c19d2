package systems

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// TestCellGridFollowsThePopulation pins the grid each chunk population
// gets (see cellsPerSide), and that a crowded chunk's cells stay at
// maxCellActors or under on average until the grid is at its cap.
func TestCellGridFollowsThePopulation(t *testing.T) {
	for n, k := range map[int]int{
		0: 1, 23: 1, 24: 2, 95: 2, 96: 4, 299: 4, 300: 5, 400: 5, 1000: 5, 1125: 5,
		1126: 6, 1620: 6, 1621: 7, 2000: 7, 2205: 7, 2206: 8, 100000: 8,
	} {
		assert.Equal(t, k, cellsPerSide(n), "cells a side for %d actors", n)
	}
	for n := 300; n <= maxCellsPerSide*maxCellsPerSide*maxCellActors; n++ {
		k := cellsPerSide(n)
		if !assert.LessOrEqual(t, n, k*k*maxCellActors, "actors a cell at %d", n) {
			break
		}
	}
}

// TestSessionHalvesOwnTheirLinePairs pins the session layout: every
// session starts on a 128-byte boundary, and its relay half starts a pair
// of lines of its own, so that no line holds what ingest writes for one
// session and what the relay writes for another (or the same) one.
func TestSessionHalvesOwnTheirLinePairs(t *testing.T) {
	var s session
	assert.Zero(t, unsafe.Sizeof(s)%linePair, "session size %d", unsafe.Sizeof(s))
	assert.Zero(t, unsafe.Offsetof(s.sessionRelay)%linePair, "relay half at %d", unsafe.Offsetof(s.sessionRelay))
	assert.GreaterOrEqual(t, unsafe.Offsetof(s.sessionRelay), unsafe.Sizeof(s.sessionIngest))
	keep := make([]*session, 64)
	for i := range keep {
		keep[i] = &session{}
		assert.Zero(t, uintptr(unsafe.Pointer(keep[i]))%linePair, "session %d at %p", i, keep[i])
	}
}
