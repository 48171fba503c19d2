//go:build !unix

package fleet

import "time"

// ProcessCPU returns the CPU time this process has used and true where the
// system can say; on this system it cannot, and it returns 0 and false.
func ProcessCPU() (time.Duration, bool) { return 0, false }
