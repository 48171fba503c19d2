package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/quic"
)

func field(line, key string) string {
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(key) + `=(\S+)`).FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestFlagsDefaultToAHundredBotsOnTheDevelopmentServer(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config{addr: "127.0.0.1:7777", n: 100, scenario: "square", seed: 1, insecure: true, tokenPrefix: "bot-", retryBusy: 30 * time.Second}, cfg)
}

func TestFlagsSetEveryKnob(t *testing.T) {
	cfg, err := parseFlags([]string{
		"-addr", "10.0.0.2:4433", "-n", "500", "-first", "500", "-scenario", "town", "-seed", "7",
		"-duration", "30s", "-insecure=false", "-token-prefix", "west-", "-drivers", "3", "-retry-busy", "0",
	}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, config{
		addr: "10.0.0.2:4433", n: 500, first: 500, scenario: "town", seed: 7,
		duration: 30 * time.Second, insecure: false, tokenPrefix: "west-", drivers: 3,
	}, cfg)
}

func TestBadFlagsAreErrors(t *testing.T) {
	for _, args := range [][]string{
		{"-n", "0"}, {"-first", "-1"}, {"-duration", "-1s"}, {"-addr", ""}, {"-token-prefix", ""},
		{"-drivers", "-1"}, {"-retry-busy", "-1s"}, {"-bogus"}, {"extra"}, {"-n", "ten"},
	} {
		_, err := parseFlags(args, io.Discard)
		assert.Error(t, err, "%q", args)
	}
	_, err := parseFlags([]string{"-h"}, io.Discard)
	assert.True(t, errors.Is(err, flag.ErrHelp), "-h prints the help and exits cleanly")

	cfg, err := parseFlags([]string{"-scenario", "arena"}, io.Discard)
	require.NoError(t, err, "the scenario is checked when the run starts")
	assert.ErrorContains(t, run(context.Background(), cfg, io.Discard), `bots: scenario: unknown scenario "arena"`)
}

// serve runs a crowd-like server on QUIC (development mode, admitting
// anyone on a square of two spawns) until the returned stop is called.
func serve(t *testing.T) (addr string, stop func()) {
	t.Helper()
	q, err := quic.Listen("127.0.0.1:0", quic.Config{Development: true})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: q, Admit: scenario.Square(2, 1).AdmitAny})
	if err != nil {
		q.Close()
		require.NoError(t, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			assert.NoError(t, <-ran)
		}
	}
	t.Cleanup(stop)
	return q.Addr().String(), stop
}

// TestBotsOfAnotherProcessJoinAndReport runs the command's bots against a
// server it did not start, with a prefix and numbers of their own: all are
// let in, hear each other, and the lines say so.
func TestBotsOfAnotherProcessJoinAndReport(t *testing.T) {
	addr, _ := serve(t)
	cfg, err := parseFlags([]string{"-addr", addr, "-n", "3", "-first", "10", "-token-prefix", "west-"}, io.Discard)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, cfg, &out))

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.GreaterOrEqual(t, len(lines), 3, out.String())
	assert.Equal(t, "west-10..west-12", field(lines[0], "token"), lines[0])
	second := lines[1]
	assert.Equal(t, "second", field(second, "msg"), second)
	var help bytes.Buffer
	_, err = parseFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, kv := range regexp.MustCompile(`(\S+)=`).FindAllStringSubmatch(second, -1) {
		if k := kv[1]; k != "msg" {
			assert.Contains(t, help.String(), "  "+k+" ", "-h explains %s", k)
		}
	}
	assert.Equal(t, "3", field(second, "bots"), second)
	for _, k := range []string{"sent/s", "upd/bot/s", "corrections", "cpu", "refused", "lost"} {
		assert.NotEmpty(t, field(second, k), "%s missing: %s", k, second)
	}
	last := lines[len(lines)-1]
	assert.Equal(t, "summary", field(last, "msg"), last)
	assert.Equal(t, "3", field(last, "joined"), last)
	assert.Equal(t, "0", field(last, "corrections"), last)
	assert.NotEqual(t, "0", field(last, "upd/bot/s"), "the bots hear each other: %s", last)
}

// TestBotsStopWhenTheServerGoes: with no bot connected any more the command
// ends with an error that says why, instead of idling.
func TestBotsStopWhenTheServerGoes(t *testing.T) {
	addr, stop := serve(t)
	cfg, err := parseFlags([]string{"-addr", addr, "-n", "2"}, io.Discard)
	require.NoError(t, err)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), cfg, &out) }()
	time.Sleep(300 * time.Millisecond)
	stop()
	select {
	case err := <-done:
		assert.ErrorContains(t, err, "bots: no bot is connected any more (2 joined")
	case <-time.After(5 * time.Second):
		t.Fatal("the bots kept running without a server")
	}
}
