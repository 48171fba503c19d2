// Package nettest holds what the network packages' tests share: a pump
// that plays the tick for a transport, clients dialled and welcomed,
// frames rendered as text to compare, and the heap a decoder takes.
package nettest

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/net/quic"
	"github.com/throng-go/throng/net/wire"
)

// Seen is one Inbound with its frame copied, as a test's server saw it.
type Seen struct {
	Kind    wire.InboundKind
	Session wire.SessionID
	Frame   []byte
	Reason  string
}

// Pump plays the tick for a QUIC transport under test: it calls Receive
// every couple of milliseconds on one goroutine and logs what arrived.
type Pump struct {
	Q    *quic.Transport // QUIC tests' transport
	TR   wire.Transport  // the transport Receive is called on
	mu   sync.Mutex
	log  []Seen
	stop chan struct{}
	done chan struct{}
}

// StartQUIC listens on loopback in development mode with cfg and starts
// its Pump; cleanup closes the transport.
func StartQUIC(t *testing.T, cfg quic.Config) *Pump {
	t.Helper()
	if cfg.TLS == nil && cfg.CertFile == "" {
		cfg.Development = true
	}
	q, err := quic.Listen("127.0.0.1:0", cfg)
	require.NoError(t, err)
	return StartPump(t, &Pump{Q: q, TR: q})
}

// StartPump starts p's Receive loop; cleanup closes its transport.
func StartPump(t *testing.T, p *Pump) *Pump {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go p.run()
	t.Cleanup(func() {
		p.TR.Close()
		close(p.stop)
		<-p.done
	})
	return p
}

func (p *Pump) run() {
	defer close(p.done)
	var inbox []wire.Inbound
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		inbox = p.TR.Receive(inbox[:0])
		p.mu.Lock()
		for _, in := range inbox {
			p.log = append(p.log, Seen{in.Kind, in.Session, slices.Clone(in.Frame), in.Reason})
		}
		p.mu.Unlock()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// Addr returns the address of the QUIC transport under test.
func (p *Pump) Addr() string { return p.Q.Addr().String() }

// Events returns a copy of everything Seen so far.
func (p *Pump) Events() []Seen {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// Await returns the first event that matches, failing after five seconds.
func (p *Pump) Await(t *testing.T, what string, match func(Seen) bool) Seen {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range p.Events() {
			if match(e) {
				return e
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("no %s within 5s; saw %d events", what, len(p.Events()))
	return Seen{}
}

// ClosedOf awaits the session's SessionClosed.
func (p *Pump) ClosedOf(t *testing.T, s wire.SessionID) Seen {
	t.Helper()
	return p.Await(t, fmt.Sprintf("SessionClosed of %d", s), func(e Seen) bool {
		return e.Kind == wire.SessionClosed && e.Session == s
	})
}

// HelloFrom awaits the Hello carrying token and returns its session.
func (p *Pump) HelloFrom(t *testing.T, token string) wire.SessionID {
	t.Helper()
	return p.Await(t, "Hello from "+token, func(e Seen) bool {
		h, err := wire.DecodeHello(e.Frame)
		return e.Kind == wire.FrameReceived && err == nil && string(h.Token) == token
	}).Session
}

// DialQUIC connects a client with token and welcomes it as actor; it returns
// the client and its session.
func DialQUIC(t *testing.T, p *Pump, token string, actor uint32, cfg client.Config) (*client.Client, wire.SessionID) {
	t.Helper()
	cfg.Token, cfg.InsecureSkipVerify = token, true
	type result struct {
		c   *client.Client
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := client.Dial(context.Background(), p.Addr(), cfg)
		ch <- result{c, err}
	}()
	s := p.HelloFrom(t, token)
	p.Q.SendReliable(s, wire.AppendWelcome(nil, wire.Welcome{Actor: actor, TickRate: 30}))
	r := <-ch
	require.NoError(t, r.err)
	t.Cleanup(func() { r.c.Close() })
	return r.c, s
}

// Polled collects every frame a client has received so far, re-encoded
// where a test wants to compare bytes: "appear 7", "prop 8", "batch 12: 3 4".
func Polled(c *client.Client) []string {
	var out []string
	c.Poll(func(f *wire.Frame) {
		switch f.Type {
		case wire.TypeAppear:
			out = append(out, fmt.Sprintf("appear %d", f.Appear.Actor))
		case wire.TypeProp:
			out = append(out, fmt.Sprintf("prop %d", f.Prop.Actor))
		case wire.TypeDisappear:
			out = append(out, fmt.Sprintf("disappear %d", f.Disappear.Actor))
		case wire.TypeBatch:
			s := fmt.Sprintf("batch %d:", f.Batch.Tick)
			for i := range f.Batch.Len() {
				s += fmt.Sprintf(" %d", f.Batch.At(i).Actor)
			}
			out = append(out, s)
		default:
			out = append(out, f.Type.String())
		}
	})
	return out
}

// PollUntil polls c until want frames arrived or five seconds passed.
func PollUntil(t *testing.T, c *client.Client, want int) []string {
	t.Helper()
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		got = append(got, Polled(c)...)
		time.Sleep(2 * time.Millisecond)
	}
	return got
}

// Batch builds a movement batch for tick with one record per actor.
func Batch(tick uint32, actors ...uint32) []byte {
	b := wire.AppendBatchHeader(nil, tick, uint16(len(actors)))
	for _, a := range actors {
		b = wire.AppendRecord(b, wire.Record{Actor: a, X: float32(a)})
	}
	return b
}

// Stream lays frames back to back behind their length prefixes, as a
// wire.ReliableBatchSender takes them. Unlike wire.AppendStreamFrame it
// takes a frame of any length a prefix can say, so that a test can put
// frames a transport must drop in a batch.
func Stream(frames ...[]byte) []byte {
	var b []byte
	for _, f := range frames {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(f)))
		b = append(b, f...)
	}
	return b
}

// Reliable is the reliable half of a transport's Stats, to compare what
// two runs of sends added.
type Reliable struct{ Out, Bytes, Dropped uint64 }

// ReliableOf reads tr's reliable counters.
func ReliableOf(tr wire.Transport) Reliable {
	st := tr.Stats()
	return Reliable{st.ReliableOut, st.ReliableBytesOut, st.DroppedReliable}
}

// Minus returns what r counts beyond earlier.
func (r Reliable) Minus(earlier Reliable) Reliable {
	return Reliable{r.Out - earlier.Out, r.Bytes - earlier.Bytes, r.Dropped - earlier.Dropped}
}

// HeapAllocated returns the bytes of heap fn allocates: the least of three
// runs, since the runtime's count is the whole process's, and a goroutine
// another test left behind may allocate during one of them. It reads the
// runtime's memory statistics, which stops the world, because the cheaper
// runtime/metrics counts small objects by the span and at times reports
// hundreds of kilobytes for a call that took a few.
func HeapAllocated(fn func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}
