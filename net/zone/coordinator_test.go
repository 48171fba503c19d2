package zone_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/zone"
)

// report is a load report of zone z as of revision 1, counting cols and
// rows of its rectangle in m.
func report(m zone.Map, id zone.ID, cols, rows []uint32) zone.LoadReport {
	z, _ := m.Zone(id)
	n := uint32(0)
	for _, c := range cols {
		n += c
	}
	return zone.LoadReport{Zone: id, Revision: 1, Actors: n, Chunks: z.Chunks, Columns: cols, Rows: rows}
}

// TestPlanMoveGivesTheLighterNeighbourAStripOnlyWhenItHelps holds the
// coordinator's rule: a heavy zone gives the column along a whole shared
// side to a lighter neighbour when that lowers the larger load; never
// when the strip holds so many that the sides would only swap, nor from a
// zone of one column, below MinActors, or without a report.
func TestPlanMoveGivesTheLighterNeighbourAStripOnlyWhenItHelps(t *testing.T) {
	m := twoZones // zone 1: columns 0-1, zone 2: columns 2-3; rows 0-1 each
	reports := map[zone.ID]zone.LoadReport{
		1: report(m, 1, []uint32{10, 30}, []uint32{40, 0}),
		2: report(m, 2, []uint32{5, 0}, []uint32{5, 0}),
	}
	next, mv, ok := zone.PlanMove(m, reports, 1.25, 1)
	require.True(t, ok)
	assert.Equal(t, zone.Move{From: 1, To: 2, Chunks: zone.Rect{MinX: 1, MinY: 0, MaxX: 1, MaxY: 1}, Actors: 30}, mv)
	assert.Equal(t, zone.Rect{MinX: 0, MinY: 0, MaxX: 0, MaxY: 1}, next.Zones[0].Chunks)
	assert.Equal(t, zone.Rect{MinX: 1, MinY: 0, MaxX: 3, MaxY: 1}, next.Zones[1].Chunks)
	require.NoError(t, next.Validate())
	assert.Equal(t, zone.Rect{MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}, m.Zones[0].Chunks, "the map given is left as it was")

	// A strip of 38 of 40: the sides would swap (2 against 43). None.
	reports[1] = report(m, 1, []uint32{2, 38}, []uint32{40, 0})
	_, _, ok = zone.PlanMove(m, reports, 1.25, 1)
	assert.False(t, ok)
	// Balanced within the imbalance allowed: none.
	reports[1] = report(m, 1, []uint32{3, 3}, []uint32{6, 0})
	_, _, ok = zone.PlanMove(m, reports, 1.25, 1)
	assert.False(t, ok)
	// Below MinActors: none.
	reports[1] = report(m, 1, []uint32{10, 30}, []uint32{40, 0})
	_, _, ok = zone.PlanMove(m, reports, 1.25, 100)
	assert.False(t, ok)
	// Without zone 2's report: none.
	_, _, ok = zone.PlanMove(m, map[zone.ID]zone.LoadReport{1: reports[1]}, 1.25, 1)
	assert.False(t, ok)
	// A report of another rectangle than the map's: none.
	stale := reports[1]
	stale.Chunks.MaxX = 2
	_, _, ok = zone.PlanMove(m, map[zone.ID]zone.LoadReport{1: stale, 2: reports[2]}, 1.25, 1)
	assert.False(t, ok)

	// Zone 1 of one column gives nothing, though zone 2 is empty.
	thin := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	thin.Zones[0].Chunks.MaxX = 0
	thin.Zones[1].Chunks.MinX = 1
	_, _, ok = zone.PlanMove(thin, map[zone.ID]zone.LoadReport{
		1: report(thin, 1, []uint32{40}, []uint32{40, 0}),
		2: report(thin, 2, []uint32{0, 0, 0}, []uint32{0, 0}),
	}, 1.25, 1)
	assert.False(t, ok)

	// Four zones: zone 1 may give zone 2 a column or zone 3 a row; the row
	// lowers the larger load more.
	four := zone.Map{Zones: []zone.Zone{
		{ID: 1, Owner: "a", Chunks: zone.Rect{MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}},
		{ID: 2, Owner: "b", Chunks: zone.Rect{MinX: 2, MinY: 0, MaxX: 3, MaxY: 1}},
		{ID: 3, Owner: "c", Chunks: zone.Rect{MinX: 0, MinY: 2, MaxX: 1, MaxY: 3}},
		{ID: 4, Owner: "d", Chunks: zone.Rect{MinX: 2, MinY: 2, MaxX: 3, MaxY: 3}},
	}}
	_, mv, ok = zone.PlanMove(four, map[zone.ID]zone.LoadReport{
		1: report(four, 1, []uint32{50, 50}, []uint32{60, 40}),
		2: report(four, 2, []uint32{20, 20}, []uint32{20, 20}),
		3: report(four, 3, []uint32{0, 0}, []uint32{0, 0}),
		4: report(four, 4, []uint32{20, 20}, []uint32{20, 20}),
	}, 1.25, 1)
	require.True(t, ok)
	assert.Equal(t, zone.Move{From: 1, To: 3, Chunks: zone.Rect{MinX: 0, MinY: 1, MaxX: 1, MaxY: 1}, Actors: 40}, mv)
}

// TestLoadReportsRoundTripAndRefuseBadShapes: a report comes back as
// sent; one cut short, with a count more, of another version (the last,
// without pairs) or for zone 0 is refused.
func TestLoadReportsRoundTripAndRefuseBadShapes(t *testing.T) {
	r := zone.LoadReport{Zone: 3, Revision: 9, Tick: 77, Actors: 12, Pairs: 1 << 40, Work: 1234 * time.Microsecond, Chunks: zone.Rect{MinX: -1, MinY: 4, MaxX: 1, MaxY: 5},
		Columns: []uint32{1, 2, 3}, Rows: []uint32{4, 5}, ColumnPairs: []uint64{6, 7, 1 << 40}, RowPairs: []uint64{9, 10}}
	b := zone.AppendLoadReport(nil, r)
	var got zone.LoadReport
	require.NoError(t, zone.DecodeLoadReport(b, &got))
	assert.Equal(t, r, got)
	for _, bad := range [][]byte{b[:len(b)-1], append(slices.Clone(b), 0, 0, 0, 0), append(slices.Clone(b), 0, 0, 0, 0, 0, 0, 0, 0),
		append([]byte{zone.LoadVersion - 1}, b[1:]...), append([]byte{zone.LoadVersion, 0, 0}, b[3:]...)} {
		assert.ErrorIs(t, zone.DecodeLoadReport(bad, &got), zone.ErrLoadMalformed)
	}
	// A report of a game's own making that counts no pairs goes as one of
	// none.
	bare := r
	bare.Pairs, bare.ColumnPairs, bare.RowPairs = 0, nil, nil
	require.NoError(t, zone.DecodeLoadReport(zone.AppendLoadReport(nil, bare), &got))
	assert.Equal(t, []uint32{1, 2, 3}, got.Columns)
	assert.Equal(t, []uint64{0, 0, 0}, got.ColumnPairs)
	assert.Equal(t, []uint64{0, 0}, got.RowPairs)
}

// TestPlanMoveByPairsSplitsTheCrowdNotTheMostActors: zone 1 holds 300
// actors spread out, zone 2 200 in a crowd. Balancing actors, zone 1
// gives zone 2 a column; balancing pairs, the crowd's zone gives zone 1
// the column its crowd presses against, and zone 1 gives nothing. A
// report without pair counts is left alone by pairs, not by actors.
func TestPlanMoveByPairsSplitsTheCrowdNotTheMostActors(t *testing.T) {
	m := twoZones // zone 1: columns 0-1, zone 2: columns 2-3; rows 0-1 each
	spread := report(m, 1, []uint32{250, 50}, []uint32{150, 150})
	spread.ColumnPairs, spread.RowPairs, spread.Pairs = []uint64{5000, 1000}, []uint64{3000, 3000}, 6000
	crowd := report(m, 2, []uint32{120, 80}, []uint32{200, 0})
	crowd.ColumnPairs, crowd.RowPairs, crowd.Pairs = []uint64{20000, 12000}, []uint64{32000, 0}, 32000
	reports := map[zone.ID]zone.LoadReport{1: spread, 2: crowd}

	_, mv, ok := zone.PlanMoveBy(m, reports, zone.LoadActors, 1.25, 1)
	require.True(t, ok)
	assert.Equal(t, zone.Move{From: 1, To: 2, Chunks: zone.Rect{MinX: 1, MinY: 0, MaxX: 1, MaxY: 1}, Actors: 50}, mv)

	next, mv, ok := zone.PlanMoveBy(m, reports, zone.LoadPairs, 1.25, 1)
	require.True(t, ok)
	// After it: zone 1 6,000 + 20,000 pairs, zone 2 12,000, the larger
	// 26,000 where it was 32,000.
	assert.Equal(t, zone.Move{From: 2, To: 1, Chunks: zone.Rect{MinX: 2, MinY: 0, MaxX: 2, MaxY: 1}, Actors: 120}, mv)
	assert.Equal(t, zone.Rect{MinX: 0, MinY: 0, MaxX: 2, MaxY: 1}, next.Zones[0].Chunks)
	assert.Equal(t, zone.Rect{MinX: 3, MinY: 0, MaxX: 3, MaxY: 1}, next.Zones[1].Chunks)
	require.NoError(t, next.Validate())

	// The crowd's pairs all in the column along zone 1: giving it would
	// only swap the sides. None.
	crowd.ColumnPairs = []uint64{32000, 0}
	reports[2] = crowd
	_, mv, ok = zone.PlanMoveBy(m, reports, zone.LoadPairs, 1.25, 1)
	assert.False(t, ok, "%+v", mv)

	// Without pair counts: none by pairs; by actors as before.
	bare := report(m, 2, []uint32{120, 80}, []uint32{200, 0})
	reports[2] = bare
	_, _, ok = zone.PlanMoveBy(m, map[zone.ID]zone.LoadReport{1: spread, 2: bare}, zone.LoadPairs, 1.25, 1)
	assert.False(t, ok)
	_, mv, ok = zone.PlanMoveBy(m, map[zone.ID]zone.LoadReport{1: spread, 2: bare}, zone.LoadActors, 1.25, 1)
	require.True(t, ok)
	assert.Equal(t, zone.ID(1), mv.From)
}

// TestPlanMoveByWorkFollowsTheTickTime: two zones balanced in pairs,
// one of them ticking in 9 ms where the other takes 4 (a slower host, a
// heavier game): by work the slow one gives the faster one the column
// along it, its share of the time by its share of the pairs; by pairs
// nothing moves. A zone that counts no pairs shares its time by actors.
func TestPlanMoveByWorkFollowsTheTickTime(t *testing.T) {
	m := twoZones
	fast := report(m, 1, []uint32{150, 150}, []uint32{150, 150})
	fast.ColumnPairs, fast.RowPairs, fast.Pairs, fast.Work = []uint64{3000, 3000}, []uint64{3000, 3000}, 6000, 4*time.Millisecond
	slow := report(m, 2, []uint32{150, 150}, []uint32{150, 150})
	slow.ColumnPairs, slow.RowPairs, slow.Pairs, slow.Work = []uint64{3000, 3500}, []uint64{3250, 3250}, 6500, 9*time.Millisecond
	reports := map[zone.ID]zone.LoadReport{1: fast, 2: slow}

	_, _, ok := zone.PlanMoveBy(m, reports, zone.LoadPairs, 1.25, 1)
	assert.False(t, ok, "6,500 pairs against 6,000")
	_, mv, ok := zone.PlanMoveBy(m, reports, zone.LoadWork, 1.25, 1)
	require.True(t, ok)
	// The column: 3,000 of 6,500 pairs, 4,153 us of 9,000; after it 4,847
	// and 8,153 us, the larger below 9,000.
	assert.Equal(t, zone.Move{From: 2, To: 1, Chunks: zone.Rect{MinX: 2, MinY: 0, MaxX: 2, MaxY: 1}, Actors: 150}, mv)

	// Without pairs, by actors: the column holds 150 of 300, 4,500 us;
	// after it 4,500 and 8,500, still below 9,000.
	slow.ColumnPairs, slow.RowPairs, slow.Pairs = []uint64{0, 0}, []uint64{0, 0}, 0
	reports[2] = slow
	_, mv, ok = zone.PlanMoveBy(m, reports, zone.LoadWork, 1.25, 1)
	require.True(t, ok)
	assert.Equal(t, zone.ID(2), mv.From)
	// Within the imbalance allowed: none.
	slow.Work = 5 * time.Millisecond
	reports[2] = slow
	_, _, ok = zone.PlanMoveBy(m, reports, zone.LoadWork, 1.25, 1)
	assert.False(t, ok)
}

// TestAZoneReportsThePairsItsActorsMake: zone 1 holds six NPCs in chunk
// (0,0) and four in chunk (1,1), which touch; zone 2 five in chunk
// (3,0), out of every other's sight. Each zone's report counts, for each
// of its actors, the others in its chunk and the eight around it: zone
// 1 6x9 + 4x9 pairs, zone 2 5x4; and, once a second has passed, the
// zone's mean tick time.
func TestAZoneReportsThePairsItsActorsMake(t *testing.T) {
	w := startZonesWith(t, twoZones, zone.Options{LoadEvery: 1})
	for i := range 6 {
		w.spawn(1, float32(300+i*500), 300)
	}
	for i := range 4 {
		w.spawn(1, float32(4500+i*500), 4500)
	}
	for i := range 5 {
		w.spawn(2, float32(13000+i*500), 300)
	}
	nc, _ := connect(t, w.url)
	_, err := zone.NewCoordinator(context.Background(), nc, zone.CoordinatorOptions{Measure: zone.LoadWork + 1})
	assert.ErrorContains(t, err, "unknown load measure")
	got := make(chan zone.LoadReport, 64)
	sub, err := nc.Subscribe(zone.LoadSubject("throng", "*"), func(msg *nats.Msg) {
		var r zone.LoadReport
		if zone.DecodeLoadReport(msg.Data, &r) == nil {
			got <- r
		}
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	latest := map[zone.ID]zone.LoadReport{}
	require.Eventually(t, func() bool {
		w.round()
		for {
			select {
			case r := <-got:
				latest[r.Zone] = r
				continue
			default:
			}
			break
		}
		// Work once a second of ticks has passed.
		return latest[1].Actors == 10 && latest[2].Actors == 5 && latest[1].Work > 0 && latest[2].Work > 0
	}, 10*time.Second, time.Millisecond)
	one, two := latest[1], latest[2]
	assert.Equal(t, uint64(6*9+4*9), one.Pairs)
	assert.Equal(t, []uint32{6, 4}, one.Columns)
	assert.Equal(t, []uint64{6 * 9, 4 * 9}, one.ColumnPairs)
	assert.Equal(t, []uint64{6 * 9, 4 * 9}, one.RowPairs)
	assert.Equal(t, uint64(5*4), two.Pairs)
	assert.Equal(t, []uint64{0, 5 * 4}, two.ColumnPairs)
	assert.Equal(t, []uint64{5 * 4, 0}, two.RowPairs)
}

// TestACoordinatorMovesABorderAndTheZonesHandTheActorsOver: zone 1 holds
// forty NPCs, thirty of them in its column along zone 2, which holds
// five. The coordinator, from the zones' load reports, gives zone 2 that
// column; zone 1 hands the thirty over, and the players on both sides
// see them throughout (no Disappear, no second Appear). Balanced as well
// as one column can make it, the coordinator moves nothing more, and a
// load report that does not decode is counted.
// By actors or by pairs (zone 1's 1,710 against zone 2's 170; the
// column along zone 2 holds 1,320 of them), the same move: each report
// the coordinator keeps holds its own counts.
func TestACoordinatorMovesABorderAndTheZonesHandTheActorsOver(t *testing.T) {
	for _, measure := range []zone.LoadMeasure{zone.LoadActors, zone.LoadPairs} {
		t.Run(measure.String(), func(t *testing.T) { coordinatorMovesABorder(t, measure) })
	}
}

func coordinatorMovesABorder(t *testing.T, measure zone.LoadMeasure) {
	w := startZonesWith(t, twoZones, zone.Options{LoadEvery: 1})
	for i := range 40 {
		x := float32(4200 + (i%6)*600) // column 1
		if i >= 30 {
			x = float32(500 + (i%6)*500) // column 0
		}
		w.spawn(1, x, float32(100+(i/6)*500))
	}
	for i := range 5 {
		w.spawn(2, float32(8700+i*600), 300)
	}
	p1 := w.join(1, 600, 3000)
	p2 := w.join(2, 8400, 3000)
	players := []*viewer{p1, p2}
	step := func() {
		w.round()
		for _, p := range players {
			p.read()
		}
	}
	nc, _ := connect(t, w.url)
	// A context without a deadline, as a coordinator's process has.
	c, err := zone.NewCoordinator(context.Background(), nc, zone.CoordinatorOptions{Measure: measure, MinActors: 1, Settle: -1, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	for range 3 {
		step()
	}
	require.Len(t, p1.others(), 40, "zone 1's player sees its forty")
	require.Len(t, p2.others(), 35, "zone 2's, its five and the thirty across the border")
	before := slices.Concat(p1.events, p2.events)
	require.Eventually(t, func() bool { return c.Stats().Reports >= 2 }, 5*time.Second, time.Millisecond, "%+v", c.Stats())

	mv, moved, err := c.Step(testContext(t))
	require.NoError(t, err)
	require.True(t, moved)
	assert.Equal(t, zone.ID(1), mv.From)
	assert.Equal(t, zone.ID(2), mv.To)
	assert.Equal(t, uint32(30), mv.Actors)
	assert.Equal(t, zone.Rect{MinX: 1, MinY: 0, MaxX: 3, MaxY: 1}, w.currentMap().Zones[1].Chunks)
	for _, id := range w.order {
		s := w.servers[id].z
		require.Eventually(t, func() bool { r, _ := s.Revision(); return r == mv.Revision }, 5*time.Second, time.Millisecond)
	}
	for range 8 {
		step()
	}
	assert.Len(t, w.npcs(1), 10, "zone 1 keeps its column 0")
	assert.Len(t, w.npcs(2), 35, "zone 2 took the thirty")
	assert.Equal(t, before, slices.Concat(p1.events, p2.events), "no Appear or Disappear")
	assert.Equal(t, uint64(30), w.servers[2].z.Stats().Handoffs.Taken)

	// Reports as of the new map: nothing more to move (zone 2 giving back
	// its column 1 would only swap the sides).
	require.Eventually(t, func() bool {
		mv, moved, err := c.Step(testContext(t))
		require.NoError(t, err)
		require.False(t, moved, "%+v", mv)
		return c.Stats().Reports >= 10
	}, 5*time.Second, time.Millisecond)
	assert.Equal(t, uint64(1), c.Stats().Moves)

	require.NoError(t, nc.Publish(zone.LoadSubject("throng", "1"), []byte{1, 2, 3}))
	require.Eventually(t, func() bool { return c.Stats().Dropped == 1 }, 5*time.Second, time.Millisecond)
}
