package wire

import "errors"

// SessionID names one client connection for as long as it is open. A
// transport numbers sessions from 1 and never reuses an id while it runs; 0
// is never a valid session.
type SessionID uint64

// InboundKind says what an [Inbound] reports.
type InboundKind uint8

// Inbound kinds.
const (
	// SessionOpened: a client connected. Its first frames follow in the
	// same or a later Receive.
	SessionOpened InboundKind = iota + 1
	// FrameReceived: one frame (one datagram, or one frame of the reliable
	// stream) arrived from the session. The transport does not decode it.
	FrameReceived
	// SessionClosed: the session is gone, whoever ended it (the client, the
	// server through Disconnect, the network, or Close). Every
	// SessionOpened is followed by exactly one SessionClosed, and nothing
	// follows it for that session.
	SessionClosed
)

// String returns the kind's name.
func (k InboundKind) String() string {
	switch k {
	case SessionOpened:
		return "SessionOpened"
	case FrameReceived:
		return "FrameReceived"
	case SessionClosed:
		return "SessionClosed"
	}
	return "InboundKind(?)"
}

// Inbound is one thing that happened on the transport since the server last
// asked.
type Inbound struct {
	Kind    InboundKind
	Session SessionID
	// Frame is the received frame (FrameReceived only). It aliases the
	// transport's memory and is valid until the next Receive: decode it or
	// copy it before then.
	Frame []byte
	// Reason says why the session closed (SessionClosed only): the reason
	// given to Disconnect, ReasonClientClosed, ReasonTransportClosed, or a
	// transport's own description of a network failure.
	Reason string
}

// Reasons a transport reports on SessionClosed when the server did not
// disconnect the session itself.
const (
	ReasonClientClosed    = "client closed the connection"
	ReasonTransportClosed = "server transport closed"
)

// Reasons the network transports report on SessionClosed (and send to the
// client) when they end a session themselves.
const (
	// ReasonSlowClient: the client's reliable queue overflowed, or a write
	// to its stream stayed blocked for the stall timeout.
	ReasonSlowClient = "reliable queue full: client too slow"
	// ReasonClientTimedOut: nothing arrived from the client for the idle
	// timeout.
	ReasonClientTimedOut = "client timed out"
)

// ErrClosed is what a client's Send returns once its session is closed.
var ErrClosed = errors.New("wire: session closed")

// Stats counts what a transport carried since it started. Counters only
// grow.
type Stats struct {
	Opened, Closed   uint64 // sessions
	FramesIn         uint64 // frames received from clients (FrameReceived)
	BytesIn          uint64 // their bytes
	DatagramsOut     uint64 // datagrams handed to the network by SendUnreliable
	DatagramBytesOut uint64
	ReliableOut      uint64 // frames accepted by SendReliable
	ReliableBytesOut uint64
	// DroppedDatagrams counts SendUnreliable calls that sent nothing: an
	// unknown or closed session, an empty or oversize datagram, or a slow
	// client whose mailbox was full.
	DroppedDatagrams uint64
	// DroppedReliable counts SendReliable calls that sent nothing: an unknown
	// or closed session, or a frame outside [HeaderSize, the frame limit].
	DroppedReliable uint64
}

// Transport is what the server talks to: it accepts client sessions, hands
// the tick everything that arrived, and sends each client its movement
// datagrams and reliable frames. Implementations: mem.Transport (in-process, for
// tests and benchmarks), quic.Transport (real clients over the network) and
// websocket.Transport (browsers).
//
// Nothing here blocks the tick on a slow client. Sending never returns an
// error: a frame that cannot be sent (unknown or closed session, bad size,
// full queue) is dropped and counted in [Stats], because the tick cannot do
// anything better with it. A client whose reliable frames cannot be
// delivered is disconnected by the transport, which the server learns from
// a SessionClosed. Only Close returns an error.
//
// All methods are safe for concurrent use, except that calls to Receive
// must not overlap (the tick goroutine makes them).
type Transport interface {
	// Receive appends to dst everything that happened since the previous
	// call, in order, and returns the extended slice: frames of one session
	// in the order the client sent them (for each of the two channels),
	// sessions interleaved in arrival order. Frames are valid until the next
	// Receive. It never blocks.
	Receive(dst []Inbound) []Inbound

	// SendUnreliable sends one datagram (a movement batch) to the session.
	// It copies datagram before returning, never blocks, and may drop it;
	// a newer datagram may replace an older one not yet sent.
	SendUnreliable(s SessionID, datagram []byte)

	// SendReliable queues one frame on the session's reliable stream. It
	// copies frame before returning and never blocks. Frames reach the
	// client in the order they were sent, before any Disconnect issued
	// after them.
	SendReliable(s SessionID, frame []byte)

	// Disconnect ends the session after the reliable frames already queued
	// for it; the client sees reason. The server gets a SessionClosed with
	// this reason. Disconnecting an unknown or closed session does nothing.
	Disconnect(s SessionID, reason string)

	// Stats returns the counters so far.
	Stats() Stats

	// Close disconnects every session (reason ReasonTransportClosed) and
	// releases the transport's resources. Their SessionClosed are still
	// delivered by the next Receive. Calling Close again returns nil.
	Close() error
}

// BatchSender is implemented by a [Transport] that takes all of a
// session's datagrams of one tick in one call, so that it looks the
// session up, locks and wakes its writer once rather than once per
// datagram. The relay uses it when the transport has it.
type BatchSender interface {
	// SendUnreliableBatch sends the datagrams laid back to back in
	// datagrams, each size bytes long except the last, which may be
	// shorter: the same as calling SendUnreliable on each in order (size
	// below 1 makes the whole of datagrams one datagram). It copies them
	// before returning and never blocks.
	SendUnreliableBatch(s SessionID, datagrams []byte, size int)
}

// LaneSender is implemented by a [BatchSender] that keeps a lane of
// sending per relay unit running at once, so that units on several cores
// never wait for one another's sends: a transport that gathers a tick's
// traffic into shared buffers, say. Each running unit holds a lane no
// other running unit holds, the lowest free one, so a tick uses as many
// lanes as units ran at once (lane 0 alone when it runs inline); a
// session's datagrams of a tick come from one unit, so from one lane.
type LaneSender interface {
	// SendUnreliableBatchLane is [BatchSender.SendUnreliableBatch] from
	// the relay unit holding lane (0 to 63).
	SendUnreliableBatchLane(lane int, s SessionID, datagrams []byte, size int)
}

// SendAhead is implemented by a [Transport] whose sends can be made
// cheaper by knowing, a little ahead, which session comes next. The relay
// builds its recipients' batches one after another and tells the
// transport of the next recipient before it builds the current one's
// batch; the transport may then fetch that session's state into the
// calling core's cache (state a client on another core last wrote), so
// that the send finds it there instead of waiting for it.
type SendAhead interface {
	// WillSend says a send to session s follows soon, from the calling
	// goroutine. It is a hint: it changes nothing a send or a client sees,
	// never blocks, and may be called for a session that closes, or is
	// never sent to, meanwhile.
	WillSend(s SessionID)
}

// Flusher is implemented by a [Transport] that holds what the server sends
// during a tick and hands it on when the tick ends: a transport over a
// message bus, say, that carries a tick's traffic to each peer as one
// message. The server calls Flush once after every tick, from the tick
// goroutine.
type Flusher interface {
	Flush()
}

// ReliableBatchSender is implemented by a [Transport] that takes several
// reliable frames for one session in one call, so that it looks the
// session up, locks and wakes its writer once rather than once per frame.
// The join uses it for the frames one session is told in a tick (its
// props, say) when the transport has it.
type ReliableBatchSender interface {
	// SendReliableBatch queues the frames laid back to back in frames,
	// each behind its length prefix as [AppendStreamFrame] writes it: the
	// same as calling SendReliable on each in order. It copies them before
	// returning and never blocks. A batch that is cut short (a prefix
	// longer than what follows) is sent up to the last whole frame and the
	// rest dropped and counted.
	SendReliableBatch(s SessionID, frames []byte)
}

// EachStreamFrame calls fn with each frame laid back to back in frames,
// each behind its length prefix (see [ReliableBatchSender]), and returns
// how many bytes at the end did not hold a whole frame.
func EachStreamFrame(frames []byte, fn func(frame []byte)) (rest int) {
	for len(frames) >= StreamPrefixSize {
		n := int(frames[0]) | int(frames[1])<<8
		if len(frames) < StreamPrefixSize+n {
			break
		}
		fn(frames[StreamPrefixSize : StreamPrefixSize+n])
		frames = frames[StreamPrefixSize+n:]
	}
	return len(frames)
}
