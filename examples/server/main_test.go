package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/multi"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
)

// TestServerAdmitsKnownTokensOverBothTransportsAndStopsOnCancel runs the
// program with the settings and tokens files of testdata: it listens
// where the file says (QUIC and WebSocket, ports picked by the system),
// lets alice in over QUIC and bob over WebSocket, refuses a token it does
// not know with the reason, and returns cleanly when its context ends.
func TestServerAdmitsKnownTokensOverBothTransportsAndStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs bytes.Buffer
	started := make(chan *throng.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, filepath.Join("testdata", "server.json"), filepath.Join("testdata", "tokens.txt"),
			slog.New(slog.NewTextHandler(&logs, nil)), func(s *throng.Server) { started <- s })
	}()
	var srv *throng.Server
	select {
	case srv = <-started:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	ts := srv.Transport().(*multi.Transport).Transports()
	quicAddr := ts[0].(*quic.Transport).Addr().String()
	wsURL := ts[1].(*websocket.Transport).URL()

	dialCtx, stopDial := context.WithTimeout(ctx, 10*time.Second)
	defer stopDial()
	alice, err := client.Dial(dialCtx, quicAddr, client.Config{Token: "alice", InsecureSkipVerify: true})
	require.NoError(t, err, "alice is on the list")
	defer alice.Close()
	assert.NotZero(t, alice.Welcome().Actor)
	bob, err := client.DialWebSocket(dialCtx, wsURL, client.Config{Token: "bob"})
	require.NoError(t, err, "bob too, over WebSocket")
	defer bob.Close()
	assert.NotEqual(t, alice.Welcome().Actor, bob.Welcome().Actor)
	_, err = client.Dial(dialCtx, quicAddr, client.Config{Token: "mallory", InsecureSkipVerify: true})
	var refused *client.RefusedError
	require.True(t, errors.As(err, &refused), "mallory is refused: %v", err)
	assert.Equal(t, "unknown player token", refused.Reason)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop when its context ended")
	}
	out := logs.String()
	assert.Contains(t, out, "msg=serving")
	assert.Contains(t, out, "quic://127.0.0.1:")
	assert.Contains(t, out, "ws://127.0.0.1:")
	assert.Contains(t, out, "msg=stopped")
}

func TestBrokenSettingsAndMissingTokensAreClearErrors(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	err := run(context.Background(), filepath.Join(dir, "none.json"), "", log, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "none.json")
	err = run(context.Background(), filepath.Join("testdata", "server.json"), filepath.Join(dir, "none.txt"), log, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server: tokens")
}

func TestTokensFileSkipsBlankLinesAndComments(t *testing.T) {
	tokens, err := parseTokens(strings.NewReader("# who may play\n\n alice \nbob\n#carol\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"alice": true, "bob": true}, tokens)
}
