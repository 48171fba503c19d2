package wsconn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
)

// streamConn is a client's side of the wire as a server reads it: its
// bytes, then the end of the connection; what the server writes back is
// kept. Conn reads and writes it and nothing else.
type streamConn struct {
	net.Conn
	in  *bytes.Reader
	out bytes.Buffer
}

func (c *streamConn) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *streamConn) Write(p []byte) (int, error) { return c.out.Write(p) }

// readOutcome is what reading a stream to its end gave: the messages, each
// its opcode then its payload, what ended the reading (a *ProtocolError,
// a *CloseError with its code, ErrTooLarge or the stream's end), and the
// frames written back.
type readOutcome struct {
	messages [][]byte
	end      string
	written  []byte
}

// FuzzServerReadsWhatTheRFCSays feeds a server's Conn any bytes a client
// might send, read into a buffer of any size, and holds what it reads to
// plainServerRead, RFC 6455 written out frame by frame: the same messages
// whole, the same end (the protocol broken, a close, a message over the
// buffer, or the stream's end) and the same frames written back (a pong
// for each ping, the close answered). Whatever the bytes, ReadMessage
// never panics and never returns more than the buffer holds. The seeds
// run with `go test`; `go test -fuzz FuzzServerReadsWhatTheRFCSays
// ./net/internal/wsconn` looks further.
func FuzzServerReadsWhatTheRFCSays(f *testing.F) {
	long := bytes.Repeat([]byte{'x'}, 126)
	seeds := []struct {
		stream []byte
		size   uint16
	}{
		{clientFrame(0x80|OpBinary, []byte("hello")), 1024},
		{append(clientFrame(OpText, []byte("frag")), clientFrame(0x80|opContinuation, []byte("ment"))...), 8},
		{append(clientFrame(OpBinary, long[:40]), clientFrame(0x80|opContinuation, long[:40])...), 64}, // each fits, not both
		{append(clientFrame(0x80|opPing, []byte("p")), clientFrame(0x80|OpBinary, bytes.Repeat([]byte{7}, 200))...), 200},
		{append(clientFrame(OpBinary, []byte("a")), append(clientFrame(0x80|opPing, nil), clientFrame(0x80|opContinuation, []byte("b"))...)...), 2},
		{clientFrame(0x80|opPing, long[:125]), 16},
		{clientFrame(0x80|opPing, long), 16}, // a control frame of 126 bytes
		{clientFrame(0x80|opClose, closePayload(1000, "bye")), 16},
		{clientFrame(0x80|opClose, closePayload(1003, "")), 16},
		{clientFrame(0x80|opClose, closePayload(1004, "")), 16},
		{clientFrame(0x80|opClose, closePayload(1014, "")), 16},
		{clientFrame(0x80|opClose, closePayload(1015, "")), 16},
		{clientFrame(0x80|opClose, closePayload(2999, "")), 16},
		{clientFrame(0x80|opClose, closePayload(4999, "")), 16},
		{clientFrame(0x80|opClose, closePayload(5000, "")), 16},
		{clientFrame(0x80|opClose, nil), 16},
		{clientFrame(0x80|opClose, []byte{3}), 16},
		{clientFrame(0x80|OpBinary, bytes.Repeat([]byte{1}, 70000)), 65535},
		{[]byte{0x80 | OpBinary, 3, 'a', 'b', 'c'}, 16},
		{[]byte{0x80 | OpBinary, 0x80 | 127, 0x80, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4}, 16},
		{clientFrame(0x80|0x40|OpBinary, []byte("rsv")), 16},
		{clientFrame(0x80|11, nil), 16},
		{clientFrame(opPing, []byte("fragmented ping")), 16},
		{clientFrame(0x80|OpBinary, []byte("cut short"))[:9], 16},
	}
	for _, s := range seeds {
		f.Add(s.stream, s.size)
	}
	f.Fuzz(func(t *testing.T, stream []byte, size uint16) {
		got := serverRead(stream, int(size))
		want := plainServerRead(stream, int(size))
		if got.end != want.end {
			t.Fatalf("reading ended with %s, the RFC says %s", got.end, want.end)
		}
		if len(got.messages) != len(want.messages) {
			t.Fatalf("%d messages read, the RFC gives %d", len(got.messages), len(want.messages))
		}
		for i := range want.messages {
			if !bytes.Equal(got.messages[i], want.messages[i]) {
				t.Fatalf("message %d: read %x, the RFC gives %x", i, got.messages[i], want.messages[i])
			}
		}
		if !bytes.Equal(got.written, want.written) {
			t.Fatalf("wrote back %x, the RFC wants %x", got.written, want.written)
		}
	})
}

// serverRead reads stream with a server's Conn, into a buffer of size
// bytes, until ReadMessage fails.
func serverRead(stream []byte, size int) readOutcome {
	nc := &streamConn{in: bytes.NewReader(stream)}
	c := newConn(nc, nil, false, "")
	buf := make([]byte, size)
	var out readOutcome
	for {
		op, n, err := c.ReadMessage(buf)
		if err != nil {
			out.end = endOf(err)
			break
		}
		if n > size || op != OpText && op != OpBinary {
			out.end = fmt.Sprintf("a message of op %d and %d bytes from a buffer of %d", op, n, size)
			break
		}
		out.messages = append(out.messages, append([]byte{op}, buf[:n]...))
	}
	out.written = nc.out.Bytes()
	return out
}

// endOf names what ended a reading.
func endOf(err error) string {
	var pe *ProtocolError
	var ce *CloseError
	switch {
	case errors.As(err, &pe):
		return "a protocol error"
	case errors.As(err, &ce):
		return fmt.Sprintf("a close (%d %q)", ce.Code, ce.Reason)
	case errors.Is(err, ErrTooLarge):
		return "a message too large"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the stream's end"
	}
	return fmt.Sprintf("%T %v", err, err)
}

// plainServerRead is what RFC 6455 has a server read from stream, a frame
// at a time, into a buffer of size bytes: each frame's FIN, reserved bits
// (no extension: all zero), opcode, MASK (a client's frames are masked),
// length (7 bits, or 126 and 16 bits, or 127 and 64 bits whose top is
// clear) and masking key checked as its header arrives, a control frame
// (opcode 8 and up) unfragmented and of at most 125 bytes and answered
// where it stands, a data message's frames (text or binary, then
// continuations) gathered until FIN, refused when it outgrows the buffer
// before its payload is read.
func plainServerRead(stream []byte, size int) readOutcome {
	var out readOutcome
	var message []byte // the opcode, then what the message's frames held so far
	at := 0
	need := func(n int) bool { return len(stream)-at >= n }
	for {
		if !need(2) {
			out.end = "the stream's end"
			return out
		}
		fin, rsv, op := stream[at]&0x80 != 0, stream[at]&0x70, stream[at]&0x0f
		masked, length := stream[at+1]&0x80 != 0, uint64(stream[at+1]&0x7f)
		if rsv != 0 || !masked {
			out.end = "a protocol error"
			return out
		}
		header := 2 + 4
		switch length {
		case 126:
			header += 2
		case 127:
			header += 8
		}
		if !need(header) {
			out.end = "the stream's end"
			return out
		}
		switch length {
		case 126:
			length = uint64(binary.BigEndian.Uint16(stream[at+2:]))
		case 127:
			length = binary.BigEndian.Uint64(stream[at+2:])
		}
		key := stream[at+header-4 : at+header]
		if length >= 1<<63 || op >= 8 && (!fin || length > 125) {
			out.end = "a protocol error"
			return out
		}
		at += header
		if op < 8 {
			switch {
			case op == 0 && message == nil, op != 0 && message != nil, op != 0 && op != 1 && op != 2:
				out.end = "a protocol error"
				return out
			}
			if message == nil {
				message = []byte{op}
			}
			if length > uint64(size-(len(message)-1)) {
				out.end = "a message too large"
				return out
			}
		}
		if !need(int(length)) {
			out.end = "the stream's end"
			return out
		}
		payload := make([]byte, length)
		for i := range payload {
			payload[i] = stream[at+i] ^ key[i%4]
		}
		at += int(length)
		switch op {
		case 0, 1, 2:
			message = append(message, payload...)
			if fin {
				out.messages = append(out.messages, message)
				message = nil
			}
		case 9: // ping: a pong with its payload (a close ends the reading, so none went first)
			out.written = append(out.written, 0x80|10, byte(length))
			out.written = append(out.written, payload...)
		case 10: // pong
		case 8:
			code := StatusNoStatus
			switch {
			case length == 1:
				out.end = "a protocol error"
				return out
			case length >= 2:
				code = int(binary.BigEndian.Uint16(payload))
			}
			if length >= 2 && !(code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999) {
				out.written = append(out.written, 0x80|8, byte(2+len("invalid close code")), 1002>>8, 1002&0xff)
				out.written = append(out.written, "invalid close code"...)
				out.end = "a protocol error"
				return out
			}
			// The close answered with its code (none for none).
			if code == StatusNoStatus {
				out.written = append(out.written, 0x80|8, 0)
			} else {
				out.written = append(out.written, 0x80|8, 2, byte(code>>8), byte(code))
			}
			out.end = fmt.Sprintf("a close (%d %q)", code, payload[min(2, len(payload)):])
			return out
		default:
			out.end = "a protocol error"
			return out
		}
	}
}
