//go:build !race

package systems

// raceEnabled reports a build with the race detector.
const raceEnabled = false
