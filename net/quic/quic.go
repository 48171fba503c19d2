package quic

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	stdnet "net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	quicgo "github.com/quic-go/quic-go"
)

// Defaults of [Config].
const (
	// DefaultReliableQueue is how many reliable frames may wait for one
	// client's stream writer. It is large because a burst is normal: a
	// player who joins a crowd of N gets N Appear frames in one tick, before
	// its writer has run once. A client that stays behind by this much is
	// too slow, not unlucky.
	DefaultReliableQueue = link.ReliableQueue
	// DefaultStallTimeout is how long one write to a client's reliable
	// stream may block (the client is not reading, so QUIC flow control
	// holds the data) before the client is disconnected as too slow.
	DefaultStallTimeout = link.StallTimeout
	// DefaultFlushTimeout bounds how long a disconnect waits for the
	// client to receive the frames queued before it.
	DefaultFlushTimeout = link.FlushTimeout
	// DefaultHandshakeTimeout bounds the time from a connection attempt to
	// the client opening its reliable stream.
	DefaultHandshakeTimeout = 5 * time.Second
	// DefaultIdleTimeout: a connection with no traffic in either direction
	// for this long is closed; both sides send keep-alives at a third of it.
	DefaultIdleTimeout = link.IdleTimeout
	// DefaultInboundLimit is how many frames one client may have waiting
	// for the tick between two Receive calls. A client sends at most 30
	// movement updates a second, so only a flooding client or a tick that
	// stalled for seconds reaches it.
	DefaultInboundLimit = link.InboundLimit
)

// Reasons the QUIC transport reports on SessionClosed (and sends to the
// client) when it ends a session itself.
const (
	// ReasonMalformedStream: the client's reliable stream carried a length
	// prefix out of range; the stream cannot be read past it.
	ReasonMalformedStream = "malformed reliable stream"
	// ReasonInboundFlood: the client sent more than the inbound limit of
	// reliable frames between two ticks.
	ReasonInboundFlood = "client sent too many reliable frames"
	// ReasonStreamClosed: the client stopped the reliable stream while the
	// connection stayed open.
	ReasonStreamClosed = "client closed its reliable stream"
)

// Config configures a [Transport]. One of TLS, CertFile/KeyFile or
// Development must give it a certificate; every other zero field means the
// default named on it.
type Config struct {
	// TLS, when set, is used as given (cloned), with [ALPN] added if it
	// names no protocol and TLS 1.3 required.
	TLS *tls.Config
	// CertFile and KeyFile are PEM files holding the server's certificate
	// chain and its private key, loaded once by Listen.
	CertFile, KeyFile string
	// Development generates a self-signed certificate at start (see
	// [DevelopmentTLS]) when neither TLS nor the files are set. Clients
	// must then skip certificate verification: loopback and tests only.
	Development bool

	// ReliableQueue is how many reliable frames may wait for a client's
	// stream writer; one more disconnects the client with
	// [wire.ReasonSlowClient]. 0 means [DefaultReliableQueue].
	ReliableQueue int
	// StallTimeout is how long one stream write may block before the
	// client is disconnected with [wire.ReasonSlowClient]. 0 means
	// [DefaultStallTimeout].
	StallTimeout time.Duration
	// FlushTimeout bounds how long Disconnect and Close wait for queued
	// frames to reach the client before closing the connection. 0 means
	// [DefaultFlushTimeout].
	FlushTimeout time.Duration
	// HandshakeTimeout bounds the QUIC handshake and the wait for the
	// client's reliable stream. 0 means [DefaultHandshakeTimeout].
	HandshakeTimeout time.Duration
	// IdleTimeout closes a silent connection. 0 means [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// MaxDatagram is the largest datagram SendUnreliable sends, in bytes;
	// larger ones are dropped and counted. 0 (or less) means
	// MaxBatchPayload, which fits every QUIC path.
	MaxDatagram int
	// MaxFrame is the largest reliable frame either side may send, and the
	// largest datagram a client may send, in bytes. 0 (or less) means
	// DefaultMaxStreamFrame; above MaxStreamFrame means MaxStreamFrame.
	MaxFrame int
	// InboundLimit is how many frames one client may have waiting between
	// two Receive calls: further datagrams are dropped and counted, a
	// further reliable frame disconnects the client with
	// [ReasonInboundFlood]. 0 means [DefaultInboundLimit].
	InboundLimit int
}

func (c Config) resolved() Config {
	c.ReliableQueue = cmp.Or(max(c.ReliableQueue, 0), DefaultReliableQueue)
	c.StallTimeout = cmp.Or(max(c.StallTimeout, 0), DefaultStallTimeout)
	c.FlushTimeout = cmp.Or(max(c.FlushTimeout, 0), DefaultFlushTimeout)
	c.HandshakeTimeout = cmp.Or(max(c.HandshakeTimeout, 0), DefaultHandshakeTimeout)
	c.IdleTimeout = cmp.Or(max(c.IdleTimeout, 0), DefaultIdleTimeout)
	c.MaxDatagram = cmp.Or(max(c.MaxDatagram, 0), wire.MaxBatchPayload)
	c.MaxFrame = min(cmp.Or(max(c.MaxFrame, 0), wire.DefaultMaxStreamFrame), wire.MaxStreamFrame)
	c.InboundLimit = cmp.Or(max(c.InboundLimit, 0), DefaultInboundLimit)
	return c
}

// Counters are the QUIC transport's own counters, beside [wire.Stats].
// Counters only grow.
type Counters struct {
	// SlowClients counts sessions ended with ReasonSlowClient.
	SlowClients uint64
	// ReplacedDatagrams counts movement datagrams a newer tick's replaced
	// in a client's mailbox before they were sent (they are also in
	// Stats.DroppedDatagrams).
	ReplacedDatagrams uint64
	// DroppedInbound counts client datagrams dropped: over InboundLimit or
	// over MaxFrame.
	DroppedInbound uint64
	// FailedHandshakes counts connections that never became a session:
	// no reliable stream within the handshake timeout, or no datagram
	// support.
	FailedHandshakes uint64
	// ValidatedAddresses counts connection attempts admitted with a
	// validated source address (after a Retry, or with a token from an
	// earlier connection); UnvalidatedAddresses those admitted without.
	// Retry is always on, so the second stays 0.
	ValidatedAddresses, UnvalidatedAddresses uint64
}

// Transport is the network [wire.Transport]: clients connect over QUIC (TLS 1.3,
// congestion control, source-address validation with Retry) and open one
// bidirectional stream. Reliable frames (Hello, Welcome, Appear,
// Disappear, Correction, Refuse) travel on that stream behind their length
// prefix ([wire.AppendStreamFrame]); movement (Move, Batch) travels as QUIC
// DATAGRAMs, one frame each. A connection becomes a session when its
// stream opens: SessionOpened, then its frames, then exactly one
// SessionClosed.
//
// The tick never waits for a client. Each session has two writer
// goroutines: the datagram writer sends from a one-slot, newest-wins
// mailbox that holds one tick's datagrams (a datagram of a newer tick,
// bytes 2..5 of the batch header, replaces the slot's content; one of the
// same tick joins it; an older one is dropped), and the stream writer
// drains a queue of at most ReliableQueue frames. A client whose queue
// overflows, or whose stream stays blocked for StallTimeout, is
// disconnected with [wire.ReasonSlowClient] and counted.
//
// Disconnect and Close flush: the frames queued before them are written,
// the stream is finished, and the connection closes (with the reason in
// QUIC's CONNECTION_CLOSE, which the client reads) once the client has
// read to the end of the stream or FlushTimeout has passed. A session that
// was sent a Refuse before any Welcome closes with the Refuse's code and
// reason instead, so a client that had not read the frame by then (QUIC
// discards unread stream data at the close) is still told why it was
// turned away.
//
// Receive works like mem.Transport's: events go into a double-buffered arena under
// one lock, so Receive never blocks and allocates nothing in steady state.
// All methods are safe for concurrent use, except that calls to Receive
// must not overlap.
//
// Lock order: the session table's, then a session's.
type Transport struct {
	cfg    Config
	udp    *stdnet.UDPConn
	tr     *quicgo.Transport
	ln     *quicgo.Listener
	ctx    context.Context // ends accepting and pending handshakes
	cancel context.CancelFunc
	wg     sync.WaitGroup // the accept loop, handshakes, session goroutines

	sessions link.Table[*quicConn]
	hold     link.Hold[*quicConn]
	n        quicCounts
}

// quicCounts are the transport's counters; atomics, so that counting never
// takes a lock on the send paths.
type quicCounts struct {
	link.Counts
	failedHandshakes       atomic.Uint64
	validated, unvalidated atomic.Uint64
}

// Listen listens for QUIC clients on the UDP address addr (for example
// "127.0.0.1:4433"; port 0 picks a free port, see [Transport.Addr]) and returns
// the running transport. It fails when cfg gives no certificate or the
// address cannot be bound.
func Listen(addr string, cfg Config) (*Transport, error) {
	cfg = cfg.resolved()
	tlsConf, err := quicServerTLS(&cfg)
	if err != nil {
		return nil, err
	}
	uaddr, err := stdnet.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("quic: listen address: %w", err)
	}
	udp, err := stdnet.ListenUDP("udp", uaddr)
	if err != nil {
		return nil, fmt.Errorf("quic: listen: %w", err)
	}
	q := &Transport{cfg: cfg, udp: udp}
	q.sessions.Init(cfg.InboundLimit, &q.n.Counts)
	q.tr = &quicgo.Transport{
		Conn: udp,
		// Retry on every connection attempt without a token: one more
		// round trip at connect, and no amplification by spoofed sources.
		VerifySourceAddress: func(stdnet.Addr) bool { return true },
		ConnContext: func(ctx context.Context, info *quicgo.ClientInfo) (context.Context, error) {
			if info.AddrVerified {
				q.n.validated.Add(1)
			} else {
				q.n.unvalidated.Add(1)
			}
			return ctx, nil
		},
	}
	q.ln, err = q.tr.Listen(tlsConf, &quicgo.Config{
		HandshakeIdleTimeout:  cfg.HandshakeTimeout,
		MaxIdleTimeout:        cfg.IdleTimeout,
		KeepAlivePeriod:       cfg.IdleTimeout / 3,
		MaxIncomingStreams:    1,
		MaxIncomingUniStreams: -1,
		EnableDatagrams:       true,
	})
	if err != nil {
		q.tr.Close()
		udp.Close()
		return nil, fmt.Errorf("quic: listen: %w", err)
	}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	q.wg.Add(1)
	go q.acceptLoop()
	return q, nil
}

// Addr returns the UDP address the transport listens on.
func (q *Transport) Addr() stdnet.Addr { return q.ln.Addr() }

// session returns the open session s, or nil.
func (q *Transport) session(s wire.SessionID) *quicConn {
	c, _ := q.sessions.Get(s)
	return c
}

// endSession reports c's SessionClosed with reason, once, and starts
// closing its connection; it returns false if the session had already
// ended. flush writes the frames queued so far first.
func (q *Transport) endSession(c *quicConn, reason string, flush bool) bool {
	if !q.sessions.End(c, reason) {
		return false
	}
	c.beginClose(reason, flush)
	return true
}

// tooSlow disconnects c with ReasonSlowClient (counted by the session
// table as it ends the session).
func (q *Transport) tooSlow(c *quicConn) {
	q.endSession(c, wire.ReasonSlowClient, false)
}

// Receive implements [wire.Transport]. Frames alias the transport's buffers and
// stay valid until the next Receive.
func (q *Transport) Receive(dst []wire.Inbound) []wire.Inbound {
	return q.sessions.Receive(dst)
}

// SendUnreliable implements [wire.Transport]: datagram goes into the session's
// mailbox (see [Transport]). A datagram shorter than BatchHeaderSize or longer
// than MaxDatagram, for an unknown or closed session, older than the
// mailbox's tick, replaced by a newer tick before it was sent, or refused by
// QUIC (over the path's limit) is dropped and counted in
// Stats.DroppedDatagrams; Stats.DatagramsOut counts those the session's
// writer handed to QUIC.
func (q *Transport) SendUnreliable(s wire.SessionID, datagram []byte) {
	q.SendUnreliableBatch(s, datagram, 0)
}

// SendUnreliableBatch implements [wire.BatchSender]: the datagrams go into the
// session's mailbox under one lock, and its writer is woken once. Each is
// kept or dropped (and counted) as SendUnreliable would.
func (q *Transport) SendUnreliableBatch(s wire.SessionID, datagrams []byte, size int) {
	if c := q.session(s); c != nil {
		c.slot.PostBatch(&c.mu, &c.closing, q.hold.Wake(c.dgWake, c.dgHeld), datagrams, size, q.cfg.MaxDatagram, &q.n.Counts)
	} else {
		link.DropBatch(datagrams, size, &q.n.Counts)
	}
}

// Flush implements [wire.Flusher]: it wakes the datagram writers of the
// sessions sent movement batches since the last Flush. Once a server has
// called it (a Throng server does after every tick), batches wait for it,
// so that the writers run after the tick rather than beside it, on cores
// the tick wants; reliable frames never wait.
func (q *Transport) Flush() {
	q.hold.Flush(&q.sessions, func(c *quicConn) { link.Release(c.dgHeld, c.dgWake) })
}

// SendReliable implements [wire.Transport]. A frame shorter than HeaderSize or
// longer than MaxFrame, or for an unknown or closed session, is dropped and
// counted. A frame that finds the session's queue full is dropped too, and
// the session is disconnected with [wire.ReasonSlowClient]. The first Refuse
// queued for a session before any Welcome also sets what its connection
// closes with (see [Transport]).
func (q *Transport) SendReliable(s wire.SessionID, frame []byte) {
	c := q.session(s)
	if c == nil {
		q.n.DroppedRel.Add(1)
		return
	}
	if c.rel.Post(&c.mu, &c.closing, c.relWake, frame, q.cfg.MaxFrame, q.cfg.ReliableQueue, &q.n.Counts) {
		q.tooSlow(c)
	}
}

// SendReliableBatch implements [wire.ReliableBatchSender]: the frames
// join the session's queue under one lock, and its stream writer is woken
// once. Each is kept, dropped and counted as SendReliable would keep it; a
// batch that overflows the queue drops the frames that do not fit and
// disconnects the session with [wire.ReasonSlowClient].
func (q *Transport) SendReliableBatch(s wire.SessionID, frames []byte) {
	c := q.session(s)
	if c == nil {
		link.DropReliable(frames, &q.n.Counts)
		return
	}
	if c.rel.PostBatch(&c.mu, &c.closing, c.relWake, frames, q.cfg.MaxFrame, q.cfg.ReliableQueue, &q.n.Counts) {
		q.tooSlow(c)
	}
}

// Disconnect implements [wire.Transport]: the frames queued before it are
// flushed (for at most FlushTimeout), then the connection closes with
// reason, which the client reads from QUIC's CONNECTION_CLOSE.
func (q *Transport) Disconnect(s wire.SessionID, reason string) {
	if c := q.session(s); c != nil {
		q.endSession(c, reason, true)
	}
}

// Stats implements [wire.Transport].
func (q *Transport) Stats() wire.Stats { return q.n.Stats() }

// Counters returns the QUIC transport's own counters so far.
func (q *Transport) Counters() Counters {
	n := &q.n
	return Counters{
		SlowClients:          n.Slow.Load(),
		ReplacedDatagrams:    n.Replaced.Load(),
		DroppedInbound:       n.DroppedInbound.Load(),
		FailedHandshakes:     n.failedHandshakes.Load(),
		ValidatedAddresses:   n.validated.Load(),
		UnvalidatedAddresses: n.unvalidated.Load(),
	}
}

// Close implements [wire.Transport]: it stops accepting, disconnects every
// session in session order with ReasonTransportClosed (flushing each for at
// most FlushTimeout, all at once), waits for their goroutines and releases
// the socket. Their SessionClosed are delivered by the next Receive.
func (q *Transport) Close() error {
	open, ok := q.sessions.Close()
	if !ok {
		return nil
	}
	for _, c := range open {
		c.beginClose(wire.ReasonTransportClosed, true)
	}
	q.cancel()
	err := q.ln.Close()
	q.wg.Wait()
	err = errors.Join(err, q.tr.Close(), q.udp.Close())
	if err != nil {
		return fmt.Errorf("quic: closing the transport: %w", err)
	}
	return nil
}

var (
	_ wire.Transport           = (*Transport)(nil)
	_ wire.BatchSender         = (*Transport)(nil)
	_ wire.ReliableBatchSender = (*Transport)(nil)
	_ wire.Flusher             = (*Transport)(nil)
)
