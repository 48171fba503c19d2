package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// field returns the value of key=value in a log line, "" if absent.
func field(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestCrowdPrintsLiveFiguresAndASummary runs the example as `go run` would,
// briefly, and reads its output the way a person would.
func TestCrowdPrintsLiveFiguresAndASummary(t *testing.T) {
	for _, sc := range []string{"square", "town", "world"} {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			cfg, err := parseFlags([]string{"-scenario", sc, "-players", "60", "-duration", "1600ms"}, io.Discard)
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), cfg.duration)
			defer cancel()
			var out bytes.Buffer
			require.NoError(t, run(ctx, cfg, &out))

			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			require.GreaterOrEqual(t, len(lines), 3, "start, a second, summary:\n%s", out.String())
			assert.Equal(t, "start", field(lines[0], "msg"))
			assert.Equal(t, sc, field(lines[0], "scenario"))
			seconds := 0
			for _, l := range lines[1 : len(lines)-1] {
				require.Equal(t, "second", field(l, "msg"), l)
				seconds++
				assert.Equal(t, "60", field(l, "actors"), l)
				hz, err := strconv.ParseFloat(field(l, "hz"), 64)
				require.NoError(t, err, l)
				assert.Greater(t, hz, 10.0, "a 30 Hz server on a busy machine still ticks: %s", l)
				for _, k := range []string{"tick", "clusters", "biggest", "units", "relays/tick", "out", "corrections", "work_ms", "p95_ms"} {
					assert.NotEmpty(t, field(l, k), "%s missing: %s", k, l)
				}
			}
			assert.Equal(t, 1, seconds)
			last := lines[len(lines)-1]
			assert.Equal(t, "summary", field(last, "msg"), last)
			assert.Equal(t, "60", field(last, "players"), "every bot was welcomed: %s", last)
			assert.Equal(t, "0", field(last, "corrections"), "bots keep the server's rules: %s", last)
			assert.Equal(t, "0", field(last, "rejected"), last)
			assert.Equal(t, "0", field(last, "dropped"), "no update was sent before its Welcome: %s", last)
			relays, err := strconv.Atoi(field(last, "relays/tick"))
			require.NoError(t, err)
			assert.Positive(t, relays, "bots see each other: %s", last)
		})
	}
}

func TestFlagsDefaultToFourHundredOnTheSquareForTenSeconds(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config{scenario: "square", players: 400, hz: 30, duration: 10 * time.Second, interest: true, seed: 1}, cfg)
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-players", "0"}, {"-duration", "-1s"}, {"-workers", "-2"}, {"-bogus"}, {"extra"},
	} {
		_, err := parseFlags(args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
	cfg, err := parseFlags([]string{"-scenario", "arena"}, io.Discard)
	require.NoError(t, err, "the scenario is checked when the run starts")
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), `unknown scenario "arena"`)
	cfg, err = parseFlags([]string{"-hz", "1000"}, io.Discard)
	require.NoError(t, err)
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), "tickRate", "the server refuses the rate")
}

func TestHistogramQuantilesAreWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h histogram
	var all []time.Duration
	for range 5000 {
		d := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
		h.add(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.05, 0.5, 0.95, 0.99} {
		exact := all[int(q*float64(len(all)))-1]
		assert.InEpsilon(t, float64(exact), float64(h.quantile(q)), 0.012, "q=%v", q)
	}
	assert.Equal(t, all[len(all)-1], h.quantile(1))
	var sum time.Duration
	for _, d := range all {
		sum += d
	}
	assert.Equal(t, sum/time.Duration(len(all)), h.mean())
}

func TestEmptyHistogramSaysZero(t *testing.T) {
	var h histogram
	assert.Zero(t, h.mean())
	assert.Zero(t, h.quantile(0.95))
	h.add(0)
	assert.Zero(t, h.quantile(0.95), "a sub-microsecond tick is not rounded up past its max")
}
