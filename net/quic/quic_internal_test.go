package quic

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/internal/link"
	"github.com/throng-go/throng/net/wire"

	quicgo "github.com/quic-go/quic-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestQUICServesACertificateFromFilesThatClientsVerify(t *testing.T) {
	certPEM, keyPEM, err := developmentCertificate(time.Now())
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	q, err := Listen("127.0.0.1:0", Config{CertFile: certFile, KeyFile: keyFile})
	require.NoError(t, err)
	defer q.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = client.Dial(ctx, q.Addr().String(), client.Config{Token: "untrusting"})
	require.Error(t, err, "by default a client verifies the server against the system's roots")
	assert.Contains(t, err.Error(), "certificate")

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM))
	done := make(chan error, 1)
	go func() {
		c, err := client.Dial(ctx, q.Addr().String(), client.Config{Token: "trusting", TLS: &tls.Config{RootCAs: roots}})
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	var inbox []wire.Inbound
	for welcomed := false; !welcomed; time.Sleep(time.Millisecond) {
		inbox = q.Receive(inbox[:0])
		for _, in := range inbox {
			if in.Kind == wire.FrameReceived {
				q.SendReliable(in.Session, wire.AppendWelcome(nil, wire.Welcome{Actor: 1}))
				welcomed = true
			}
		}
		require.NoError(t, ctx.Err(), "no Hello arrived")
	}
	assert.NoError(t, <-done, "a client that trusts the certificate connects")
}

func TestQUICTickPathsAllocateNothingInSteadyState(t *testing.T) {
	// The transport without its network: a session whose reader
	// goroutines would call deliverDatagram and whose writers would take
	// the mailbox and the queue.
	q := &Transport{cfg: Config{}.resolved()}
	q.sessions.Init(q.cfg.InboundLimit, &q.n.Counts)
	c := newQUICConn(q, nil, nil)
	require.True(t, q.sessions.Open(c, func() {}))
	move := wire.AppendMove(nil, wire.Move{Seq: 1})
	appear := wire.AppendAppear(nil, wire.Appear{Actor: 2})
	var props []byte // a tick's Prop frames for the session, as one batch
	for a := range uint32(20) {
		props = wire.AppendStreamFrame(props, wire.AppendProp(nil, wire.Prop{Actor: a}))
	}
	batch := wire.AppendBatchHeader(nil, 0, 0)
	var inbox []wire.Inbound
	var written []byte // the stream writer's buffer
	tick := uint32(0)
	steady := func() {
		for range 3 {
			c.deliverDatagram(move)
		}
		inbox = q.Receive(inbox[:0])
		tick++
		binary.LittleEndian.PutUint32(batch[wire.HeaderSize:], tick)
		q.SendUnreliable(c.ID, batch)
		q.SendReliable(c.ID, appear)
		q.SendReliableBatch(c.ID, props)
		q.Flush()
		c.mu.Lock() // what the writers take
		c.slot.Reset()
		written = c.rel.Take(written)
		c.mu.Unlock()
	}
	for range 10 {
		steady()
	}
	assert.Zero(t, testing.AllocsPerRun(100, steady))
	assert.Len(t, inbox, 3)
	assert.Equal(t, uint64(0), q.Stats().DroppedDatagrams+q.Stats().DroppedReliable)
}

func TestQUICRefusalReachesAClientThatNeverReadsItsStream(t *testing.T) {
	// A client starved of CPU may not read the Refuse before the server
	// closes, and QUIC discards unread stream data at the close: the close
	// itself must say why.
	q, err := Listen("127.0.0.1:0", Config{Development: true, FlushTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := quicgo.DialAddr(ctx, q.Addr().String(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{ALPN}},
		&quicgo.Config{EnableDatagrams: true})
	require.NoError(t, err)
	defer conn.CloseWithError(0, "")
	stream, err := conn.OpenStream()
	require.NoError(t, err)
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("deaf")})
	require.NoError(t, err)
	_, err = stream.Write(wire.AppendStreamFrame(nil, hello))
	require.NoError(t, err)

	const reason = "token expired"
	var inbox []wire.Inbound
	for refused := false; !refused; time.Sleep(time.Millisecond) {
		require.NoError(t, ctx.Err(), "no Hello arrived")
		inbox = q.Receive(inbox[:0])
		for _, in := range inbox {
			if in.Kind == wire.FrameReceived {
				q.SendReliable(in.Session, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseToken, Reason: []byte(reason)}))
				q.Disconnect(in.Session, "refused: "+reason)
				refused = true
			}
		}
	}
	select {
	case <-conn.Context().Done():
	case <-ctx.Done():
		t.Fatal("the server did not close the connection")
	}
	var app *quicgo.ApplicationError
	require.ErrorAs(t, context.Cause(conn.Context()), &app)
	code, ok := link.RefusalCode(uint64(app.ErrorCode))
	assert.True(t, ok, "the close code carries the refusal")
	assert.Equal(t, wire.RefuseToken, code)
	assert.Equal(t, reason, app.ErrorMessage)
}

func TestOnlyARefuseBeforeTheWelcomeSetsTheClose(t *testing.T) {
	q := &Transport{cfg: Config{}.resolved()}
	q.sessions.Init(q.cfg.InboundLimit, &q.n.Counts)
	open := func() *quicConn {
		c := newQUICConn(q, nil, nil)
		require.True(t, q.sessions.Open(c, func() {}))
		return c
	}
	refuse := wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseBusy, Reason: []byte("busy")})

	refused := open()
	q.SendReliable(refused.ID, refuse)
	q.SendReliable(refused.ID, wire.AppendRefuse(nil, wire.Refuse{Code: wire.RefuseToken, Reason: []byte("later")}))
	assert.True(t, refused.rel.Refusal.Refused)
	assert.Equal(t, wire.RefuseBusy, refused.rel.Refusal.Code, "the first Refuse counts")
	assert.Equal(t, "busy", refused.rel.Refusal.Reason)

	welcomed := open()
	q.SendReliable(welcomed.ID, wire.AppendWelcome(nil, wire.Welcome{Actor: 1}))
	q.SendReliable(welcomed.ID, refuse)
	assert.False(t, welcomed.rel.Refusal.Refused, "after a Welcome a Refuse is just a frame")
	assert.Equal(t, uint64(4), q.Stats().ReliableOut)
}
