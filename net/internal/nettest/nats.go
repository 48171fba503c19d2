package nettest

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/require"
)

// StartNATS starts an embedded nats-server with JetStream on a free
// loopback port, stopped when the test ends, and returns its URL.
func StartNATS(t testing.TB) string { return StartNATSWith(t, 0) }

// StartNATSWith is StartNATS with the server's max_payload, the largest
// message it takes, set to maxPayload bytes (0: its default, 1 MB).
func StartNATSWith(t testing.TB, maxPayload int32) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, MaxPayload: maxPayload,
	})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "nats-server did not start")
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns.ClientURL()
}
