package main

import (
	"math"
	"time"
)

// Tick work is binned on a log scale: 64 bins per doubling from 1 us up, so
// a quantile is within about 1% of the true value, and a run of any length
// keeps a fixed-size table.
const (
	binsPerDoubling = 64
	doublings       = 24 // 1 us to about 16 s
	binCount        = binsPerDoubling*doublings + 1
)

// histogram summarises tick work durations: count, mean, max and
// quantiles. The zero value is empty and ready.
type histogram struct {
	bins  [binCount]uint32
	count uint64
	sum   time.Duration
	max   time.Duration
}

func binOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us < 1 {
		return 0
	}
	return min(int(math.Log2(us)*binsPerDoubling)+1, binCount-1)
}

// binTop is the largest duration bin b holds.
func binTop(b int) time.Duration {
	if b == 0 {
		return time.Microsecond
	}
	return time.Duration(math.Exp2(float64(b)/binsPerDoubling) * float64(time.Microsecond))
}

func (h *histogram) add(d time.Duration) {
	h.bins[binOf(d)]++
	h.count++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *histogram) reset() { *h = histogram{} }

// mean returns the average duration, 0 when empty.
func (h *histogram) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return h.sum / time.Duration(h.count)
}

// quantile returns a duration that at least a fraction q of the samples do
// not exceed (to the bin's precision, and never above the max), 0 when
// empty.
func (h *histogram) quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	need := uint64(math.Ceil(q * float64(h.count)))
	var seen uint64
	for b, n := range h.bins {
		seen += uint64(n)
		if seen >= max(need, 1) {
			return min(binTop(b), h.max)
		}
	}
	return h.max
}
