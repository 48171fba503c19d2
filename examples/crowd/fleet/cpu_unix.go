//go:build unix

package fleet

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time (user plus system) this process has used
// since it started, summed over all its threads, and true; or 0 and false
// where the system cannot say. Divide a difference by the wall time between
// two readings for a share of one core: 2.0 is two cores busy.
func ProcessCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
