package gateway_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// startNATS starts an embedded nats-server, stopped when the test ends,
// and returns a connection to it.
func startNATS(t *testing.T) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(nettest.StartNATS(t))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// world is a zone server behind a gateway whose clients connect to an
// in-memory front, over a real NATS server.
type world struct {
	t     *testing.T
	srv   *throng.Server
	zone  *gateway.Transport
	gw    *gateway.Gateway
	front *mem.Transport
	nc    *nats.Conn
}

func newWorld(t *testing.T, admit func(wire.Hello) (throng.Entry, error)) *world {
	nc := startNATS(t)
	zone, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: 1})
	require.NoError(t, err)
	srv, err := throng.New(throng.Options{Transport: zone, Admit: admit, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	front := mem.New(mem.Options{})
	gw, err := gateway.New(gateway.Config{Conn: nc, Name: "gw-1", Front: front})
	require.NoError(t, err)
	t.Cleanup(func() { gw.Close() })
	require.NoError(t, nc.Flush())
	return &world{t: t, srv: srv, zone: zone, gw: gw, front: front, nc: nc}
}

// round is one step of the gateway and one tick of the zone server, each
// after NATS delivered what the other sent.
func (w *world) round() {
	w.gw.Step()
	require.NoError(w.t, w.nc.Flush())
	time.Sleep(2 * time.Millisecond)
	w.srv.Tick()
	require.NoError(w.t, w.nc.Flush())
	time.Sleep(2 * time.Millisecond)
}

// until runs rounds until ok holds, for at most two seconds.
func (w *world) until(what string, ok func() bool) {
	w.t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !ok(); {
		require.True(w.t, time.Now().Before(deadline), "waited two seconds for %s", what)
		w.round()
	}
}

// player is a client of the gateway's front and what it was told.
type player struct {
	c        *mem.Client
	actor    uint32
	appeared map[uint32]bool
	heard    map[uint32]int // records of each actor
	refusal  string
}

func join(t *testing.T, w *world, token string) *player {
	p := &player{c: w.front.Dial(), appeared: map[uint32]bool{}, heard: map[uint32]int{}}
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(token)})
	require.NoError(t, err)
	require.NoError(t, p.c.Send(hello))
	return p
}

// read takes in what p was sent since the last read.
func (p *player) read(t *testing.T) {
	var f wire.Frame
	p.c.DrainReliable(func(b []byte) {
		require.NoError(t, wire.Decode(b, &f))
		switch f.Type {
		case wire.TypeWelcome:
			p.actor = f.Welcome.Actor
		case wire.TypeAppear:
			p.appeared[f.Appear.Actor] = true
		case wire.TypeDisappear:
			delete(p.appeared, f.Disappear.Actor)
		case wire.TypeRefuse:
			p.refusal = string(f.Refuse.Reason)
		}
	})
	p.c.DrainDatagrams(func(d []byte) {
		b, err := wire.DecodeBatch(d)
		require.NoError(t, err)
		for i := range b.Len() {
			p.heard[b.At(i).Actor]++
		}
	})
}

func (p *player) move(t *testing.T, seq uint32, x, y float32) {
	require.NoError(t, p.c.Send(wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: y})))
}

// joinTwo joins players "a" and "b" and waits until both are welcomed.
func (w *world) joinTwo() (a, b *player) {
	a, b = join(w.t, w, "a"), join(w.t, w, "b")
	w.until("both welcomed", func() bool {
		a.read(w.t)
		b.read(w.t)
		return a.actor != 0 && b.actor != 0
	})
	return a, b
}

// TestPlayersThroughAGatewayPlayAsIfConnected: two clients of a gateway
// are served by a zone server behind it, over NATS: each is welcomed, is
// told of the other, hears the other's moves, and is told when the other
// leaves; the zone server counts the sessions as its own.
func TestPlayersThroughAGatewayPlayAsIfConnected(t *testing.T) {
	w := newWorld(t, nil)
	a, b := join(t, w, "a"), join(t, w, "b")
	w.until("both welcomed and told of each other", func() bool {
		a.read(t)
		b.read(t)
		return a.actor != 0 && b.actor != 0 && a.appeared[b.actor] && b.appeared[a.actor]
	})
	assert.NotEqual(t, a.actor, b.actor)
	assert.Equal(t, 2, w.srv.World().Len(), "the zone server holds both players' actors")

	seq := uint32(0)
	w.until("b hears a walk", func() bool {
		seq++
		a.move(t, seq, 100+float32(seq), 100)
		b.read(t)
		return b.heard[a.actor] >= 3
	})

	a.c.Close()
	w.until("b told that a left", func() bool {
		b.read(t)
		return !b.appeared[a.actor]
	})
	assert.Equal(t, 1, w.srv.World().Len())
	st := w.zone.Stats()
	assert.Equal(t, uint64(2), st.Opened)
	assert.Equal(t, uint64(1), st.Closed)
	assert.Positive(t, st.DatagramsOut)
	assert.Positive(t, st.FramesIn)
	assert.Zero(t, w.zone.Malformed())
}

// TestAZoneServersRefusalReachesTheClient: a Hello the zone server's Admit
// refuses ends the session at the client with the refusal, through the
// gateway; the gateway forgets it and the others play on.
func TestAZoneServersRefusalReachesTheClient(t *testing.T) {
	w := newWorld(t, func(h wire.Hello) (throng.Entry, error) {
		if string(h.Token) == "banned" {
			return throng.Entry{}, errors.New("you are banned")
		}
		return throng.Entry{}, nil
	})
	banned, fine := join(t, w, "banned"), join(t, w, "fine")
	w.until("the refusal", func() bool {
		banned.read(t)
		fine.read(t)
		_, closed := banned.c.CloseReason()
		return closed && fine.actor != 0
	})
	reason, _ := banned.c.CloseReason()
	assert.Contains(t, banned.refusal+" "+reason, "you are banned")
	assert.Equal(t, 1, w.srv.World().Len())
}

// TestMalformedMessagesAreDroppedAndCounted: garbage on the zone server's
// subject and on the gateway's is dropped whole and counted; the players
// play on.
func TestMalformedMessagesAreDroppedAndCounted(t *testing.T) {
	w := newWorld(t, nil)
	a, b := w.joinTwo()
	for _, junk := range [][]byte{nil, {9}, {1, 0}, {1, 4, 'g', 'w', '-', '1', 2, 0, 0}} {
		require.NoError(t, w.nc.Publish("throng.gateway.zone.1", junk))
		require.NoError(t, w.nc.Publish("throng.gateway.gw-1.1", junk))
	}
	seq := uint32(0)
	w.until("the junk counted and b hearing a", func() bool {
		seq++
		a.move(t, seq, 100+float32(seq), 100)
		b.read(t)
		return w.zone.Malformed() == 4 && w.gw.Stats().Malformed == 4 && b.heard[a.actor] >= 2
	})
}

// TestABatchOfDatagramsReachesItsSessionAndNoOther: a batch the server
// sends one session arrives at that client datagram by datagram, a runt
// among them dropped and counted; a batch for a session that left is
// dropped whole and counted, and nobody receives it.
func TestABatchOfDatagramsReachesItsSessionAndNoOther(t *testing.T) {
	w := newWorld(t, nil)
	a, b := w.joinTwo()
	a.c.Close()
	w.until("a gone", func() bool { return w.srv.World().Len() == 1 })
	for range 3 {
		w.round()
	}
	b.read(t)
	b.heard = map[uint32]int{}
	before := w.zone.Stats()

	datagram := func(actor uint32) []byte {
		d := wire.AppendBatchHeader(nil, 1, 1)
		return wire.AppendRecord(d, wire.Record{Actor: actor, X: 1, Y: 2})
	}
	one := datagram(7)
	size := len(one)
	batch := append(append(append([]byte{}, one...), datagram(8)...), 0, 1) // and a runt
	// The transport numbered a's session and b's 1 and 2: one is closed.
	w.zone.SendUnreliableBatch(1, batch, size)
	w.zone.SendUnreliableBatch(2, batch, size)
	w.zone.Flush()
	require.NoError(t, w.nc.Flush())
	w.until("b hears 7 and 8", func() bool {
		b.read(t)
		return b.heard[7] == 1 && b.heard[8] == 1
	})
	st := w.zone.Stats()
	assert.Equal(t, before.DatagramsOut+2, st.DatagramsOut)
	assert.Equal(t, before.DatagramBytesOut+uint64(2*size), st.DatagramBytesOut)
	assert.Equal(t, before.DroppedDatagrams+1+3, st.DroppedDatagrams, "the runt, and the closed session's three")
	assert.Equal(t, map[uint32]int{7: 1, 8: 1}, b.heard)
}
