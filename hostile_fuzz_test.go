package throng_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// FuzzAHostileClientLeavesTheTickWhole lets one player's client send
// whatever it likes, tick after tick: frames of any type and content, in
// any order, as many as it likes (the fuzzer's bytes, split into frames
// and ticks by hostileScript). Six honest players walk beside it, in a
// crowd big enough that Move frames are routed by session and applied on
// the pool. The server must keep ticking, the honest players must keep
// hearing each other, and every player, the hostile one too, must receive
// the same bytes inline and on four workers with sixteen shards: what a
// client sends is an input like any other, and the tick's output is a
// function of its inputs alone.
func FuzzAHostileClientLeavesTheTickWhole(f *testing.F) {
	move := func(seq uint32, x, y float32) []byte {
		return wire.AppendMove(nil, wire.Move{Seq: seq, X: x, Y: y})
	}
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte("p3")})
	require.NoError(f, err)
	nan := float32(math.NaN())
	for _, ticks := range [][][][]byte{
		{{}, {}},
		{{move(1, 150, 100)}, {move(2, 9000, 100)}, {move(3, 160, 100)}},                 // a jump, then back
		{{move(5, 150, 100), move(4, 140, 100), move(5, 150, 100)}, {move(1, 150, 100)}}, // stale and repeated
		{{move(1, nan, 100)}, {move(2, float32(math.Inf(1)), 0)}, {move(3, math.MaxFloat32, -math.MaxFloat32)}},
		{{wire.AppendMove(nil, wire.Move{Seq: 1, X: 150, Y: 100, WorldOrCell: 7, Flags: math.MaxUint16})}},
		{{hello, hello}, {wire.AppendCommand(nil, []byte("hi")), wire.AppendCommand(nil, make([]byte, 900))}},
		{{wire.AppendAppear(nil, wire.Appear{Actor: 2}), wire.AppendDisappear(nil, wire.Disappear{Actor: 3})}},
		{{{wire.Version, 0x7f}, {wire.Version}, {}, {0xff, 0xff, 0xff}}},
		{floodOf(move, 200), floodOf(move, 200), floodOf(move, 200)},
	} {
		f.Add(hostileBytes(ticks))
	}
	spawns := []components.Transform{{X: 100, Y: 100}, {X: 200, Y: 100}, {X: 300, Y: 150}, {X: 120, Y: 300},
		{X: 4200, Y: 100}, {X: 4300, Y: 4200}, {X: 250, Y: 4200}}
	// With enough players the server routes Move frames to buckets by
	// session and applies them on the pool (inline, one bucket after
	// another): the rest of a crowd of 2,048, each alone in a chunk far
	// off, so that the hostile frames take that path too.
	for i := len(spawns); i < 2048; i++ {
		spawns = append(spawns, components.Transform{X: float32(40_000 + i%64*9000), Y: float32(40_000 + i/64*9000)})
	}
	const hostile = 3
	play := func(t *testing.T, opts throng.Options, script [][][]byte) (*stage, int) {
		st := newStage(t, opts, spawns)
		tick := 0
		for k, frames := range script {
			for _, fr := range frames {
				_ = st.players[hostile].client.Send(fr) // refused once the server has let it go
			}
			for i := range st.players {
				if i != hostile {
					st.move(i, spawns[i].X+float32(10*k), spawns[i].Y+float32(7*(k%3)), 0)
				}
			}
			tick = st.tick()
		}
		return st, tick
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		script := hostileScript(b)
		inlined, last := play(t, inline(true), script)
		sameBytes(t, inlined, func() *stage { st, _ := play(t, parallel(4, 16, true), script); return st }())
		for _, pair := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
			heard := inlined.senders(pair[0], last)[inlined.players[pair[1]].actor]
			require.Equal(t, 1, heard, "player %d hears player %d in the last tick", pair[0], pair[1])
		}
	})
}

// floodOf returns n moves of one tick, more than a client may send.
func floodOf(move func(uint32, float32, float32) []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = move(uint32(i+1), 150+float32(i), 100)
	}
	return out
}

// hostileBytes lays out ticks of frames as hostileScript reads them.
func hostileBytes(ticks [][][]byte) []byte {
	var b []byte
	for _, frames := range ticks {
		for _, fr := range frames {
			b = append(b, byte(len(fr)), byte(len(fr)>>8))
			b = append(b, fr...)
		}
		b = append(b, 0xff, 0xff)
	}
	return b
}

// hostileScript splits b into ticks of frames: each frame a 2-byte little
// endian length and its bytes, a length of 0xffff ending a tick. At most
// 24 ticks; frames past a short end are cut.
func hostileScript(b []byte) [][][]byte {
	script := [][][]byte{nil}
	for len(b) >= 2 && len(script) <= 24 {
		n := int(b[0]) | int(b[1])<<8
		b = b[2:]
		if n == 0xffff {
			script = append(script, nil)
			continue
		}
		n = min(n, len(b))
		last := len(script) - 1
		script[last] = append(script[last], b[:n])
		b = b[n:]
	}
	return script
}
