package client

import (
	"errors"
	"io"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"
)

// keepReliable queues a copy of a reliable frame for Poll.
func (c *Client) keepReliable(frame []byte) {
	c.mu.Lock()
	c.reliable.Push(frame)
	if r, err := wire.DecodeRate(frame); err == nil {
		c.rate = r
	}
	welcome, err := wire.DecodeWelcome(frame)
	if err == nil {
		c.welcome = welcome
	}
	c.mu.Unlock()
	if err == nil {
		c.n.welcomes.Add(1)
	}
	c.n.reliable.Add(1)
	switch t, _ := wire.PeekType(frame); t {
	case wire.TypeCorrection:
		c.n.corrections.Add(1)
	case wire.TypeEvent:
		c.n.events.Add(1)
	}
}

// readStream reads reliable frames until the server ends the stream or the
// connection closes. While ReliableQueue frames wait for Poll it stops
// reading, so QUIC flow control slows the server down.
func (c *Client) readStream() {
	defer c.wg.Done()
	done := c.conn.Context().Done()
	buf := make([]byte, 4096)
	for {
		if !c.awaitRoom(done) {
			return
		}
		n, err := c.stream.Read(buf)
		if n > 0 {
			c.reader.Feed(buf[:n])
			for {
				frame, ferr := c.reader.Next()
				if ferr != nil {
					c.conn.CloseWithError(link.CloseClient, "malformed reliable stream from the server")
					return
				}
				if frame == nil {
					break
				}
				c.keepReliable(frame)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// The server is closing: say that everything was read, so
				// it closes the connection with its reason now.
				c.stream.Close()
			}
			return
		}
	}
}

// awaitRoom waits until fewer than ReliableQueue frames wait for Poll; it
// returns false if the connection closed first.
func (c *Client) awaitRoom(done <-chan struct{}) bool {
	for {
		c.mu.Lock()
		full := c.reliable.Len() >= c.cfg.ReliableQueue
		c.mu.Unlock()
		if !full {
			return true
		}
		select {
		case <-c.drained:
		case <-done:
			return false
		}
	}
}

// readDatagrams keeps movement datagrams for Poll until the connection
// closes.
func (c *Client) readDatagrams() {
	defer c.wg.Done()
	ctx := c.conn.Context()
	for {
		d, err := c.conn.ReceiveDatagram(ctx)
		if err != nil {
			return
		}
		c.keepDatagram(d)
	}
}

// keepDatagram queues a movement datagram for Poll (not copied), or drops
// and counts it while DatagramQueue others wait.
func (c *Client) keepDatagram(d []byte) {
	records := 0
	if b, err := wire.DecodeBatch(d); err == nil {
		records = b.Len()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.datagrams) >= c.cfg.DatagramQueue {
		c.n.droppedDatagrams.Add(1)
		return
	}
	c.datagrams = append(c.datagrams, d)
	c.n.datagrams.Add(1)
	total := c.n.records.Add(uint64(records))
	c.window.roll(time.Now(), total)
}

// conn is a Client's connection as SendMove, SendCommand, Done, Err and
// Close use it.
type conn interface {
	sendMove(frame []byte) error
	sendReliable(frame []byte) error
	done() <-chan struct{}
	err() error // nil while open
	close()     // the client leaves
}

// quicLink is a Client's QUIC connection: moves as datagrams, reliable
// frames on its stream behind their length prefix.
type quicLink struct{ c *Client }

func (l quicLink) sendMove(frame []byte) error { return l.c.conn.SendDatagram(frame) }
func (l quicLink) sendReliable(frame []byte) error {
	_, err := l.c.stream.Write(wire.AppendStreamFrame(nil, frame))
	return err
}
func (l quicLink) done() <-chan struct{} { return l.c.conn.Context().Done() }
func (l quicLink) err() error            { return connError(l.c.conn) }
func (l quicLink) close()                { l.c.conn.CloseWithError(link.CloseClient, wire.ReasonClientClosed) }
