package websocket

import (
	"context"
	"errors"
	"io"
	stdnet "net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// wsConn is one session of a [Transport].
type wsConn struct {
	link.Member // guarded by the transport's table
	t           *Transport
	conn        *websocket.Conn
	// ctx is the reader's: cancelling it while a read waits closes the
	// connection outright, which is how a close that runs past its
	// deadline is cut (coder/websocket's CloseNow waits for a close
	// handshake under way).
	ctx    context.Context
	cancel context.CancelFunc

	// Written by the reader and the writer, read by the watchdog.
	heard   atomic.Int64 // Unix ns of the client's last message or ping
	writing atomic.Int64 // Unix ns the current write began; 0 when none

	// Guarded by mu.
	mu      sync.Mutex
	slot    link.Mailbox  // the newest tick's batches not yet written
	rel     link.Reliable // the reliable frames not yet written
	closing bool
	flush   bool
	reason  string

	wake chan struct{} // cap 1: something to write, or closing began
	done chan struct{} // closed when the writer has closed the connection
	cut  *time.Timer   // set by beginClose: cuts the connection at the flush deadline
}

// Membership implements link.Session.
func (c *wsConn) Membership() *link.Member { return &c.Member }

// ServeHTTP upgrades a client's request to a session and serves it until
// the session ends.

func (t *Transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &wsConn{t: t, wake: make(chan struct{}, 1), done: make(chan struct{})}
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   []string{Subprotocol},
		OriginPatterns: t.cfg.OriginPatterns,
		OnPingReceived: func(context.Context, []byte) bool {
			c.heard.Store(time.Now().UnixNano())
			return true
		},
	})
	if err != nil {
		t.n.refused.Add(1) // Accept has answered the request
		return
	}
	if conn.Subprotocol() != Subprotocol {
		t.n.refused.Add(1)
		conn.Close(websocket.StatusPolicyViolation, "the "+Subprotocol+" subprotocol is required")
		return
	}
	conn.SetReadLimit(int64(t.cfg.MaxFrame))
	c.conn = conn
	c.ctx, c.cancel = context.WithCancel(t.ctx)
	c.heard.Store(time.Now().UnixNano())
	if !t.sessions.Open(c, func() { t.wg.Add(2) }) {
		c.cancel()
		t.n.refused.Add(1)
		conn.Close(link.WSCloseDisconnect, wire.ReasonTransportClosed)
		return
	}
	go c.write()
	c.read() // the handler's goroutine reads until the connection ends
}

// read delivers the client's messages until the connection ends, then ends
// the session with why it ended (if nothing ended it before).
func (c *wsConn) read() {
	defer c.t.wg.Done()
	t := c.t
	buf := make([]byte, t.cfg.MaxFrame+1)
	reason := ""
	for reason == "" {
		typ, rd, err := c.conn.Reader(c.ctx)
		if err != nil {
			reason = wsLostReason(err)
			break
		}
		n, err := readMessage(rd, buf)
		if err != nil {
			reason = wsLostReason(err)
			if reason == ReasonFrameTooLarge {
				c.t.n.DroppedInbound.Add(1)
			}
			break
		}
		c.heard.Store(time.Now().UnixNano())
		if typ != websocket.MessageBinary {
			reason = ReasonNotBinary
			break
		}
		c.deliver(buf[:n])
	}
	t.endSession(c, reason, false)
}

// readMessage reads one message into buf, which is a byte longer than
// the connection's read limit: a message that fills it is over the limit.
func readMessage(rd io.Reader, buf []byte) (int, error) {
	n := 0
	for {
		m, err := rd.Read(buf[n:])
		n += m
		switch {
		case n == len(buf):
			return n, errTooLarge
		case errors.Is(err, io.EOF):
			return n, nil
		case err != nil:
			return n, err
		}
	}
}

var errTooLarge = errors.New("message over the read limit")

func (c *wsConn) deliver(frame []byte) {
	if !c.t.sessions.Deliver(c, frame) {
		c.t.n.DroppedInbound.Add(1)
	}
}

// wsLostReason describes why a connection the server did not close ended.
func wsLostReason(err error) string {
	switch websocket.CloseStatus(err) {
	case websocket.StatusNormalClosure, websocket.StatusGoingAway:
		return wire.ReasonClientClosed
	case websocket.StatusMessageTooBig:
		return ReasonFrameTooLarge
	}
	if errors.Is(err, errTooLarge) {
		return ReasonFrameTooLarge
	}
	if errors.Is(err, io.EOF) || errors.Is(err, stdnet.ErrClosed) {
		return wire.ReasonClientClosed
	}
	return "connection lost: " + err.Error()
}

// endSession reports c's SessionClosed with reason, once, and starts
// closing its connection; it returns false if the session had already
// ended. flush writes the frames queued so far first.
func (t *Transport) endSession(c *wsConn, reason string, flush bool) bool {
	if !t.sessions.End(c, reason) {
		return false
	}
	c.beginClose(reason, flush)
	return true
}

// tooSlow disconnects c with ReasonSlowClient (counted by the session
// table as it ends the session).
func (t *Transport) tooSlow(c *wsConn) {
	t.endSession(c, wire.ReasonSlowClient, false)
}

// beginClose tells the writer to finish: write what is queued (if flush)
// and close the connection with reason. Whatever is still going on at the
// flush deadline (FlushTimeout on, or closeGrace without flush: time to
// send the close frame, not to wait for a client that is not reading) is
// cut: a blocked write, the close handshake.
func (c *wsConn) beginClose(reason string, flush bool) {
	c.mu.Lock()
	if !c.closing {
		c.closing, c.flush, c.reason = true, flush, reason
		wait := closeGrace
		if flush {
			wait = c.t.cfg.FlushTimeout
		}
		c.cut = time.AfterFunc(wait, func() {
			c.cancel()
			c.conn.CloseNow()
		})
	}
	c.mu.Unlock()
	link.Wake(c.wake)
}

// closeGrace is how long a session ended without a flush has to send its
// close frame.
const closeGrace = 250 * time.Millisecond

// closeSlack is how long Close waits past the flush deadline for the
// writers to finish before it cuts every connection itself.
const closeSlack = 2 * time.Second

// write writes queued reliable frames, then the newest tick's batches, until
// the session closes; then it flushes (if asked) and closes the connection
// with the reason.
func (c *wsConn) write() {
	defer c.t.wg.Done()
	defer close(c.done)
	t := c.t
	var rel []byte // frames behind their length prefixes
	var out link.Mailbox
	intact := true
	for {
		select {
		case <-c.wake:
		case <-t.ctx.Done():
			c.cancel()
			c.conn.CloseNow()
			return
		}
		c.mu.Lock()
		rel = c.rel.Take(rel)
		c.slot, out = out, c.slot
		c.slot.Reset()
		closing, flush, reason := c.closing, c.flush, c.reason
		code := websocket.StatusCode(link.WSCloseDisconnect)
		if r := &c.rel.Refusal; r.Refused {
			code, reason = link.WSCloseRefusal+websocket.StatusCode(r.Code), r.Reason
		}
		c.mu.Unlock()
		if intact && (!closing || flush) {
			// A failed write means the connection is gone (the network,
			// the client, or the watchdog cut it): the reader ends the
			// session with why, and the writer only waits to close.
			intact = c.writeAll(rel) && c.writeBatches(&out)
		}
		if closing {
			if intact {
				c.conn.Close(code, closeReason(reason)) // waits for the client's close, until cut
			}
			c.conn.CloseNow()
			c.mu.Lock()
			c.cut.Stop()
			c.mu.Unlock()
			c.cancel()
			return
		}
	}
}

// writeAll writes the reliable frames laid back to back in frames, one
// message each, as link.Reliable queues them; false when a write failed.
func (c *wsConn) writeAll(frames []byte) bool {
	ok := true
	wire.EachStreamFrame(frames, func(frame []byte) {
		ok = ok && c.writeMessage(frame)
	})
	return ok
}

// writeBatches writes the movement batches of m; false when a write failed.
func (c *wsConn) writeBatches(m *link.Mailbox) bool {
	n := &c.t.n
	for d := range m.All() {
		if !c.writeMessage(d) {
			n.DroppedDatagrams.Add(uint64(m.Len()))
			return false
		}
		n.DatagramsOut.Add(1)
		n.DatagramBytesOut.Add(uint64(len(d)))
	}
	return true
}

// writeMessage writes one binary message, with the start time set for
// the watchdog (which closes a connection whose write stays blocked).
// The context has no deadline, so a write allocates nothing.
func (c *wsConn) writeMessage(p []byte) bool {
	c.writing.Store(time.Now().UnixNano())
	err := c.conn.Write(context.Background(), websocket.MessageBinary, p)
	c.writing.Store(0)
	return err == nil
}

// closeReason cuts reason to what a close frame carries (123 bytes),
// on a rune boundary.
func closeReason(reason string) string {
	const max = 123
	if len(reason) <= max {
		return reason
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}

// watchdog ends sessions whose client went silent for IdleTimeout, or
// whose write stayed blocked for StallTimeout, checking a few times a
// second.
func (t *Transport) watchdog() {
	defer t.wg.Done()
	every := min(t.cfg.StallTimeout, t.cfg.IdleTimeout, t.cfg.FlushTimeout) / 4
	ticker := time.NewTicker(max(every, 10*time.Millisecond))
	defer ticker.Stop()
	var open []*wsConn
	for {
		select {
		case <-ticker.C:
		case <-t.ctx.Done():
			return
		}
		open = t.sessions.AppendOpen(open[:0])
		now := time.Now()
		for _, c := range open {
			switch began := c.writing.Load(); {
			case began != 0 && now.UnixNano()-began > int64(t.cfg.StallTimeout):
				t.tooSlow(c)
			case now.UnixNano()-c.heard.Load() > int64(t.cfg.IdleTimeout):
				t.endSession(c, wire.ReasonClientTimedOut, false)
			}
		}
		clear(open)
	}
}
