// Package browser starts headless Chromium for tests that drive a real
// browser (through chromedp) against pages served on loopback.
//
// The contract:
//
//   - [New] finds the browser: the executable THRONG_BROWSER names (a path
//     or a name on PATH), else the first of chromium, chromium-browser,
//     google-chrome and google-chrome-stable on PATH. THRONG_BROWSER set
//     to something that is not there fails the test. No browser at all
//     skips the test, saying how to install one, unless
//     THRONG_REQUIRE_BROWSER=1 (as CI sets): then the test fails. A browser
//     test never passes without having run.
//   - The browser runs headless, sandbox off, GPU off, /dev/shm unused (so
//     that it runs as root in a container), its page 1280x800 CSS pixels
//     at scale 1, one browser per call of New. It is stopped when the test
//     ends.
//   - When the test has failed by then, a full-page PNG of what the page
//     showed is saved as <test name>.png in THRONG_SCREENSHOTS (default
//     $TMPDIR/throng-screenshots), and its path, with what the page wrote
//     to its console, is logged. Call New after starting the servers the
//     page talks to, so that (cleanups running last first) the screenshot
//     is taken before they stop.
//   - [Screenshot] saves the same PNG on demand, for documentation.
package browser

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Environment variables New reads.
const (
	// EnvBrowser names the browser to run: a path, or a name on PATH.
	EnvBrowser = "THRONG_BROWSER"
	// EnvRequire set to 1 makes a missing browser fail the test instead of
	// skipping it.
	EnvRequire = "THRONG_REQUIRE_BROWSER"
	// EnvScreenshots is the directory for the screenshots of failed tests.
	EnvScreenshots = "THRONG_SCREENSHOTS"
)

// Names are the executables New looks for on PATH, in order, when
// THRONG_BROWSER is not set.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Width and Height are the size of the browser's page, in CSS pixels.
const (
	Width  = 1280
	Height = 800
)

// ErrNotFound is Find's error when no browser is installed.
var ErrNotFound = errors.New("no Chromium found: looked for " + strings.Join(Names, ", ") +
	" on PATH and " + EnvBrowser + " is not set; install one with apt-get install chromium")

// Find returns the path of the browser New runs: THRONG_BROWSER's, or the
// first of Names on PATH. With none it returns ErrNotFound; with a
// THRONG_BROWSER that names nothing executable, another error.
func Find() (string, error) {
	if name := os.Getenv(EnvBrowser); name != "" {
		path, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBrowser, name, err)
		}
		return path, nil
	}
	for _, name := range Names {
		if path, err := exec.LookPath(name); err == nil {
			return path, nil
		}
	}
	return "", ErrNotFound
}

// New starts a headless browser for t and returns its chromedp context:
// pass it to chromedp.Do and chromedp.Run (it has no deadline; give one
// action a timeout with a context derived from it). See the package doc
// for what New does without a browser and when t fails.
func New(t testing.TB) context.Context {
	t.Helper()
	path, err := Find()
	switch {
	case errors.Is(err, ErrNotFound) && os.Getenv(EnvRequire) != "1":
		t.Skip(err.Error() + " (set " + EnvRequire + "=1 to fail instead)")
	case err != nil:
		t.Fatalf("browser: %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(Width, Height),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	// The first Run starts the browser, for as long as ctx lives. (The
	// window's size leaves room for a window's frame; the page gets all of
	// it.)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(Width, Height)); err != nil {
		cancel()
		cancelAlloc()
		t.Fatalf("browser: starting %s: %v", path, err)
	}
	con := &console{}
	messages := chromedp.Console(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			con.add(m.String())
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			file := filepath.Join(ScreenshotDir(), fileName(t.Name())+".png")
			if err := Screenshot(ctx, file); err != nil {
				t.Logf("browser: no screenshot of the failed test: %v", err)
			} else {
				t.Logf("browser: the page when the test failed: %s", file)
			}
			if lines := con.lines(); len(lines) > 0 {
				t.Logf("browser: the page's console:\n\t%s", strings.Join(lines, "\n\t"))
			}
		}
		cancel()
		cancelAlloc()
		wg.Wait()
	})
	return ctx
}

// ScreenshotDir is where New saves the screenshots of failed tests:
// THRONG_SCREENSHOTS, or throng-screenshots in the temporary directory.
func ScreenshotDir() string {
	return cmp.Or(os.Getenv(EnvScreenshots), filepath.Join(os.TempDir(), "throng-screenshots"))
}

// Screenshot saves a full-page PNG of the page in ctx (a context from New)
// at path, creating its directory. It gives up after 10 seconds.
func Screenshot(ctx context.Context, path string) error {
	tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("browser: screenshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("browser: screenshot: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("browser: screenshot: %w", err)
	}
	return nil
}

// fileName turns a test's name into a file name: subtests' slashes and
// anything else but letters, digits, '-', '_' and '.' become '_'.
func fileName(test string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, test)
}

// console keeps the last of what the page wrote to its console.
type console struct {
	mu   sync.Mutex
	last []string
}

const consoleKept = 50

func (c *console) add(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.last) == consoleKept {
		c.last = append(c.last[:0], c.last[1:]...)
	}
	c.last = append(c.last, line)
}

func (c *console) lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.last...)
}
