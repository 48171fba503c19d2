//go:build race

package scheduler

// raceEnabled reports a build with the race detector.
const raceEnabled = true
