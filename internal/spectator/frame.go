package spectator

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/throng-go/throng/systems"
)

// Version is the frame format's version, its first byte.
const Version = 1

// Frame is what one frame shows besides the [systems.Spectacle]: the
// server's figures over the last second and its settings that the page
// draws with.
type Frame struct {
	Paused    bool
	TickRate  int     // nominal
	Hz        float64 // achieved over the last second
	WorkAvg   float64 // ms
	WorkP5    float64 // ms
	WorkP95   float64 // ms
	BytesOut  float64 // movement bytes handed to the transport a second
	ChunkSize float32
	Systems   []System  // each system's time a tick
	Tiers     []float32 // interest tier distances, in units
	Spectacle *systems.Spectacle
}

// System is one system's time a tick, in ms.
type System struct {
	Name string
	Ms   float64
}

// Append encodes f after dst (little endian throughout):
//
//	version u8, paused u8, tick u32, tickRate u16, hz f32, workAvg f32,
//	workP5 f32, workP95 f32, bytesOut f32, chunkSize f32,
//	systems u8, per system: name length u8, name, ms f32,
//	tiers u8, per tier: distance f32,
//	clusters u32, shards u32,
//	chunks u32, per chunk: worldOrCell u32, x i32, y i32, actors u32,
//	cluster i32, shard i32, relays u32,
//	actors u32, then x f32 per actor, y f32 per actor, id u32 per actor,
//	kind u8 per actor (systems.ActorKind: 0 prop, 1 player, 2 NPC),
//	watched u32, sent u32 and the senders u32 each, owed u32 and the
//	senders u32 each.
func Append(dst []byte, f *Frame) []byte {
	le := binary.LittleEndian
	f32 := func(v float64) { dst = le.AppendUint32(dst, math.Float32bits(float32(v))) }
	sp := f.Spectacle
	paused := byte(0)
	if f.Paused {
		paused = 1
	}
	dst = append(dst, Version, paused)
	dst = le.AppendUint32(dst, uint32(sp.Tick))
	dst = le.AppendUint16(dst, uint16(f.TickRate))
	f32(f.Hz)
	f32(f.WorkAvg)
	f32(f.WorkP5)
	f32(f.WorkP95)
	f32(f.BytesOut)
	f32(float64(f.ChunkSize))
	dst = append(dst, byte(min(len(f.Systems), 255)))
	for _, s := range f.Systems[:min(len(f.Systems), 255)] {
		name := s.Name[:min(len(s.Name), 255)]
		dst = append(dst, byte(len(name)))
		dst = append(dst, name...)
		f32(s.Ms)
	}
	dst = append(dst, byte(min(len(f.Tiers), 255)))
	for _, t := range f.Tiers[:min(len(f.Tiers), 255)] {
		f32(float64(t))
	}
	dst = le.AppendUint32(dst, uint32(sp.Clusters))
	dst = le.AppendUint32(dst, uint32(sp.Shards))
	dst = le.AppendUint32(dst, uint32(len(sp.Chunks)))
	for _, c := range sp.Chunks {
		dst = le.AppendUint32(dst, c.Key.WorldOrCell)
		dst = le.AppendUint32(dst, uint32(c.Key.X))
		dst = le.AppendUint32(dst, uint32(c.Key.Y))
		dst = le.AppendUint32(dst, uint32(c.Actors))
		dst = le.AppendUint32(dst, uint32(c.Cluster))
		dst = le.AppendUint32(dst, uint32(c.Shard))
		dst = le.AppendUint32(dst, uint32(c.Relays))
	}
	dst = le.AppendUint32(dst, uint32(len(sp.Actors)))
	for _, a := range sp.Actors {
		dst = le.AppendUint32(dst, math.Float32bits(a.X))
	}
	for _, a := range sp.Actors {
		dst = le.AppendUint32(dst, math.Float32bits(a.Y))
	}
	for _, a := range sp.Actors {
		dst = le.AppendUint32(dst, a.ID)
	}
	for _, a := range sp.Actors {
		dst = append(dst, byte(a.Kind))
	}
	dst = le.AppendUint32(dst, sp.Watched)
	dst = le.AppendUint32(dst, uint32(len(sp.Sent)))
	for _, id := range sp.Sent {
		dst = le.AppendUint32(dst, id)
	}
	dst = le.AppendUint32(dst, uint32(len(sp.Owed)))
	for _, id := range sp.Owed {
		dst = le.AppendUint32(dst, id)
	}
	return dst
}

// Decoded is a frame read back by [Decode]: what a client of the stream
// sees, for tests and tools.
type Decoded struct {
	Paused           bool
	Tick             uint32
	TickRate         int
	Hz               float32
	Systems          []string
	Tiers            []float32
	Clusters, Shards int
	Chunks           []systems.SpectatedChunk
	Actors           []systems.SpectatedActor
	Watched          uint32
	Sent, Owed       []uint32
}

// Decode reads a frame [Append] wrote.
func Decode(b []byte) (Decoded, error) {
	var d Decoded
	le := binary.LittleEndian
	at := 0
	bad := false
	take := func(n int) []byte {
		if bad || n < 0 || len(b)-at < n {
			bad = true
			return make([]byte, max(n, 0))
		}
		at += n
		return b[at-n : at]
	}
	u32 := func() uint32 { return le.Uint32(take(4)) }
	f32 := func() float32 { return math.Float32frombits(u32()) }
	if v := take(1)[0]; v != Version {
		return d, fmt.Errorf("spectator: frame version %d, not %d", v, Version)
	}
	d.Paused = take(1)[0] == 1
	d.Tick = u32()
	d.TickRate = int(le.Uint16(take(2)))
	d.Hz = f32()
	take(5 * 4) // the work figures, bytes out, chunk size
	for n := int(take(1)[0]); n > 0; n-- {
		d.Systems = append(d.Systems, string(take(int(take(1)[0]))))
		f32()
	}
	for n := int(take(1)[0]); n > 0; n-- {
		d.Tiers = append(d.Tiers, f32())
	}
	d.Clusters, d.Shards = int(u32()), int(u32())
	nc := int(u32())
	if nc > len(b)/28 {
		return d, fmt.Errorf("spectator: %d chunks in a frame of %d bytes", nc, len(b))
	}
	for range nc {
		var c systems.SpectatedChunk
		c.Key.WorldOrCell, c.Key.X, c.Key.Y = u32(), int32(u32()), int32(u32())
		c.Actors, c.Cluster, c.Shard, c.Relays = int32(u32()), int32(u32()), int32(u32()), int32(u32())
		d.Chunks = append(d.Chunks, c)
	}
	n := int(u32())
	if n > len(b)/13 {
		return d, fmt.Errorf("spectator: %d actors in a frame of %d bytes", n, len(b))
	}
	d.Actors = make([]systems.SpectatedActor, n)
	for i := range n {
		d.Actors[i].X = f32()
	}
	for i := range n {
		d.Actors[i].Y = f32()
	}
	for i := range n {
		d.Actors[i].ID = u32()
	}
	for i := range n {
		d.Actors[i].Kind = systems.ActorKind(take(1)[0])
	}
	d.Watched = u32()
	for k := int(u32()); k > 0 && !bad; k-- {
		d.Sent = append(d.Sent, u32())
	}
	for k := int(u32()); k > 0 && !bad; k-- {
		d.Owed = append(d.Owed, u32())
	}
	if bad {
		return d, fmt.Errorf("spectator: frame cut short")
	}
	return d, nil
}
