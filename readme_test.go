package throng_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEShowsTheTestedFirstSystem: the first system the README shows
// is the code of ExampleServer_AddSystem, which go test runs and checks,
// word for word, so the guide cannot drift from code that works.
func TestREADMEShowsTheTestedFirstSystem(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("example_server_test.go")
	require.NoError(t, err)
	text := string(src)
	start := strings.Index(text, "type headcount struct")
	end := strings.Index(text, "// Fatigue is a user's own component")
	require.True(t, start >= 0 && end > start, "the example's headcount and ExampleServer_AddSystem")
	assert.Contains(t, string(readme), strings.TrimSpace(text[start:end]))
}

// TestREADMELinksResolve: every document the README links to is in the
// repository.
func TestREADMELinksResolve(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	links := regexp.MustCompile(`\]\(([\w./-]+\.md)\)`).FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, links)
	for _, l := range links {
		_, err := os.Stat(l[1])
		assert.NoError(t, err, "README links to %s", l[1])
	}
}
