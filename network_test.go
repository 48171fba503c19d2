package throng_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/multi"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/websocket"
	"github.com/throng-go/throng/net/wire"
)

func TestNetworkSectionIsChecked(t *testing.T) {
	for doc, msg := range map[string]string{
		`{"network": {"quic": {"development": true}}}`:                            `network.quic.listen: missing: give host:port, for example "0.0.0.0:4433"`,
		`{"network": {"quic": {"listen": ":4433"}}}`:                              "network.quic.certFile: QUIC needs a certificate: give certFile and keyFile, or development: true on loopback",
		`{"network": {"quic": {"listen": "4433", "development": true}}}`:          `network.quic.listen: must be host:port with a port from 0 to 65535, got "4433"`,
		`{"network": {"webSocket": {"listen": "x:99999"}}}`:                       `network.webSocket.listen: must be host:port with a port from 0 to 65535, got "x:99999"`,
		`{"network": {"webSocket": {"listen": ":8080", "certFile": "a.pem"}}}`:    "network.webSocket.keyFile: certFile and keyFile come together: give both or neither",
		`{"network": {"webSocket": {"listen": ":8080", "path": "play"}}}`:         `network.webSocket.path: must start with /, got "play"`,
		`{"network": {"webSocket": {"listen": ":8080", "originPattern": ["x"]}}}`: `network.webSocket.originPattern: unknown key (did you mean "network.webSocket.originPatterns"?)`,
	} {
		_, err := loadErr(t, doc)
		require.Error(t, err, doc)
		assert.Equal(t, "throng: options: "+msg, err.Error(), doc)
	}
}

// TestServerListensWhereItsSettingsSay: a server whose settings name both
// listeners takes a QUIC client and a WebSocket client into one world.
func TestServerListensWhereItsSettingsSay(t *testing.T) {
	opts, err := throng.LoadOptions(strings.NewReader(`{"network": {
		"quic": {"listen": "127.0.0.1:0", "development": true},
		"webSocket": {"listen": "127.0.0.1:0"}
	}}`))
	require.NoError(t, err)
	opts.Admit = func(wire.Hello) (throng.Entry, error) {
		return throng.Entry{Spawn: components.Transform{X: 10, Y: 10}}, nil
	}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	both, ok := srv.Transport().(*multi.Transport)
	require.True(t, ok, "both listeners behind one transport, got %T", srv.Transport())
	q := both.Transports()[0].(*quic.Transport)
	ws := both.Transports()[1].(*websocket.Transport)
	assert.Equal(t, []string{"quic://" + q.Addr().String(), ws.URL()}, srv.Listening())
	assert.True(t, strings.HasPrefix(ws.URL(), "ws://127.0.0.1:"), ws.URL())

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }() // Run closes the server when ctx ends
	defer func() {
		cancel()
		<-ran
	}()
	type dialed struct {
		c   *client.Client
		err error
	}
	results := make(chan dialed, 2)
	go func() {
		c, err := client.Dial(ctx, q.Addr().String(), client.Config{Token: "native", InsecureSkipVerify: true})
		results <- dialed{c, err}
	}()
	go func() {
		c, err := client.DialWebSocket(ctx, ws.URL(), client.Config{Token: "browser"})
		results <- dialed{c, err}
	}()
	var actors []uint32
	for range 2 {
		select {
		case d := <-results:
			require.NoError(t, d.err)
			defer d.c.Close()
			actors = append(actors, d.c.Welcome().Actor)
		case <-time.After(10 * time.Second):
			t.Fatal("a client was not welcomed")
		}
	}
	assert.ElementsMatch(t, []uint32{1, 2}, actors, "two players in one world")
}

func TestServerWithAnAddressInUseSaysWhich(t *testing.T) {
	ws, err := websocket.Listen("127.0.0.1:0", websocket.Config{})
	require.NoError(t, err)
	defer ws.Close()
	_, err = throng.New(throng.Options{Network: throng.Network{
		QUIC:      &throng.QUICListener{Listen: "127.0.0.1:0", Development: true},
		WebSocket: &throng.WebSocketListener{Listen: ws.Addr().String()},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "throng: network.webSocket: websocket: listen")
}
