package systems

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCellGridFollowsThePopulation pins the grid each chunk population
// gets (see cellsPerSide): six actors a cell up to 4 x 4, ten for 8 x 8.
func TestCellGridFollowsThePopulation(t *testing.T) {
	for n, k := range map[int]int{
		0: 1, 23: 1, 24: 2, 95: 2, 96: 4, 400: 4, 639: 4, 640: 8, 1000: 8, 100000: 8,
	} {
		assert.Equal(t, k, cellsPerSide(n), "cells a side for %d actors", n)
	}
}
