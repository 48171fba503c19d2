package systems

import (
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
)

// datagramSize is the size of a full movement datagram.
const datagramSize = net.BatchHeaderSize + net.MaxRecordsPerBatch*net.RecordSize

// relayJob is the Relay phase as a pool job: unit i is shard i's recipients.
type relayJob struct{ p *Pipeline }

// RunUnit builds the outgoing batch of every recipient in shard i.
func (j *relayJob) RunUnit(i int) {
	f := &j.p.frame
	sh := f.shards[i]
	var total int64
	for a := sh.Lo; a < sh.Hi; a++ {
		if f.session[a] == 0 {
			f.relays[a] = 0
			f.batches[a] = f.batches[a][:0]
			continue
		}
		total += int64(j.p.gather(a))
	}
	j.p.shardRelays[i] = total
}

// gather appends to recipient r's batch the record of every sender in r's
// 3x3 stencil that is due this tick: not r itself, changed within the pair's
// period, and on the pair's phase. Senders are visited in canonical order,
// so the batch's bytes do not depend on how the work was split. The batch is
// a run of datagrams of at most MaxRecordsPerBatch records each.
func (p *Pipeline) gather(r int32) int32 {
	f := &p.frame
	tiers := &p.tiers
	clock := p.clock
	tick := f.Tick
	var oldest uint64 // changes at or before it are stale for every pair
	if longest := uint64(tiers.Longest()); tick > longest {
		oldest = tick - longest
	}
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	buf := f.batches[r][:0]
	var count, inDatagram int32
	head := 0
	g := &f.groups[f.group[r]]
	for _, s := range g.stencil[:g.nst] {
		for a := s.lo; a < s.hi; a++ {
			changed := f.changed[a]
			if changed <= oldest || a == r {
				continue
			}
			dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
			period := tiers.PeriodSq(dx*dx + dy*dy + dz*dz)
			if changed+uint64(period) <= tick {
				continue
			}
			if period > 1 && !clock.Sends(interest.Phase(f.id[a], rid), period) {
				continue
			}
			if inDatagram == net.MaxRecordsPerBatch {
				net.SetBatchCount(buf[head:], int(inDatagram))
				inDatagram = 0
			}
			if inDatagram == 0 {
				head = len(buf)
				buf = net.AppendBatchHeader(buf, uint32(tick), 0)
			}
			buf = append(buf, f.recordOf(a)...)
			inDatagram++
			count++
		}
	}
	if inDatagram > 0 {
		net.SetBatchCount(buf[head:], int(inDatagram))
	}
	f.batches[r] = buf
	f.relays[r] = count
	return count
}
