package zone_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/zone"
)

// grid2x2 is four zones of 2 x 2 chunks in worldOrCell 0, ids 1 2 on the
// bottom row and 3 4 above, owned by a, b, c, d.
func grid2x2() zone.Map {
	return zone.Map{Zones: []zone.Zone{
		{ID: 1, Owner: "a", Chunks: zone.Rect{MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}},
		{ID: 2, Owner: "b", Chunks: zone.Rect{MinX: 2, MinY: 0, MaxX: 3, MaxY: 1}},
		{ID: 3, Owner: "c", Chunks: zone.Rect{MinX: 0, MinY: 2, MaxX: 1, MaxY: 3}},
		{ID: 4, Owner: "d", Chunks: zone.Rect{MinX: 2, MinY: 2, MaxX: 3, MaxY: 3}},
	}}
}

func TestEveryChunkOfAZoneHasOneOwnerAndOthersNone(t *testing.T) {
	m := grid2x2()
	require.NoError(t, m.Validate())
	for y := int32(-1); y <= 4; y++ {
		for x := int32(-1); x <= 4; x++ {
			z, ok := m.Owner(grid.AreaKey{X: x, Y: y})
			inside := x >= 0 && x <= 3 && y >= 0 && y <= 3
			require.Equal(t, inside, ok, "chunk (%d, %d)", x, y)
			if inside {
				want := zone.ID(1 + x/2 + 2*(y/2))
				assert.Equal(t, want, z.ID, "chunk (%d, %d)", x, y)
			}
		}
	}
	_, ok := m.Owner(grid.AreaKey{WorldOrCell: 7, X: 0, Y: 0})
	assert.False(t, ok, "another worldOrCell is owned by none of them")
}

func TestNeighboursShareASideOrACorner(t *testing.T) {
	m := grid2x2()
	m.Zones = append(m.Zones,
		zone.Zone{ID: 5, Owner: "e", Chunks: zone.Rect{MinX: 5, MinY: 0, MaxX: 6, MaxY: 3}}, // a gap of one chunk column from 2 and 4
		zone.Zone{ID: 6, Owner: "f", WorldOrCell: 9, Chunks: zone.Rect{MinX: 0, MinY: 0, MaxX: 3, MaxY: 3}})
	require.NoError(t, m.Validate())
	assert.Equal(t, []zone.ID{2, 3, 4}, m.Neighbours(1, nil))
	assert.Equal(t, []zone.ID{1, 3, 4}, m.Neighbours(2, nil))
	assert.Empty(t, m.Neighbours(5, nil), "a column of chunks between zones: none sees the other")
	assert.Empty(t, m.Neighbours(6, nil), "another worldOrCell borders nothing")
	assert.Empty(t, m.Neighbours(99, nil))
}

func TestInvalidMapsAreRefusedWithTheReason(t *testing.T) {
	overlapping := grid2x2()
	overlapping.Zones[3].Chunks.MinX = 1
	for name, c := range map[string]struct {
		m    zone.Map
		want string
	}{
		"id 0":     {zone.Map{Zones: []zone.Zone{{Owner: "a"}}}, "zone: map: zone 0 (of 1) has id 0; ids start at 1"},
		"no owner": {zone.Map{Zones: []zone.Zone{{ID: 3}}}, "zone: map: zone 3 has no owner"},
		"inverted": {zone.Map{Zones: []zone.Zone{{ID: 3, Owner: "a", Chunks: zone.Rect{MinX: 2, MaxX: 1}}}}, "zone: map: zone 3: chunks min (2, 0) exceeds max (1, 0)"},
		"same id":  {zone.Map{Zones: []zone.Zone{{ID: 3, Owner: "a"}, {ID: 3, Owner: "b", WorldOrCell: 1}}}, "zone: map: zone id 3 is used twice"},
		"overlap":  {overlapping, "zone: map: zones 3 and 4 overlap in worldOrCell 0"},
	} {
		assert.EqualError(t, c.m.Validate(), c.want, name)
	}
	separate := zone.Map{Zones: []zone.Zone{{ID: 1, Owner: "a"}, {ID: 2, Owner: "a", WorldOrCell: 1}}}
	assert.NoError(t, separate.Validate(), "the same chunks in two worldOrCells do not overlap, and one owner may hold two zones")
}

func TestMapSettingsAreDecodedStrictly(t *testing.T) {
	m, err := zone.DecodeMap([]byte(`{"zones": [
		{"id": 1, "owner": "a", "worldOrCell": 0, "chunks": {"minX": 0, "minY": 0, "maxX": 1, "maxY": 3}},
		{"id": 2, "owner": "b", "chunks": {"minX": 2, "minY": 0, "maxX": 3, "maxY": 3}}]}`))
	require.NoError(t, err)
	assert.Equal(t, zone.Rect{MaxX: 1, MaxY: 3}, m.Zones[0].Chunks)
	assert.Equal(t, "b", m.Zones[1].Owner)

	_, err = zone.DecodeMap([]byte(`{"zones": [{"id": 1, "owner": "a", "chunk": {}}]}`))
	assert.ErrorContains(t, err, `unknown field "chunk"`)
	_, err = zone.DecodeMap([]byte(`{"zones": [{"id": 1, "owner": "a"}, {"id": 2, "owner": "b"}]}`))
	assert.EqualError(t, err, "zone: map: zones 1 and 2 overlap in worldOrCell 0")
	for _, after := range []string{"]", "}", " {}"} {
		_, err = zone.DecodeMap([]byte(`{"zones": []}` + after))
		assert.EqualError(t, err, "zone: map: bytes after the JSON value, which takes the first 13", "%q after the map", after)
	}
}

// TestAMapWatchFollowsTheMapInForce: a program that routes by the map
// reads the newest one, a moved border included, and is told when the
// newest revision is not a map (the last valid one still given).
func TestAMapWatchFollowsTheMapInForce(t *testing.T) {
	_, js := connect(t, startNATS(t))
	first, err := zone.PublishMap(testContext(t), js, "", twoZones)
	require.NoError(t, err)
	maps, err := zone.WatchMap(testContext(t), js, "")
	require.NoError(t, err)
	t.Cleanup(maps.Stop)
	m, rev, ok := maps.Map()
	require.True(t, ok)
	assert.Equal(t, first, rev)
	assert.Equal(t, twoZones, m)

	moved := zone.Map{Zones: slices.Clone(twoZones.Zones)}
	moved.Zones[0].Chunks.MaxX = 0
	moved.Zones[1].Chunks.MinX = 1
	second, err := zone.PublishMap(testContext(t), js, "", moved)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, rev, _ := maps.Map(); return rev == second }, 5*time.Second, time.Millisecond)
	m, _, ok = maps.Map()
	assert.True(t, ok)
	owner, _ := m.Owner(grid.AreaKey{X: 1, Y: 0})
	assert.Equal(t, zone.ID(2), owner.ID, "chunk (1, 0) is zone 2's now")

	kv, err := js.KeyValue(testContext(t), zone.DefaultBucket)
	require.NoError(t, err)
	require.NoError(t, kv.Delete(testContext(t), "map"))
	require.Eventually(t, func() bool { _, rev, _ := maps.Map(); return rev > second }, 5*time.Second, time.Millisecond)
	m, _, ok = maps.Map()
	assert.False(t, ok, "the map was deleted")
	assert.Equal(t, moved, m, "the last valid map, for what it is worth")

	// EnsureMap writes a map only where there is none in force.
	held, _, err := zone.EnsureMap(testContext(t), js, "", twoZones)
	require.NoError(t, err)
	assert.Equal(t, twoZones, held, "after a delete, the settings' map is written again")
	held, _, err = zone.EnsureMap(testContext(t), js, "", moved)
	require.NoError(t, err)
	assert.Equal(t, twoZones, held, "a map in force is kept, not overwritten")
}
