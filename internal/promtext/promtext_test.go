package promtext

import (
	"bufio"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAPageReadsAsTheFormatSays(t *testing.T) {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	p := New(w)
	p.Header("throng_tick", "Number of the last tick.\nSecond line \\ here.", "gauge")
	p.Sample("throng_tick", 42)
	p.Header("throng_system_seconds", "Time a system took.", "gauge")
	p.Labelled("throng_system_seconds", "system", `my "odd"\system`+"\n", 0.0025)
	p.Sample("throng_nan", math.NaN())
	p.Sample("throng_up", math.Inf(1))
	p.Sample("throng_down", math.Inf(-1))
	w.Flush()
	assert.Equal(t, `# HELP throng_tick Number of the last tick.\nSecond line \\ here.
# TYPE throng_tick gauge
throng_tick 42
# HELP throng_system_seconds Time a system took.
# TYPE throng_system_seconds gauge
throng_system_seconds{system="my \"odd\"\\system\n"} 0.0025
throng_nan NaN
throng_up +Inf
throng_down -Inf
`, b.String())
}
