// Package quic is the network transport for real clients: a [Transport]
// that serves Throng's wire protocol (package wire) over QUIC.
//
// A client opens a QUIC connection (TLS 1.3, ALPN [ALPN], source address
// validated by Retry) with DATAGRAM support, then one bidirectional stream,
// and sends its Hello on it. Reliable frames (Hello, Welcome, Appear,
// Disappear, Correction, Refuse, Command, Event, Rate) travel on that
// stream behind their length prefix; Move and Batch travel as one DATAGRAM
// each. The server closes a session with QUIC's CONNECTION_CLOSE, whose
// code and reason the client reads; before that it ends its side of the
// stream and waits (briefly) for the client to end its own, so that no
// queued frame is lost to the close.
//
// The tick never waits for a client: [Transport.SendUnreliable] fills a
// one-slot mailbox per session that keeps only the newest tick's
// datagrams, and [Transport.SendReliable] (or [Transport.SendReliableBatch],
// a tick's frames for a session in one call) a bounded queue; a client whose
// queue overflows or whose stream stays blocked is disconnected with
// wire.ReasonSlowClient. The certificate comes from files
// ([Config.CertFile], [Config.KeyFile]), a [crypto/tls.Config], or is
// generated at start in development mode ([DevelopmentTLS]), which clients
// accept only when told to skip verification.
//
// Serve with [Listen] and hand the [Transport] to the server; connect Go
// clients and bots with package client's Dial.
package quic
