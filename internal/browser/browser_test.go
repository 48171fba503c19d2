package browser_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/internal/browser"
)

// fakeT is a testing.TB whose failures, skips, logs and cleanups are kept
// for the test to look at; Fatal and Skip end the goroutine, as they do.
type fakeT struct {
	testing.TB
	name     string
	failed   bool
	mu       sync.Mutex
	skipped  string
	fatal    string
	logs     []string
	cleanups []func()
}

func (f *fakeT) Name() string      { return f.name }
func (f *fakeT) Helper()           {}
func (f *fakeT) Failed() bool      { return f.failed }
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Logf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.logs = append(f.logs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Skip(args ...any) {
	f.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls fn with f on a goroutine of its own (Skip and Fatal end it),
// then runs f's cleanups, last first.
func (f *fakeT) run(fn func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	for _, c := range slices.Backward(f.cleanups) {
		c()
	}
}

// mustHaveRun skips t as New skipped f (no browser here), and fails it as
// New failed f.
func (f *fakeT) mustHaveRun(t *testing.T) {
	t.Helper()
	if f.skipped != "" {
		t.Skip(f.skipped)
	}
	require.Empty(t, f.fatal)
}

// noBrowser leaves New nothing to find: an empty PATH, no THRONG_BROWSER.
func noBrowser(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(browser.EnvBrowser, "")
}

func TestNoBrowserSkipsSayingHowToInstallOne(t *testing.T) {
	noBrowser(t)
	t.Setenv(browser.EnvRequire, "")
	f := &fakeT{TB: t, name: "TestPage"}
	f.run(func(tb testing.TB) { browser.New(tb) })
	assert.Contains(t, f.skipped, "no Chromium found")
	assert.Contains(t, f.skipped, "apt-get install chromium")
	assert.Empty(t, f.fatal)
}

func TestNoBrowserFailsWhenOneIsRequired(t *testing.T) {
	noBrowser(t)
	t.Setenv(browser.EnvRequire, "1")
	f := &fakeT{TB: t, name: "TestPage"}
	f.run(func(tb testing.TB) { browser.New(tb) })
	assert.Contains(t, f.fatal, "no Chromium found")
	assert.Empty(t, f.skipped)
}

func TestABrowserNamedButMissingFails(t *testing.T) {
	t.Setenv(browser.EnvBrowser, filepath.Join(t.TempDir(), "chromium"))
	t.Setenv(browser.EnvRequire, "")
	f := &fakeT{TB: t, name: "TestPage"}
	f.run(func(tb testing.TB) { browser.New(tb) })
	assert.Contains(t, f.fatal, browser.EnvBrowser)
	assert.Empty(t, f.skipped)
}

// page serves a page with a known look: a green heading on white.
func page(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><body style="margin:0;background:#fff">`+
			`<h1 style="margin:0;height:200px;background:#0a0">hello</h1>`+
			`<script>console.log("the page ran")</script>`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestAFailedTestLeavesAScreenshot: when the test has failed by its end,
// New's cleanup saves a PNG of the page, the window's size, named after
// the test, and logs where it is and what the page logged.
func TestAFailedTestLeavesAScreenshot(t *testing.T) {
	url := page(t)
	dir := t.TempDir()
	t.Setenv(browser.EnvScreenshots, dir)
	f := &fakeT{TB: t, name: "TestViewer/busy server"}
	f.run(func(tb testing.TB) {
		ctx := browser.New(tb)
		f.failed = true
		assert.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("h1")))
	})
	f.mustHaveRun(t)
	file := filepath.Join(dir, "TestViewer_busy_server.png")
	shot, err := os.ReadFile(file)
	require.NoError(t, err, "logs: %q", f.logs)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	assert.Equal(t, browser.Width, img.Bounds().Dx())
	assert.GreaterOrEqual(t, img.Bounds().Dy(), 200)
	r, g, b, _ := img.At(10, 10).RGBA()
	assert.True(t, r < 0x1000 && g > 0x9000 && b < 0x1000, "the heading is green: %x %x %x", r, g, b)
	logs := strings.Join(f.logs, "\n")
	assert.Contains(t, logs, file)
	assert.Contains(t, logs, "the page ran", "the page's console is logged")
}

// TestScreenshotOnDemandAndNoneForAPassedTest: Screenshot saves a PNG
// where it is told, and a test that passed leaves no screenshot behind.
func TestScreenshotOnDemandAndNoneForAPassedTest(t *testing.T) {
	url := page(t)
	dir := t.TempDir()
	t.Setenv(browser.EnvScreenshots, dir)
	f := &fakeT{TB: t, name: "TestPasses"}
	file := filepath.Join(t.TempDir(), "docs", "page.png")
	f.run(func(tb testing.TB) {
		ctx := browser.New(tb)
		if assert.NoError(t, chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("h1"))) {
			assert.NoError(t, browser.Screenshot(ctx, file))
		}
	})
	f.mustHaveRun(t)
	shot, err := os.ReadFile(file)
	require.NoError(t, err)
	_, err = png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "no screenshot for a test that passed")
}
