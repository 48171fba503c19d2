package interest

import (
	"math"
	"slices"
)

// Backlog is one recipient's priority accumulator for the per-connection
// budget. Each tick the relay offers the senders it visits; [Backlog.Take]
// picks at most budget of the candidates (this tick's due senders plus the
// ones still owed) and keeps the rest owed. A record cut from a datagram is
// owed, never lost.
//
// Rule. A candidate's priority starts at 0 and grows by its weight on every
// tick it is a candidate, so it is the sum of its weights over the ticks it
// has waited. Take sends the budget candidates of highest priority (ties:
// lower sender first) and forgets a sender's priority once it is sent. Closer
// senders carry larger weights ([Weight]), so they climb faster and are sent
// more often; a far sender keeps climbing until it outranks them.
//
// Bound. If the recipient sees at most n senders, budget is at least r >= 1
// and weights stay in wmin..wmax, then a sender first due on tick t is sent
// on tick t + [WaitBound](n, r, wmin, wmax) at the latest, as long as it
// stays in view and Take runs every tick. Proof sketch: let the sender wait
// T ticks. In the last ceil(T/2) of them its age exceeds T/2, so each of the
// r senders chosen ahead of it per tick has priority at least as high and
// hence age above T/(2W), W = wmax/wmin. A sender's age resets when it is
// sent, so one sender fills fewer than W+1 of those slots; the n-1 others
// fill fewer than (n-1)(W+1), while the slots number r*ceil(T/2). So
// T < 2(n-1)(W+1)/r.
//
// A Backlog belongs to one recipient and one goroutine at a time. The zero
// value is ready. It keeps the senders owed; what it needs only during a
// tick's round (Offers, then Take) is a [Scratch], its own unless [Backlog.Use]
// gives it a shared one. Its slices grow to the number of senders in view
// and are then reused: in steady state Offer and Take allocate nothing.
// Take costs O(candidates): a hash table, not a sort, matches offers to owed
// senders.
type Backlog struct {
	owed   []candidate // in the order they were offered
	own    Scratch     // used unless Use gave another
	shared *Scratch
}

// Scratch is the memory a [Backlog] works in during one round: the tick's
// offers, its candidates, the table matching them to the owed senders and
// the ranking keys. A relay that serves many recipients one after another
// gives them one Scratch ([Backlog.Use]): it grows once, to what the
// largest round needs, where a scratch per recipient would grow on each
// recipient's own peaks, for a long time in a crowd of a thousand. The
// zero value is ready.
type Scratch struct {
	owner  *Backlog    // whose round the offers belong to
	offers []candidate // this round's offers, in offer order
	merged []candidate // this round's candidates, in first-offer order
	table  []slot      // open addressing, sender -> owed or merged index
	keys   []uint64    // selection keys
}

// Use makes b work in s from its next round on (nil: in its own). Backlogs
// that share a Scratch must run their rounds one after another, never
// interleaved: Offer panics if another backlog's round is still open in s.
func (b *Backlog) Use(s *Scratch) { b.shared = s }

// Reserve makes room in b for n senders owed, so that a recipient that
// sees at most n senders never grows it again.
func (b *Backlog) Reserve(n int) {
	if cap(b.owed) < n {
		b.owed = slices.Grow(b.owed, n-len(b.owed))
	}
}

// Reserve makes room in s for rounds of up to n offers, owed senders
// included, so that they allocate nothing.
func (s *Scratch) Reserve(n int) {
	if cap(s.offers) < n {
		s.offers = slices.Grow(s.offers, n-len(s.offers))
	}
	if cap(s.merged) < n {
		s.merged = make([]candidate, 0, n)
	}
	if cap(s.keys) < n {
		s.keys = make([]uint64, 0, n)
	}
	if size := tableSize(2 * n); cap(s.table) < size {
		s.table = make([]slot, size)
	}
}

// scratch returns the Scratch b works in.
func (b *Backlog) scratch() *Scratch {
	if b.shared != nil {
		return b.shared
	}
	return &b.own
}

type candidate struct {
	sender   uint32
	priority uint32
	weight   uint8
	due      bool
}

// slot maps a sender to ref-1 in owed (ref > 0, top bit clear) or in merged
// (top bit set); ref 0 is an empty slot.
type slot struct {
	sender uint32
	ref    uint32
}

const mergedRef = 1 << 31

// Weight returns the accumulator weight of a pair with the given period when
// the longest period in use is longest: longest+1-period, at least 1. Full
// rate pairs get the largest weight, pairs at the longest period get 1; for
// the default tiers that is 4, 3, 2, 1.
func Weight(period, longest uint8) uint8 {
	if period >= longest {
		return 1
	}
	return longest - period + 1
}

// WaitBound returns the most ticks an owed sender waits, from the tick it
// was first due to the tick it is sent, for a recipient that sees at most
// senders senders with a budget of at least budget records per tick and
// weights in minWeight..maxWeight (weights of 0 count as 1): 0 when all
// senders fit, else floor(2(senders-1)(maxWeight+minWeight) /
// (minWeight*budget)). With 400 senders, a budget of 100 and the default
// weights 1..4 it is 39 ticks. With a budget below 1 nothing is ever sent
// and it returns math.MaxInt.
func WaitBound(senders, budget int, minWeight, maxWeight uint8) int {
	if senders <= budget {
		return 0
	}
	if budget < 1 {
		return math.MaxInt
	}
	lo, hi := max(int(minWeight), 1), max(int(maxWeight), int(minWeight), 1)
	return 2 * (senders - 1) * (hi + lo) / (lo * budget)
}

// Offer puts sender before this tick's [Backlog.Take]. due says whether the
// send rule ([Clock.Sends]) picked the pair this tick; weight is the pair's
// weight ([Weight]; 0 counts as 1). Senders are identified by a stable key,
// the sender's components.ActorID.
//
// While [Backlog.Owed] is 0 only due senders need offering (a not-due offer
// is dropped at once). While it is not, offer every sender in view: an owed
// sender that is not offered has left the recipient's view and is forgotten.
// Offering a sender twice in a tick merges the offers kept (due if either
// is, the larger weight); a not-due offer while nothing is owed is not kept.
func (b *Backlog) Offer(sender uint32, weight uint8, due bool) {
	if !due && len(b.owed) == 0 {
		return
	}
	sc := b.scratch()
	if len(sc.offers) == 0 {
		sc.owner = b
	} else if sc.owner != b {
		panic("interest: Backlog.Offer while another backlog's round is open in the shared Scratch")
	}
	sc.offers = append(sc.offers, candidate{sender: sender, weight: weight, due: due})
}

// Owed returns how many senders are owed to this recipient after the last
// Take.
func (b *Backlog) Owed() int { return len(b.owed) }

// AppendOwed appends the senders owed to this recipient after the last
// Take to dst, in the order they were offered, and returns it.
func (b *Backlog) AppendOwed(dst []uint32) []uint32 {
	for _, c := range b.owed {
		dst = append(dst, c.sender)
	}
	return dst
}

// Reset forgets everything owed and offered, keeping the memory; use it when
// the recipient leaves or its view is rebuilt.
func (b *Backlog) Reset() {
	b.owed = b.owed[:0]
	if sc := b.scratch(); sc.owner == b {
		sc.offers = sc.offers[:0]
	}
}

// Take ends the tick for this recipient: it appends to dst the senders to
// send now, at most budget of them (a budget below 0 counts as 0), in the
// order they were first offered this tick, keeps the other candidates owed
// with their grown priority, and returns the extended dst. Candidates are
// this tick's due offers and the owed senders offered again. Call it exactly
// once per tick, even when nothing was offered, so that priorities grow by
// the tick.
//
// Offered in the relay's visit order, the batch is that order with the cut
// senders left out, the same on any core count.
func (b *Backlog) Take(budget int, dst []uint32) []uint32 {
	sc := b.scratch()
	if len(sc.offers) == 0 || sc.owner != b {
		b.owed = b.owed[:0] // nothing offered: every owed sender left the view
		return dst
	}
	b.merge(sc)
	sc.offers = sc.offers[:0]
	cands := sc.merged
	b.owed = b.owed[:0]
	if len(cands) <= budget {
		for _, c := range cands {
			dst = append(dst, c.sender)
		}
		return dst
	}
	// Room for every candidate the budget leaves owed, with a margin: owed
	// persists from tick to tick, so it grows in a few large steps rather
	// than by doubling each time this recipient's crowd peaks, and from
	// MinOwedRoom, which most recipients of a crowd never pass. Room is
	// made for what is owed, not for every sender in view: in a crowd of
	// thousands that would be a hundred kilobytes a recipient, most of it
	// never used.
	if owe := len(cands) - max(budget, 0); cap(b.owed) < owe {
		b.owed = make([]candidate, 0, max(owe+owe/2, MinOwedRoom))
	}
	if budget <= 0 {
		b.owed = append(b.owed, cands...)
		return dst
	}
	// Rank by priority, then lower sender first. Keys are unique per sender,
	// so exactly budget candidates reach the threshold.
	keys := sc.keys[:0]
	for _, c := range cands {
		keys = append(keys, rankKey(c))
	}
	sc.keys = keys
	threshold := nthLargest(keys, budget)
	for _, c := range cands {
		if rankKey(c) >= threshold {
			dst = append(dst, c.sender)
		} else {
			b.owed = append(b.owed, c)
		}
	}
	return dst
}

// MinOwedRoom is the fewest senders a backlog makes room for once it owes
// any (768 bytes). A server reserves it ([Backlog.Reserve]) when a client
// connects, so that the tick a client first owes allocates nothing.
const MinOwedRoom = 64

func rankKey(c candidate) uint64 {
	return uint64(c.priority)<<32 | uint64(^c.sender)
}

// merge fills sc.merged with this round's candidates, in first-offer
// order, their priorities grown by one tick.
func (b *Backlog) merge(sc *Scratch) {
	size := tableSize(len(b.owed) + len(sc.offers))
	if cap(sc.table) < size {
		sc.table = make([]slot, size)
	}
	table := sc.table[:size]
	clear(table)
	mask := uint32(size - 1)
	for i, o := range b.owed {
		h := hashSender(o.sender) & mask
		for table[h].ref != 0 {
			h = (h + 1) & mask
		}
		table[h] = slot{sender: o.sender, ref: uint32(i) + 1}
	}
	m := sc.merged[:0]
	for _, c := range sc.offers {
		h := hashSender(c.sender) & mask
		for table[h].ref != 0 && table[h].sender != c.sender {
			h = (h + 1) & mask
		}
		s := &table[h]
		switch {
		case s.ref&mergedRef != 0: // offered twice this tick
			prev := &m[s.ref&^mergedRef-1]
			prev.due = prev.due || c.due
			prev.weight = max(prev.weight, c.weight)
			continue
		case s.ref != 0: // owed
			c.priority = b.owed[s.ref-1].priority
		case !c.due: // neither owed nor due
			continue
		}
		m = append(m, c)
		*s = slot{sender: c.sender, ref: uint32(len(m)) | mergedRef}
	}
	for i := range m {
		m[i].priority = grow(m[i].priority, max(m[i].weight, 1))
	}
	sc.merged = m
}

// tableSize is the size of the hash table for n entries: a power of two,
// at least 16 and at least twice n.
func tableSize(n int) int {
	size := 16
	for size < 2*n {
		size *= 2
	}
	return size
}

// hashSender spreads sequential ids over the table (Fibonacci hashing; the
// table mask keeps the low bits, so fold the high ones down first).
func hashSender(s uint32) uint32 {
	h := s * 0x9e3779b1
	return h ^ h>>16
}

func grow(p uint32, w uint8) uint32 {
	if p > math.MaxUint32-math.MaxUint8 {
		return math.MaxUint32
	}
	return p + uint32(w)
}

// nthLargest returns the k-th largest of keys (1 <= k <= len(keys)),
// reordering keys. Quickselect with a median-of-three pivot: linear on
// average, and deterministic.
func nthLargest(keys []uint64, k int) uint64 {
	lo, hi := 0, len(keys)-1
	want := len(keys) - k // index of the answer in ascending order
	for lo < hi {
		mid := lo + (hi-lo)/2
		// Median of three to keys[hi] as the pivot.
		if keys[mid] < keys[lo] {
			keys[mid], keys[lo] = keys[lo], keys[mid]
		}
		if keys[hi] < keys[lo] {
			keys[hi], keys[lo] = keys[lo], keys[hi]
		}
		if keys[mid] < keys[hi] {
			keys[mid], keys[hi] = keys[hi], keys[mid]
		}
		pivot := keys[hi]
		p := lo
		for i := lo; i < hi; i++ {
			if keys[i] < pivot {
				keys[i], keys[p] = keys[p], keys[i]
				p++
			}
		}
		keys[p], keys[hi] = keys[hi], keys[p]
		switch {
		case p == want:
			return keys[p]
		case p < want:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
	return keys[want]
}
