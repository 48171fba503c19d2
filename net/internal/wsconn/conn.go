// Package wsconn is the WebSocket protocol (RFC 6455) as Throng's server
// transport and Go client speak it: the opening handshake of either side,
// and a connection that reads whole messages into a buffer of the caller's
// and writes frames laid back to back with one write.
//
// It exists for the cost of a message. A game server sends every client a
// message or two each tick and reads one from each: a general library's
// locks, contexts and timers around every message, and its one write a
// message, cost as much as the system calls themselves. Here a write is
// the frames in one buffer and one call, and a read is a header and a
// payload from a buffered reader. It speaks no extensions (no compression)
// and keeps no message queue; what it answers on its own is the protocol's
// control frames: a ping with its pong, a close with its close.
package wsconn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"unicode/utf8"
)

// Opcodes of the data messages.
const (
	OpText   byte = 1
	OpBinary byte = 2
)

const (
	opContinuation byte = 0
	opClose        byte = 8
	opPing         byte = 9
	opPong         byte = 10
)

// Close status codes this package sends or reports itself.
const (
	StatusNormalClosure   = 1000
	StatusProtocolError   = 1002
	StatusNoStatus        = 1005 // reported, never sent: the close frame carried no code
	StatusPolicyViolation = 1008
	StatusMessageTooBig   = 1009
)

// maxControl is the longest payload of a control frame.
const maxControl = 125

// ErrTooLarge is returned by ReadMessage for a message longer than the
// buffer it was given; the connection cannot be read past it.
var ErrTooLarge = errors.New("wsconn: message over the read limit")

// CloseError is the close frame the peer sent: the connection is over.
type CloseError struct {
	Code   int
	Reason string
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("websocket closed by the peer: status %d, reason %q", e.Code, e.Reason)
}

// ProtocolError is a frame that breaks RFC 6455; the connection is over.
type ProtocolError struct{ What string }

func (e *ProtocolError) Error() string { return "websocket protocol violation: " + e.What }

// Conn is an open WebSocket. One goroutine reads (ReadMessage); any may
// write, each write whole under the connection's write lock.
type Conn struct {
	nc     net.Conn
	br     *bufio.Reader
	client bool // frames written are masked; frames read must not be

	// OnPing and OnPong, when set, are called by the reader on each ping
	// (after its pong is written) and each pong. Set them before the first
	// read.
	OnPing, OnPong func()

	subprotocol string

	ctrl [maxControl]byte // the reader's control payloads

	wmu       sync.Mutex
	wbuf      []byte // guarded by wmu
	closeSent bool   // guarded by wmu
}

func newConn(nc net.Conn, br *bufio.Reader, client bool, subprotocol string) *Conn {
	if br == nil {
		br = bufio.NewReaderSize(nc, 4096)
	}
	return &Conn{nc: nc, br: br, client: client, subprotocol: subprotocol}
}

// Subprotocol is the subprotocol the handshake agreed on, "" for none.
func (c *Conn) Subprotocol() string { return c.subprotocol }

// NetConn is the connection under the WebSocket: its deadlines bound reads
// and writes, and closing it ends both at once.
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the connection without a close frame.
func (c *Conn) Close() error { return c.nc.Close() }

// ReadMessage reads the next data message whole into buf and returns its
// opcode (OpText or OpBinary) and length, answering pings and a close on
// the way. A message longer than buf is ErrTooLarge; a close from the
// peer is a *CloseError (the close is answered first); a frame that
// breaks the protocol is a *ProtocolError. After any error the connection
// cannot be read further.
func (c *Conn) ReadMessage(buf []byte) (op byte, n int, err error) {
	op = 0xff // no message begun
	for {
		h, err := c.readHeader()
		if err != nil {
			return 0, 0, err
		}
		if h.op >= opClose {
			if err := c.control(h); err != nil {
				return 0, 0, err
			}
			continue
		}
		switch {
		case h.op == opContinuation && op == 0xff:
			return 0, 0, &ProtocolError{"a continuation frame with no message begun"}
		case h.op != opContinuation && op != 0xff:
			return 0, 0, &ProtocolError{"a new message inside a fragmented one"}
		case h.op != opContinuation && h.op != OpText && h.op != OpBinary:
			return 0, 0, &ProtocolError{fmt.Sprintf("reserved opcode %d", h.op)}
		}
		if h.op != opContinuation {
			op = h.op
		}
		if h.length > uint64(len(buf)-n) {
			return 0, 0, ErrTooLarge
		}
		m := int(h.length)
		if err := c.readPayload(buf[n:n+m], h); err != nil {
			return 0, 0, err
		}
		n += m
		if h.fin {
			return op, n, nil
		}
	}
}

type header struct {
	fin    bool
	op     byte
	masked bool
	mask   [4]byte
	length uint64
}

func (c *Conn) readHeader() (header, error) {
	var h header
	b, err := c.br.Peek(2)
	if err != nil {
		return h, err
	}
	h.fin = b[0]&0x80 != 0
	if b[0]&0x70 != 0 {
		return h, &ProtocolError{"reserved bits set (no extension was agreed)"}
	}
	h.op = b[0] & 0x0f
	h.masked = b[1]&0x80 != 0
	if h.masked == c.client {
		if c.client {
			return h, &ProtocolError{"a masked frame from the server"}
		}
		return h, &ProtocolError{"an unmasked frame from the client"}
	}
	size := 2
	length := uint64(b[1] & 0x7f)
	switch length {
	case 126:
		size += 2
	case 127:
		size += 8
	}
	if h.masked {
		size += 4
	}
	if b, err = c.br.Peek(size); err != nil {
		return h, err
	}
	switch length {
	case 126:
		length = uint64(binary.BigEndian.Uint16(b[2:]))
	case 127:
		length = binary.BigEndian.Uint64(b[2:])
		if length>>63 != 0 {
			return h, &ProtocolError{"a payload length with its top bit set"}
		}
	}
	h.length = length
	if h.masked {
		copy(h.mask[:], b[size-4:])
	}
	if h.op >= opClose && (!h.fin || h.length > maxControl) {
		return h, &ProtocolError{"a fragmented or long control frame"}
	}
	_, err = c.br.Discard(size)
	return h, err
}

func (c *Conn) readPayload(dst []byte, h header) error {
	if _, err := io.ReadFull(c.br, dst); err != nil {
		return err
	}
	if h.masked {
		maskBytes(h.mask, dst)
	}
	return nil
}

// control answers a ping or a close, or notes a pong.
func (c *Conn) control(h header) error {
	p := c.ctrl[:h.length]
	if err := c.readPayload(p, h); err != nil {
		return err
	}
	switch h.op {
	case opPing:
		// A ping that crossed our close goes unanswered: the peer's close
		// follows it.
		if err := c.writeFrame(opPong, p); err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
		if c.OnPing != nil {
			c.OnPing()
		}
		return nil
	case opPong:
		if c.OnPong != nil {
			c.OnPong()
		}
		return nil
	case opClose:
		ce := &CloseError{Code: StatusNoStatus}
		switch {
		case len(p) == 1:
			return &ProtocolError{"a close frame of one byte"}
		case len(p) >= 2:
			ce.Code = int(binary.BigEndian.Uint16(p))
			ce.Reason = string(p[2:])
		}
		if len(p) >= 2 && !validCloseCode(ce.Code) {
			_ = c.WriteClose(StatusProtocolError, "invalid close code")
			return &ProtocolError{fmt.Sprintf("close code %d", ce.Code)}
		}
		// Answer with its code, unless a close of ours went first.
		_ = c.WriteClose(ce.Code, "")
		return ce
	}
	return &ProtocolError{fmt.Sprintf("reserved control opcode %d", h.op)}
}

// validCloseCode reports whether a close frame may carry code (RFC 6455
// section 7.4: the registered codes an endpoint sends, and 3000-4999).
func validCloseCode(code int) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	}
	return code >= 3000 && code <= 4999
}

// AppendMessage appends one whole message, a single frame with op and p,
// masked if c is a client's; Write sends what it built.
func (c *Conn) AppendMessage(dst []byte, op byte, p []byte) []byte {
	return appendFrame(dst, op, p, c.client)
}

func appendFrame(dst []byte, op byte, p []byte, masked bool) []byte {
	b1 := byte(0)
	if masked {
		b1 = 0x80
	}
	switch n := len(p); {
	case n < 126:
		dst = append(dst, 0x80|op, b1|byte(n))
	case n <= 0xffff:
		dst = append(dst, 0x80|op, b1|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, 0x80|op, b1|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	if !masked {
		return append(dst, p...)
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	dst = append(dst, key[:]...)
	start := len(dst)
	dst = append(dst, p...)
	maskBytes(key, dst[start:])
	return dst
}

// Write writes frames that AppendMessage laid back to back, with one
// write; nothing may follow a close.
func (c *Conn) Write(frames []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(frames)
}

// writeLocked writes b unless a close went first; c.wmu is held.
func (c *Conn) writeLocked(b []byte) error {
	if c.closeSent {
		return net.ErrClosed
	}
	_, err := c.nc.Write(b)
	return err
}

// WriteMessage writes one message.
func (c *Conn) WriteMessage(op byte, p []byte) error { return c.writeFrame(op, p) }

// Ping writes a ping; the peer's pong reaches OnPong.
func (c *Conn) Ping() error { return c.writeFrame(opPing, nil) }

func (c *Conn) writeFrame(op byte, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = appendFrame(c.wbuf[:0], op, p, c.client)
	return c.writeLocked(c.wbuf)
}

// WriteClose writes a close frame with code and reason (cut to what a
// close frame holds, on a rune boundary), once: after it nothing more is
// written, and a second close is not sent. StatusNoStatus sends a close
// without a code.
func (c *Conn) WriteClose(code int, reason string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.closeSent {
		return nil
	}
	c.closeSent = true
	var p []byte
	if code != StatusNoStatus {
		p = binary.BigEndian.AppendUint16(make([]byte, 0, maxControl), uint16(code))
		p = append(p, CloseReason(reason)...)
	}
	c.wbuf = appendFrame(c.wbuf[:0], opClose, p, c.client)
	_, err := c.nc.Write(c.wbuf)
	return err
}

// CloseReason cuts reason to what a close frame carries beside its code
// (123 bytes), on a rune boundary.
func CloseReason(reason string) string {
	const most = maxControl - 2
	if len(reason) <= most {
		return reason
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(reason[cut]) {
		cut--
	}
	return reason[:cut]
}

// maskBytes XORs p with the mask key, cycling from its first byte.
func maskBytes(key [4]byte, p []byte) {
	k32 := binary.LittleEndian.Uint32(key[:])
	k64 := uint64(k32) | uint64(k32)<<32
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, binary.LittleEndian.Uint64(p)^k64)
		p = p[8:]
	}
	for i := range p {
		p[i] ^= key[i&3]
	}
}
