// Server is a Throng server shaped for deployment: its settings come from
// a file, it admits the players whose tokens it knows, and it runs until
// SIGINT or SIGTERM, then closes its sessions and listeners.
//
//	go run ./examples/server -config examples/server/testdata/server.json -tokens examples/server/testdata/tokens.txt
//
// The settings file holds the keys of throng.Options (throng.LoadOptionsFile:
// unknown keys are errors that name the key); its "network" section says
// where the server listens: QUIC on UDP, WebSocket on TCP, or both, with a
// certificate and key, or development mode's self-signed certificate for
// a machine of your own. The tokens file lists one player token a line;
// without -tokens every token is let in, which is for development only.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/wire"
)

func main() {
	config := flag.String("config", "server.json", "settings file: the keys of throng.Options, as JSON")
	tokens := flag.String("tokens", "", "file of the player tokens let in, one a line; empty lets every token in (development only)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, *config, *tokens, log, nil); err != nil {
		log.Error("server stopped", "error", err)
		os.Exit(1)
	}
}

// run serves until ctx is done. ready, if not nil, is called with the
// server once it listens.
func run(ctx context.Context, configPath, tokensPath string, log *slog.Logger, ready func(*throng.Server)) error {
	opts, err := throng.LoadOptionsFile(configPath)
	if err != nil {
		return err
	}
	if tokensPath != "" {
		allowed, err := readTokens(tokensPath)
		if err != nil {
			return err
		}
		opts.Admit = func(h wire.Hello) (throng.Entry, error) {
			if !allowed[string(h.Token)] {
				return throng.Entry{}, errors.New("unknown player token")
			}
			// A game places its players; this one at the origin. The
			// token names the player, whose actor is kept while away.
			return throng.Entry{Player: string(h.Token)}, nil
		}
	}
	opts.Logger = log // New logs each setting it had to adjust
	srv, err := throng.New(opts)
	if err != nil {
		return err
	}
	log.Info("serving", "listen", srv.Listening(), "tickRate", srv.Settings().TickRate, "tokens", tokensPath != "")
	if ready != nil {
		ready(srv)
	}
	err = srv.Run(ctx) // closes the server when ctx is done
	log.Info("stopped")
	return err
}

// readTokens reads the tokens file: one token a line, blank lines and
// lines starting with # skipped.
func readTokens(path string) (map[string]bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: tokens: %w", err)
	}
	defer f.Close()
	return parseTokens(f)
}

func parseTokens(r io.Reader) (map[string]bool, error) {
	tokens := map[string]bool{}
	s := bufio.NewScanner(r)
	for s.Scan() {
		if t := strings.TrimSpace(s.Text()); t != "" && !strings.HasPrefix(t, "#") {
			tokens[t] = true
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("server: tokens: %w", err)
	}
	return tokens, nil
}
