package wire

import "encoding/binary"

// StreamPrefixSize is the size of the length prefix in front of every frame
// on a reliable byte stream: the frame's length as a little-endian uint16.
const StreamPrefixSize = 2

// MaxStreamFrame is the longest frame the uint16 length prefix can carry.
const MaxStreamFrame = 1<<16 - 1

// DefaultMaxStreamFrame is the frame length limit of a [StreamReader] built
// with limit 0. Every frame of this wire version fits in it (the longest, a
// Refuse with a full reason, is 259 bytes).
const DefaultMaxStreamFrame = 1024

// AppendStreamFrame appends frame to dst behind its length prefix, ready to
// write to a reliable byte stream. It panics if frame is shorter than
// HeaderSize or longer than MaxStreamFrame: a transport checks the length
// first and drops (and counts) what it cannot send.
func AppendStreamFrame(dst, frame []byte) []byte {
	if len(frame) < HeaderSize || len(frame) > MaxStreamFrame {
		panic("wire: AppendStreamFrame: frame length outside [HeaderSize, MaxStreamFrame]")
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(frame)))
	return append(dst, frame...)
}

// StreamReader cuts a reliable byte stream back into frames, however the
// stream's reads split them: a small state machine that reads the length
// prefix, then the body, across any number of [StreamReader.Feed] calls. A
// frame that arrives whole inside one fed chunk is returned without copying;
// a split one is reassembled in a buffer the reader owns and reuses, so a
// steady stream allocates nothing.
//
// Feed a chunk, then call [StreamReader.Next] until it returns a nil frame:
//
//	r.Feed(buf[:n])
//	for {
//		frame, err := r.Next()
//		if err != nil { /* close the session */ }
//		if frame == nil { break } // need more bytes
//		handle(frame)
//	}
//
// A StreamReader is not safe for concurrent use; each stream has its own.
type StreamReader struct {
	limit  int
	in     []byte // fed input not yet consumed
	prefix [StreamPrefixSize]byte
	nPre   int    // prefix bytes of the current frame read so far
	size   int    // current frame's length, once nPre == StreamPrefixSize
	body   []byte // the current frame's bytes read so far, when it was split
	err    error
}

// NewStreamReader returns a reader that accepts frames of HeaderSize to
// limit bytes. limit 0 (or less) means DefaultMaxStreamFrame; a limit above
// MaxStreamFrame is lowered to it.
func NewStreamReader(limit int) *StreamReader {
	if limit <= 0 {
		limit = DefaultMaxStreamFrame
	}
	return &StreamReader{limit: min(limit, MaxStreamFrame)}
}

// Feed hands the reader the next chunk of the stream. The reader keeps p
// until [StreamReader.Next] has consumed it (returned a nil frame), so p
// must not be changed before then. Feeding while earlier input is still
// unconsumed panics: drain Next first.
func (r *StreamReader) Feed(p []byte) {
	if len(r.in) != 0 {
		panic("wire: StreamReader.Feed: previous input not consumed; call Next until it returns a nil frame")
	}
	r.in = p
}

// Next returns the next complete frame, or a nil frame when the fed input
// ends before one completes. The frame aliases the fed input or the
// reader's buffer and is valid until the next call to Next or Feed.
//
// A length prefix below HeaderSize or above the limit returns
// ErrStreamLength; the error is sticky (every later call returns it), since
// a stream that lost its framing cannot be resynchronized: close it.
func (r *StreamReader) Next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	for r.nPre < StreamPrefixSize {
		if len(r.in) == 0 {
			return nil, nil
		}
		r.prefix[r.nPre] = r.in[0]
		r.in = r.in[1:]
		r.nPre++
		if r.nPre == StreamPrefixSize {
			r.size = int(binary.LittleEndian.Uint16(r.prefix[:]))
			if r.size < HeaderSize || r.size > r.limit {
				r.err = ErrStreamLength
				r.in = nil
				return nil, r.err
			}
		}
	}
	if len(r.body) == 0 && len(r.in) >= r.size {
		frame := r.in[:r.size:r.size]
		r.in = r.in[r.size:]
		r.nPre = 0
		return frame, nil
	}
	take := min(r.size-len(r.body), len(r.in))
	r.body = append(r.body, r.in[:take]...)
	r.in = r.in[take:]
	if len(r.body) < r.size {
		return nil, nil
	}
	frame := r.body[:r.size:r.size]
	r.body = r.body[:0] // reused by the next split frame, after the caller is done
	r.nPre = 0
	return frame, nil
}

// Partial reports whether the reader holds part of a frame: at the end of
// the stream, true means the stream was cut inside a frame.
func (r *StreamReader) Partial() bool {
	return r.nPre != 0 || len(r.in) != 0
}
