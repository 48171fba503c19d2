package systems

import (
	"time"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
)

// datagramSize is the size of a full movement datagram.
const datagramSize = net.BatchHeaderSize + net.MaxRecordsPerBatch*net.RecordSize

// relayJob is the Relay phase as a pool job: unit i is shard i's recipients.
type relayJob struct{ p *Pipeline }

// RunUnit builds the outgoing batch of every recipient in shard i.
func (j *relayJob) RunUnit(i int) {
	start := time.Now()
	p := j.p
	f := &p.frame
	sh := f.shards[i]
	var total, throttled int64
	for a := sh.Lo; a < sh.Hi; a++ {
		if f.session[a] == 0 {
			f.relays[a] = 0
			f.batches[a] = f.batches[a][:0]
			continue
		}
		total += int64(p.gather(a, sh.Level, &throttled))
	}
	p.shardRelays[i] = total
	p.shardThrottled[i] = throttled
	p.shardRelayTime[i] = time.Since(start)
}

// batchWriter appends records to a recipient's batch, starting a new
// datagram (header first) every MaxRecordsPerBatch records.
type batchWriter struct {
	buf  []byte
	head int
	n    int32
	tick uint32
}

func (w *batchWriter) add(record []byte) {
	if w.n%net.MaxRecordsPerBatch == 0 {
		if w.n > 0 {
			net.SetBatchCount(w.buf[w.head:], net.MaxRecordsPerBatch)
		}
		w.head = len(w.buf)
		w.buf = net.AppendBatchHeader(w.buf, w.tick, 0)
	}
	w.buf = append(w.buf, record...)
	w.n++
}

func (w *batchWriter) finish() []byte {
	if w.n > 0 {
		net.SetBatchCount(w.buf[w.head:], int((w.n-1)%net.MaxRecordsPerBatch+1))
	}
	return w.buf
}

// reserve returns buf emptied, with room for a record from every actor in
// stencil g: a batch never needs more, so once a crowd has formed its
// buffers stop growing and the relay allocates nothing.
func (f *Frame) reserve(buf []byte, g *group) []byte {
	senders := 0
	for _, h := range g.stencil[:g.nst] {
		senders += int(f.groups[h].actors.hi - f.groups[h].actors.lo)
	}
	datagrams := (senders + net.MaxRecordsPerBatch - 1) / net.MaxRecordsPerBatch
	if need := datagrams*net.BatchHeaderSize + senders*net.RecordSize; cap(buf) < need {
		return make([]byte, 0, need+need/4)
	}
	return buf[:0]
}

// periods returns a pair's interest period and the period it gets once the
// cluster's throttle level is applied: the larger of the two, never their
// product. Pairs closer than the throttle distance are never throttled.
func (p *Pipeline) periods(distSq float32, level uint8) (interestPeriod, period uint8) {
	interestPeriod = p.tiers.PeriodSq(distSq)
	period = interestPeriod
	if level > 0 {
		period = interest.Combine(interestPeriod, p.cfg.Throttle.PeriodSq(distSq, level))
	}
	return interestPeriod, period
}

// gather builds recipient r's batch: the record of every sender in r's 3x3
// stencil that is due this tick (not r itself, changed within the pair's
// period, and on the pair's phase), visited in canonical order so the bytes
// do not depend on how the work was split. When more are due than the
// per-connection budget allows, or records are still owed from earlier
// ticks, the recipient's backlog decides (gatherOwed).
//
// This is the N^2 loop. Per pair it costs a squared distance, three
// comparisons for the period, and, for reduced pairs, one byte comparison
// of precomputed phase residues; a chosen record is one 20-byte move.
func (p *Pipeline) gather(r int32, level uint8, throttled *int64) int32 {
	f := &p.frame
	tick := f.Tick
	var oldest uint64 // changes at or before it are stale for every pair
	if tick > p.longest {
		oldest = tick - p.longest
	}
	s := f.sess[r]
	budget := p.cfg.MaxRecordsPerTick
	if s != nil && budget > 0 && s.backlog.Owed() > 0 {
		return p.gatherOwed(r, s, level, throttled)
	}
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	want := p.clock.Want(rid)
	g := &f.groups[f.group[r]]
	buf := f.reserve(f.batches[r], g)
	var (
		n, head int
		left    int   // room left in the current datagram
		count   int32 // records written
		held    int64 // pairs throttling alone kept back
	)
	for _, ci := range f.stencilCells(g) {
		lo, hi := int(f.cells[ci].actors.lo), int(f.cells[ci].actors.hi)
		changed, xs, ys, zs := f.changed[lo:hi], f.x[lo:hi], f.y[lo:hi], f.z[lo:hi]
		res, recs := f.res[lo:hi], f.records[lo:hi]
		for k, c := range changed {
			if c <= oldest || lo+k == int(r) {
				continue
			}
			dx, dy, dz := xs[k]-rx, ys[k]-ry, zs[k]-rz
			ip, period := p.periods(dx*dx+dy*dy+dz*dz, level)
			if c+uint64(period) <= tick {
				continue
			}
			if period > 1 && !p.due(&res[k], &want, period, f.id[lo+k], rid) {
				if period > ip && c+uint64(ip) > tick && (ip == 1 || p.due(&res[k], &want, ip, f.id[lo+k], rid)) {
					held++
				}
				continue
			}
			if left == 0 {
				if count > 0 {
					net.SetBatchCount(buf[head:], net.MaxRecordsPerBatch)
				}
				head = n
				buf = net.AppendBatchHeader(buf[:n], uint32(tick), 0)
				n, left = len(buf), net.MaxRecordsPerBatch
			}
			buf = buf[:n+net.RecordSize]
			*(*record)(buf[n:]) = recs[k]
			n += net.RecordSize
			left--
			count++
		}
	}
	if count > 0 {
		net.SetBatchCount(buf[head:], int((count-1)%net.MaxRecordsPerBatch+1))
	}
	f.batches[r] = buf
	if s != nil && budget > 0 && int(count) > budget {
		return p.gatherOwed(r, s, level, throttled)
	}
	*throttled += held
	f.relays[r] = count
	return count
}

// due reports whether a reduced pair (period above 1) sends this tick: by
// the residue tables for the usual short periods, else by the rule itself.
func (p *Pipeline) due(res, want *interest.Residues, period uint8, sender, recipient uint32) bool {
	if period < interest.FastPeriods {
		return res[period] == want[period]
	}
	return p.clock.Sends(interest.Phase(sender, recipient), period)
}

// visit calls fn for every sender in r's stencil that has ever changed,
// with its periods, whether it is due this tick and whether throttling
// alone kept it back.
func (p *Pipeline) visit(r int32, level uint8, fn func(a int32, ip, period uint8, due, throttled bool)) {
	f := &p.frame
	clock := p.clock
	tick := f.Tick
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	want := clock.Want(rid)
	g := &f.groups[f.group[r]]
	for _, ci := range f.stencilCells(g) {
		for a := f.cells[ci].actors.lo; a < f.cells[ci].actors.hi; a++ {
			changed := f.changed[a]
			if changed == 0 || a == r {
				continue
			}
			dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
			ip, period := p.periods(dx*dx+dy*dy+dz*dz, level)
			due := changed+uint64(period) > tick && (period <= 1 || p.due(&f.res[a], &want, period, f.id[a], rid))
			throttled := !due && period > ip && changed+uint64(ip) > tick && (ip <= 1 || p.due(&f.res[a], &want, ip, f.id[a], rid))
			fn(a, ip, period, due, throttled)
		}
	}
}

// gatherOwed builds recipient r's batch under the per-connection budget:
// every sender in view is offered to the recipient's backlog (due or still
// owed), the backlog picks at most MaxRecordsPerTick by accumulated
// priority (closer and longer-waiting senders first), and the picks are
// written in canonical order. What is cut stays owed, not lost.
func (p *Pipeline) gatherOwed(r int32, s *session, level uint8, throttled *int64) int32 {
	f := &p.frame
	longest := uint8(min(p.longest, 255))
	owed := s.backlog.Owed() > 0
	s.offered = s.offered[:0]
	p.visit(r, level, func(a int32, _, period uint8, due, thr bool) {
		if thr {
			*throttled++
		}
		if !due && !owed {
			return
		}
		s.backlog.Offer(f.id[a], interest.Weight(period, longest), due)
		s.offered = append(s.offered, a)
	})
	s.taken = s.backlog.Take(p.cfg.MaxRecordsPerTick, s.taken[:0])
	w := batchWriter{buf: f.reserve(f.batches[r], &f.groups[f.group[r]]), tick: uint32(f.Tick)}
	k := 0
	for _, a := range s.offered {
		if k < len(s.taken) && f.id[a] == s.taken[k] {
			w.add(f.recordOf(a))
			k++
		}
	}
	f.batches[r] = w.finish()
	f.relays[r] = w.n
	return w.n
}
