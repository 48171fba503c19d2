package quic

import (
	"context"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	quicgo "github.com/quic-go/quic-go"
)

func (q *Transport) acceptLoop() {
	defer q.wg.Done()
	for {
		conn, err := q.ln.Accept(q.ctx)
		if err != nil {
			return
		}
		q.wg.Add(1)
		go q.handshake(conn)
	}
}

// handshake waits for the client's reliable stream and opens the session.
func (q *Transport) handshake(conn *quicgo.Conn) {
	defer q.wg.Done()
	if !conn.ConnectionState().SupportsDatagrams.Remote {
		q.n.failedHandshakes.Add(1)
		conn.CloseWithError(link.CloseNoSession, "QUIC datagrams are required")
		return
	}
	ctx, cancel := context.WithTimeout(q.ctx, q.cfg.HandshakeTimeout)
	stream, err := conn.AcceptStream(ctx)
	cancel()
	if err != nil {
		q.n.failedHandshakes.Add(1)
		conn.CloseWithError(link.CloseNoSession, "no reliable stream opened")
		return
	}
	c := newQUICConn(q, conn, stream)
	if !q.sessions.Open(c, func() { q.wg.Add(4) }) {
		conn.CloseWithError(link.CloseDisconnect, wire.ReasonTransportClosed)
		return
	}
	go c.readStream()
	go c.readDatagrams()
	go c.writeStream()
	go c.writeDatagrams()
}
