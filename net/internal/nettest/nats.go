package nettest

import (
	"net"
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
	return StartNATSServer(t, maxPayload).URL
}

// NATSServer is an embedded nats-server a test can restart.
type NATSServer struct {
	URL  string
	t    testing.TB
	opts server.Options
	ns   *server.Server
}

// StartNATSServer is StartNATSWith, returning the server.
func StartNATSServer(t testing.TB, maxPayload int32) *NATSServer {
	t.Helper()
	s := &NATSServer{t: t, opts: server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true, MaxPayload: maxPayload,
	}}
	s.start()
	s.opts.Port = s.ns.Addr().(*net.TCPAddr).Port // a restart comes back on it
	s.URL = s.ns.ClientURL()
	t.Cleanup(s.stop)
	return s
}

func (s *NATSServer) start() {
	opts := s.opts
	ns, err := server.NewServer(&opts)
	require.NoError(s.t, err)
	go ns.Start()
	require.True(s.t, ns.ReadyForConnections(10*time.Second), "nats-server did not start")
	s.ns = ns
}

func (s *NATSServer) stop() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

// Restart stops the server, dropping every connection, and starts it
// again on the same port with the same JetStream store, as an operator's
// restart does.
func (s *NATSServer) Restart() {
	s.stop()
	s.start()
}

// RestartWithoutJetStream restarts the server as Restart does, but
// without JetStream: core NATS comes back, the key-value store does not
// (until Restart).
func (s *NATSServer) RestartWithoutJetStream() {
	s.stop()
	opts := s.opts
	s.opts.JetStream = false
	s.start()
	s.opts = opts
}
