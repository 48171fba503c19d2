package net_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net"
)

// dialAsync starts Dial with token and returns where its result lands.
func dialAsync(ctx context.Context, p *pump, cfg net.ClientConfig) <-chan error {
	done := make(chan error, 1)
	cfg.InsecureSkipVerify = true
	go func() {
		c, err := net.Dial(ctx, p.addr(), cfg)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	return done
}

func TestDialReturnsTheServersRefusalWithItsReason(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	done := dialAsync(context.Background(), p, net.ClientConfig{Token: "old", Protocol: 1})
	s := p.helloFrom(t, "old")
	const reason = "protocol mismatch: this server speaks a different game protocol version"
	p.q.SendReliable(s, net.AppendRefuse(nil, net.Refuse{Code: net.RefuseProtocol, Reason: []byte(reason)}))
	// A tick slowed down between the two calls: the client has the Refuse
	// long before the Disconnect, and must leave the closing to the server.
	time.Sleep(100 * time.Millisecond)
	p.q.Disconnect(s, reason)

	var refused *net.RefusedError
	require.ErrorAs(t, <-done, &refused)
	assert.Equal(t, net.RefuseProtocol, refused.Code)
	assert.Equal(t, reason, refused.Reason)
	assert.Equal(t, reason, p.closedOf(t, s).Reason, "the server records its own reason, not the client leaving")
}

func TestDialReturnsTheRefusalWhenTheServerNeverCloses(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := dialAsync(ctx, p, net.ClientConfig{Token: "banned"})
	s := p.helloFrom(t, "banned")
	p.q.SendReliable(s, net.AppendRefuse(nil, net.Refuse{Code: net.RefuseToken, Reason: []byte("banned")}))
	// A second later the client has long had the Refuse, and waits for a
	// close that never comes: the caller gives up.
	time.AfterFunc(time.Second, cancel)

	var refused *net.RefusedError
	require.ErrorAs(t, <-done, &refused, "a refusal in hand is what Dial reports, not the context")
	assert.Equal(t, net.RefusedError{Code: net.RefuseToken, Reason: "banned"}, *refused)
	assert.Equal(t, net.ReasonClientClosed, p.closedOf(t, s).Reason, "the client closes once it stops waiting")
}

func TestDialReportsTheServersReasonWhenClosedBeforeTheWelcome(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	done := dialAsync(context.Background(), p, net.ClientConfig{Token: "early"})
	p.q.Disconnect(p.helloFrom(t, "early"), "maintenance")

	var gone *net.DisconnectedError
	require.ErrorAs(t, <-done, &gone)
	assert.Equal(t, "maintenance", gone.Reason)
}

func TestDialGivesUpWhenTheContextEnds(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := dialAsync(ctx, p, net.ClientConfig{Token: "ignored"})
	s := p.helloFrom(t, "ignored") // the server never answers
	cancel()
	err := <-done
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.Canceled), "got %v", err)
	assert.Equal(t, net.ReasonClientClosed, p.closedOf(t, s).Reason,
		"the server learns that the client gave up")
}

func TestClientSkipsMovesOverTheRateLimit(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "eager", 1, net.ClientConfig{})
	for i := range 50 {
		_, err := c.SendMove(net.Move{Seq: uint32(i + 1), X: float32(i)})
		require.NoError(t, err)
	}
	stats := c.Stats()
	assert.Equal(t, uint64(1), stats.MovesSent, "50 moves at once: one goes out")
	assert.Equal(t, uint64(49), stats.MovesSkipped)

	time.Sleep(50 * time.Millisecond)
	sent, err := c.SendMove(net.Move{Seq: 100, X: 100})
	require.NoError(t, err)
	assert.True(t, sent, "a move one interval later goes out")
	p.await(t, "the second move", func(e seen) bool {
		m, err := net.DecodeMove(e.Frame)
		return err == nil && m.Seq == 100
	})
	moves := 0
	for _, e := range p.events() {
		if _, err := net.DecodeMove(e.Frame); err == nil && e.Session == s {
			moves++
		}
	}
	assert.Equal(t, 2, moves, "the server got only what was sent")
}

func TestClientKeepsBoundedQueuesAndPollsReliableFramesFirst(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "slowpoke", 1, net.ClientConfig{DatagramQueue: 4})
	for range 10 {
		p.q.SendUnreliable(s, batch(1, 5)) // one tick's datagrams: the mailbox keeps all
	}
	p.q.SendReliable(s, net.AppendAppear(nil, net.Appear{Actor: 5}))
	require.Eventually(t, func() bool {
		st := c.Stats()
		return st.Datagrams+st.DroppedDatagrams == 10 && st.Reliable == 2
	}, 5*time.Second, time.Millisecond)
	stats := c.Stats()
	assert.Equal(t, uint64(4), stats.Datagrams)
	assert.Equal(t, uint64(6), stats.DroppedDatagrams)
	assert.Equal(t, uint64(4), stats.Records)
	assert.Equal(t,
		[]string{"appear 5", "batch 1: 5", "batch 1: 5", "batch 1: 5", "batch 1: 5"},
		polled(c), "reliable frames come first, then the kept datagrams")
	assert.Empty(t, polled(c))
}

func TestClientMeasuresRecordsPerSecond(t *testing.T) {
	p := startQUIC(t, net.QUICConfig{})
	c, s := dial(t, p, "counter", 1, net.ClientConfig{})
	start := time.Now()
	ticker := time.NewTicker(10 * time.Millisecond)
	defer ticker.Stop()
	sent := 0
	for tick := uint32(1); time.Since(start) < 1300*time.Millisecond; tick++ {
		<-ticker.C
		p.q.SendUnreliable(s, batch(tick, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10))
		sent += 10
		c.Poll(func(*net.Frame) {})
	}
	want := float64(sent) / time.Since(start).Seconds()
	assert.InEpsilon(t, want, c.Stats().RecordsPerSecond, 0.3, "sent %d records", sent)
}
