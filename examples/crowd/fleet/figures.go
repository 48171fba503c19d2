package fleet

import (
	"math"
	"time"
)

// UpdatesPerBot is records received per bot per second over d, rounded to
// one decimal; 0 without bots or time.
func UpdatesPerBot(records uint64, bots int, d time.Duration) float64 {
	if bots <= 0 || d <= 0 {
		return 0
	}
	return Round(float64(records)/float64(bots)/d.Seconds(), 1)
}

// CPUPercent is the process CPU used since the ProcessCPU reading since,
// over d, in percent of one core; -1 where the system cannot say.
func CPUPercent(since, d time.Duration) float64 {
	now, ok := ProcessCPU()
	if !ok || d <= 0 {
		return -1
	}
	return Round(100*float64(now-since)/float64(d), 0)
}

// Round rounds v to digits decimals, for printed figures.
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
