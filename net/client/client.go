package client

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	"github.com/quic-go/quic-go"
)

// Defaults of [Config].
const (
	// DefaultMovingUpdatesPerSecond and DefaultStandingUpdatesPerSecond are
	// the most movement updates a [Client] sends while moving and while
	// standing still, the server's own limits.
	DefaultMovingUpdatesPerSecond   = 30
	DefaultStandingUpdatesPerSecond = 10
	// DefaultDatagramQueue is how many movement datagrams a Client
	// keeps for Poll; more arriving before Poll are dropped and counted.
	DefaultDatagramQueue = 256
	// DefaultReliableQueue is how many reliable frames a Client keeps
	// for Poll before it stops reading its stream, which in turn makes the
	// server's queue for it fill up.
	DefaultReliableQueue = 4096
	// DefaultIdleTimeout: a connection with no traffic in either direction
	// for this long is closed; keep-alives go out at a third of it. It is
	// the servers' own.
	DefaultIdleTimeout = link.IdleTimeout
)

// RefusalWait is the longest [Dial] waits, after the server's Refuse, for
// the server to close the connection before closing it itself.
const RefusalWait = 3 * time.Second

// Config configures [Dial]. Every zero field means the default named
// on it.
type Config struct {
	// Protocol is the game's protocol version sent in Hello; a server
	// speaking another refuses the client with RefuseProtocol.
	Protocol uint16
	// Token identifies the player, at most MaxTokenLen bytes: a name in
	// development mode, an authentication token otherwise.
	Token string

	// TLS, when set, is used (cloned) for the connection, with link.ALPN set.
	// Nil verifies the server against the system's roots.
	TLS *tls.Config
	// InsecureSkipVerify accepts any server certificate. Only for a
	// server in development mode (quic.Config.Development) on loopback:
	// anyone between client and server could read and change the traffic.
	InsecureSkipVerify bool

	// MovingUpdatesPerSecond and StandingUpdatesPerSecond cap SendMove:
	// an update with the same position and worldOrCell as the last one sent
	// counts as standing still. Excess updates are skipped and counted.
	// 0 means DefaultMovingUpdatesPerSecond / DefaultStandingUpdatesPerSecond.
	MovingUpdatesPerSecond, StandingUpdatesPerSecond int
	// DatagramQueue is how many movement datagrams wait for Poll before
	// more are dropped. 0 means DefaultDatagramQueue.
	DatagramQueue int
	// ReliableQueue is how many reliable frames wait for Poll before the
	// client stops reading its stream. 0 means DefaultReliableQueue.
	ReliableQueue int
	// MaxFrame is the longest reliable frame accepted from the server. 0
	// means DefaultMaxStreamFrame.
	MaxFrame int
	// IdleTimeout closes the connection after this long without traffic;
	// keep-alives go out at a third of it. 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
}

func (c Config) resolved() Config {
	c.MovingUpdatesPerSecond = cmp.Or(max(c.MovingUpdatesPerSecond, 0), DefaultMovingUpdatesPerSecond)
	c.StandingUpdatesPerSecond = cmp.Or(max(c.StandingUpdatesPerSecond, 0), DefaultStandingUpdatesPerSecond)
	c.DatagramQueue = cmp.Or(max(c.DatagramQueue, 0), DefaultDatagramQueue)
	c.ReliableQueue = cmp.Or(max(c.ReliableQueue, 0), DefaultReliableQueue)
	c.MaxFrame = min(cmp.Or(max(c.MaxFrame, 0), wire.DefaultMaxStreamFrame), wire.MaxStreamFrame)
	c.IdleTimeout = cmp.Or(max(c.IdleTimeout, 0), DefaultIdleTimeout)
	return c
}

// RefusedError is what [Dial] returns when the server answers the Hello
// with a Refuse: Code for programs, Reason for people.
type RefusedError struct {
	Code   wire.RefuseCode
	Reason string
}

// Error returns "client: refused by the server (code N): " and the reason.
func (e *RefusedError) Error() string {
	return fmt.Sprintf("client: refused by the server (code %d): %s", e.Code, e.Reason)
}

// DisconnectedError says the server closed the connection, and why.
type DisconnectedError struct {
	Reason string // the server's reason, for example ReasonSlowClient
}

// Error returns "client: disconnected by the server: " and the reason.
func (e *DisconnectedError) Error() string { return "client: disconnected by the server: " + e.Reason }

// Stats counts what a [Client] received and sent. Counters only grow.
type Stats struct {
	Datagrams uint64 // movement datagrams received and kept for Poll
	Records   uint64 // movement records in them
	// DroppedDatagrams counts datagrams that arrived while DatagramQueue
	// others waited for Poll.
	DroppedDatagrams uint64
	Reliable         uint64 // reliable frames received, Welcome included
	Corrections      uint64 // of which Corrections
	Malformed        uint64 // frames Poll could not decode and skipped
	MovesSent        uint64
	MovesSkipped     uint64 // over the rate limit, not sent
	CommandsSent     uint64
	Events           uint64 // of the reliable frames, the game's Events
	// Welcomes counts the Welcomes after the handshake's: each is a new
	// view (see [Client.Welcome]).
	Welcomes uint64
	// RecordsPerSecond is the rate of Records over the latest window of at
	// least one second (0 until the first window closes).
	RecordsPerSecond float64
}

// Client is a connection to a Throng server for Go clients and bots, over
// QUIC ([Dial]) or a WebSocket ([DialWebSocket]): dialling connects and
// completes the Hello/Welcome handshake, [Client.SendMove] sends movement
// within the rate limits, [Client.Poll] hands over what arrived, and
// [Client.Stats] counts it. Goroutines read the network into bounded
// queues, so a program that polls once per frame loses at most the
// movement datagrams beyond DatagramQueue.
//
// All methods are safe for concurrent use. Lock order: send, poll, then the
// queue lock.
type Client struct {
	cfg     Config
	link    conn         // the connection, QUIC or WebSocket
	conn    *quic.Conn   // QUIC only
	stream  *quic.Stream // QUIC only
	reader  *wire.StreamReader
	welcome wire.Welcome
	wg      sync.WaitGroup
	closed  sync.Once

	sendMu   sync.Mutex
	limit    moveLimiter
	last     wire.Move
	sentOnce bool
	moveBuf  []byte
	frameBuf []byte // SendCommand's

	pollMu  sync.Mutex
	pollRel link.Queue
	pollDg  [][]byte
	frame   wire.Frame

	mu        sync.Mutex
	reliable  link.Queue // waiting for Poll
	datagrams [][]byte   // waiting for Poll; quic-go's buffers, not copied
	window    rateWindow
	drained   chan struct{} // cap 1: Poll took the reliable queue
	rate      wire.Rate     // the server's latest Rate frame; zero before one

	n clientCounts
}

type clientCounts struct {
	datagrams, records, droppedDatagrams atomic.Uint64
	reliable, corrections, malformed     atomic.Uint64
	sent, skipped                        atomic.Uint64
	commands, events, welcomes           atomic.Uint64
}

// Dial connects to the server at addr (host:port, UDP), sends Hello with
// cfg's protocol and token on the reliable stream, and waits for the
// Welcome. It returns a *RefusedError when the server refuses the client,
// a *DisconnectedError when the server closes the connection first, and
// ctx's error when ctx ends before the Welcome or a Refuse. A refused
// client lets the server close the connection (which the server does right
// after a Refuse), so that the server records its own reason rather than
// the client leaving: Dial waits for that close for at most [RefusalWait],
// never longer than ctx allows.
func Dial(ctx context.Context, addr string, cfg Config) (*Client, error) {
	cfg = cfg.resolved()
	hello, err := wire.AppendHello(nil, wire.Hello{Protocol: cfg.Protocol, Token: []byte(cfg.Token)})
	if err != nil {
		return nil, err
	}
	tlsConf := &tls.Config{}
	if cfg.TLS != nil {
		tlsConf = cfg.TLS.Clone()
	}
	tlsConf.NextProtos = []string{link.ALPN}
	tlsConf.MinVersion = tls.VersionTLS13
	if cfg.InsecureSkipVerify {
		tlsConf.InsecureSkipVerify = true
	}
	conn, err := quic.DialAddr(ctx, addr, tlsConf, &quic.Config{
		MaxIdleTimeout:        cfg.IdleTimeout,
		KeepAlivePeriod:       cfg.IdleTimeout / 3,
		MaxIncomingStreams:    -1,
		MaxIncomingUniStreams: -1,
		EnableDatagrams:       true,
	})
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	c := &Client{
		cfg:     cfg,
		link:    nil, // set below: it needs the Client
		conn:    conn,
		reader:  wire.NewStreamReader(cfg.MaxFrame),
		drained: make(chan struct{}, 1),
	}
	c.link = quicLink{c}
	if err := c.handshake(ctx, hello); err != nil {
		conn.CloseWithError(link.CloseClient, "handshake failed")
		return nil, err
	}
	c.window.start = time.Now()
	c.wg.Add(2)
	go c.readStream()
	go c.readDatagrams()
	return c, nil
}

// Welcome returns the server's latest Welcome: the client's actor and
// spawn. A client behind a gateway (package net/gateway) whose actor is
// handed to another zone server is welcomed again, by that server, on the
// same connection: a new view. From that Welcome on, actor ids are the
// new server's (its own actor's among them), and the new server tells the
// actors around with an Appear each; ids of the old view mean nothing
// more, so a record for an actor not appeared since is to be ignored.
// Poll hands over the second Welcome like any reliable frame, in order.
func (c *Client) Welcome() wire.Welcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.welcome
}

// Rate returns the rate the server ticks at now: the latest [wire.Rate] frame
// it sent (a server that falls behind its tick rate says so once a second,
// and once more when it is back), or the Welcome's tick rate before any.
// The Rate frames are also queued for Poll like every reliable frame.
func (c *Client) Rate() wire.Rate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rate.Nominal == 0 {
		return wire.Rate{Nominal: c.welcome.TickRate, Centihertz: c.welcome.TickRate * 100}
	}
	return c.rate
}

// Done is closed when the connection has closed; [Client.Err] then says
// why.
func (c *Client) Done() <-chan struct{} { return c.link.done() }

// Err returns nil while the connection is open; then a *DisconnectedError
// carrying the server's reason (a *RefusedError if the server sent a
// Refuse), ErrClosed after Close, or the network's error.
func (c *Client) Err() error { return c.link.err() }

// SendMove sends m as a datagram unless the rate limit forbids it. An
// update with the same position and worldOrCell as the last one sent is
// standing still and limited to StandingUpdatesPerSecond, any other to
// MovingUpdatesPerSecond. An update may come up to half an interval early
// (timer jitter), never more often on average. A skipped update is counted
// and reported with sent false and a nil error. m.Seq is sent as given: it
// must grow, or the server rejects the update with a Correction. Once the
// connection has closed SendMove returns [Client.Err].
func (c *Client) SendMove(m wire.Move) (sent bool, err error) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := c.Err(); err != nil {
		return false, err
	}
	rate := c.cfg.MovingUpdatesPerSecond
	if c.sentOnce && m.X == c.last.X && m.Y == c.last.Y && m.Z == c.last.Z && m.WorldOrCell == c.last.WorldOrCell {
		rate = c.cfg.StandingUpdatesPerSecond
	}
	if !c.limit.allow(time.Now(), time.Second/time.Duration(rate)) {
		c.n.skipped.Add(1)
		return false, nil
	}
	c.moveBuf = wire.AppendMove(c.moveBuf[:0], m)
	if err := c.link.sendMove(c.moveBuf); err != nil {
		if cerr := c.Err(); cerr != nil {
			return false, cerr
		}
		return false, fmt.Errorf("client: sending a move: %w", err)
	}
	c.last, c.sentOnce = m, true
	c.n.sent.Add(1)
	return true, nil
}

// SendCommand sends a command of the game's own (payload, which Throng
// does not read) on the reliable stream: it arrives, in order with the
// client's other commands, in the tick the server receives it, where the
// game's systems read it ([throng.Server.Commands]). The payload must keep
// the frame within MaxFrame (1,022 bytes by default). Once the connection
// has closed SendCommand returns [Client.Err].
func (c *Client) SendCommand(payload []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if err := c.Err(); err != nil {
		return err
	}
	if wire.HeaderSize+len(payload) > c.cfg.MaxFrame {
		return fmt.Errorf("client: a command of %d bytes is over the frame limit (%d bytes of payload)", len(payload), c.cfg.MaxFrame-wire.HeaderSize)
	}
	c.frameBuf = wire.AppendCommand(c.frameBuf[:0], payload)
	if err := c.link.sendReliable(c.frameBuf); err != nil {
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("client: sending a command: %w", err)
	}
	c.n.commands.Add(1)
	return nil
}

// moveLimiter paces updates by their earliest allowed time (the generic
// cell rate algorithm): each update moves next one interval on from the
// later of next and now, and an update is allowed half an interval before
// next. The long-run rate never passes one per interval.
type moveLimiter struct{ next time.Time }

func (l *moveLimiter) allow(now time.Time, interval time.Duration) bool {
	if now.Before(l.next.Add(-interval / 2)) {
		return false
	}
	l.next = l.next.Add(interval)
	if l.next.Before(now) {
		l.next = now.Add(interval)
	}
	return true
}

// Poll calls fn with every frame received since the last Poll, decoded
// into a Frame the client reuses: reliable frames first, in the order the
// server sent them, then movement batches in arrival order. The Frame and
// the byte slices in it are valid only during the call. Frames that do not
// decode are skipped and counted. Poll returns how many frames fn got and
// allocates nothing in steady state; fn must not call Poll.
func (c *Client) Poll(fn func(f *wire.Frame)) int {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	c.mu.Lock()
	c.reliable, c.pollRel = c.pollRel, c.reliable
	c.reliable.Reset()
	c.datagrams, c.pollDg = c.pollDg[:0], c.datagrams
	c.mu.Unlock()
	link.Wake(c.drained)
	n := 0
	for frame := range c.pollRel.All() {
		n += c.deliver(frame, fn)
	}
	for i, d := range c.pollDg {
		n += c.deliver(d, fn)
		c.pollDg[i] = nil // let quic-go's buffer go
	}
	return n
}

func (c *Client) deliver(b []byte, fn func(*wire.Frame)) int {
	if err := wire.Decode(b, &c.frame); err != nil {
		c.n.malformed.Add(1)
		return 0
	}
	fn(&c.frame)
	return 1
}

// Stats returns the counters so far.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	rate := c.window.roll(time.Now(), c.n.records.Load())
	c.mu.Unlock()
	return Stats{
		Datagrams:        c.n.datagrams.Load(),
		Records:          c.n.records.Load(),
		DroppedDatagrams: c.n.droppedDatagrams.Load(),
		Reliable:         c.n.reliable.Load(),
		Corrections:      c.n.corrections.Load(),
		Malformed:        c.n.malformed.Load(),
		MovesSent:        c.n.sent.Load(),
		MovesSkipped:     c.n.skipped.Load(),
		CommandsSent:     c.n.commands.Load(),
		Events:           c.n.events.Load(),
		Welcomes:         c.n.welcomes.Load(),
		RecordsPerSecond: rate,
	}
}

// rateWindow measures a counter's rate over windows of at least a second.
type rateWindow struct {
	start time.Time
	base  uint64
	rate  float64
}

// roll closes the window if a second has passed and returns the latest
// closed window's rate.
func (w *rateWindow) roll(now time.Time, count uint64) float64 {
	if d := now.Sub(w.start); d >= time.Second {
		w.rate = float64(count-w.base) / d.Seconds()
		w.start, w.base = now, count
	}
	return w.rate
}

// Close closes the connection (the server sees ReasonClientClosed) and
// waits for the client's goroutines. Frames already received can still be
// polled. It returns nil; closing again does nothing.
func (c *Client) Close() error {
	c.closed.Do(func() {
		c.link.close()
		c.wg.Wait()
	})
	return nil
}
