package throng

import (
	"fmt"

	"github.com/throng-go/throng/net/multi"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

// Listening returns where clients reach the server, for logs and for a
// game's own lobby: "quic://host:port" for its QUIC transport, the
// WebSocket's URL, both (QUIC first) when it serves both, and nothing for
// an in-memory or mounted transport, which no address names.
func (s *Server) Listening() []string { return listening(s.transport) }

func listening(t wire.Transport) []string {
	switch t := t.(type) {
	case *quic.Transport:
		return []string{"quic://" + t.Addr().String()}
	case *websocket.Transport:
		if t.Addr() == nil {
			return nil
		}
		return []string{t.URL()}
	case *multi.Transport:
		var all []string
		for _, inner := range t.Transports() {
			all = append(all, listening(inner)...)
		}
		return all
	}
	return nil
}

// listen opens the listeners the "network" section names: nil when it
// names none, one transport, or both behind a multi.Transport (QUIC first).
func listen(n Network) (wire.Transport, error) {
	var ts []wire.Transport
	closeAll := func() {
		for _, t := range ts {
			t.Close()
		}
	}
	if q := n.QUIC; q != nil {
		t, err := quic.Listen(q.Listen, quic.Config{CertFile: q.CertFile, KeyFile: q.KeyFile, Development: q.Development})
		if err != nil {
			return nil, fmt.Errorf("throng: network.quic: %w", err)
		}
		ts = append(ts, t)
	}
	if w := n.WebSocket; w != nil {
		t, err := websocket.Listen(w.Listen, websocket.Config{
			Path: w.Path, OriginPatterns: w.OriginPatterns, CertFile: w.CertFile, KeyFile: w.KeyFile,
		})
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("throng: network.webSocket: %w", err)
		}
		ts = append(ts, t)
	}
	switch len(ts) {
	case 0:
		return nil, nil
	case 1:
		return ts[0], nil
	}
	return multi.New(ts...), nil
}
