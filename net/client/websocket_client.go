package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/internal/wsconn"
	"github.com/throng-go/throng/net/wire"
)

// DialWebSocket connects to a WebSocket transport (package websocket) at url (ws://host:port/path,
// or wss:// for TLS), sends Hello with cfg's protocol and token, and waits for
// the Welcome: the same [Client], errors and handshake as [Dial], over one
// WebSocket (every frame a binary message) instead of QUIC. Movement
// batches arrive in order with the reliable frames rather than apart; Poll
// still hands over the reliable frames first. The client pings the server
// every third of cfg.IdleTimeout, so a client that sends nothing stays
// connected, and one whose server stops answering is closed.
func DialWebSocket(ctx context.Context, url string, cfg Config) (*Client, error) {
	cfg = cfg.resolved()
	hello, err := wire.AppendHello(nil, wire.Hello{Protocol: cfg.Protocol, Token: []byte(cfg.Token)})
	if err != nil {
		return nil, err
	}
	opts := wsconn.DialOptions{Subprotocols: []string{link.Subprotocol}}
	if cfg.TLS != nil || cfg.InsecureSkipVerify {
		tlsConf := &tls.Config{}
		if cfg.TLS != nil {
			tlsConf = cfg.TLS.Clone()
		}
		tlsConf.InsecureSkipVerify = tlsConf.InsecureSkipVerify || cfg.InsecureSkipVerify
		opts.TLS = tlsConf
	}
	conn, err := wsconn.Dial(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", url, err)
	}
	if conn.Subprotocol() != link.Subprotocol {
		conn.WriteClose(wsconn.StatusPolicyViolation, "the "+link.Subprotocol+" subprotocol is required")
		conn.Close()
		return nil, fmt.Errorf("client: dial %s: the server does not speak %s", url, link.Subprotocol)
	}
	l := &wsLink{conn: conn, finished: make(chan struct{}), pong: make(chan struct{}, 1)}
	l.buf = make([]byte, max(cfg.MaxFrame, wire.MaxBatchPayload))
	conn.OnPong = func() {
		select {
		case l.pong <- struct{}{}:
		default:
		}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	c := &Client{cfg: cfg, link: l, drained: make(chan struct{}, 1)}
	if err := c.wsHandshake(ctx, l, hello); err != nil {
		conn.Close()
		l.cancel()
		return nil, err
	}
	c.window.start = time.Now()
	c.wg.Add(2)
	go c.readWebSocket(l)
	go c.pingWebSocket(l)
	return c, nil
}

// wsHandshake sends hello and reads until the Welcome or a refusal. Frames
// after the Welcome stay queued for Poll. ctx bounds it (through the
// connection's deadline), and after a refusal RefusalWait does.
func (c *Client) wsHandshake(ctx context.Context, l *wsLink, hello []byte) error {
	nc := l.conn.NetConn()
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if stop() {
			_ = nc.SetDeadline(time.Time{})
		}
	}()
	if err := l.conn.WriteMessage(wsconn.OpBinary, hello); err != nil {
		return wsHandshakeError(ctx, err)
	}
	var refused *RefusedError
	for {
		op, msg, err := l.read()
		if err != nil {
			if refused != nil {
				return refused
			}
			return wsHandshakeError(ctx, err)
		}
		if op != wsconn.OpBinary || refused != nil {
			continue
		}
		switch t, _ := wire.PeekType(msg); t {
		case wire.TypeWelcome:
			w, err := wire.DecodeWelcome(msg)
			if err != nil {
				return fmt.Errorf("client: handshake: undecodable welcome: %w", err)
			}
			c.welcome = w
			c.n.reliable.Add(1)
			return nil
		case wire.TypeRefuse:
			r, err := wire.DecodeRefuse(msg)
			if err != nil {
				return fmt.Errorf("client: handshake: undecodable refusal: %w", err)
			}
			refused = &RefusedError{Code: r.Code, Reason: string(r.Reason)}
			// The server closes right after a Refuse, with its code: read
			// on to that close, but not forever.
			_ = nc.SetReadDeadline(time.Now().Add(RefusalWait))
		case wire.TypeBatch:
			c.keepDatagram(msg)
		default:
			c.keepReliable(msg)
		}
	}
}

// wsHandshakeError turns an error met during the handshake into the one
// DialWebSocket returns.
func wsHandshakeError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("client: handshake: %w", ctx.Err())
	}
	if cerr := wsCloseError(err); cerr != nil {
		return cerr
	}
	return fmt.Errorf("client: handshake: %w", err)
}

// wsCloseError is the *RefusedError or *DisconnectedError a close by the
// server carries, or nil.
func wsCloseError(err error) error {
	var ce *wsconn.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	if ce.Code >= link.WSCloseRefusal && ce.Code <= link.WSCloseRefusal+0xff {
		return &RefusedError{Code: wire.RefuseCode(ce.Code - link.WSCloseRefusal), Reason: ce.Reason}
	}
	return &DisconnectedError{Reason: ce.Reason}
}

// readWebSocket keeps what the server sends for Poll until the connection
// ends: movement batches as datagrams, the rest as reliable frames. While
// ReliableQueue frames wait for Poll it stops reading, so TCP's flow
// control slows the server down.
func (c *Client) readWebSocket(l *wsLink) {
	defer c.wg.Done()
	for {
		if !c.awaitRoom(l.ctx.Done()) {
			l.end(nil)
			return
		}
		// Close closes the connection under the read.
		op, msg, err := l.read()
		if err != nil {
			l.end(err)
			return
		}
		if op != wsconn.OpBinary {
			c.n.malformed.Add(1)
			continue
		}
		if t, _ := wire.PeekType(msg); t == wire.TypeBatch {
			c.keepDatagram(msg)
		} else {
			c.keepReliable(msg)
		}
	}
}

// pingWebSocket pings the server every third of the idle timeout, and
// closes a connection whose server does not answer within it. A ping waits
// for a write under way, so a write blocked that long closes the
// connection too (at most four thirds of the idle timeout after it began).
func (c *Client) pingWebSocket(l *wsLink) {
	defer c.wg.Done()
	every := c.cfg.IdleTimeout / 3
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
		case <-l.ctx.Done():
			return
		case <-l.finished:
			return
		}
		select {
		case <-l.pong: // a late answer to the last ping
		default:
		}
		cut := time.AfterFunc(c.cfg.IdleTimeout, func() { l.conn.Close() })
		if l.conn.Ping() != nil {
			cut.Stop()
			l.conn.Close()
			return
		}
		select {
		case <-l.pong:
			cut.Stop()
		case <-l.finished: // the cut ended the connection, or something else did
			cut.Stop()
			return
		case <-l.ctx.Done():
			cut.Stop()
			return
		}
	}
}

// wsLink is a Client's WebSocket connection.
type wsLink struct {
	conn   *wsconn.Conn
	buf    []byte          // the reader's
	pong   chan struct{}   // cap 1: the server answered a ping
	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu       sync.Mutex
	cause    error // why the connection ended
	byClient bool  // Close ended it
	finished chan struct{}
	once     sync.Once
}

// read reads the next message into a slice of its own, which Poll hands
// over.
func (l *wsLink) read() (byte, []byte, error) {
	op, n, err := l.conn.ReadMessage(l.buf)
	if err != nil {
		return 0, nil, err
	}
	return op, append([]byte(nil), l.buf[:n]...), nil
}

// end records why the connection ended (the first cause wins) and closes
// finished.
func (l *wsLink) end(cause error) {
	l.once.Do(func() {
		l.mu.Lock()
		if l.cause == nil {
			l.cause = cause
		}
		l.mu.Unlock()
		close(l.finished)
	})
}

// sendMove writes one message. A write that stays blocked (the server
// stopped reading) is bounded by the pings, which share the connection's
// write lock and close it when one is not answered within the idle
// timeout (pingWebSocket).
func (l *wsLink) sendMove(frame []byte) error {
	return l.conn.WriteMessage(wsconn.OpBinary, frame)
}

func (l *wsLink) sendReliable(frame []byte) error { return l.sendMove(frame) }

func (l *wsLink) done() <-chan struct{} { return l.finished }

func (l *wsLink) err() error {
	select {
	case <-l.finished:
	default:
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byClient {
		return wire.ErrClosed
	}
	if cerr := wsCloseError(l.cause); cerr != nil {
		return cerr
	}
	return fmt.Errorf("client: connection lost: %w", l.cause)
}

// close says goodbye with a close frame, and waits for the server's
// answer (the reader ends on it) at most closeWait: past it, the
// connection is closed outright.
func (l *wsLink) close() {
	l.mu.Lock()
	l.byClient = true
	l.mu.Unlock()
	cut := time.AfterFunc(closeWait, func() { l.conn.Close() })
	if l.conn.WriteClose(wsconn.StatusNormalClosure, wire.ReasonClientClosed) == nil {
		select {
		case <-l.finished:
		case <-time.After(closeWait):
		}
	}
	cut.Stop()
	l.cancel()
	l.conn.Close()
	l.end(nil)
}

// closeWait bounds how long Close waits for the server to answer its close.
const closeWait = time.Second
