package zone_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/internal/nettest"
)

// startNATS starts an embedded nats-server with JetStream, stopped when
// the test ends, and returns its URL.
func startNATS(t testing.TB) string { return nettest.StartNATS(t) }

// connect opens a client connection, closed when the test ends. After a
// restart of the server it reconnects within a tenth of a second (nats.go
// waits two seconds by default).
func connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}
