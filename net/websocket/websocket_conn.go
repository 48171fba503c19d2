package websocket

import (
	"errors"
	"io"
	stdnet "net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/internal/wsconn"
	"github.com/throng-go/throng/net/wire"
)

// wsConn is one session of a [Transport].
type wsConn struct {
	link.Member // guarded by the transport's table
	t           *Transport
	conn        *wsconn.Conn

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

	wake     chan struct{} // cap 1: something to write, or closing began
	held     chan struct{} // cap 1: batches posted that wait for Flush
	done     chan struct{} // closed when the writer has closed the connection
	readDone chan struct{} // closed when the reader has stopped
	cut      *time.Timer   // set by beginClose: cuts the connection at the flush deadline
}

// Membership implements link.Session.
func (c *wsConn) Membership() *link.Member { return &c.Member }

// ServeHTTP upgrades a client's request to a session and serves it until
// the session ends.
func (t *Transport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &wsConn{t: t, wake: make(chan struct{}, 1), held: make(chan struct{}, 1), done: make(chan struct{}), readDone: make(chan struct{})}
	conn, err := wsconn.Accept(w, r, wsconn.AcceptOptions{
		Subprotocols:   []string{Subprotocol},
		OriginPatterns: t.cfg.OriginPatterns,
	})
	if err != nil {
		t.n.refused.Add(1) // Accept has answered the request
		return
	}
	if conn.Subprotocol() != Subprotocol {
		t.n.refused.Add(1)
		refuse(conn, wsconn.StatusPolicyViolation, "the "+Subprotocol+" subprotocol is required")
		return
	}
	conn.OnPing = func() { c.heard.Store(time.Now().UnixNano()) }
	c.conn = conn
	c.heard.Store(time.Now().UnixNano())
	if !t.sessions.Open(c, func() { t.wg.Add(2) }) {
		t.n.refused.Add(1)
		refuse(conn, link.WSCloseDisconnect, wire.ReasonTransportClosed)
		return
	}
	go c.write()
	c.read() // the handler's goroutine reads until the connection ends
}

// refuse closes a connection that never became a session, with code and
// reason, waiting closeGrace at most for the client to answer.
func refuse(conn *wsconn.Conn, code int, reason string) {
	_ = conn.NetConn().SetDeadline(time.Now().Add(closeGrace))
	if conn.WriteClose(code, reason) == nil {
		var buf [64]byte
		for {
			if _, _, err := conn.ReadMessage(buf[:]); err != nil {
				break // the client's close, or anything else that ends the wait
			}
		}
	}
	conn.Close()
}

// read delivers the client's messages until the connection ends, then ends
// the session with why it ended (if nothing ended it before).
func (c *wsConn) read() {
	defer c.t.wg.Done()
	defer close(c.readDone)
	t := c.t
	buf := make([]byte, t.cfg.MaxFrame)
	reason := ""
	for reason == "" {
		op, n, err := c.conn.ReadMessage(buf)
		if err != nil {
			reason = wsLostReason(err)
			if reason == ReasonFrameTooLarge {
				c.t.n.DroppedInbound.Add(1)
			}
			break
		}
		c.heard.Store(time.Now().UnixNano())
		if op != wsconn.OpBinary {
			reason = ReasonNotBinary
			break
		}
		c.deliver(buf[:n])
	}
	t.endSession(c, reason, false)
}

func (c *wsConn) deliver(frame []byte) {
	if !c.t.sessions.Deliver(c, frame) {
		c.t.n.DroppedInbound.Add(1)
	}
}

// wsLostReason describes why a connection the server did not close ended.
func wsLostReason(err error) string {
	var ce *wsconn.CloseError
	switch {
	case errors.As(err, &ce):
		if ce.Code == wsconn.StatusMessageTooBig {
			return ReasonFrameTooLarge
		}
		return wire.ReasonClientClosed
	case errors.Is(err, wsconn.ErrTooLarge):
		return ReasonFrameTooLarge
	case errors.Is(err, io.EOF), errors.Is(err, stdnet.ErrClosed):
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
		c.cut = time.AfterFunc(wait, func() { c.conn.Close() })
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
// with the reason, waiting for the client's answer until the reader stops
// (or the cut).
func (c *wsConn) write() {
	defer c.t.wg.Done()
	defer close(c.done)
	t := c.t
	var rel []byte // frames behind their length prefixes
	var out link.Mailbox
	var buf []byte // the messages of one write
	intact := true
	for {
		select {
		case <-c.wake:
		case <-t.ctx.Done():
			c.conn.Close()
			return
		}
		c.mu.Lock()
		rel = c.rel.Take(rel)
		c.slot, out = out, c.slot
		c.slot.Reset()
		closing, flush, reason := c.closing, c.flush, c.reason
		code := link.WSCloseDisconnect
		if r := &c.rel.Refusal; r.Refused {
			code, reason = link.WSCloseRefusal+int(r.Code), r.Reason
		}
		c.mu.Unlock()
		if intact && (!closing || flush) {
			// A failed write means the connection is gone (the network,
			// the client, or the watchdog cut it): the reader ends the
			// session with why, and the writer only waits to close.
			buf, intact = c.writeQueued(buf[:0], rel, &out)
		}
		if closing {
			if intact && c.conn.WriteClose(code, reason) == nil {
				<-c.readDone // the client's answer, or the cut
			}
			c.conn.Close()
			c.mu.Lock()
			c.cut.Stop()
			c.mu.Unlock()
			return
		}
	}
}

// writeBuffer is how many bytes of messages the writer gathers before it
// writes them.
const writeBuffer = 32 << 10

// writeQueued writes the reliable frames laid back to back in rel (as
// link.Reliable queues them), then the movement batches of m, one message
// each, gathered into buf and written with as few writes as writeBuffer
// allows; false when a write failed.
func (c *wsConn) writeQueued(buf, rel []byte, m *link.Mailbox) ([]byte, bool) {
	n := &c.t.n
	ok := true
	flush := func() {
		if ok && len(buf) > 0 {
			ok = c.writeMessages(buf)
		}
		buf = buf[:0]
	}
	wire.EachStreamFrame(rel, func(frame []byte) {
		buf = c.conn.AppendMessage(buf, wsconn.OpBinary, frame)
		if len(buf) >= writeBuffer {
			flush()
		}
	})
	batches, bytes := 0, 0
	for d := range m.All() {
		buf = c.conn.AppendMessage(buf, wsconn.OpBinary, d)
		batches++
		bytes += len(d)
		if len(buf) >= writeBuffer {
			flush()
		}
	}
	flush()
	if ok {
		n.DatagramsOut.Add(uint64(batches))
		n.DatagramBytesOut.Add(uint64(bytes))
	} else {
		n.DroppedDatagrams.Add(uint64(batches))
	}
	return buf, ok
}

// writeMessages writes frames, with the start time set for the watchdog
// (which closes a connection whose write stays blocked).
func (c *wsConn) writeMessages(frames []byte) bool {
	c.writing.Store(time.Now().UnixNano())
	err := c.conn.Write(frames)
	c.writing.Store(0)
	return err == nil
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
