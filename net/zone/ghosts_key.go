package zone

import (
	"encoding/binary"
	"slices"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go"
)

// A receiver that hears a ghost record leave out a field it may not have
// (Stats.Unkeyed: it restarted, or missed the batches that carried the
// change) asks the sender for a keyframe instead of waiting up to
// GhostKeyEvery ticks for one: a message of two bytes, its own zone's id,
// on the sender's key subject. The sender's next batch to it lists every
// actor whole.

// keySubject is the subject zone id takes keyframe requests on.
func keySubject(prefix string, id ID) string {
	return prefix + ".ghostkeys." + strconv.Itoa(int(id))
}

// keyRequests holds the zones that asked this server for a keyframe
// since its last batch (written by NATS' delivery goroutine, taken by the
// publisher), and when this server last asked each neighbour (tick
// goroutine only).
type keyRequests struct {
	mu     sync.Mutex
	wanted []ID
	asked  map[ID]uint64
}

// receiveKeyRequest is the key subject's handler. A message that is not
// a zone id is counted as dropped.
func (z *Server) receiveKeyRequest(msg *nats.Msg) {
	if len(msg.Data) != 2 || binary.LittleEndian.Uint16(msg.Data) == 0 {
		z.stats.dropped.Add(1)
		return
	}
	id := ID(binary.LittleEndian.Uint16(msg.Data))
	z.stats.keysAsked.Add(1)
	k := &z.keys
	k.mu.Lock()
	if !slices.Contains(k.wanted, id) {
		k.wanted = append(k.wanted, id)
	}
	k.mu.Unlock()
}

// takeWanted appends the zones that asked for a keyframe to dst and
// forgets them.
func (k *keyRequests) takeWanted(dst []ID) []ID {
	k.mu.Lock()
	dst = append(dst, k.wanted...)
	k.wanted = k.wanted[:0]
	k.mu.Unlock()
	return dst
}

// askKey asks zone id for a keyframe, at most once in GhostRepeat of our
// ticks (its batches in between may still be the ones sent before it
// heard us).
func (z *Server) askKey(id ID) {
	k := &z.keys
	if at, ok := k.asked[id]; ok && z.ghosts.tick < at+GhostRepeat {
		return
	}
	if k.asked == nil {
		k.asked = map[ID]uint64{}
	}
	k.asked[id] = z.ghosts.tick
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], uint16(z.opts.Zone))
	if err := z.nc.Publish(keySubject(z.prefix, id), b[:]); err == nil {
		z.stats.keyRequests.Add(1)
	}
}
