package link

import "github.com/throng-go/throng/net/wire"

// What a client and a server agree on beside the frames: the names they
// negotiate and the close codes that carry a server's reason when the
// connection ends.
const (
	// ALPN is the application protocol of a QUIC connection's TLS
	// handshake.
	ALPN = "throng/1"
	// Subprotocol is the Sec-WebSocket-Protocol a WebSocket client asks
	// for.
	Subprotocol = "throng.v1"
)

// Application error codes of a QUIC CONNECTION_CLOSE frame; the reason
// text travels beside them.
const (
	CloseClient     = 0 // the client leaves
	CloseDisconnect = 1 // the server ends the session
	CloseNoSession  = 2 // no session was ever opened
	// CloseRefusal plus a RefuseCode: the server ends a session it sent a
	// Refuse, and the reason text is the Refuse's. A client that could not
	// read the frame before the close still learns both.
	CloseRefusal = 0x100
)

// WebSocket close codes (the private range 4000-4999) that carry the
// server's reason to the client: ending a session, or refusing one
// (WSCloseRefusal plus the RefuseCode), as QUIC's close codes do.
const (
	WSCloseDisconnect = 4000
	WSCloseRefusal    = 4100
)

// RefusalCode returns the RefuseCode a QUIC close code carries, and
// whether it carries one.
func RefusalCode(code uint64) (wire.RefuseCode, bool) {
	if code < CloseRefusal || code > CloseRefusal+0xff {
		return 0, false
	}
	return wire.RefuseCode(code - CloseRefusal), true
}
