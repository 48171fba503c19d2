package quic

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	quicgo "github.com/quic-go/quic-go"
)

// quicConn is one session of a [Transport]: its connection, its
// reliable stream, and the mailbox and queue its two writers drain.
type quicConn struct {
	link.Member // guarded by the transport's table
	q           *Transport
	conn        *quicgo.Conn
	stream      *quicgo.Stream

	// Guarded by mu.
	mu      sync.Mutex
	slot    link.Mailbox  // the newest tick's datagrams not yet taken by the writer
	rel     link.Reliable // frames not yet taken by the stream writer
	closing bool
	flush   bool      // write what is queued before closing
	flushBy time.Time // when flushing gives up
	reason  string

	dgWake   chan struct{} // cap 1: the mailbox has datagrams
	dgHeld   chan struct{} // cap 1: the mailbox has datagrams that wait for Flush
	relWake  chan struct{} // cap 1: the queue has frames, or closing began
	peerDone chan struct{} // closed when the client's side of the stream ends
}

// Membership implements link.Session.
func (c *quicConn) Membership() *link.Member { return &c.Member }

func newQUICConn(q *Transport, conn *quicgo.Conn, stream *quicgo.Stream) *quicConn {
	return &quicConn{
		q: q, conn: conn, stream: stream,
		dgWake:   make(chan struct{}, 1),
		dgHeld:   make(chan struct{}, 1),
		relWake:  make(chan struct{}, 1),
		peerDone: make(chan struct{}),
	}
}

// beginClose tells the writers to finish: the stream writer flushes (if
// flush) and closes the connection with reason. A write blocked now gets
// FlushTimeout to finish, or none without flush.
func (c *quicConn) beginClose(reason string, flush bool) {
	c.mu.Lock()
	if !c.closing {
		c.closing, c.flush, c.reason = true, flush, reason
		c.flushBy = time.Now()
		if flush {
			c.flushBy = c.flushBy.Add(c.q.cfg.FlushTimeout)
		}
		c.stream.SetWriteDeadline(c.flushBy)
	}
	c.mu.Unlock()
	link.Wake(c.relWake)
}

// writeDatagrams sends the mailbox's datagrams until the connection ends.
// quic-go's own send queue may block it under congestion; the mailbox
// meanwhile keeps only the newest tick.
func (c *quicConn) writeDatagrams() {
	defer c.q.wg.Done()
	n := &c.q.n
	done := c.conn.Context().Done()
	var out link.Mailbox
	for {
		select {
		case <-c.dgWake:
		case <-done:
			return
		}
		c.mu.Lock()
		c.slot, out = out, c.slot
		c.slot.Reset()
		c.mu.Unlock()
		for d := range out.All() {
			if err := c.conn.SendDatagram(d); err != nil {
				n.DroppedDatagrams.Add(1)
				var tooLarge *quicgo.DatagramTooLargeError
				if !errors.As(err, &tooLarge) {
					return // the connection is closed
				}
				continue
			}
			n.DatagramsOut.Add(1)
			n.DatagramBytesOut.Add(uint64(len(d)))
		}
	}
}

// writeStream writes queued reliable frames until the session closes, then
// flushes and closes the connection.
func (c *quicConn) writeStream() {
	defer c.q.wg.Done()
	done := c.conn.Context().Done()
	var out []byte
	intact := true // no write failed, so the stream is still framed
	for {
		select {
		case <-c.relWake:
		case <-done:
			return
		}
		c.mu.Lock()
		out = c.rel.Take(out)
		closing, flush, flushBy, reason := c.closing, c.flush, c.flushBy, c.reason
		if !closing {
			c.stream.SetWriteDeadline(time.Now().Add(c.q.cfg.StallTimeout))
		}
		c.mu.Unlock()
		if len(out) > 0 && intact {
			if _, err := c.stream.Write(out); err != nil {
				intact = false
				switch {
				case closing:
				case errors.Is(err, os.ErrDeadlineExceeded):
					c.q.tooSlow(c) // ends the session; the next turn closes
					continue
				case isStreamReset(err):
					c.q.endSession(c, ReasonStreamClosed, false)
					continue
				default:
					return // closed: the datagram reader reports why
				}
			}
		}
		if closing {
			c.finish(flush && intact, flushBy, reason)
			return
		}
	}
}

// finish ends the stream and closes the connection with reason, or with
// the refusal the session was sent. With flush, it first waits (until
// flushBy) for the client to read to the end of the stream, which the
// client shows by ending its own side: QUIC discards unread stream data
// when a connection closes.
func (c *quicConn) finish(flush bool, flushBy time.Time, reason string) {
	if flush && c.stream.Close() == nil {
		timer := time.NewTimer(time.Until(flushBy))
		select {
		case <-c.peerDone:
		case <-timer.C:
		case <-c.conn.Context().Done():
		}
		timer.Stop()
	}
	code := quicgo.ApplicationErrorCode(link.CloseDisconnect)
	c.mu.Lock()
	if r := &c.rel.Refusal; r.Refused {
		code, reason = link.CloseRefusal+quicgo.ApplicationErrorCode(r.Code), r.Reason
	}
	c.mu.Unlock()
	c.conn.CloseWithError(code, reason)
}

// readStream delivers the client's reliable frames until its side of the
// stream ends.
func (c *quicConn) readStream() {
	defer c.q.wg.Done()
	r := wire.NewStreamReader(c.q.cfg.MaxFrame)
	buf := make([]byte, 4096)
	for {
		n, err := c.stream.Read(buf)
		if n > 0 {
			r.Feed(buf[:n])
			if reason := c.deliverStream(r); reason != "" {
				c.q.endSession(c, reason, false)
				return
			}
		}
		if err == nil {
			continue
		}
		switch {
		case errors.Is(err, io.EOF):
			close(c.peerDone)
			// A client that ends its stream unasked is leaving.
			c.q.endSession(c, wire.ReasonClientClosed, false)
		case isStreamReset(err):
			c.q.endSession(c, ReasonStreamClosed, false)
		}
		return // otherwise the connection closed: the datagram reader reports why
	}
}

// deliverStream pushes every complete frame fed to r; it returns a reason
// to end the session, or "".
func (c *quicConn) deliverStream(r *wire.StreamReader) string {
	t := &c.q.sessions
	t.Lock()
	defer t.Unlock()
	for {
		frame, err := r.Next()
		if err != nil {
			return ReasonMalformedStream
		}
		if frame == nil {
			return ""
		}
		if !t.DeliverLocked(c, frame) {
			return ReasonInboundFlood
		}
	}
}

// readDatagrams delivers the client's datagrams until the connection
// closes, then ends the session with the reason it closed.
func (c *quicConn) readDatagrams() {
	defer c.q.wg.Done()
	ctx := c.conn.Context()
	for {
		d, err := c.conn.ReceiveDatagram(ctx)
		if err != nil {
			break
		}
		c.deliverDatagram(d)
	}
	<-ctx.Done()
	c.q.endSession(c, lostReason(context.Cause(ctx)), false)
}

func (c *quicConn) deliverDatagram(d []byte) {
	q := c.q
	if len(d) > q.cfg.MaxFrame {
		q.n.DroppedInbound.Add(1)
		return
	}
	if !q.sessions.Deliver(c, d) {
		q.n.DroppedInbound.Add(1)
	}
}

// isStreamReset reports whether err ended only the stream, not the
// connection.
func isStreamReset(err error) bool {
	var se *quicgo.StreamError
	return errors.As(err, &se)
}

// lostReason describes why a connection the server did not close ended.
func lostReason(cause error) string {
	var app *quicgo.ApplicationError
	var idle *quicgo.IdleTimeoutError
	switch {
	case errors.As(cause, &app) && app.Remote:
		return wire.ReasonClientClosed
	case errors.As(cause, &idle):
		return wire.ReasonClientTimedOut
	case cause == nil:
		return wire.ReasonClientClosed
	}
	return "connection lost: " + cause.Error()
}
