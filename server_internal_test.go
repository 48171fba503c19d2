package throng

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOnlyAServerWithWorkersWakesAheadOfItsTicks: Run wakes the worker
// pool ahead of each tick only where there are workers to wake; a server
// without (parallelism off, or a pool of one) wakes once a tick.
func TestOnlyAServerWithWorkersWakesAheadOfItsTicks(t *testing.T) {
	for name, c := range map[string]struct {
		par  Parallelism
		want time.Duration
	}{
		"two workers":     {Parallelism{WorkerThreads: 2}, DefaultWorkerWakeAheadMicros * time.Microsecond},
		"parallelism off": {Parallelism{Enabled: new(false), WorkerThreads: 2}, 0},
		"one worker":      {Parallelism{WorkerThreads: 1}, 0},
	} {
		s, err := New(Options{Parallelism: c.par})
		require.NoError(t, err, name)
		assert.Equal(t, c.want, s.wakeAhead(), name)
		s.Close()
	}
}
