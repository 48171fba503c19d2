package wsconn

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	cws "github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testTimeout bounds every wait of these tests: a hang fails fast.
const testTimeout = 5 * time.Second

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

// testContext is a context that ends with the test or after testTimeout.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// async runs f on its own goroutine; its result arrives on the channel.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// await is the next value on ch, or a failed test after testTimeout.
func await[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting")
		var zero T
		return zero
	}
}

// signal is a callback that reports each call on the returned channel
// without ever blocking the caller.
func signal() (func(), <-chan struct{}) {
	ch := make(chan struct{}, 1)
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

func randomBytes(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

// acceptServer is an HTTP server whose handler calls Accept and hands every
// accepted *Conn to the test.
type acceptServer struct {
	*httptest.Server
	conns chan *Conn
}

func startAcceptServer(t *testing.T, opts AcceptOptions) *acceptServer {
	return newAcceptServer(t, opts, false)
}

func newAcceptServer(t *testing.T, opts AcceptOptions, useTLS bool) *acceptServer {
	t.Helper()
	s := &acceptServer{conns: make(chan *Conn, 64)}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := Accept(w, r, opts)
		if err != nil {
			return // Accept has answered with an HTTP error
		}
		s.conns <- c
	}))
	if useTLS {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(func() {
		s.Close()
		for {
			select {
			case c := <-s.conns:
				c.Close()
			default:
				return
			}
		}
	})
	return s
}

// wsURL is the server's ws:// (or wss://) URL.
func (s *acceptServer) wsURL() string { return strings.Replace(s.URL, "http", "ws", 1) }

func (s *acceptServer) addr() string { return s.Listener.Addr().String() }

// conn is the next connection Accept took, closed when the test ends; its
// reads and writes fail after testTimeout rather than hang.
func (s *acceptServer) conn(t *testing.T) *Conn {
	t.Helper()
	c := await(t, (<-chan *Conn)(s.conns))
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.NetConn().SetDeadline(time.Now().Add(testTimeout)))
	return c
}

// dialCoder opens a coder/websocket client to url, closed when the test ends.
func dialCoder(t *testing.T, ctx context.Context, url string, opts *cws.DialOptions) *cws.Conn {
	t.Helper()
	c, _, err := cws.Dial(ctx, url, opts)
	require.NoError(t, err)
	t.Cleanup(func() { c.CloseNow() })
	c.SetReadLimit(1 << 20)
	return c
}

// coderToAccept connects a coder client to an Accept server with no
// options and returns the test's context, the client and the server's Conn.
func coderToAccept(t *testing.T) (context.Context, *cws.Conn, *Conn) {
	t.Helper()
	srv := startAcceptServer(t, AcceptOptions{})
	ctx := testContext(t)
	client := dialCoder(t, ctx, srv.wsURL(), nil)
	return ctx, client, srv.conn(t)
}

// startCoderServer starts an HTTP server whose handler accepts with
// coder/websocket and runs serve on the connection; what serve returns
// arrives on the channel.
func startCoderServer(t *testing.T, opts *cws.AcceptOptions, serve func(ctx context.Context, c *cws.Conn) error) (url string, done <-chan error) {
	t.Helper()
	ch := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := cws.Accept(w, r, opts)
		if err != nil {
			ch <- err
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		ch <- serve(ctx, c)
	}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "http", "ws", 1), ch
}

// startRawServer listens on loopback and runs serve on the first
// connection it accepts; serve's connection is closed when the test ends.
func startRawServer(t *testing.T, serve func(nc net.Conn, br *bufio.Reader)) (addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		_ = nc.SetDeadline(time.Now().Add(testTimeout))
		defer nc.Close()
		serve(nc, bufio.NewReader(nc))
	}()
	return ln.Addr().String()
}

// wantAccept is Sec-WebSocket-Accept for key, computed here apart from the
// package's own acceptKey.
func wantAccept(key string) string {
	h := sha1.New()
	io.WriteString(h, key)
	io.WriteString(h, "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// handshakeHeader is the header of a valid opening handshake with key.
func handshakeHeader(key string) http.Header {
	h := http.Header{}
	h.Set("Connection", "Upgrade")
	h.Set("Upgrade", "websocket")
	h.Set("Sec-WebSocket-Version", "13")
	h.Set("Sec-WebSocket-Key", key)
	return h
}

// rawRequest writes a request by hand over a new TCP connection to addr
// (its request line, Host, header and then the bytes of after, all in one
// write) and reads the answer's status and header. It returns the
// connection and the reader just past the answer's header.
func rawRequest(t *testing.T, addr, method string, header http.Header, after []byte) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, testTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(testTimeout)))
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s / HTTP/1.1\r\nHost: %s\r\n", method, addr)
	require.NoError(t, header.Write(&b))
	b.WriteString("\r\n")
	b.Write(after)
	_, err = nc.Write(b.Bytes())
	require.NoError(t, err)
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	require.NoError(t, err)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
	}
	return nc, br, resp
}

// rawHandshake does a valid opening handshake by hand, with the header
// lines of extra added and the bytes of after sent along with it, and
// checks the 101 answer. It returns the client's raw connection, the
// reader past the answer, and the server's *Conn.
func rawHandshake(t *testing.T, srv *acceptServer, extra http.Header, after []byte) (net.Conn, *bufio.Reader, *Conn) {
	t.Helper()
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	h := handshakeHeader(key)
	for k, vs := range extra {
		h[k] = vs
	}
	nc, br, resp := rawRequest(t, srv.addr(), http.MethodGet, h, after)
	require.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	require.Equal(t, wantAccept(key), resp.Header.Get("Sec-WebSocket-Accept"))
	require.True(t, strings.EqualFold(resp.Header.Get("Upgrade"), "websocket"))
	require.True(t, strings.EqualFold(resp.Header.Get("Connection"), "upgrade"))
	return nc, br, srv.conn(t)
}

// testMaskKey masks the frames the raw client sends.
var testMaskKey = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// clientFrame is a frame as a client sends it: b0 is the first byte (FIN,
// RSV and opcode), the payload is masked byte by byte with testMaskKey
// and its length is written in the fewest bytes.
func clientFrame(b0 byte, payload []byte) []byte {
	f := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n <= 0xffff:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(f, testMaskKey[:]...)
	for i, b := range payload {
		f = append(f, b^testMaskKey[i%4])
	}
	return f
}

// closePayload is a close frame's payload: the code and the reason.
func closePayload(code uint16, reason string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, code), reason...)
}

// serverFrame is a frame as the raw client read it.
type serverFrame struct {
	b0      byte // FIN, RSV and opcode
	lenCode byte // the 7-bit length field: the length, 126 or 127
	payload []byte
}

// readServerFrame reads one frame a server sent, which must be unmasked.
func readServerFrame(t *testing.T, br *bufio.Reader) serverFrame {
	t.Helper()
	var h [2]byte
	_, err := io.ReadFull(br, h[:])
	require.NoError(t, err)
	require.Zero(t, h[1]&0x80, "a server's frame must not be masked")
	f := serverFrame{b0: h[0], lenCode: h[1] & 0x7f}
	n := uint64(f.lenCode)
	switch f.lenCode {
	case 126:
		var ext [2]byte
		_, err = io.ReadFull(br, ext[:])
		require.NoError(t, err)
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		_, err = io.ReadFull(br, ext[:])
		require.NoError(t, err)
		n = binary.BigEndian.Uint64(ext[:])
	}
	require.LessOrEqual(t, n, uint64(1<<20))
	f.payload = make([]byte, n)
	_, err = io.ReadFull(br, f.payload)
	require.NoError(t, err)
	return f
}

// requireServerClose reads a close frame from the server and checks its
// payload is code (and any reason); code 0 wants an empty close.
func requireServerClose(t *testing.T, br *bufio.Reader, code uint16) {
	t.Helper()
	f := readServerFrame(t, br)
	require.Equal(t, byte(0x80|opClose), f.b0, "want a close frame")
	if code == 0 {
		require.Empty(t, f.payload)
		return
	}
	require.GreaterOrEqual(t, len(f.payload), 2)
	require.Equal(t, code, binary.BigEndian.Uint16(f.payload))
}

// ---------------------------------------------------------------------------
// A coder/websocket client against Accept
// ---------------------------------------------------------------------------

func TestBinaryMessagesOfEveryLengthArriveIntactBothWays(t *testing.T) {
	ctx, client, sc := coderToAccept(t)
	buf := make([]byte, 80000)
	rng := rand.New(rand.NewPCG(1, 2))

	for _, n := range []int{0, 1, 125, 126, 127, 65535, 65536, 70000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			up := randomBytes(rng, n)
			sent := async(func() error { return client.Write(ctx, cws.MessageBinary, up) })
			op, got, err := sc.ReadMessage(buf)
			require.NoError(t, err)
			require.NoError(t, await(t, sent))
			assert.Equal(t, OpBinary, op)
			require.Equal(t, up, buf[:got], "client to server")

			down := randomBytes(rng, n)
			sent = async(func() error { return sc.WriteMessage(OpBinary, down) })
			typ, data, err := client.Read(ctx)
			require.NoError(t, err)
			require.NoError(t, await(t, sent))
			assert.Equal(t, cws.MessageBinary, typ)
			require.Equal(t, down, data, "server to client")
		})
	}
}

func TestMessagesAppendedBackToBackArriveSeparatelyInOrder(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	rng := rand.New(rand.NewPCG(3, 4))
	want := []struct {
		op  byte
		typ cws.MessageType
		p   []byte
	}{
		{OpBinary, cws.MessageBinary, []byte("first")},
		{OpText, cws.MessageText, []byte("second, in text")},
		{OpBinary, cws.MessageBinary, randomBytes(rng, 300)},
		{OpBinary, cws.MessageBinary, nil},
		{OpBinary, cws.MessageBinary, randomBytes(rng, 70000)},
		{OpText, cws.MessageText, []byte("last")},
	}
	var frames []byte
	for _, m := range want {
		frames = sc.AppendMessage(frames, m.op, m.p)
	}
	sent := async(func() error { return sc.Write(frames) })
	for i, m := range want {
		typ, data, err := client.Read(ctx)
		require.NoError(t, err, "message %d", i)
		assert.Equal(t, m.typ, typ, "message %d", i)
		require.Equal(t, len(m.p), len(data), "message %d", i)
		require.True(t, bytes.Equal(m.p, data), "message %d", i)
	}
	require.NoError(t, await(t, sent))

	// And the other way: several messages from coder, read one by one.
	for _, m := range want[:4] {
		require.NoError(t, client.Write(ctx, m.typ, m.p))
	}
	buf := make([]byte, 1000)
	for i, m := range want[:4] {
		op, n, err := sc.ReadMessage(buf)
		require.NoError(t, err, "message %d", i)
		assert.Equal(t, m.op, op, "message %d", i)
		require.True(t, bytes.Equal(m.p, buf[:n]), "message %d", i)
	}
}

func TestFragmentedMessageFromCoderIsReadWhole(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	rng := rand.New(rand.NewPCG(5, 6))
	parts := [][]byte{randomBytes(rng, 300), randomBytes(rng, 1), randomBytes(rng, 126), randomBytes(rng, 2000)}
	w, err := client.Writer(ctx, cws.MessageBinary)
	require.NoError(t, err)
	var want []byte
	for _, p := range parts {
		_, err := w.Write(p)
		require.NoError(t, err)
		want = append(want, p...)
	}
	require.NoError(t, w.Close())

	buf := make([]byte, 4096)
	op, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpBinary, op)
	require.Equal(t, want, buf[:n])
}

func TestTextMessageIsReportedAsText(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	const text = "héllo, wörld — ☃"
	require.NoError(t, client.Write(ctx, cws.MessageText, []byte(text)))
	buf := make([]byte, 100)
	op, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpText, op)
	assert.Equal(t, text, string(buf[:n]))

	// A text message begun in fragments keeps its opcode.
	w, err := client.Writer(ctx, cws.MessageText)
	require.NoError(t, err)
	_, err = io.WriteString(w, "frag")
	require.NoError(t, err)
	_, err = io.WriteString(w, "mented")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	op, n, err = sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpText, op)
	assert.Equal(t, "fragmented", string(buf[:n]))

	require.NoError(t, sc.WriteMessage(OpText, []byte(text)))
	typ, data, err := client.Read(ctx)
	require.NoError(t, err)
	assert.Equal(t, cws.MessageText, typ)
	assert.Equal(t, text, string(data))
}

func TestCoderPingIsAnsweredAndOnPingCalled(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	onPing, pinged := signal()
	sc.OnPing = onPing
	reading := async(func() error {
		_, _, err := sc.ReadMessage(make([]byte, 16))
		return err
	})

	client.CloseRead(ctx) // coder reads (and takes its pong) in the background
	require.NoError(t, client.Ping(ctx), "the server must answer a ping with a pong")
	await(t, pinged)
	require.NoError(t, client.Ping(ctx), "and the next one too")

	require.NoError(t, client.CloseNow())
	require.Error(t, await(t, reading))
}

// ---------------------------------------------------------------------------
// Close
// ---------------------------------------------------------------------------

func TestServerCloseReachesCoderWithCodeAndReason(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	require.NoError(t, sc.WriteClose(4100+3, "busy"))

	_, _, err := client.Read(ctx)
	require.Error(t, err)
	assert.Equal(t, cws.StatusCode(4103), cws.CloseStatus(err))
	var ce cws.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "busy", ce.Reason)

	// Coder answers the close; the server reads that answer.
	_, _, err = sc.ReadMessage(make([]byte, 16))
	var sce *CloseError
	require.ErrorAs(t, err, &sce)
	assert.Equal(t, 4103, sce.Code)

	// Nothing is written after a close.
	assert.ErrorIs(t, sc.WriteMessage(OpBinary, []byte("late")), net.ErrClosed)
	assert.ErrorIs(t, sc.Write(sc.AppendMessage(nil, OpBinary, []byte("late"))), net.ErrClosed)
	assert.ErrorIs(t, sc.Ping(), net.ErrClosed)
	assert.NoError(t, sc.WriteClose(StatusNormalClosure, "again"))
}

func TestServerSendsOneCloseAndNothingAfterIt(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	_, br, sc := rawHandshake(t, srv, nil, nil)

	require.NoError(t, sc.WriteClose(4000, "first"))
	require.NoError(t, sc.WriteClose(4001, "second"))
	assert.ErrorIs(t, sc.WriteMessage(OpBinary, []byte("x")), net.ErrClosed)
	require.NoError(t, sc.Close())

	f := readServerFrame(t, br)
	assert.Equal(t, byte(0x80|opClose), f.b0)
	assert.Equal(t, closePayload(4000, "first"), f.payload)
	_, err := br.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "nothing may follow the first close")
}

func TestWriteCloseWithNoStatusSendsAnEmptyClose(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	_, br, sc := rawHandshake(t, srv, nil, nil)

	require.NoError(t, sc.WriteClose(StatusNoStatus, "ignored"))
	requireServerClose(t, br, 0)
}

func TestCoderCloseReachesReadMessageAndIsAnswered(t *testing.T) {
	_, client, sc := coderToAccept(t)

	closed := async(func() error { return client.Close(cws.StatusNormalClosure, "bye") })
	_, _, err := sc.ReadMessage(make([]byte, 16))
	var ce *CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, &CloseError{Code: 1000, Reason: "bye"}, ce)
	assert.NoError(t, await(t, closed), "coder's Close must get the server's answering close")
}

func TestLongCloseReasonReachesCoderCutToFit(t *testing.T) {
	ctx, client, sc := coderToAccept(t)

	long := strings.Repeat("€", 50) + " and then some"
	require.NoError(t, sc.WriteClose(4000, long))
	_, _, err := client.Read(ctx)
	var ce cws.CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cws.StatusCode(4000), ce.Code)
	assert.Equal(t, strings.Repeat("€", 41), ce.Reason)
}

func TestCloseReasonIsCutOnARuneBoundary(t *testing.T) {
	for _, tc := range []struct {
		name, reason, want string
	}{
		{"empty", "", ""},
		{"short", "busy", "busy"},
		{"exactly 123 bytes", strings.Repeat("a", 123), strings.Repeat("a", 123)},
		{"124 bytes of ASCII", strings.Repeat("a", 124), strings.Repeat("a", 123)},
		{"2-byte runes", strings.Repeat("é", 100), strings.Repeat("é", 61)},
		{"3-byte runes ending on the boundary", strings.Repeat("€", 50), strings.Repeat("€", 41)},
		{"3-byte runes shifted by one", "a" + strings.Repeat("€", 60), "a" + strings.Repeat("€", 40)},
		{"4-byte runes", strings.Repeat("😀", 40), strings.Repeat("😀", 30)},
		{"4-byte runes shifted by two", "ab" + strings.Repeat("😀", 40), "ab" + strings.Repeat("😀", 30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CloseReason(tc.reason)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), 123)
			assert.True(t, strings.HasPrefix(tc.reason, got))
			assert.True(t, utf8.ValidString(got))
		})
	}
}

// closeCodeCase is a close frame's code and whether RFC 6455 lets one
// carry it.
var closeCodeCases = []struct {
	code  uint16
	valid bool
}{
	{1000, true}, {1001, true}, {1002, true}, {1003, true},
	{1007, true}, {1008, true}, {1009, true}, {1010, true}, {1011, true},
	{1012, true}, {1013, true}, {1014, true},
	{3000, true}, {4000, true}, {4999, true},
	{0, false}, {999, false}, {1004, false}, {1005, false}, {1006, false},
	{1015, false}, {1016, false}, {2999, false}, {5000, false}, {65535, false},
}

func TestCloseCodesAreCheckedAndAnswered(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	for _, tc := range closeCodeCases {
		t.Run(fmt.Sprint(tc.code), func(t *testing.T) {
			nc, br, sc := rawHandshake(t, srv, nil, nil)
			_, err := nc.Write(clientFrame(0x80|opClose, closePayload(tc.code, "why")))
			require.NoError(t, err)
			_, _, err = sc.ReadMessage(make([]byte, 16))
			if tc.valid {
				var ce *CloseError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, &CloseError{Code: int(tc.code), Reason: "why"}, ce)
				requireServerClose(t, br, tc.code) // the close is echoed
				return
			}
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe, "close code %d may not be sent", tc.code)
			requireServerClose(t, br, StatusProtocolError)
		})
	}
	t.Run("no code", func(t *testing.T) {
		nc, br, sc := rawHandshake(t, srv, nil, nil)
		_, err := nc.Write(clientFrame(0x80|opClose, nil))
		require.NoError(t, err)
		_, _, err = sc.ReadMessage(make([]byte, 16))
		var ce *CloseError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, &CloseError{Code: StatusNoStatus}, ce)
		requireServerClose(t, br, 0) // answered with a close without a code
	})
}

func TestPingCrossingOurCloseDoesNotHideThePeersClose(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	nc, br, sc := rawHandshake(t, srv, nil, nil)

	require.NoError(t, sc.WriteClose(4000, "going"))
	requireServerClose(t, br, 4000)

	// The peer pinged before it saw our close, then answered the close.
	frames := append(clientFrame(0x80|opPing, []byte("hb")), clientFrame(0x80|opClose, closePayload(4000, ""))...)
	_, err := nc.Write(frames)
	require.NoError(t, err)

	_, _, err = sc.ReadMessage(make([]byte, 16))
	var ce *CloseError
	require.ErrorAs(t, err, &ce, "the peer's answering close must reach ReadMessage, got %v", err)
	assert.Equal(t, 4000, ce.Code)
}

// ---------------------------------------------------------------------------
// Dial against a coder/websocket server
// ---------------------------------------------------------------------------

func TestDialTalksToCoderServer(t *testing.T) {
	url, done := startCoderServer(t, &cws.AcceptOptions{Subprotocols: []string{"throng.v1"}},
		func(ctx context.Context, c *cws.Conn) error {
			if c.Subprotocol() != "throng.v1" {
				return fmt.Errorf("coder agreed on %q", c.Subprotocol())
			}
			for range 3 {
				typ, data, err := c.Read(ctx)
				if err != nil {
					return err
				}
				if err := c.Write(ctx, typ, append([]byte("echo:"), data...)); err != nil {
					return err
				}
			}
			return c.Close(4000, "x")
		})
	ctx := testContext(t)
	cc, err := Dial(ctx, url, DialOptions{Subprotocols: []string{"other", "throng.v1"}})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))
	assert.Equal(t, "throng.v1", cc.Subprotocol())

	big := randomBytes(rand.New(rand.NewPCG(7, 8)), 70000)
	buf := make([]byte, 80000)
	for _, m := range []struct {
		op byte
		p  []byte
	}{
		{OpBinary, []byte("hello")},
		{OpText, []byte("héllo")},
		{OpBinary, big},
	} {
		// coder drops the connection on an unmasked client frame: an
		// echo proves the frames are masked.
		require.NoError(t, cc.WriteMessage(m.op, m.p))
		op, n, err := cc.ReadMessage(buf)
		require.NoError(t, err)
		assert.Equal(t, m.op, op)
		require.Equal(t, append([]byte("echo:"), m.p...), buf[:n])
	}

	_, _, err = cc.ReadMessage(buf)
	var ce *CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, &CloseError{Code: 4000, Reason: "x"}, ce)
	assert.NoError(t, await(t, done), "coder's Close must get the client's answering close")
}

func TestDialedPingGetsOnPong(t *testing.T) {
	onPing, coderPinged := signal()
	url, done := startCoderServer(t, &cws.AcceptOptions{
		OnPingReceived: func(context.Context, []byte) bool { onPing(); return true },
	}, func(ctx context.Context, c *cws.Conn) error {
		_, _, err := c.Read(ctx) // answers pings until the client closes
		if cws.CloseStatus(err) == cws.StatusNormalClosure {
			return nil
		}
		return err
	})
	ctx := testContext(t)
	cc, err := Dial(ctx, url, DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))

	onPong, ponged := signal()
	cc.OnPong = onPong
	reading := async(func() error {
		_, _, err := cc.ReadMessage(make([]byte, 16))
		return err
	})
	require.NoError(t, cc.Ping())
	await(t, coderPinged)
	await(t, ponged)

	require.NoError(t, cc.WriteClose(StatusNormalClosure, ""))
	var ce *CloseError
	require.ErrorAs(t, await(t, reading), &ce)
	assert.Equal(t, StatusNormalClosure, ce.Code)
	assert.NoError(t, await(t, done))
}

func TestDialOverTLSTalksToAcceptServer(t *testing.T) {
	srv := newAcceptServer(t, AcceptOptions{}, true)
	ctx := testContext(t)
	tlsConf := srv.Client().Transport.(*http.Transport).TLSClientConfig
	require.True(t, strings.HasPrefix(srv.wsURL(), "wss://"))
	cc, err := Dial(ctx, srv.wsURL(), DialOptions{TLS: tlsConf})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))
	sc := srv.conn(t)

	require.NoError(t, cc.WriteMessage(OpBinary, []byte("over tls")))
	buf := make([]byte, 64)
	op, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpBinary, op)
	assert.Equal(t, "over tls", string(buf[:n]))

	require.NoError(t, sc.WriteMessage(OpText, []byte("back")))
	op, n, err = cc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpText, op)
	assert.Equal(t, "back", string(buf[:n]))
}

func TestDialedClientTalksToAcceptServer(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{Subprotocols: []string{"throng.v1"}})
	ctx := testContext(t)
	cc, err := Dial(ctx, srv.wsURL()+"/play?room=1", DialOptions{Subprotocols: []string{"throng.v1"}})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))
	sc := srv.conn(t)
	assert.Equal(t, "throng.v1", cc.Subprotocol())
	assert.Equal(t, "throng.v1", sc.Subprotocol())

	buf := make([]byte, 70000)
	big := randomBytes(rand.New(rand.NewPCG(9, 10)), 65536)
	sent := async(func() error { return cc.WriteMessage(OpBinary, big) })
	_, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	require.NoError(t, await(t, sent))
	require.Equal(t, big, buf[:n])

	sent = async(func() error { return sc.WriteMessage(OpBinary, big) })
	_, n, err = cc.ReadMessage(buf)
	require.NoError(t, err)
	require.NoError(t, await(t, sent))
	require.Equal(t, big, buf[:n])

	require.NoError(t, cc.WriteClose(4001, "done"))
	_, _, err = sc.ReadMessage(buf)
	var ce *CloseError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, &CloseError{Code: 4001, Reason: "done"}, ce)
	_, _, err = cc.ReadMessage(buf)
	require.ErrorAs(t, err, &ce, "the server's answering close")
	assert.Equal(t, 4001, ce.Code)
}

// ---------------------------------------------------------------------------
// Dial against servers that do not upgrade
// ---------------------------------------------------------------------------

func TestDialReportsTheHTTPStatusOfARefusal(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	_, err := Dial(testContext(t), strings.Replace(srv.URL, "http", "ws", 1), DialOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404")
}

func TestDialRejectsANonWebSocketURL(t *testing.T) {
	_, err := Dial(testContext(t), "http://127.0.0.1:1/", DialOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ws://")
}

// startSilentServer accepts TCP connections and never answers; each
// accepted connection is reported on the channel and held until the test
// ends.
func startSilentServer(t *testing.T) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ch := make(chan struct{}, 16)
	held := make(chan net.Conn, 16)
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			held <- nc
			ch <- struct{}{}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case nc := <-held:
				nc.Close()
			default:
				return
			}
		}
	})
	return ln.Addr().String(), ch
}

func TestDialGivesUpWhenItsContextExpires(t *testing.T) {
	addr, _ := startSilentServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	dialed := async(func() error {
		_, err := Dial(ctx, "ws://"+addr+"/", DialOptions{})
		return err
	})
	err := await(t, dialed)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "Dial must return promptly once its context is done")
}

func TestDialGivesUpWhenItsContextIsCanceled(t *testing.T) {
	addr, accepted := startSilentServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dialed := async(func() error {
		_, err := Dial(ctx, "ws://"+addr+"/", DialOptions{})
		return err
	})
	await(t, accepted) // the server holds the connection and says nothing
	cancel()
	assert.ErrorIs(t, await(t, dialed), context.Canceled)
}

// ---------------------------------------------------------------------------
// Dial against a raw server: what it reads along with the answer, and what
// answers it refuses
// ---------------------------------------------------------------------------

// rawUpgrade reads a client's handshake from br and answers it with a 101
// whose header is adjusted by edit, followed by after in the same write.
func rawUpgrade(nc net.Conn, br *bufio.Reader, edit func(h http.Header), after []byte) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("Upgrade", "websocket")
	h.Set("Connection", "Upgrade")
	h.Set("Sec-WebSocket-Accept", wantAccept(req.Header.Get("Sec-WebSocket-Key")))
	if edit != nil {
		edit(h)
	}
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	h.Write(&b)
	b.WriteString("\r\n")
	b.Write(after)
	_, err = nc.Write(b.Bytes())
	return err
}

func TestDialKeepsAMessageSentWithTheHandshakeAnswer(t *testing.T) {
	type result struct {
		frame []byte
		err   error
	}
	got := make(chan result, 1)
	addr := startRawServer(t, func(nc net.Conn, br *bufio.Reader) {
		early := []byte{0x80 | OpBinary, 5, 'e', 'a', 'r', 'l', 'y'}
		if err := rawUpgrade(nc, br, nil, early); err != nil {
			got <- result{err: err}
			return
		}
		f := make([]byte, 2+4+5) // the client's 5-byte message, masked
		_, err := io.ReadFull(br, f)
		got <- result{f, err}
	})
	cc, err := Dial(testContext(t), "ws://"+addr+"/", DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))

	buf := make([]byte, 16)
	op, n, err := cc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpBinary, op)
	assert.Equal(t, "early", string(buf[:n]))

	require.NoError(t, cc.WriteMessage(OpText, []byte("reply")))
	r := await(t, got)
	require.NoError(t, r.err)
	f := r.frame
	assert.Equal(t, byte(0x80|OpText), f[0])
	require.Equal(t, byte(0x80|5), f[1], "a client's frame is masked")
	p := f[6:]
	for i := range p {
		p[i] ^= f[2+i%4]
	}
	assert.Equal(t, "reply", string(p))
}

func TestDialRefusesAnAnswerThatIsNotAnUpgradeOfItsRequest(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(h http.Header)
	}{
		{"wrong accept key", func(h http.Header) { h.Set("Sec-WebSocket-Accept", wantAccept("another key")) }},
		{"no accept key", func(h http.Header) { h.Del("Sec-WebSocket-Accept") }},
		{"no Upgrade", func(h http.Header) { h.Del("Upgrade") }},
		{"Connection without upgrade", func(h http.Header) { h.Set("Connection", "keep-alive") }},
		{"a subprotocol not asked for", func(h http.Header) { h.Set("Sec-WebSocket-Protocol", "evil.v9") }},
		{"an extension not asked for", func(h http.Header) { h.Set("Sec-WebSocket-Extensions", "permessage-deflate") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startRawServer(t, func(nc net.Conn, br *bufio.Reader) {
				_ = rawUpgrade(nc, br, tc.edit, nil)
				_, _ = io.Copy(io.Discard, br) // hold until the client hangs up
			})
			cc, err := Dial(testContext(t), "ws://"+addr+"/", DialOptions{Subprotocols: []string{"throng.v1"}})
			if cc != nil {
				cc.Close()
			}
			require.Error(t, err)
		})
	}
}

// ---------------------------------------------------------------------------
// Accept's handshake checks
// ---------------------------------------------------------------------------

func TestAcceptKeyMatchesTheRFCExample(t *testing.T) {
	// RFC 6455 section 1.3.
	assert.Equal(t, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", acceptKey("dGhlIHNhbXBsZSBub25jZQ=="))
}

func TestAcceptRefusesRequestsThatAreNotAHandshake(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	const key = "dGhlIHNhbXBsZSBub25jZQ=="
	for _, tc := range []struct {
		name       string
		method     string
		edit       func(h http.Header)
		wantStatus int
		wantHeader map[string]string
	}{
		{"valid", "GET", nil, 101, nil},
		{"tokens in lists and any case", "GET", func(h http.Header) {
			h.Set("Connection", "keep-alive, UPGRADE")
			h.Set("Upgrade", "WebSocket")
		}, 101, nil},
		{"wrong version", "GET", func(h http.Header) { h.Set("Sec-WebSocket-Version", "8") }, 400,
			map[string]string{"Sec-WebSocket-Version": "13"}},
		{"no version", "GET", func(h http.Header) { h.Del("Sec-WebSocket-Version") }, 400, nil},
		{"missing key", "GET", func(h http.Header) { h.Del("Sec-WebSocket-Key") }, 400, nil},
		{"key not 16 bytes", "GET", func(h http.Header) { h.Set("Sec-WebSocket-Key", "c2hvcnQ=") }, 400, nil},
		{"key not base64", "GET", func(h http.Header) { h.Set("Sec-WebSocket-Key", "not base64 at all!!!!!!!") }, 400, nil},
		{"two keys", "GET", func(h http.Header) { h.Add("Sec-WebSocket-Key", key) }, 400, nil},
		{"POST", "POST", nil, 405, nil},
		{"no Upgrade header", "GET", func(h http.Header) { h.Del("Upgrade") }, 426,
			map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}},
		{"Upgrade to something else", "GET", func(h http.Header) { h.Set("Upgrade", "h2c") }, 426, nil},
		{"Connection without upgrade", "GET", func(h http.Header) { h.Set("Connection", "keep-alive") }, 426, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := handshakeHeader(key)
			if tc.edit != nil {
				tc.edit(h)
			}
			_, _, resp := rawRequest(t, srv.addr(), tc.method, h, nil)
			assert.Equal(t, tc.wantStatus, resp.StatusCode)
			for k, v := range tc.wantHeader {
				assert.Equal(t, v, resp.Header.Get(k), "header %s", k)
			}
			if tc.wantStatus == 101 {
				assert.Equal(t, wantAccept(key), resp.Header.Get("Sec-WebSocket-Accept"))
				srv.conn(t)
			}
		})
	}
}

func TestAcceptChecksTheOrigin(t *testing.T) {
	plain := startAcceptServer(t, AcceptOptions{})
	patterned := startAcceptServer(t, AcceptOptions{OriginPatterns: []string{"*.example.com"}})
	for _, tc := range []struct {
		name      string
		origin    func(host string) string
		plain     int // status from a server without patterns
		patterned int // from one with "*.example.com"
	}{
		{"no origin", func(string) string { return "" }, 101, 101},
		{"the server's own host", func(host string) string { return "http://" + host }, 101, 101},
		{"the server's own host over https", func(host string) string { return "https://" + host }, 101, 101},
		{"a foreign host", func(string) string { return "https://evil.test" }, 403, 403},
		{"a host the pattern matches", func(string) string { return "https://game.example.com" }, 403, 101},
		{"a host the pattern matches, in capitals", func(string) string { return "https://Game.EXAMPLE.com" }, 403, 101},
		{"a host ending like the pattern", func(string) string { return "https://example.com.evil.test" }, 403, 403},
		{"the bare domain of the pattern", func(string) string { return "https://example.com" }, 403, 403},
		{"null", func(string) string { return "null" }, 403, 403},
	} {
		for _, s := range []struct {
			name string
			srv  *acceptServer
			want int
		}{{"without patterns", plain, tc.plain}, {"with patterns", patterned, tc.patterned}} {
			t.Run(tc.name+"/"+s.name, func(t *testing.T) {
				h := handshakeHeader("dGhlIHNhbXBsZSBub25jZQ==")
				if o := tc.origin(s.srv.addr()); o != "" {
					h.Set("Origin", o)
				}
				_, _, resp := rawRequest(t, s.srv.addr(), http.MethodGet, h, nil)
				assert.Equal(t, s.want, resp.StatusCode)
				if resp.StatusCode == 101 {
					s.srv.conn(t)
				}
			})
		}
	}
}

func TestAcceptAgreesOnASubprotocol(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{Subprotocols: []string{"throng.v1"}})
	for _, tc := range []struct {
		name  string
		asked []string // Sec-WebSocket-Protocol lines
		want  string
	}{
		{"asked among others", []string{"a, throng.v1"}, "throng.v1"},
		{"asked on a line of its own", []string{"a", "throng.v1"}, "throng.v1"},
		{"asked for none", nil, ""},
		{"asked only for others", []string{"a, b"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := http.Header{}
			for _, v := range tc.asked {
				extra.Add("Sec-WebSocket-Protocol", v)
			}
			_, _, sc := rawHandshake(t, srv, extra, nil)
			assert.Equal(t, tc.want, sc.Subprotocol())
		})
	}

	// The 101 names the subprotocol, and only when one was agreed.
	h := handshakeHeader("dGhlIHNhbXBsZSBub25jZQ==")
	h.Set("Sec-WebSocket-Protocol", "a, throng.v1")
	_, _, resp := rawRequest(t, srv.addr(), http.MethodGet, h, nil)
	require.Equal(t, 101, resp.StatusCode)
	assert.Equal(t, []string{"throng.v1"}, resp.Header.Values("Sec-WebSocket-Protocol"))
	srv.conn(t)

	h.Del("Sec-WebSocket-Protocol")
	_, _, resp = rawRequest(t, srv.addr(), http.MethodGet, h, nil)
	require.Equal(t, 101, resp.StatusCode)
	assert.Empty(t, resp.Header.Values("Sec-WebSocket-Protocol"))
	srv.conn(t)
}

func TestAcceptKeepsFramesSentWithTheHandshake(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	frames := append(clientFrame(0x80|OpBinary, []byte("eager")), clientFrame(0x80|OpText, []byte("client"))...)
	_, _, sc := rawHandshake(t, srv, nil, frames)
	buf := make([]byte, 16)
	op, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpBinary, op)
	assert.Equal(t, "eager", string(buf[:n]))
	op, n, err = sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpText, op)
	assert.Equal(t, "client", string(buf[:n]))
}

// ---------------------------------------------------------------------------
// Frames from a raw client
// ---------------------------------------------------------------------------

func TestProtocolViolationsEndReadMessage(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	long := bytes.Repeat([]byte{'x'}, 126)
	for _, tc := range []struct {
		name   string
		frames []byte
	}{
		{"an unmasked client frame", []byte{0x80 | OpBinary, 3, 'a', 'b', 'c'}},
		{"RSV1 set", clientFrame(0x80|0x40|OpBinary, []byte("abc"))},
		{"RSV2 set", clientFrame(0x80|0x20|OpBinary, []byte("abc"))},
		{"RSV3 set", clientFrame(0x80|0x10|OpBinary, []byte("abc"))},
		{"a ping of 126 bytes", clientFrame(0x80|opPing, long)},
		{"a close of 126 bytes", clientFrame(0x80|opClose, append(closePayload(1000, ""), long[2:]...))},
		{"a fragmented ping", clientFrame(opPing, []byte("p"))},
		{"a continuation with no message begun", clientFrame(0x80|opContinuation, []byte("abc"))},
		{"reserved opcode 3", clientFrame(0x80|3, []byte("abc"))},
		{"reserved opcode 7", clientFrame(0x80|7, nil)},
		{"reserved control opcode 11", clientFrame(0x80|11, nil)},
		{"a new data frame inside a fragmented message", append(
			clientFrame(OpBinary, []byte("ab")), clientFrame(0x80|OpBinary, []byte("cd"))...)},
		{"a close frame of one byte", clientFrame(0x80|opClose, []byte{0x03})},
		{"close code 1005 sent explicitly", clientFrame(0x80|opClose, closePayload(1005, ""))},
		{"close code 999", clientFrame(0x80|opClose, closePayload(999, ""))},
		{"a 64-bit length with the top bit set", []byte{
			0x80 | OpBinary, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4, 'a', 'b', 'c', 'd', 'e'}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, _, sc := rawHandshake(t, srv, nil, nil)
			_, err := nc.Write(tc.frames)
			require.NoError(t, err)
			_, _, err = sc.ReadMessage(make([]byte, 1024))
			var pe *ProtocolError
			require.ErrorAs(t, err, &pe, "got %v", err)
			assert.NotEmpty(t, pe.Error())
		})
	}
}

func TestDialedConnRejectsAMaskedFrameFromTheServer(t *testing.T) {
	addr := startRawServer(t, func(nc net.Conn, br *bufio.Reader) {
		_ = rawUpgrade(nc, br, nil, clientFrame(0x80|OpBinary, []byte("masked")))
		_, _ = io.Copy(io.Discard, br)
	})
	cc, err := Dial(testContext(t), "ws://"+addr+"/", DialOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { cc.Close() })
	require.NoError(t, cc.NetConn().SetDeadline(time.Now().Add(testTimeout)))
	_, _, err = cc.ReadMessage(make([]byte, 16))
	var pe *ProtocolError
	require.ErrorAs(t, err, &pe)
}

func TestMessageLongerThanTheBufferIsErrTooLarge(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	for _, tc := range []struct {
		name   string
		frames []byte
		want   error
	}{
		{"one frame that fits exactly", clientFrame(0x80|OpBinary, []byte("0123456789")), nil},
		{"one frame a byte too long", clientFrame(0x80|OpBinary, []byte("0123456789a")), ErrTooLarge},
		{"fragments that fit exactly", append(
			clientFrame(OpBinary, []byte("01234")), clientFrame(0x80|opContinuation, []byte("56789"))...), nil},
		{"fragments a byte too long", append(
			clientFrame(OpBinary, []byte("012345")), clientFrame(0x80|opContinuation, []byte("6789a"))...), ErrTooLarge},
		{"a huge declared length", []byte{
			0x80 | OpBinary, 0x80 | 127, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nc, _, sc := rawHandshake(t, srv, nil, nil)
			_, err := nc.Write(tc.frames)
			require.NoError(t, err)
			_, n, err := sc.ReadMessage(make([]byte, 10))
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, 10, n)
				return
			}
			require.ErrorIs(t, err, tc.want)
		})
	}
}

func TestPingBetweenFragmentsIsAnsweredAndTheMessageArrivesWhole(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	nc, br, sc := rawHandshake(t, srv, nil, nil)
	onPing, pinged := signal()
	sc.OnPing = onPing
	onPong, ponged := signal()
	sc.OnPong = onPong

	var frames []byte
	frames = append(frames, clientFrame(OpText, []byte("hel"))...)
	frames = append(frames, clientFrame(0x80|opPing, []byte("are you there"))...)
	frames = append(frames, clientFrame(0x80|opPong, []byte("unsolicited"))...)
	frames = append(frames, clientFrame(opContinuation, nil)...)
	frames = append(frames, clientFrame(0x80|opContinuation, []byte("lo"))...)
	_, err := nc.Write(frames)
	require.NoError(t, err)

	buf := make([]byte, 16)
	op, n, err := sc.ReadMessage(buf)
	require.NoError(t, err)
	assert.Equal(t, OpText, op)
	assert.Equal(t, "hello", string(buf[:n]))
	await(t, pinged)
	await(t, ponged)

	f := readServerFrame(t, br)
	assert.Equal(t, byte(0x80|opPong), f.b0)
	assert.Equal(t, "are you there", string(f.payload), "a pong carries the ping's payload")
}

func TestServerFramesUseTheShortestLength(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	_, br, sc := rawHandshake(t, srv, nil, nil)
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct {
		n       int
		lenCode byte
	}{{0, 0}, {125, 125}, {126, 126}, {65535, 126}, {65536, 127}, {70000, 127}} {
		p := randomBytes(rng, tc.n)
		sent := async(func() error { return sc.WriteMessage(OpBinary, p) })
		f := readServerFrame(t, br)
		require.NoError(t, await(t, sent))
		assert.Equal(t, byte(0x80|OpBinary), f.b0, "length %d", tc.n)
		assert.Equal(t, tc.lenCode, f.lenCode, "length %d", tc.n)
		require.Equal(t, p, f.payload, "length %d", tc.n)
	}
}

func TestFramesWrittenOneByteAtATimeAreReadWhole(t *testing.T) {
	srv := startAcceptServer(t, AcceptOptions{})
	nc, _, sc := rawHandshake(t, srv, nil, nil)
	rng := rand.New(rand.NewPCG(13, 14))
	small, medium, big := randomBytes(rng, 5), randomBytes(rng, 300), randomBytes(rng, 65536)

	type message struct {
		op byte
		p  []byte
	}
	got := make(chan message, 3)
	reading := async(func() error {
		buf := make([]byte, 70000)
		for range 3 {
			op, n, err := sc.ReadMessage(buf)
			if err != nil {
				return err
			}
			got <- message{op, bytes.Clone(buf[:n])}
		}
		return nil
	})

	var frames []byte
	frames = append(frames, clientFrame(0x80|OpBinary, small)...)
	frames = append(frames, clientFrame(OpText, medium[:100])...)
	frames = append(frames, clientFrame(0x80|opPing, []byte("ping"))...)
	frames = append(frames, clientFrame(0x80|opContinuation, medium[100:])...)
	for i := range frames {
		_, err := nc.Write(frames[i : i+1])
		require.NoError(t, err)
	}
	// The 64-bit length form too, in chunks of seven bytes.
	frames = clientFrame(0x80|OpBinary, big)
	for i := 0; i < len(frames); i += 7 {
		_, err := nc.Write(frames[i:min(i+7, len(frames))])
		require.NoError(t, err)
	}

	require.NoError(t, await(t, reading))
	for _, want := range []message{{OpBinary, small}, {OpText, medium}, {OpBinary, big}} {
		m := await(t, (<-chan message)(got))
		assert.Equal(t, want.op, m.op)
		require.Equal(t, want.p, m.p)
	}
}

// oneByteConn hands its reader one byte a read, so that every header and
// payload arrives over many reads.
type oneByteConn struct{ net.Conn }

func (c oneByteConn) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return c.Conn.Read(p)
}

func TestFramesReadOneByteAtATimeAreReadWhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	client, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	nc, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { nc.Close() })
	require.NoError(t, nc.SetDeadline(time.Now().Add(testTimeout)))
	sc := newConn(oneByteConn{nc}, nil, false, "")

	rng := rand.New(rand.NewPCG(15, 16))
	lengths := []int{0, 1, 125, 126, 65535, 65536}
	var want [][]byte
	var frames []byte
	for _, n := range lengths {
		p := randomBytes(rng, n)
		want = append(want, p)
		frames = append(frames, clientFrame(0x80|opPing, []byte("between"))...)
		frames = append(frames, clientFrame(0x80|OpBinary, p)...)
	}
	sent := async(func() error { _, err := client.Write(frames); return err })
	drained := async(func() error { _, err := io.Copy(io.Discard, client); return err }) // the pongs

	buf := make([]byte, 70000)
	for i, p := range want {
		op, n, err := sc.ReadMessage(buf)
		require.NoError(t, err, "message %d", i)
		assert.Equal(t, OpBinary, op)
		require.Equal(t, p, buf[:n], "message %d of %d bytes", i, len(p))
	}
	require.NoError(t, await(t, sent))
	require.NoError(t, nc.Close())
	await(t, drained)
}

// ---------------------------------------------------------------------------
// Masking
// ---------------------------------------------------------------------------

func TestMaskBytesMatchesAByteByByteXOR(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for n := 0; n <= 40; n++ {
		for range 20 {
			var key [4]byte
			binary.LittleEndian.PutUint32(key[:], rng.Uint32())
			off := rng.IntN(8) // also at addresses not 8-aligned
			in := randomBytes(rng, n)
			p := make([]byte, off+n)[off:]
			copy(p, in)

			maskBytes(key, p)
			want := make([]byte, n)
			for i := range in {
				want[i] = in[i] ^ key[i%4]
			}
			require.Equal(t, want, p, "n=%d key=%x", n, key)

			maskBytes(key, p)
			require.Equal(t, in, p, "masking twice must restore the input (n=%d key=%x)", n, key)
		}
	}
}

func TestAppendMessageMasksOnlyAClientsFrames(t *testing.T) {
	payload := []byte("some payload to mask")
	server := newConn(nil, bufio.NewReader(bytes.NewReader(nil)), false, "")
	f := server.AppendMessage([]byte("prefix"), OpBinary, payload)
	require.Equal(t, append([]byte("prefix\x82\x14"), payload...), f, "a server's frame is plain and kept after dst")

	client := newConn(nil, bufio.NewReader(bytes.NewReader(nil)), true, "")
	f = client.AppendMessage(nil, OpText, payload)
	require.Len(t, f, 2+4+len(payload))
	assert.Equal(t, byte(0x80|OpText), f[0])
	assert.Equal(t, byte(0x80|len(payload)), f[1])
	var key [4]byte
	copy(key[:], f[2:6])
	got := bytes.Clone(f[6:])
	for i := range got {
		got[i] ^= key[i%4]
	}
	assert.Equal(t, payload, got)
}
