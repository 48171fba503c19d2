package scheduler

import (
	"math"
	"slices"
)

const (
	// costAlpha weighs the newest measurement in a key's EWMA: a unit that
	// doubles in cost is ranked by the new cost within a few runs, while one
	// noisy run moves it by a quarter.
	costAlpha = 0.25
	// A key not seen for forgetAfterRuns Runs is dropped by the sweep that
	// runs every forgetAfterRuns Runs, so the table stays about the size of
	// the live population (clusters come and go) without a per-Run scan.
	forgetAfterRuns = 256
)

// costModel learns unit costs for longest-first dispatch. Keys map to slots
// of a dense table; a Run looks each key up once (in rank) and observe
// updates the slots directly.
type costModel struct {
	slotOf map[uint64]int32
	table  []keyCost
	free   []int32 // slots of forgotten keys, reused first
	slots  []int32 // this Run's slot per unit, -1 for none yet
	runs   uint64
	// nsPerCost converts a caller's Cost to nanoseconds; 0 until a unit
	// with a positive Cost has been measured.
	nsPerCost float64
}

type keyCost struct {
	key  uint64  // 0 for a free slot
	ns   float64 // EWMA of measured nanoseconds
	seen uint64  // run number of the last measurement
}

func newCostModel() costModel {
	return costModel{slotOf: make(map[uint64]int32)}
}

// estimate is the learned cost of key in nanoseconds.
func (m *costModel) estimate(key uint64) (float64, bool) {
	if key == 0 {
		return 0, false
	}
	s, ok := m.slotOf[key]
	if !ok {
		return 0, false
	}
	return m.table[s].ns, true
}

// predict is the expected cost of unit i in nanoseconds (or in the caller's
// measure before any conversion ratio is known), and remembers its slot.
func (m *costModel) predict(i int, u Unit) float64 {
	m.slots[i] = -1
	if u.Key != 0 {
		if s, ok := m.slotOf[u.Key]; ok {
			m.slots[i] = s
			return m.table[s].ns
		}
	}
	cost := u.Cost
	if !(cost > 0) { // negative or NaN
		return 0
	}
	if m.nsPerCost > 0 {
		return cost * m.nsPerCost
	}
	return cost
}

// rank returns the dispatch order of units: predicted cost descending,
// index ascending among equals. The slice is reused by the next call.
func (p *Pool) rank(units []Unit) []int32 {
	m := &p.costs
	m.slots = slices.Grow(m.slots[:0], len(units))[:len(units)]
	p.ranked = slices.Grow(p.ranked[:0], len(units))
	for i, u := range units {
		p.ranked = append(p.ranked, rankKey(m.predict(i, u), i))
	}
	slices.Sort(p.ranked)
	p.order = slices.Grow(p.order[:0], len(units))
	for _, k := range p.ranked {
		p.order = append(p.order, int32(uint32(k)))
	}
	return p.order
}

// rankKey packs a cost and an index so that ascending keys are descending
// costs, then ascending indices: a plain integer sort, with no comparison
// callback, is the longest-first order. The cost keeps float32 precision,
// plenty to rank by; for non-negative floats the bit pattern grows with the
// value.
func rankKey(cost float64, index int) uint64 {
	if !(cost > 0) {
		cost = 0
	}
	return uint64(^math.Float32bits(float32(cost)))<<32 | uint64(uint32(index))
}

// observe feeds one Run's measured unit times (ns, by unit index) back. The
// slots from this Run's rank are still valid: nothing is forgotten between
// rank and observe.
func (m *costModel) observe(units []Unit, took []int64) {
	m.runs++
	var sumNs, sumCost float64
	for i, u := range units {
		ns := float64(took[i])
		if u.Cost > 0 && !math.IsInf(u.Cost, 1) {
			sumNs += ns
			sumCost += u.Cost
		}
		if u.Key == 0 {
			continue
		}
		s := m.slots[i]
		if s < 0 {
			s = m.learn(u.Key, ns) // first sight, or the key repeats in this Run
		}
		c := &m.table[s]
		switch {
		case c.seen == m.runs:
			c.ns = (c.ns + ns) / 2 // the key appears twice in one Run
		case c.seen == 0:
			c.ns = ns // just learned
		default:
			c.ns += costAlpha * (ns - c.ns)
		}
		c.seen = m.runs
	}
	if sumCost > 0 {
		ratio := sumNs / sumCost
		if m.nsPerCost == 0 {
			m.nsPerCost = ratio
		} else {
			m.nsPerCost += costAlpha * (ratio - m.nsPerCost)
		}
	}
	if m.runs%forgetAfterRuns == 0 {
		m.forget()
	}
}

// learn returns key's slot, giving it one (seen 0) if it has none.
func (m *costModel) learn(key uint64, ns float64) int32 {
	if s, ok := m.slotOf[key]; ok {
		return s
	}
	var s int32
	if n := len(m.free); n > 0 {
		s, m.free = m.free[n-1], m.free[:n-1]
	} else {
		s = int32(len(m.table))
		m.table = append(m.table, keyCost{})
	}
	m.table[s] = keyCost{key: key, ns: ns}
	m.slotOf[key] = s
	return s
}

// forget frees the slots of keys not seen for forgetAfterRuns Runs.
func (m *costModel) forget() {
	for s := range m.table {
		c := &m.table[s]
		if c.key != 0 && m.runs-c.seen >= forgetAfterRuns {
			delete(m.slotOf, c.key)
			*c = keyCost{}
			m.free = append(m.free, int32(s))
		}
	}
}
