package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/examples/crowd/scenario"
)

// TestRampRowsSayWhatEachStepHeld pins the table a person reads: one row a
// step with its figures in columns, "yes" only for a step at 95% of the
// target rate or better with every bot in, the reason when bots are
// missing, and the largest held step at the end.
func TestRampRowsSayWhatEachStepHeld(t *testing.T) {
	steps := []rampStep{
		{bots: 50, players: 50, hz: 30, p95: 1234 * time.Microsecond, out: 1.5e6, perBot: 900.04, cpu: 40, tick: 5},
		{bots: 100, players: 100, hz: 28.5, p95: 4 * time.Millisecond, out: 2e6, perBot: 950, cpu: 80, tick: 12, retries: 7},
		{bots: 200, players: 190, missing: 10, why: "refused: server busy", hz: 30, p95: 31 * time.Millisecond, out: 3e6, perBot: 600, cpu: 150, tick: 60},
		{bots: 400, players: 400, hz: 28.4, p95: 40 * time.Millisecond, out: 900, perBot: 300, cpu: -1, tick: -1},
	}
	var out bytes.Buffer
	writeRampHeader(&out, config{scenario: "square", transport: transportQUIC, hz: 30, hold: 5 * time.Second, settle: time.Second}, 30)
	for _, s := range steps {
		writeRampRow(&out, s, 30)
	}
	writeRampEnd(&out, steps, 30)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3+len(steps)+1, out.String())
	assert.Contains(t, lines[0], "square over quic, target 30 Hz, held = at least 28.5 Hz (95%)")
	assert.Contains(t, lines[1], "both QUIC stacks")
	assert.Equal(t, []string{"bots", "players", "hz", "p95_ms", "out/s", "upd/bot/s", "cpu%", "tick%", "other%", "held"}, strings.Fields(lines[2]))
	help := helpText(t)
	for _, column := range strings.Fields(lines[2]) {
		assert.Contains(t, help, " "+column+" ", "-h explains %s", column)
	}
	assert.Equal(t, []string{"50", "50", "30.0", "1.23", "1.50MB/s", "900.0", "40", "5", "35", "yes"}, strings.Fields(lines[3]))
	assert.Equal(t, []string{"yes", "(7", "dials", "again", "after", "busy)"}, strings.Fields(lines[4])[9:],
		"exactly 95%% is held, bots let in on a later dial count: %s", lines[4])
	assert.Equal(t, []string{"200", "190", "30.0", "31.00", "3.00MB/s", "600.0", "150", "60", "90", "no:", "10", "not", "in", "(refused:", "server", "busy)"}, strings.Fields(lines[5]))
	assert.Equal(t, []string{"400", "400", "28.4", "40.00", "900B/s", "300.0", "?", "?", "?", "no"}, strings.Fields(lines[6]), "unknown CPU is a question mark")
	assert.Equal(t, "largest step held at >= 95% of 30 Hz: 100 bots", lines[7])

	assert.Equal(t, 100, largestHeld(steps, 30))
	assert.Equal(t, 50, largestHeld(steps, 31), "at 31 Hz, 29.45 is needed")
	assert.Zero(t, largestHeld(steps[2:], 30))
	out.Reset()
	writeRampEnd(&out, nil, 60)
	assert.Equal(t, "no step held at >= 95% of 60 Hz\n", out.String())
}

// TestShortRampOnQUICPrintsARowPerStep runs a real two-step ramp (5 and 10
// bots, a second each) and reads the table back: each row's bots and
// players, rates that are rates, and an end line that agrees with the rows.
func TestShortRampOnQUICPrintsARowPerStep(t *testing.T) {
	t.Parallel()
	testShortRamp(t, "quic")
}

// TestShortRampInMemoryPrintsARowPerStep is the same ramp on the
// in-memory transport: the server's whole session path, bots that decode
// what they receive, no network stack.
func TestShortRampInMemoryPrintsARowPerStep(t *testing.T) {
	t.Parallel()
	testShortRamp(t, "mem")
}

func testShortRamp(t *testing.T, transport string) {
	cfg, err := parseFlags([]string{"-ramp", "5,10", "-hold", "1s", "-settle", "200ms", "-transport", transport}, io.Discard)
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), cfg, &out))
	text := out.String()
	lines := strings.Split(strings.TrimSpace(text), "\n")
	require.GreaterOrEqual(t, len(lines), 5, text)

	type row struct {
		bots, players int
		hz, perBot    float64
		held          bool
	}
	var rows []row
	largest := 0
	for _, l := range lines[3 : len(lines)-1] {
		f := strings.Fields(l)
		require.GreaterOrEqual(t, len(f), 10, l)
		r := row{bots: atoi(t, f[0]), players: atoi(t, f[1]), hz: atof(t, f[2]), perBot: atof(t, f[5]), held: f[9] == "yes"}
		rows = append(rows, r)
		assert.Positive(t, r.hz, "the server ticked: %s", l)
		assert.Positive(t, atof(t, f[3]), "work was timed: %s", l)
		assert.Contains(t, f[4], "B/s", l)
		// The rate is printed to a tenth: one printed as 28.5 may have been
		// just under or over the line.
		if math.Abs(r.hz-28.5) > 0.05 || r.players != r.bots {
			assert.Equal(t, r.hz >= 28.5 && r.players == r.bots, r.held, "held means 28.5 Hz with everyone in: %s", l)
		}
		if r.held {
			largest = r.bots
		}
	}
	require.NotEmpty(t, rows, text)
	assert.Equal(t, 5, rows[0].bots)
	assert.Equal(t, 5, rows[0].players, "every bot in: %s", text)
	assert.Positive(t, rows[0].perBot, "each bot hears the others: %s", text)
	if rows[0].held {
		require.Len(t, rows, 2, "a held step goes on to the next: %s", text)
		assert.Equal(t, 10, rows[1].bots)
		assert.Equal(t, 10, rows[1].players, text)
	} else {
		assert.Len(t, rows, 1, "the ramp stops at the first step not held: %s", text)
	}
	end := lines[len(lines)-1]
	if largest > 0 {
		assert.Equal(t, "largest step held at >= 95% of 30 Hz: "+strconv.Itoa(largest)+" bots", end)
	} else {
		assert.Equal(t, "no step held at >= 95% of 30 Hz", end)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

func TestRampStepsParseAscending(t *testing.T) {
	steps, err := parseRamp("50, 100,200")
	require.NoError(t, err)
	assert.Equal(t, []int{50, 100, 200}, steps)
	steps, err = parseRamp("")
	require.NoError(t, err)
	assert.Nil(t, steps, "no -ramp, no load test")
	for _, bad := range []string{"50,50", "x", "-5", "10,,20"} {
		_, err := parseRamp(bad)
		assert.ErrorContains(t, err, "crowd: -ramp", bad)
	}
}

// TestShuffledTownSamplesEveryPartEarly: the ramp's first bots are a fair
// sample of the scenario (a town lists its hub first), the same for the
// same seed, and no spawn is lost or repeated.
func TestShuffledTownSamplesEveryPartEarly(t *testing.T) {
	town := scenario.Town(1000, 1)
	a, b := shuffled(town, 1), shuffled(town, 1)
	assert.Equal(t, a, b, "fixed by the seed")
	assert.NotEqual(t, a.Spawns, shuffled(town, 2).Spawns)
	assert.ElementsMatch(t, town.Spawns, a.Spawns)
	regions := map[scenario.Region]int{}
	for _, s := range a.Spawns[:100] {
		regions[s.Region]++
	}
	assert.InDelta(t, 42, regions[scenario.RegionHub], 15, "about 42%% of the first 100 in the hub: %v", regions)
	assert.Positive(t, regions[scenario.RegionTown], regions)
	assert.Positive(t, regions[scenario.RegionInterior], regions)
}
