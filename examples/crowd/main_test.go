package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/net/client"
)

// field returns the value of key=value in a log line, "" if absent.
func field(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

// runLines runs the example with args for its -duration, as `go run`
// would, and returns its output lines.
func runLines(t *testing.T, args ...string) []string {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.duration)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, cfg, &out))
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// number parses key's value in line as a float.
func number(t *testing.T, line, key string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(field(line, key), 64)
	require.NoError(t, err, "%s in %s", key, line)
	return v
}

// TestCrowdPrintsLiveFiguresAndASummary runs the example on the in-memory
// transport, briefly, and reads its output the way a person would.
func TestCrowdPrintsLiveFiguresAndASummary(t *testing.T) {
	for _, sc := range []string{"square", "town", "world"} {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			lines := runLines(t, "-transport", "mem", "-scenario", sc, "-players", "60", "-duration", "2s")
			require.GreaterOrEqual(t, len(lines), 3, "start, a second, summary:\n%s", strings.Join(lines, "\n"))
			assert.Equal(t, "start", field(lines[0], "msg"))
			assert.Equal(t, sc, field(lines[0], "scenario"))
			assert.Equal(t, "mem", field(lines[0], "transport"))
			seconds := 0
			for _, l := range lines[1 : len(lines)-1] {
				require.Equal(t, "second", field(l, "msg"), l)
				seconds++
				assert.Equal(t, "60", field(l, "actors"), l)
				assert.Equal(t, "60", field(l, "players"), l)
				assert.Positive(t, number(t, l, "hz"), "the server ticks: %s", l)
				assert.LessOrEqual(t, number(t, l, "hz"), 31.0, "and never faster than asked: %s", l)
				for _, k := range []string{"tick", "clusters", "biggest", "units", "relays/tick", "throttled/tick", "pressure",
					"owed", "out", "all_out", "busy_rejections", "dropped_inputs", "corrections", "work_ms", "p95_ms", "bots", "bot_upd/s", "cpu"} {
					assert.NotEmpty(t, field(l, k), "%s missing: %s", k, l)
				}
			}
			assert.Contains(t, []int{1, 2}, seconds, "a line a second")
			help := helpText(t)
			for _, kv := range regexp.MustCompile(`(\S+)=`).FindAllStringSubmatch(lines[1], -1) {
				if k := kv[1]; k != "msg" && k != "tick" {
					assert.Contains(t, help, " "+k+" ", "-h explains %s", k)
				}
			}
			last := lines[len(lines)-1]
			assert.Equal(t, "summary", field(last, "msg"), last)
			assert.Equal(t, "60", field(last, "players"), "every bot was welcomed: %s", last)
			assert.Equal(t, "60", field(last, "bots_joined"), last)
			assert.Equal(t, "0", field(last, "corrections"), "bots keep the server's rules: %s", last)
			assert.Equal(t, "0", field(last, "rejected"), last)
			assert.Equal(t, "0", field(last, "dropped"), "no update was sent before its Welcome: %s", last)
			assert.Positive(t, number(t, last, "relays/tick"), "bots see each other: %s", last)
			assert.Positive(t, number(t, last, "bot_upd/s"), "and hear each other: %s", last)
			assert.NotEmpty(t, field(last, "out"), "movement bytes over the run: %s", last)
			assert.NotEmpty(t, field(last, "all_out"), "every byte over the run: %s", last)
			for _, name := range []string{"ingest", "prepare", "move", "relay", "join"} {
				assert.NotEmpty(t, field(last, name+"_ms"), "what %s took, over the last second: %s", name, last)
			}
		})
	}
}

// TestQUICCrowdWelcomesBotsThatHearEachOtherUncorrected runs the default
// example (QUIC) with a handful of bots for two seconds: every bot is
// welcomed over the network, hears the others, is never corrected, and when
// the run ends nothing is left running (server, clients, their goroutines).
func TestQUICCrowdWelcomesBotsThatHearEachOtherUncorrected(t *testing.T) {
	before := runtime.NumGoroutine()
	lines := runLines(t, "-players", "6", "-duration", "2s")
	text := strings.Join(lines, "\n")
	require.GreaterOrEqual(t, len(lines), 3, text)
	assert.Equal(t, "quic", field(lines[0], "transport"), lines[0])
	assert.True(t, strings.HasPrefix(field(lines[0], "addr"), "127.0.0.1:"), lines[0])
	last := lines[len(lines)-1]
	require.Equal(t, "summary", field(last, "msg"), text)
	assert.Equal(t, "6", field(last, "bots_joined"), "every bot was welcomed: %s", text)
	assert.Empty(t, field(last, "refused"), text)
	assert.Empty(t, field(last, "lost"), text)
	assert.Equal(t, "0", field(last, "bot_corrections"), "no bot was corrected: %s", last)
	assert.Equal(t, "0", field(last, "corrections"), "the server sent none: %s", last)
	assert.Equal(t, "6", field(last, "players"), "all six connected at the end: %s", last)
	assert.Positive(t, number(t, last, "bot_upd/s"), "each bot hears the others: %s", last)
	assert.Positive(t, number(t, last, "bot_updates_sent/s"), "and sends: %s", last)
	assert.LessOrEqual(t, number(t, last, "bot_updates_sent/s"), 6*31.0, "within the rate limit: %s", last)
	// The bots wave once a second; the example's greeter answers each wave.
	assert.Positive(t, number(t, last, "bot_waves"), last)
	// (A wave of the last moments may not have reached the server yet.)
	assert.Positive(t, number(t, last, "commands"), "waves reached the game's system: %s", last)
	assert.LessOrEqual(t, number(t, last, "commands"), number(t, last, "bot_waves"), last)
	assert.Positive(t, number(t, last, "bot_events"), "and was answered: %s", last)
	assert.LessOrEqual(t, number(t, last, "bot_events"), number(t, last, "bot_waves"), last)
	for _, l := range lines[1 : len(lines)-1] {
		require.Equal(t, "second", field(l, "msg"), l)
		for _, k := range []string{"players", "bots", "bot_upd/s", "bot_corrections", "cpu"} {
			assert.NotEmpty(t, field(l, k), "%s missing: %s", k, l)
		}
	}

	// Polled here, not with assert.Eventually: it runs the condition on a
	// goroutine of its own.
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left running after the run, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestWebSocketCrowdWelcomesBotsThatHearEachOther runs the example on the
// WebSocket transport, the one browsers use: every bot is welcomed over a
// real WebSocket on loopback, hears the others and is never corrected.
func TestWebSocketCrowdWelcomesBotsThatHearEachOther(t *testing.T) {
	lines := runLines(t, "-players", "6", "-duration", "2s", "-transport", "ws")
	text := strings.Join(lines, "\n")
	require.GreaterOrEqual(t, len(lines), 3, text)
	assert.Equal(t, "ws", field(lines[0], "transport"), lines[0])
	assert.True(t, strings.HasPrefix(field(lines[0], "addr"), "ws://127.0.0.1:"), lines[0])
	viewer := field(lines[0], "viewer")
	assert.Equal(t, strings.TrimSuffix(strings.Replace(field(lines[0], "addr"), "ws://", "http://", 1), "/throng")+"/", viewer, "the page beside the WebSocket")
	last := lines[len(lines)-1]
	require.Equal(t, "summary", field(last, "msg"), text)
	assert.Equal(t, "6", field(last, "bots_joined"), "every bot was welcomed: %s", text)
	assert.Equal(t, "0", field(last, "bot_corrections"), last)
	assert.Equal(t, "6", field(last, "players"), last)
	assert.Positive(t, number(t, last, "bot_upd/s"), "each bot hears the others: %s", last)
	assert.Positive(t, number(t, last, "bot_updates_sent/s"), "and sends: %s", last)
}

func TestFlagsDefaultToFourHundredQUICBotsOnTheSquareForTenSeconds(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config{
		scenario: "square", players: 400, bots: -1, transport: "quic", addr: "127.0.0.1:0", hz: 30,
		duration: 10 * time.Second, interest: true, seed: 1, saveEvery: 10 * time.Second, hold: 5 * time.Second, settle: time.Second,
	}, cfg)
}

// TestNoBotsServesUntilStopped: a server for another process's bots runs
// until Ctrl-C unless told otherwise.
func TestNoBotsServesUntilStopped(t *testing.T) {
	cfg, err := parseFlags([]string{"-bots", "0", "-addr", "127.0.0.1:7777"}, io.Discard)
	require.NoError(t, err)
	assert.Zero(t, cfg.duration)
	assert.Equal(t, "127.0.0.1:7777", cfg.addr)
	cfg, err = parseFlags([]string{"-bots", "0", "-duration", "3s"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, cfg.duration)
}

// TestNoBotsServerAdmitsBotsOfAnyNumber: with -bots 0 the server tells how
// to start the bots, and lets any bot in, past -players too.
func TestNoBotsServerAdmitsBotsOfAnyNumber(t *testing.T) {
	cfg, err := parseFlags([]string{"-bots", "0", "-players", "2"}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, out) }()
	var addr string
	require.Eventually(t, func() bool {
		for l := range strings.Lines(out.String()) {
			if field(l, "msg") == "start" {
				addr = field(l, "addr")
			}
		}
		return addr != "" && strings.Contains(out.String(), "go run ./examples/crowd/bots -addr "+addr)
	}, 5*time.Second, 10*time.Millisecond, out.String())
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	c, err := client.Dial(dctx, addr, client.Config{Token: "bot-5", InsecureSkipVerify: true})
	require.NoError(t, err, "bot 5 of a 2-player population is let in")
	c.Close()
	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "msg=summary")
}

// helpText is what -h prints.
func helpText(t *testing.T) string {
	t.Helper()
	var help bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	return strings.ReplaceAll(help.String(), "\n", " \n")
}

// syncBuffer is a bytes.Buffer safe to write from the run and read from the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-players", "0"}, {"-duration", "-1s"}, {"-workers", "-2"}, {"-bogus"}, {"extra"},
		{"-bots", "-2"}, {"-transport", "tcp"}, {"-transport", "mem", "-bots", "0"},
		{"-ramp", "50,abc"}, {"-ramp", "0,10"}, {"-ramp", "100,50"},
		{"-ramp", "10", "-hold", "0s"}, {"-settle", "-1s"}, {"-save-every", "-1s"},
	} {
		_, err := parseFlags(args, io.Discard)
		if assert.Error(t, err, "%q", args) && !errors.Is(err, flag.ErrHelp) && !strings.Contains(err.Error(), "provided but not defined") {
			assert.True(t, strings.HasPrefix(err.Error(), "crowd: ") || strings.HasPrefix(err.Error(), "invalid value"), err.Error())
		}
	}
	cfg, err := parseFlags([]string{"-scenario", "arena"}, io.Discard)
	require.NoError(t, err, "the scenario is checked when the run starts")
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), `unknown scenario "arena"`)
	cfg, err = parseFlags([]string{"-hz", "1000"}, io.Discard)
	require.NoError(t, err)
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), "tickRate", "the server refuses the rate")
	cfg, err = parseFlags([]string{"-addr", "256.0.0.1:1"}, io.Discard)
	require.NoError(t, err)
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), "crowd: quic: listen")
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

// TestConfigFileSetsTheServerAndFlagsOverrideIt: -config reads a settings
// file the server starts from; a flag given on the command line wins over
// the file, one left at its default does not; a broken file is an error
// that names the key.
func TestConfigFileSetsTheServerAndFlagsOverrideIt(t *testing.T) {
	dir := t.TempDir()
	file := dir + "/settings.json"
	require.NoError(t, os.WriteFile(file, []byte(`{"tickRate": 20, "parallelism": {"adaptiveThrottling": false}}`), 0o600))
	lines := runLines(t, "-transport", "mem", "-players", "10", "-duration", "1500ms", "-config", file)
	assert.Equal(t, "20", field(lines[0], "hz"), "the file's tick rate: %s", lines[0])
	assert.Equal(t, "false", field(lines[0], "throttling"), lines[0])
	lines = runLines(t, "-transport", "mem", "-players", "10", "-duration", "1500ms", "-config", file, "-hz", "25")
	assert.Equal(t, "25", field(lines[0], "hz"), "-hz overrides the file: %s", lines[0])
	assert.Equal(t, "false", field(lines[0], "throttling"), "the rest of the file holds: %s", lines[0])

	require.NoError(t, os.WriteFile(file, []byte(`{"parallelism": {"adaptiveThrotling": false}}`), 0o600))
	_, err := parseFlags([]string{"-config", file}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "parallelism.adaptiveThrotling")
	_, err = parseFlags([]string{"-config", dir + "/missing.json"}, io.Discard)
	assert.ErrorContains(t, err, "missing.json")
}

// TestSaveSavesTheWorldAndLoadStartsFromIt: -save saves the world into a
// directory every -save-every and once more as the run ends, the
// per-second lines and the summary count the saves, and -load starts a
// run from the directory, its ticks going on from the save's. The crowd
// is all players, whose actors a save does not keep: the saves hold no
// actors.
func TestSaveSavesTheWorldAndLoadStartsFromIt(t *testing.T) {
	dir := t.TempDir()
	lines := runLines(t, "-transport", "mem", "-players", "10", "-duration", "1500ms", "-save", dir, "-save-every", "200ms")
	text := strings.Join(lines, "\n")
	assert.Equal(t, dir, field(lines[0], "save"), lines[0])
	assert.Equal(t, "200ms", field(lines[0], "save_every"), lines[0])
	var seconds []string
	var summary, saved string
	for _, l := range lines {
		switch field(l, "msg") {
		case "second":
			seconds = append(seconds, l)
		case "summary":
			summary = l
		case "saved":
			saved = l
		}
	}
	require.NotEmpty(t, seconds, text)
	for _, l := range seconds {
		for _, k := range []string{"saves", "save_freeze_ms", "save_write_ms", "save_bytes"} {
			assert.NotEmpty(t, field(l, k), "%s missing: %s", k, l)
		}
	}
	assert.Positive(t, number(t, seconds[len(seconds)-1], "saves"), "a save every 0.2 s: %s", text)
	require.NotEmpty(t, summary, text)
	assert.Positive(t, number(t, summary, "saves"), summary)
	assert.NotEmpty(t, field(summary, "save_freeze_ms"), summary)
	assert.NotEmpty(t, field(summary, "save_write_ms"), summary)
	assert.Positive(t, number(t, summary, "save_bytes"), "the latest save's size: %s", summary)
	require.NotEmpty(t, saved, "the save as the run ends: %s", text)
	assert.Equal(t, "0", field(saved, "actors"), "players are not saved: %s", saved)
	assert.Positive(t, number(t, saved, "bytes"), saved)

	_, err := os.Stat(filepath.Join(dir, save.ManifestName))
	require.NoError(t, err, "the directory holds a manifest")
	files, err := filepath.Glob(filepath.Join(dir, "world-*.save"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "and save files")
	assert.Contains(t, files, field(saved, "file"), "among them the last save")

	lines = runLines(t, "-transport", "mem", "-players", "10", "-duration", "1500ms", "-load", dir)
	text = strings.Join(lines, "\n")
	assert.Contains(t, text, "world loaded", "the server says it loaded the save")
	assert.NotContains(t, text, "saves=", "no saves without -save: the lines are as they were")
	var start, second string
	for _, l := range lines {
		switch field(l, "msg") {
		case "start":
			start = l
		case "second":
			if second == "" {
				second = l
			}
		}
	}
	require.NotEmpty(t, start, text)
	assert.Equal(t, dir, field(start, "load"), start)
	require.NotEmpty(t, second, text)
	assert.Greater(t, number(t, second, "tick"), number(t, saved, "tick"), "the ticks go on from the save's")
	assert.Equal(t, "10", field(second, "actors"), "the bots joined the loaded world: %s", second)
}

// TestSaveFlagsOverrideTheConfigFile: -save, -save-every and -load given
// on the command line win over the file's persistence section and
// loadFrom; those not given leave the file's.
func TestSaveFlagsOverrideTheConfigFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "settings.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"persistence": {"dir": "file-dir", "everySeconds": 60}, "loadFrom": "file-load"}`), 0o600))
	cfg, err := parseFlags([]string{"-config", file}, io.Discard)
	require.NoError(t, err)
	opts := cfg.serverOptions()
	assert.Equal(t, "file-dir", opts.Persistence.Dir)
	assert.Equal(t, 60.0, *opts.Persistence.EverySeconds)
	assert.Equal(t, "file-load", opts.LoadFrom)

	cfg, err = parseFlags([]string{"-config", file, "-save", "flag-dir"}, io.Discard)
	require.NoError(t, err)
	opts = cfg.serverOptions()
	assert.Equal(t, "flag-dir", opts.Persistence.Dir)
	assert.Equal(t, 60.0, *opts.Persistence.EverySeconds, "the file's, -save-every not given")
	assert.Equal(t, "file-load", opts.LoadFrom)

	cfg, err = parseFlags([]string{"-config", file, "-save-every", "2s", "-load", "flag-load"}, io.Discard)
	require.NoError(t, err)
	opts = cfg.serverOptions()
	assert.Equal(t, "file-dir", opts.Persistence.Dir)
	assert.Equal(t, 2.0, *opts.Persistence.EverySeconds)
	assert.Equal(t, "flag-load", opts.LoadFrom)

	cfg, err = parseFlags([]string{"-save", "d"}, io.Discard)
	require.NoError(t, err)
	opts = cfg.serverOptions()
	assert.Equal(t, "d", opts.Persistence.Dir)
	assert.Equal(t, 10.0, *opts.Persistence.EverySeconds, "the example's default, without a file")
	assert.Empty(t, opts.LoadFrom)
}
