package grid_test

import (
	"fmt"

	"github.com/throng-go/throng/grid"
)

func ExamplePartitioner_Partition() {
	const tamriel, inn = 60, 4001
	at := func(world uint32, x, y float32) grid.AreaKey {
		return grid.KeyOf(world, x, y, grid.DefaultChunkSize)
	}
	// One chunk view per occupied chunk table, in submission order.
	views := []grid.AreaKey{
		at(tamriel, 100, 100),      // 0: market crowd
		at(tamriel, 90_000, 5_000), // 1: arena crowd, 21 chunks east
		at(inn, 10, 10),            // 2: inside the inn: another cell
		at(tamriel, -5_000, 9_000), // 3: market crowd, 2 chunks away
		at(tamriel, 91_000, 4_000), // 4: arena crowd
		at(tamriel, 100, 200),      // 5: market again: same chunk as view 0
	}
	var p grid.Partitioner
	for _, c := range p.Partition(views, 4) {
		fmt.Printf("world %d lowest (%d,%d) views %v\n", c.Lowest.WorldOrCell, c.Lowest.X, c.Lowest.Y, c.Members)
	}
	// Output:
	// world 60 lowest (0,0) views [0 3 5]
	// world 60 lowest (22,0) views [1 4]
	// world 4001 lowest (0,0) views [2]
}
