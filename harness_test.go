package throng_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
)

// player is one scripted client of a test server, with everything it
// received in the order the server sent it.
type player struct {
	client *mem.Client
	actor  uint32
	seq    uint32
	wire   []byte   // every frame and datagram, length-prefixed, in order
	events []string // decoded, for assertions: "welcome 3", "appear 4", "batch 17: 2 5", ...
	got    map[int][]wire.Record
}

// stage is a test server on the in-memory transport with scripted players.
type stage struct {
	t         *testing.T
	srv       *throng.Server
	players   []*player
	spawns    []components.Transform
	maxOwed   int // most records owed after any tick of runWalk
	propsSent int // Prop frames sent over a runWalkAmong
}

// newStage starts a server with opts and one player per spawn point, and
// ticks until every player is welcomed.
func newStage(t *testing.T, opts throng.Options, spawns []components.Transform) *stage {
	t.Helper()
	return newStageWith(t, opts, spawns, nil)
}

// oneByOne is a Mem behind the plain Transport interface, without its
// batch send: the relay then hands it one datagram per call.
type oneByOne struct {
	wire.Transport
	mem *mem.Transport
}

func newOneByOne() oneByOne {
	m := mem.New(mem.Options{})
	return oneByOne{Transport: m, mem: m}
}

// lanes is a Mem that takes the relay's sends by lane
// (wire.LaneSender), noting the lanes used.
type lanes struct {
	*mem.Transport
	used atomic.Uint64 // bit i: lane i sent something
}

func (l *lanes) SendUnreliableBatchLane(lane int, s wire.SessionID, datagrams []byte, size int) {
	l.used.Or(1 << lane)
	l.SendUnreliableBatch(s, datagrams, size)
}

// newStageWith is newStage with a chance to add systems before the first
// tick.
func newStageWith(t *testing.T, opts throng.Options, spawns []components.Transform, setup func(*throng.Server)) *stage {
	t.Helper()
	return newStageOf(t, opts, spawns, nil, setup)
}

// newStageOf is newStageWith whose player i is admitted with class
// classes[i] (the player class past its end).
func newStageOf(t *testing.T, opts throng.Options, spawns []components.Transform, classes []uint8, setup func(*throng.Server)) *stage {
	t.Helper()
	st := &stage{t: t, spawns: spawns}
	if opts.Admission.JoinAppearsPerTick == nil {
		opts.Admission.JoinAppearsPerTick = new(0) // every player joins in the first tick
	}
	opts.Admit = func(h wire.Hello) (throng.Entry, error) {
		var i int
		if _, err := fmt.Sscanf(string(h.Token), "p%d", &i); err != nil || i >= len(spawns) {
			return throng.Entry{}, fmt.Errorf("unknown player %q", h.Token)
		}
		e := throng.Entry{Spawn: spawns[i]}
		if i < len(classes) {
			e.Class = classes[i]
		}
		return e, nil
	}
	srv, err := throng.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	st.srv = srv
	if setup != nil {
		setup(srv)
	}
	mem := srv.Mem()
	switch o := opts.Transport.(type) {
	case oneByOne:
		mem = o.mem
	case *lanes:
		mem = o.Transport
	}
	for i := range spawns {
		p := &player{client: mem.Dial(), got: map[int][]wire.Record{}}
		hello, err := wire.AppendHello(nil, wire.Hello{Token: fmt.Appendf(nil, "p%d", i)})
		require.NoError(t, err)
		require.NoError(t, p.client.Send(hello))
		st.players = append(st.players, p)
	}
	st.tick()
	for i, p := range st.players {
		require.NotZero(t, p.actor, "player %d was not welcomed", i)
	}
	return st
}

// move sends player i's next update.
func (st *stage) move(i int, x, y, z float32) {
	p := st.players[i]
	p.seq++
	require.NoError(st.t, p.client.Send(wire.AppendMove(nil, wire.Move{Seq: p.seq, X: x, Y: y, Z: z, WorldOrCell: st.spawns[i].WorldOrCell})))
}

// tick runs one server tick and collects what every player received, in
// the order the join sends it: corrections, then movement datagrams, then
// welcome/appear/disappear.
func (st *stage) tick() int {
	stats := st.srv.Tick()
	for _, p := range st.players {
		var late [][]byte
		p.client.DrainReliable(func(f []byte) {
			if typ, _ := wire.PeekType(f); typ == wire.TypeCorrection {
				p.record(f)
				return
			}
			late = append(late, append([]byte(nil), f...))
		})
		p.client.DrainDatagrams(func(d []byte) { p.record(d) })
		for _, f := range late {
			p.record(f)
		}
	}
	return int(stats.Tick)
}

func (p *player) record(b []byte) {
	p.wire = append(p.wire, byte(len(b)), byte(len(b)>>8))
	p.wire = append(p.wire, b...)
	var f wire.Frame
	if err := wire.Decode(b, &f); err != nil {
		p.events = append(p.events, "undecodable "+err.Error())
		return
	}
	switch f.Type {
	case wire.TypeWelcome:
		p.actor = f.Welcome.Actor
		p.events = append(p.events, fmt.Sprintf("welcome %d", f.Welcome.Actor))
	case wire.TypeAppear:
		p.events = append(p.events, fmt.Sprintf("appear %d", f.Appear.Actor))
	case wire.TypeDisappear:
		p.events = append(p.events, fmt.Sprintf("disappear %d", f.Disappear.Actor))
	case wire.TypeCorrection:
		p.events = append(p.events, fmt.Sprintf("correction %d %g %g", f.Correction.Seq, f.Correction.X, f.Correction.Y))
	case wire.TypeRefuse:
		p.events = append(p.events, "refuse "+string(f.Refuse.Reason))
	case wire.TypeBatch:
		for i := range f.Batch.Len() {
			r := f.Batch.At(i)
			p.got[int(f.Batch.Tick)] = append(p.got[int(f.Batch.Tick)], r)
			p.events = append(p.events, fmt.Sprintf("record %d", r.Actor))
		}
	}
}

// senders returns the actors whose records player i received for tick.
func (st *stage) senders(i, tick int) map[uint32]int {
	out := map[uint32]int{}
	for _, r := range st.players[i].got[tick] {
		out[r.Actor]++
	}
	return out
}
