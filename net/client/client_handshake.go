package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	"github.com/quic-go/quic-go"
)

// handshake opens the stream, sends hello and reads until Welcome or
// Refuse. Frames after the Welcome stay queued for Poll.
func (c *Client) handshake(ctx context.Context, hello []byte) error {
	stream, err := c.conn.OpenStreamSync(ctx)
	if err != nil {
		return c.failed(ctx, err)
	}
	c.stream = stream
	if _, err := stream.Write(wire.AppendStreamFrame(nil, hello)); err != nil {
		return c.failed(ctx, err)
	}
	// ctx ending interrupts the read; the deadline must not outlive the
	// handshake, or the stream reader would fail at once.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		stream.SetReadDeadline(time.Now())
		close(fired)
	})
	defer func() {
		if !stop() {
			<-fired
		}
		stream.SetReadDeadline(time.Time{})
	}()
	buf := make([]byte, 4096)
	welcomed := false
	var refused *RefusedError
	var refusedAt time.Time
	for !welcomed {
		n, err := stream.Read(buf)
		if n > 0 && refused == nil {
			c.reader.Feed(buf[:n])
			for refused == nil {
				frame, ferr := c.reader.Next()
				if ferr != nil {
					return fmt.Errorf("client: handshake: %w", ferr)
				}
				if frame == nil {
					break
				}
				switch t, _ := wire.PeekType(frame); {
				case welcomed:
					c.keepReliable(frame)
				case t == wire.TypeRefuse:
					r, derr := wire.DecodeRefuse(frame)
					if derr != nil {
						return fmt.Errorf("client: handshake: undecodable refusal: %w", derr)
					}
					refused = &RefusedError{Code: r.Code, Reason: string(r.Reason)}
					// Read on to the end of the stream, which the server
					// ends as it closes, but not forever.
					refusedAt = time.Now()
					stream.SetReadDeadline(refusedAt.Add(RefusalWait))
					if ctx.Err() != nil { // ctx's deadline may have just been replaced
						stream.SetReadDeadline(time.Now())
					}
				case t == wire.TypeWelcome:
					w, derr := wire.DecodeWelcome(frame)
					if derr != nil {
						return fmt.Errorf("client: handshake: undecodable welcome: %w", derr)
					}
					c.welcome, welcomed = w, true
					c.n.reliable.Add(1)
				default:
					c.keepReliable(frame)
				}
			}
		}
		if err != nil && !welcomed {
			if errors.Is(err, io.EOF) {
				// The server ended the stream: it is closing the
				// connection, and the reason comes with the close.
				stream.Close()
				var timeout <-chan time.Time
				if refused != nil {
					timer := time.NewTimer(time.Until(refusedAt.Add(RefusalWait)))
					defer timer.Stop()
					timeout = timer.C
				}
				select {
				case <-c.conn.Context().Done():
				case <-ctx.Done():
				case <-timeout:
				}
			}
			if refused != nil {
				return refused
			}
			return c.failed(ctx, err)
		}
	}
	return nil
}

// failed turns an error met during the handshake into the one Dial
// returns.
func (c *Client) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("client: handshake: %w", ctx.Err())
	}
	if cerr := connError(c.conn); cerr != nil {
		return cerr
	}
	return fmt.Errorf("client: handshake: %w", err)
}

// connError describes why conn closed, or returns nil while it is open.
func connError(conn *quic.Conn) error {
	ctx := conn.Context()
	if ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(ctx)
	var app *quic.ApplicationError
	var idle *quic.IdleTimeoutError
	switch {
	case errors.As(cause, &app) && app.Remote:
		if code, ok := link.RefusalCode(uint64(app.ErrorCode)); ok {
			return &RefusedError{Code: code, Reason: app.ErrorMessage}
		}
		return &DisconnectedError{Reason: app.ErrorMessage}
	case errors.As(cause, &app):
		return wire.ErrClosed
	case errors.As(cause, &idle):
		return fmt.Errorf("client: connection to the server timed out: %w", cause)
	}
	return fmt.Errorf("client: connection lost: %w", cause)
}
