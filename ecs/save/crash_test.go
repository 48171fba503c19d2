package save_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
)

// crashChildEnv, set to a save directory, makes the test binary the child
// of TestASaveKilledAtAnyMomentLeavesTheLastCompleteSaveLoadable, saving
// into that directory until it is killed.
const crashChildEnv = "THRONG_SAVE_CRASH_CHILD"

const (
	// crashRounds is how many children are started and killed.
	crashRounds = 60
	// crashActors is the size of the children's world: a save of it takes
	// a few milliseconds, most of them in fsync, and the world is built
	// quickly enough under the race detector too.
	crashActors = 5000
	// crashKeep is the keep of saveTo, which the children save with.
	crashKeep = 2
)

// TestASaveKilledAtAnyMomentLeavesTheLastCompleteSaveLoadable proves the
// package's promise about crashes: a process killed outright (SIGKILL, no
// chance to clean up) at any moment while it saves leaves a directory
// whose manifest names a complete save, every checksum good, and never an
// older save than the last one the process was told had finished.
//
// A child process saves the same world into one directory over and over
// and is killed at a random moment: before its first save has finished or
// after a few, at a random point of the save it is in. After each kill the
// directory is read and restored, and the next child carries on from the
// save it finds, as a restarted server does. Until a first save has
// finished, reading the directory says that it holds no save.
func TestASaveKilledAtAnyMomentLeavesTheLastCompleteSaveLoadable(t *testing.T) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(t, dir)
		return
	}
	if runtime.GOOS == "windows" {
		t.Skip("kills its children with SIGKILL")
	}
	if testing.Short() {
		t.Skip("starts and kills many processes")
	}
	dir := t.TempDir()
	want := world(t, crashActors, false).Len() // what a save of the children's world holds
	rng := rand.New(rand.NewPCG(0x5a7e, 0xc7a54))
	var (
		saved          uint64                  // the newest tick a child said it saved
		read           uint64                  // the tick of the save read after the last round
		estimate       = 10 * time.Millisecond // how long a save takes: the last a child reported
		early, several int                     // rounds killed before their first save finished, and after three or more
	)
	for round := range crashRounds {
		// Let the child finish 0 to 4 saves, then kill it at a random
		// moment of the next, or just after.
		after := rng.IntN(5)
		delay := time.Duration(rng.Int64N(int64(estimate) * 5 / 4))
		ticks, took := crashRound(t, dir, after, delay)
		if took > 0 {
			estimate = took
		}
		switch {
		case len(ticks) == 0:
			early++
		case len(ticks) >= 3:
			several++
		}
		for _, tick := range ticks {
			require.Greater(t, tick, saved, "round %d: the child saved tick %d after tick %d", round, tick, saved)
			saved = tick
		}

		f, err := save.Read(dir)
		if _, statErr := os.Stat(filepath.Join(dir, save.ManifestName)); errors.Is(statErr, fs.ErrNotExist) {
			require.Zero(t, saved, "round %d: the child said it saved tick %d, and the directory has no manifest", round, saved)
			require.ErrorContains(t, err, "has no save", "round %d: no save has finished yet", round)
			continue
		}
		require.NoError(t, err, "round %d: the manifest names a save that cannot be read (the child saved %v before it was killed)", round, ticks)
		require.GreaterOrEqual(t, f.Tick(), saved, "round %d: the save of tick %d, which the child said it finished, is lost", round, saved)
		require.GreaterOrEqual(t, f.Tick(), read, "round %d: the manifest went back from tick %d", round, read)
		read = f.Tick()
		require.Equal(t, want, f.Actors(), "round %d: actors in the save of tick %d", round, f.Tick())
		loaded := ecs.NewWorld(64)
		require.NoError(t, f.Restore(loaded, gameTypes()), "round %d", round)
		require.Equal(t, want, loaded.Len(), "round %d: actors restored from the save of tick %d", round, f.Tick())

		if len(ticks) > 0 {
			// The child's last finished save pruned the directory to keep
			// saves; the one it was killed in adds at most its file and
			// its temporary file.
			files, err := filepath.Glob(filepath.Join(dir, "world-*.save"))
			require.NoError(t, err)
			require.LessOrEqual(t, len(files), crashKeep+1, "round %d: saves left in the directory: %v", round, files)
			temps, err := filepath.Glob(filepath.Join(dir, "world-*.save.tmp"))
			require.NoError(t, err)
			require.LessOrEqual(t, len(temps), 1, "round %d: temporary files left in the directory: %v", round, temps)
		}
	}
	require.NotZero(t, saved, "no child finished a save")
	t.Logf("%d rounds, saves up to tick %d: %d killed before their first save finished, %d after three or more",
		crashRounds, saved, early, several)
}

// crashRound starts a child saving into dir, lets it finish `after` saves,
// waits delay more and kills it. It returns the ticks the child said it
// saved, and how long its last save took (0 if none finished).
func crashRound(t *testing.T, dir string, after int, delay time.Duration) (ticks []uint64, took time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestASaveKilledAtAnyMomentLeavesTheLastCompleteSaveLoadable$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	// The child ends when its stdin closes: when this process goes
	// without killing it.
	_, err = cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return // a line cut short by the kill is dropped
			}
			lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	var out []string // all the child printed, for a failure
	ready := false
	take := func(line string) {
		out = append(out, line)
		var tick uint64
		var ns int64
		switch {
		case line == "ready":
			ready = true
		case strings.HasPrefix(line, "saved "):
			if _, err := fmt.Sscanf(line, "saved %d %d", &tick, &ns); err == nil {
				ticks = append(ticks, tick)
				took = time.Duration(ns)
			}
		}
	}

	timeout := time.After(time.Minute)
	ended, late := false, false
	for !ended && !late && (!ready || len(ticks) < after) {
		select {
		case line, ok := <-lines:
			if ok {
				take(line)
			}
			ended = !ok
		case <-timeout:
			late = true
		}
	}
	if !ended && !late {
		time.Sleep(delay)
	}
	killErr := cmd.Process.Signal(syscall.SIGKILL)
	for line := range lines {
		take(line)
	}
	waitErr := cmd.Wait()
	status, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	require.Falsef(t, late, "the child did not finish %d saves within a minute; its output:\n%s\n%s",
		after, strings.Join(out, "\n"), stderr.String())
	require.Truef(t, status.Signaled() && status.Signal() == syscall.SIGKILL,
		"the child was not killed but ended (%v; kill: %v)\nits output:\n%s\n%s",
		waitErr, killErr, strings.Join(out, "\n"), stderr.String())
	return ticks, took
}

// crashChild saves a world of crashActors actors into dir over and over,
// each save at the tick after the last, starting after the save the
// directory holds. It prints "ready" before the first save and "saved
// <tick> <nanoseconds it took>" after each, and runs until it is killed
// or its stdin closes.
func crashChild(t *testing.T, dir string) {
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(3)
	}()
	w := world(t, crashActors, false)
	s, err := save.NewSaver(w, gameTypes())
	require.NoError(t, err)
	tick := uint64(1)
	if f, err := save.Read(dir); err == nil {
		tick = f.Tick() + 1
	}
	fmt.Println("ready")
	for ; ; tick++ {
		start := time.Now()
		saveTo(t, s, dir, tick)
		fmt.Printf("saved %d %d\n", tick, time.Since(start))
	}
}
