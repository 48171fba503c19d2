package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPlazaLinesCountPropChangesAndPropFrames runs the plaza scenario on
// the in-memory transport: the start line names its props and NPCs, every
// second's line says how many prop changes the bots' pushes made and how
// many Prop frames told them, and the summary totals both.
func TestPlazaLinesCountPropChangesAndPropFrames(t *testing.T) {
	lines := runLines(t, "-transport", "mem", "-scenario", "plaza", "-players", "60", "-duration", "3s")
	text := strings.Join(lines, "\n")
	require.GreaterOrEqual(t, len(lines), 3, text)
	assert.Equal(t, "plaza", field(lines[0], "scenario"), lines[0])
	assert.Equal(t, "5000", field(lines[0], "props"), lines[0])
	assert.Equal(t, "200", field(lines[0], "npcs"), lines[0])
	var changes, sent float64
	for _, l := range lines[1 : len(lines)-1] {
		require.Equal(t, "second", field(l, "msg"), l)
		changes += number(t, l, "prop_changes")
		sent += number(t, l, "props_sent")
	}
	last := lines[len(lines)-1]
	require.Equal(t, "summary", field(last, "msg"), text)
	assert.Equal(t, "60", field(last, "bots_joined"), last)
	assert.Equal(t, "0", field(last, "corrections"), "jumping bots keep the server's rules: %s", last)
	assert.Positive(t, number(t, last, "prop_changes"), "the bots walked into props and pushed them: %s", text)
	assert.GreaterOrEqual(t, number(t, last, "prop_changes"), changes, "the summary totals the seconds: %s", text)
	assert.Greater(t, number(t, last, "props_sent"), 60*100.0, "each player was told of the hundreds of props around it: %s", last)
	assert.GreaterOrEqual(t, number(t, last, "props_sent"), sent, last)
	// Every change made was told, but those of the last tick or two (made
	// after the join the summary counted, or a slide's step a far viewer
	// hears later): a few ticks' worth at most. A slow tick (the race
	// detector on a busy machine) makes more changes than an average one.
	made, told := number(t, last, "prop_changes"), number(t, last, "prop_changes_told")
	assert.LessOrEqual(t, told, made, last)
	assert.Less(t, made-told, 3*made/number(t, last, "ticks")+10, "no prop change lost: %s", last)
	// 10 updates a second each, at most.
	assert.LessOrEqual(t, number(t, last, "bot_updates_sent/s"), 60*10.5, last)
	assert.NotEmpty(t, field(last, "plaza-physics_ms"), "the plaza's systems are timed: %s", last)
}

// TestPlazaRefusesToLoadASave: the plaza spawns its world afresh, so a
// run that would also load one is refused before it starts.
func TestPlazaRefusesToLoadASave(t *testing.T) {
	cfg, err := parseFlags([]string{"-transport", "mem", "-scenario", "plaza", "-load", t.TempDir()}, io.Discard)
	require.NoError(t, err)
	err = run(context.Background(), cfg, io.Discard)
	assert.ErrorContains(t, err, "cannot -load")
}
