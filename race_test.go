//go:build race

package throng_test

// raceEnabled reports a build with the race detector, whose instrumented
// tick runs many times slower than the plain one.
const raceEnabled = true
