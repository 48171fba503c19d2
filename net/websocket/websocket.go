package websocket

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	stdnet "net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// Subprotocol is the subprotocol a WebSocket client must ask for
// (Sec-WebSocket-Protocol): a connection without it is refused, so that a
// page that opens any WebSocket to the server cannot pass for a client.
const Subprotocol = link.Subprotocol

// DefaultPath is where [Listen] serves clients.
const DefaultPath = "/throng"

// Defaults of [Config], the same as the QUIC transport's: see there what
// each bounds.
const (
	DefaultReliableQueue = link.ReliableQueue
	DefaultStallTimeout  = link.StallTimeout
	DefaultFlushTimeout  = link.FlushTimeout
	DefaultIdleTimeout   = link.IdleTimeout
	DefaultInboundLimit  = link.InboundLimit
)

// Reasons the WebSocket transport reports when it ends a session itself,
// besides those it shares with quic.Transport (ReasonSlowClient,
// ReasonClientTimedOut).
const (
	// ReasonFrameTooLarge: the client sent a message over MaxFrame bytes;
	// the connection cannot be read past it.
	ReasonFrameTooLarge = "client sent a frame over the size limit"
	// ReasonNotBinary: the client sent a text message; frames are binary.
	ReasonNotBinary = "client sent a text message"
)

// Config configures a [Transport]. Every zero field means
// the default named on it.
type Config struct {
	// Path is where Listen serves clients. "" means
	// DefaultPath. (A WebSocket mounted on a mux of your own serves
	// whatever path the mux gives it.)
	Path string
	// Pages, when set, serves every other path of Listen's
	// server: the game's web page, say, which then opens its WebSocket to
	// its own origin.
	Pages http.Handler
	// TLS, or CertFile and KeyFile (PEM), make Listen serve wss://.
	// Without them it serves plain ws://, for loopback and development, or
	// behind a proxy that terminates TLS.
	TLS               *tls.Config
	CertFile, KeyFile string
	// OriginPatterns are the host patterns of the web pages allowed to
	// connect besides the server's own host (a browser sends the page's
	// origin; path.Match patterns, matched without case): for
	// example "game.example.com" or "*.example.com". Clients that are not
	// browsers send no Origin and are always let in.
	OriginPatterns []string

	// ReliableQueue, StallTimeout, FlushTimeout, IdleTimeout, MaxFrame and
	// InboundLimit mean what they mean in quic.Config, with the same
	// defaults. A WebSocket client shows it is alive by any message or
	// ping; client.DialWebSocket pings at a third of its idle timeout. A browser
	// cannot send pings: a page keeps its session by sending its Move at
	// least once an IdleTimeout, standing still or not.
	ReliableQueue int
	StallTimeout  time.Duration
	FlushTimeout  time.Duration
	IdleTimeout   time.Duration
	MaxFrame      int
	InboundLimit  int
	// MaxDatagram is the largest movement batch SendUnreliable sends, in
	// bytes. 0 (or less) means MaxBatchPayload.
	MaxDatagram int
}

func (c Config) resolved() Config {
	c.Path = cmp.Or(c.Path, DefaultPath)
	c.ReliableQueue = cmp.Or(max(c.ReliableQueue, 0), DefaultReliableQueue)
	c.StallTimeout = cmp.Or(max(c.StallTimeout, 0), DefaultStallTimeout)
	c.FlushTimeout = cmp.Or(max(c.FlushTimeout, 0), DefaultFlushTimeout)
	c.IdleTimeout = cmp.Or(max(c.IdleTimeout, 0), DefaultIdleTimeout)
	c.MaxDatagram = cmp.Or(max(c.MaxDatagram, 0), wire.MaxBatchPayload)
	c.MaxFrame = min(cmp.Or(max(c.MaxFrame, 0), wire.DefaultMaxStreamFrame), wire.MaxStreamFrame)
	c.InboundLimit = cmp.Or(max(c.InboundLimit, 0), DefaultInboundLimit)
	return c
}

// Counters are the WebSocket transport's own counters, beside
// [wire.Stats]. Counters only grow.
type Counters struct {
	// SlowClients counts sessions ended with ReasonSlowClient.
	SlowClients uint64
	// ReplacedDatagrams counts movement batches a newer tick's replaced
	// before they were written (they are also in Stats.DroppedDatagrams).
	ReplacedDatagrams uint64
	// DroppedInbound counts client frames dropped over InboundLimit.
	DroppedInbound uint64
	// RefusedUpgrades counts requests not upgraded: a foreign origin, no
	// Throng subprotocol, not a WebSocket handshake, or the transport
	// closed.
	RefusedUpgrades uint64
}

// Transport is the [wire.Transport] for browsers (and any client that cannot
// use QUIC): each client opens one WebSocket, asking for
// [Subprotocol], and every frame, reliable or movement, is one
// binary message. A WebSocket is one ordered, reliable stream, so movement
// batches queue behind reliable frames rather than travel apart; the tick
// still never waits for a client: each session has one writer goroutine
// that takes, in turn, the reliable frames queued (at most ReliableQueue;
// one more disconnects the client with [wire.ReasonSlowClient]) and the newest
// tick's movement batches (a newer tick's replace those not yet written,
// as in quic.Transport's mailbox). A write that stays blocked for StallTimeout
// (the client stopped reading) disconnects the client with
// ReasonSlowClient, and a client silent (no message, no ping) for
// IdleTimeout with [wire.ReasonClientTimedOut].
//
// A WebSocket is an http.Handler: mount it on a server of your own (with
// its TLS and routes), or let [Listen] run one. Disconnect and
// Close flush the frames queued before them (for at most FlushTimeout),
// then close with code 4000 and the reason (4100 plus the RefuseCode and
// the refusal's reason for a session refused before any Welcome), which
// client.DialWebSocket turns into a *DisconnectedError or *RefusedError. A
// close reason longer than a WebSocket close frame takes (123 bytes) is
// cut.
//
// All methods are safe for concurrent use, except that calls to Receive
// must not overlap. Lock order: the session table's, then a session's.
type Transport struct {
	cfg    Config
	srv    *http.Server // ListenWebSocket's; nil when mounted elsewhere
	ln     stdnet.Listener
	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // sessions' goroutines and the watchdog

	sessions link.Table[*wsConn]
	n        wsCounts
	hold     link.Hold[*wsConn]
}

type wsCounts struct {
	link.Counts
	refused atomic.Uint64
}

// New returns a WebSocket transport with no sessions, to be
// mounted on an HTTP server of your own (it serves any path it is given).
// Close it when done; closing it does not stop your server.
func New(cfg Config) *Transport {
	t := &Transport{cfg: cfg.resolved()}
	t.sessions.Init(t.cfg.InboundLimit, &t.n.Counts)
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go t.watchdog()
	return t
}

// Listen listens on the TCP address addr (for example
// "127.0.0.1:8080"; port 0 picks a free port, see [Transport.Addr]) and
// serves clients at cfg.Path, over TLS when cfg gives a certificate.
func Listen(addr string, cfg Config) (*Transport, error) {
	cfg = cfg.resolved()
	var tlsConf *tls.Config
	switch {
	case cfg.TLS != nil:
		tlsConf = cfg.TLS.Clone()
	case cfg.CertFile != "" || cfg.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("websocket: certificate: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	ln, err := stdnet.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("websocket: listen: %w", err)
	}
	if tlsConf != nil {
		tlsConf.MinVersion = max(tlsConf.MinVersion, tls.VersionTLS12)
		// WebSockets ride HTTP/1.1 (a configuration made for QUIC, such as
		// DevelopmentTLS's, names Throng's ALPN instead, which no browser
		// offers).
		tlsConf.NextProtos = []string{"http/1.1"}
		ln = tls.NewListener(ln, tlsConf)
	}
	t := New(cfg)
	mux := http.NewServeMux()
	mux.Handle(cfg.Path, t)
	if cfg.Pages != nil {
		mux.Handle("/", cfg.Pages)
	}
	t.ln = ln
	t.srv = &http.Server{Handler: mux, ReadHeaderTimeout: cfg.IdleTimeout}
	go t.srv.Serve(ln) // returns when Close shuts the server
	return t, nil
}

// Addr returns the TCP address Listen listens on (nil for a
// WebSocket from New).
func (t *Transport) Addr() stdnet.Addr {
	if t.ln == nil {
		return nil
	}
	return t.ln.Addr()
}

// URL returns the address clients dial, ws:// or wss:// with the path
// (empty for a WebSocket from New).
func (t *Transport) URL() string {
	if t.ln == nil {
		return ""
	}
	scheme := "ws"
	if t.cfg.TLS != nil || t.cfg.CertFile != "" {
		scheme = "wss"
	}
	return scheme + "://" + t.ln.Addr().String() + t.cfg.Path
}

func (t *Transport) session(s wire.SessionID) *wsConn {
	c, _ := t.sessions.Get(s)
	return c
}

// Receive implements [wire.Transport].
func (t *Transport) Receive(dst []wire.Inbound) []wire.Inbound {
	return t.sessions.Receive(dst)
}

// SendUnreliable implements [wire.Transport]: the batch goes into the session's
// mailbox. One shorter than BatchHeaderSize or longer than MaxDatagram, for
// an unknown or closed session, or older than the mailbox's tick is
// dropped and counted.
func (t *Transport) SendUnreliable(s wire.SessionID, datagram []byte) {
	t.SendUnreliableBatch(s, datagram, 0)
}

// SendUnreliableBatch implements [wire.BatchSender]: the batches go into
// the session's mailbox under one lock, and its writer is woken once.
func (t *Transport) SendUnreliableBatch(s wire.SessionID, datagrams []byte, size int) {
	if c := t.session(s); c != nil {
		c.slot.PostBatch(&c.mu, &c.closing, t.hold.Wake(c.wake, c.held), datagrams, size, t.cfg.MaxDatagram, &t.n.Counts)
	} else {
		link.DropBatch(datagrams, size, &t.n.Counts)
	}
}

// SendReliable implements [wire.Transport]. A frame shorter than HeaderSize or
// longer than MaxFrame, or for an unknown or closed session, is dropped and
// counted; one that finds the queue full is dropped and disconnects the
// client with [wire.ReasonSlowClient].
func (t *Transport) SendReliable(s wire.SessionID, frame []byte) {
	c := t.session(s)
	if c == nil {
		t.n.DroppedRel.Add(1)
		return
	}
	if c.rel.Post(&c.mu, &c.closing, c.wake, frame, t.cfg.MaxFrame, t.cfg.ReliableQueue, &t.n.Counts) {
		t.tooSlow(c)
	}
}

// SendReliableBatch implements [wire.ReliableBatchSender]: the frames
// join the session's queue under one lock, and its writer is woken once.
// Each is kept, dropped and counted as SendReliable would keep it; a batch
// that overflows the queue drops the frames that do not fit and
// disconnects the client with [wire.ReasonSlowClient].
func (t *Transport) SendReliableBatch(s wire.SessionID, frames []byte) {
	c := t.session(s)
	if c == nil {
		link.DropReliable(frames, &t.n.Counts)
		return
	}
	if c.rel.PostBatch(&c.mu, &c.closing, c.wake, frames, t.cfg.MaxFrame, t.cfg.ReliableQueue, &t.n.Counts) {
		t.tooSlow(c)
	}
}

// Flush implements [wire.Flusher]: it wakes the writers of the sessions
// sent movement batches since the last Flush. Once a server has called it
// (a Throng server does after every tick), batches wait for it, so that
// the writers' system calls run after the tick rather than beside it, on
// cores the tick wants; reliable frames never wait.
func (t *Transport) Flush() {
	t.hold.Flush(&t.sessions, func(c *wsConn) { link.Release(c.held, c.wake) })
}

// Disconnect implements [wire.Transport].
func (t *Transport) Disconnect(s wire.SessionID, reason string) {
	if c := t.session(s); c != nil {
		t.endSession(c, reason, true)
	}
}

// Stats implements [wire.Transport].
func (t *Transport) Stats() wire.Stats { return t.n.Stats() }

// Counters returns the WebSocket transport's own counters so far.
func (t *Transport) Counters() Counters {
	n := &t.n
	return Counters{
		SlowClients:       n.Slow.Load(),
		ReplacedDatagrams: n.Replaced.Load(),
		DroppedInbound:    n.DroppedInbound.Load(),
		RefusedUpgrades:   n.refused.Load(),
	}
}

// Close implements [wire.Transport]: it disconnects every session in session
// order with ReasonTransportClosed (flushing each for at most
// FlushTimeout, all at once), waits for their goroutines and, for a
// WebSocket from Listen, stops its HTTP server. Their
// SessionClosed are delivered by the next Receive.
func (t *Transport) Close() error {
	open, ok := t.sessions.Close()
	if !ok {
		return nil
	}
	for _, c := range open {
		c.beginClose(wire.ReasonTransportClosed, true)
	}
	// The writers flush and close, each cut at its flush deadline; should
	// one still be running well past it, cancelling the context cuts it.
	deadline := time.NewTimer(t.cfg.FlushTimeout + closeSlack)
	for _, c := range open {
		select {
		case <-c.done:
		case <-deadline.C:
		}
	}
	deadline.Stop()
	t.cancel()
	for _, c := range open {
		c.conn.Close()
	}
	var err error
	if t.srv != nil {
		err = t.srv.Close()
	}
	t.wg.Wait()
	if err != nil {
		return fmt.Errorf("websocket: closing the transport: %w", err)
	}
	return nil
}

var (
	_ wire.Transport           = (*Transport)(nil)
	_ wire.BatchSender         = (*Transport)(nil)
	_ wire.ReliableBatchSender = (*Transport)(nil)
	_ wire.Flusher             = (*Transport)(nil)
)
