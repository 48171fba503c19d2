package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/throng-go/throng/net/wire"
)

// version is the message format's version, its first byte.
const version = 1

// kind is what an entry of a message says.
type kind uint8

const (
	// From a gateway to a zone server.
	opened kind = iota + 1 // a client connected (the payload: empty, or what a resumed session's new server is told)
	frame                  // a frame the client sent (the payload)
	closed                 // the session ended (the payload: why)
	// From a zone server to a gateway.
	datagram   // one movement datagram for the client
	reliable   // one reliable frame for the client
	disconnect // end the session (the payload: why)
	moved      // the session goes to another zone (the payload: the zone, u32, then what to tell it)
	unknown    // the zone server holds no such session (a frame came for it): restarted, or it moved on
	batch      // one movement batch for the client, its records by reference (see addDatagram)
	shadow     // open the session at another zone too, ahead of its move (the payload: the zone, u32, then what to tell it)
	unshadow   // close that second opening: the move will not come (the payload: why)
)

// entryHead is an entry's size before its payload: kind, session,
// payload length.
const entryHead = 1 + 8 + 4

// message is an encoded message under construction: version, the
// gateway's name, then entries.
//
// A zone server's messages to a gateway give limit, the largest message
// NATS takes: movement batches then go by reference (addDatagram), and
// the builder starts a new message wherever the next entry would pass
// limit (sealed), so that each message holds the records its batch
// entries refer to. A gateway's messages to a zone server are cut by
// publish instead.
type message struct {
	b     []byte
	head  int // the bytes of version and name: the message is empty at head
	n     int // its entries
	limit int // the most bytes a message may hold; 0: no batch entries, cut by publish

	sealed [][]byte // whole messages cut off before b, oldest first
	spare  [][]byte // published sealed messages' buffers, for reuse
	left   int      // entries no message could hold, dropped by add
	table  recordTable
	fresh  []byte // addDatagram's scratch
}

// reset starts a message from gateway name.
func (m *message) reset(name string) {
	m.b = append(append(m.b[:0], version, byte(len(name))), name...)
	m.head, m.n = len(m.b), 0
}

// clear empties m for the next round, keeping its name.
func (m *message) clear() {
	m.b, m.n = m.b[:m.head], 0
	m.table.clear()
}

// room makes room for an entry of size bytes: when m has a limit that
// the entry would pass, what m holds is sealed and a new message begun.
// It reports false for an entry no message could hold.
func (m *message) room(size int) bool {
	if m.limit <= 0 {
		return true
	}
	if m.head+size > m.limit {
		m.left++
		return false
	}
	if len(m.b)+size > m.limit && !m.empty() {
		m.seal()
	}
	return true
}

// seal sets aside what m holds as a whole message, for publish, and
// begins the next one with the same name and an empty table.
func (m *message) seal() {
	var next []byte
	if k := len(m.spare); k > 0 {
		next, m.spare = m.spare[k-1][:0], m.spare[:k-1]
	}
	m.sealed = append(m.sealed, m.b)
	m.b = append(next, m.b[:m.head]...)
	m.table.clear()
}

// empty reports whether m holds no entry.
func (m *message) empty() bool { return len(m.b) == m.head }

// add appends an entry.
func (m *message) add(k kind, s uint64, payload []byte) {
	if !m.room(entryHead + len(payload)) {
		return
	}
	m.n++
	m.b = append(m.b, byte(k))
	m.b = binary.LittleEndian.AppendUint64(m.b, s)
	m.b = binary.LittleEndian.AppendUint32(m.b, uint32(len(payload)))
	m.b = append(m.b, payload...)
}

// publish publishes m on subject, cut into as many messages as the
// server's largest payload (limit) needs, each a whole message (the
// version, the name, whole entries), in order; an entry that fits no
// message alone is left out and counted. It returns the messages
// published and the entries left out; scratch is a buffer it may grow and
// returns for the next call.
func (m *message) publish(nc *nats.Conn, subject string, limit int, scratch []byte) (sent, left int, _ []byte) {
	for _, b := range m.sealed {
		if nc.Publish(subject, b) == nil {
			sent++
		}
		m.spare = append(m.spare, b)
	}
	clear(m.sealed)
	m.sealed = m.sealed[:0]
	left, m.left = m.left, 0
	if len(m.b) <= limit {
		if nc.Publish(subject, m.b) == nil {
			sent++
		}
		return sent, left, scratch
	}
	scratch = append(scratch[:0], m.b[:m.head]...)
	flush := func() {
		if len(scratch) > m.head && nc.Publish(subject, scratch) == nil {
			sent++
		}
		scratch = scratch[:m.head]
	}
	le := binary.LittleEndian
	for rest := m.b[m.head:]; len(rest) > 0; {
		size := entryHead + int(le.Uint32(rest[9:]))
		entry := rest[:size]
		rest = rest[size:]
		if m.head+size > limit {
			left++ // only entries without references: a message with them is never cut here
			continue
		}
		if len(scratch)+size > limit {
			flush()
		}
		scratch = append(scratch, entry...)
	}
	flush()
	return sent, left, scratch
}

// errMalformed wraps every decoding error.
var errMalformed = errors.New("gateway: malformed message")

// decode checks message b whole and returns the gateway's name and its
// entries, for eachEntry. A message with an unknown version or kind,
// session 0, an entry cut short, a frame below wire.HeaderSize or bytes
// after the last entry is refused, so that a bad message is dropped
// whole.
func decode(b []byte) (string, []byte, error) {
	if len(b) < 2 || b[0] != version {
		return "", nil, fmt.Errorf("%w: version %v", errMalformed, b[:min(len(b), 1)])
	}
	n := int(b[1])
	if len(b) < 2+n || n == 0 {
		return "", nil, fmt.Errorf("%w: a gateway name of %d bytes", errMalformed, n)
	}
	name, entries := string(b[2:2+n]), b[2+n:]
	records := 0 // the message's table of records so far (batch entries)
	for rest := entries; len(rest) > 0; {
		if len(rest) < entryHead {
			return "", nil, fmt.Errorf("%w: an entry cut short", errMalformed)
		}
		k, s := kind(rest[0]), binary.LittleEndian.Uint64(rest[1:])
		size := int(binary.LittleEndian.Uint32(rest[9:]))
		switch {
		case len(rest)-entryHead < size:
			return "", nil, fmt.Errorf("%w: a payload of %d bytes past the end", errMalformed, size)
		case k < opened || k > unshadow:
			return "", nil, fmt.Errorf("%w: entry kind %d", errMalformed, k)
		case s == 0:
			return "", nil, fmt.Errorf("%w: session 0", errMalformed)
		case (k == frame || k == reliable) && size < wire.HeaderSize:
			return "", nil, fmt.Errorf("%w: a frame of %d bytes", errMalformed, size)
		case (k == moved || k == shadow) && (size < 4 || binary.LittleEndian.Uint32(rest[entryHead:]) == 0):
			return "", nil, fmt.Errorf("%w: a move to no zone", errMalformed)
		case k == batch:
			fresh, err := checkBatch(rest[entryHead:entryHead+size], records)
			if err != nil {
				return "", nil, err
			}
			records += fresh
		}
		rest = rest[entryHead+size:]
	}
	return name, entries, nil
}

// eachEntry calls fn with each of entries, which decode checked, in
// order; payloads alias entries.
func eachEntry(entries []byte, fn func(k kind, s uint64, payload []byte)) {
	le := binary.LittleEndian
	for len(entries) > 0 {
		size := int(le.Uint32(entries[9:]))
		fn(kind(entries[0]), le.Uint64(entries[1:]), entries[entryHead:entryHead+size])
		entries = entries[entryHead+size:]
	}
}

// subjects are the NATS subjects of a gateway and of a zone server.
// A zone server publishes to gateway name on the gateway's subject and
// its own zone's token, so that the gateway knows who spoke, heartbeats
// included.
func gatewaySubject(prefix, name string) string { return prefix + ".gateway." + name }

func gatewayZoneSubject(prefix, name string, zone uint32) string {
	return gatewaySubject(prefix, name) + "." + strconv.FormatUint(uint64(zone), 10)
}

func zoneSubject(prefix string, zone uint32) string {
	return fmt.Sprintf("%s.gateway.zone.%d", prefix, zone)
}
