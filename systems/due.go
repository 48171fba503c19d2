package systems

import (
	"math/bits"
	"slices"

	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
)

// Due lists: for each cell, each period of the interest table and each
// residue w of that period, the senders of the cell that are due to every
// recipient whose pair residue is w, in canonical order, and their records
// packed back to back.
//
// Whether a sender is due to a recipient at period p depends on the
// recipient only through one number: the residue modulo p that the
// sender's phase half must have this tick (interest.Clock.Want). So the
// senders of a cell split, for each p, into p lists, and every recipient
// whose cell pair with that cell is uniform at period p (one band: see
// classify) receives exactly one of them, whole. The relay then copies one
// block per cell pair instead of deciding and copying sender by sender;
// BeginRelay builds the lists once per tick, which costs each actor one
// pass per period, not one per recipient.
//
// The periods are those of the interest table and, for clients over their
// per-connection budget, the same stretched by each client's spread (the
// spreads of a crowd are few distinct values), so a budgeted crowd takes
// the same block copies. A spread beyond the longest tier period, below
// 255, gets one set of lists instead, modulo the spread (base lists; the
// relay checks each of their senders at its pair's stretched period, see
// gatherBase): its stretched periods hold a sender or two per list, and
// listing each of them cost ten times the slots (2,000 budgeted players:
// 87,000 list offsets a tick, most of the relay's serial setup). Where it
// stretches a band's period past 255, the period stops at 255, which the
// spread does not divide: that band's senders come from one more set,
// modulo 255 (the capped lists), shared by every such spread. Residues
// come from each sender's phase half (interest.SenderHalf), by
// multiplication, for any period.
type dueLists struct {
	tierPeriods []uint8 // the interest table's periods, ascending, 1 first
	// This tick's periods: the tier periods, and each stretched by every
	// spread a client over its per-connection budget has (a pair's period
	// is its tier period times the recipient's spread).
	periods []uint8
	slot    [256]int32  // per period: its first slot (period p has slots slot[p] to slot[p]+p-1); -1 if not listed
	magic   [256]uint64 // per period p >= 2: ceil(2^64 / p), for remainders without division
	tickDue [256]uint32 // per listed period p: (p - tick mod p) mod p
	// listedSpread[s]: recipients with spread s have lists this tick.
	listedSpread [256]bool
	// Spreads above the longest tier period, below 255, get one set of
	// lists instead of one per tier period: by residue modulo the spread
	// itself (base lists), holding every sender that changed within the
	// longest stretched period (255 at most). A recipient reads its one
	// base list of each cell and checks each sender in it at the pair's
	// own stretched period (gatherBase); a few bases cost a tenth of the
	// slots their stretched periods would. based[s]: spread s has base
	// lists this tick, from slot baseSlot[s].
	bases    []uint8
	based    [256]bool
	baseSlot [256]int32
	// capSlot is the first slot of the capped lists (-1: none this tick):
	// base lists modulo 255 of the senders that changed within 255 ticks,
	// for the bands whose periods a based spread stretches past 255, which
	// stop there (stretch) and so are no multiples of the spread. A
	// recipient at such a spread reads its base list for the bands below
	// the cap and its capped list for those at it (gatherBase).
	capSlot int32
	// sets are this tick's lists to build, periods then bases: modulus,
	// window (a sender is in while changed within it) and first slot.
	sets []listSet
	// idle: no lists this tick (none), not even spread 1's.
	idle bool
	// slotBudget overrides plan's limit on slots per cell (tests).
	slotBudget int
	nslots     int32   // slots per cell: the sum of this tick's periods
	ncells     int32   // cells this tick
	stride     int32   // entries of a row of off: ncells and one past the last list
	off        []int32 // per slot, a row: per cell, where its list starts in picks, then where the last one ends
	picks      []int32 // sender indices, list after list; readable a group of eight past the end (chooseBased8)
	packed     []byte  // the records of picks, in the same order; the period lists' only (base lists are read from cands)
	// cands holds what the relay reads of each sender of the base lists
	// (gatherBase), in picks' order from candsAt: read in order, where
	// the frame's columns would be gathered sender by sender.
	cands   baseCands
	candsAt int32
	// cycle is the least common multiple of the tier periods, or 0 when
	// it passes 64 (the relay then computes each candidate's residue);
	// every[t], for each tier period t, has the bits q below cycle with
	// q mod t == 0.
	cycle uint8
	every [256]uint64
	// masks holds the same lists as bit sets, per slot and cell (bit i:
	// the cell's i-th actor), for cells of at most maskActors actors, on
	// ticks with at most maskSlots slots (no spread, or a few); on others
	// mask derives them from the lists. The period lists' only: a base
	// list is read from cands.
	masks  []uint64
	masked bool
}

// baseCands holds the senders of the base lists as chooseBased decides
// them, a column each, so that chooseBased8 loads eight of a column at
// once: where each stands, its cell, the ticks since it changed (255 at
// most: the stretched periods of based spreads are shorter) and its
// half's quotient by the spread modulo the cycle (when the cycle is short:
// with every sender of the list at one residue modulo the spread s, the
// quotient says the residue modulo each stretched period t*s, t a tier
// period, which divides the cycle, so the relay checks a candidate with a
// shift). Every column is readable a group of eight past its end.
type baseCands struct {
	x, y, z   []float32
	cell      []int32
	age, quot []uint8
}

// resize makes the columns n long.
func (c *baseCands) resize(n int) {
	c.x, c.y, c.z = padded(c.x, n), padded(c.y, n), padded(c.z, n)
	c.cell, c.age, c.quot = padded(c.cell, n), padded(c.age, n), padded(c.quot, n)
}

// slice returns candidates lo to hi-1.
func (c *baseCands) slice(lo, hi int32) baseCands {
	return baseCands{c.x[lo:hi], c.y[lo:hi], c.z[lo:hi], c.cell[lo:hi], c.age[lo:hi], c.quot[lo:hi]}
}

// padded is resizeSlice with room for a group of sixteen past the end,
// which the vector kernels read whole (and then ignore).
func padded[T any](s []T, n int) []T {
	return resizeSlice(s, n+16)[:n]
}

// listSet is one period's lists, or one spread's base lists (dueLists).
type listSet struct {
	mod    uint8
	window uint64
	slot   int32
}

// maskSlots is the most slots per cell for which build keeps the lists as
// bit sets too; beyond it (many spreads in use) clearing them every tick
// would cost more than deriving the few a recipient needs.
const maskSlots = 64

// maskActors is the most actors a cell may have for its lists to be taken
// as bit sets (dueLists.mask).
const maskActors = 64

// setPeriods records the periods of the interest tables, every class's:
// ascending, each once.
func (d *dueLists) setPeriods(sets []interest.Tiers) {
	d.tierPeriods = d.tierPeriods[:0]
	for i := range sets {
		d.tierPeriods = sets[i].Periods(d.tierPeriods)
	}
	slices.Sort(d.tierPeriods)
	d.tierPeriods = slices.Compact(d.tierPeriods)
	for p := 2; p < len(d.magic); p++ {
		d.magic[p] = ^uint64(0)/uint64(p) + 1
	}
	cycle := 1
	for _, t := range d.tierPeriods {
		if cycle = cycle * int(t) / gcd(cycle, int(t)); cycle > 64 {
			break
		}
	}
	d.cycle = 0
	if cycle > 64 {
		return
	}
	d.cycle = uint8(cycle)
	for _, t := range d.tierPeriods {
		d.every[t] = 0
		for q := 0; q < cycle; q += int(t) {
			d.every[t] |= 1 << q
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// quotient returns x / p modulo the cycle (p at least 2, a cycle of at
// most 64).
func (d *dueLists) quotient(x uint32, p uint8) uint8 {
	return uint8(d.residue(d.divide(x, p), d.cycle))
}

// divide returns x / p (p at least 2) by multiplication: Lemire, Kaser and
// Kurz's x / p, exact for every x below 2^32 with p's magic.
func (d *dueLists) divide(x uint32, p uint8) uint32 {
	q, _ := bits.Mul64(d.magic[p], uint64(x))
	return uint32(q)
}

// plan chooses this tick's periods: the tier periods, and those stretched
// by the spreads in use (spreads[s] counts the recipients with spread s),
// most used first, as long as the lists stay small next to the frame:
// their offsets cost ncells entries per slot, their picks an entry per
// actor and period. A spread left out has no lists this tick; its
// recipients are decided pair by pair, with the same result (listed
// reports which).
//
// With unlistedOne, recipients at spread 1 read no lists (the dense walk
// takes them), and the tier periods are listed only where a spread
// stretches a period onto one of them: a tick may then have no sets.
func (d *dueLists) plan(tick uint64, spreads *[256]int32, ncells, actors int, unlistedOne bool) {
	d.idle = false
	var inUse [256]bool
	nslots, nperiods := 0, 0
	if !unlistedOne {
		for _, p := range d.tierPeriods {
			inUse[p] = true
			nslots += int(p)
		}
		nperiods = len(d.tierPeriods)
	}
	budget := d.slotBudget
	if budget == 0 {
		budget = max(maxListCells/max(ncells, 1), nslots)
	}
	clear(d.listedSpread[:])
	clear(d.based[:])
	d.bases = d.bases[:0]
	d.listedSpread[1] = !unlistedOne
	longest := d.tierPeriods[len(d.tierPeriods)-1]
	capped := false // a based spread needs the capped lists
	for {
		// The most used spread not yet considered (ties: the smaller).
		best := 0
		for s := 2; s < len(spreads); s++ {
			if spreads[s] > 0 && !d.listedSpread[s] && (best == 0 || spreads[s] > spreads[best]) {
				best = s
			}
		}
		if best == 0 {
			break
		}
		spreads[best] = 0 // considered
		if best > int(longest) && best < 255 {
			// Base lists: one set, modulo the spread, and the capped
			// lists where a band's stretched period stops at 255.
			addSlots, addPeriods := best, 1
			if best*int(longest) > 255 && !capped {
				addSlots, addPeriods = addSlots+255, addPeriods+1
			}
			if nslots+addSlots > budget || (nperiods+addPeriods)*actors > maxListPicks {
				continue
			}
			nslots, nperiods = nslots+addSlots, nperiods+addPeriods
			capped = capped || best*int(longest) > 255
			d.listedSpread[best], d.based[best] = true, true
			d.bases = append(d.bases, uint8(best))
			continue
		}
		addSlots, addPeriods := 0, 0
		for _, p := range d.tierPeriods {
			if q := stretch(p, uint8(best)); !inUse[q] {
				addSlots += int(q)
				addPeriods++
			}
		}
		if nslots+addSlots > budget || (nperiods+addPeriods)*actors > maxListPicks {
			continue
		}
		for _, p := range d.tierPeriods {
			inUse[stretch(p, uint8(best))] = true
		}
		nslots, nperiods = nslots+addSlots, nperiods+addPeriods
		d.listedSpread[best] = true
	}
	d.periods = d.periods[:0]
	d.nslots = 0
	for p := range d.slot {
		d.slot[p] = -1
		if p == 0 || !inUse[p] {
			continue
		}
		d.periods = append(d.periods, uint8(p))
		d.slot[p] = d.nslots
		d.nslots += int32(p)
		d.tickDue[p] = tickDue(uint8(p), tick)
	}
	d.sets = d.sets[:0]
	for _, p := range d.periods {
		d.sets = append(d.sets, listSet{mod: p, window: uint64(p), slot: d.slot[p]})
	}
	slices.Sort(d.bases)
	for _, b := range d.bases {
		d.baseSlot[b] = d.nslots
		d.nslots += int32(b)
		d.tickDue[b] = tickDue(b, tick)
		d.sets = append(d.sets, listSet{mod: b, window: uint64(stretch(longest, b)), slot: d.baseSlot[b]})
	}
	d.capSlot = -1
	if capped {
		d.capSlot = d.nslots
		d.nslots += 255
		d.tickDue[255] = tickDue(255, tick)
		d.sets = append(d.sets, listSet{mod: 255, window: 255, slot: d.capSlot})
	}
}

// capListSlot returns the slot of the capped lists (capSlot, which must
// exist) that a recipient with phase half rhalf reads this tick: the
// senders whose half h has (h + rhalf + tick) mod 255 == 0, the only ones
// that can be due to it in a band whose stretched period stops at 255.
func (d *dueLists) capListSlot(rhalf uint32) int32 {
	return d.capSlot + int32(d.wantResidue(255, d.tickDue[255], rhalf))
}

// none plans no lists for this tick (Pipeline.listsIdle): no spread is
// listed or based.
func (d *dueLists) none() {
	d.idle = true
	clear(d.listedSpread[:])
	clear(d.based[:])
	d.bases, d.sets, d.periods, d.nslots, d.capSlot = d.bases[:0], d.sets[:0], d.periods[:0], 0, -1
}

// baseListSlot returns the slot of spread s's base lists (based[s]) that a
// recipient with phase half rhalf reads this tick: the senders whose half
// h has (h + rhalf + tick) mod s == 0, the only ones that can be due to it
// at any of its stretched periods (each a multiple of s).
func (d *dueLists) baseListSlot(s uint8, rhalf uint32) int32 {
	return d.baseSlot[s] + int32(d.wantResidue(s, d.tickDue[s], rhalf))
}

// The lists' size limits for spreads beyond 1 (plan): list offsets
// (cells times slots) and picks (actors times periods).
const (
	maxListCells = 1 << 18
	maxListPicks = 1 << 20
)

// listed reports whether a recipient with this spread has lists this tick.
func (d *dueLists) listed(spread uint8) bool { return d.listedSpread[spread] }

// residue returns x mod p (p listed), by Lemire, Kaser and Kurz's
// remainder by multiplication, as interest.Clock does.
func (d *dueLists) residue(x uint32, p uint8) uint32 {
	if p == 1 {
		return 0
	}
	return d.residueAbove1(x, p)
}

// residueAbove1 is residue for a period p of at least 2, without a branch.
func (d *dueLists) residueAbove1(x uint32, p uint8) uint32 {
	hi, _ := bits.Mul64(d.magic[p]*uint64(x), uint64(p))
	return uint32(hi)
}

// recipientSlot returns the slot of period p (listed) whose list a
// recipient with phase half rhalf receives this tick: the senders whose
// half h has (h + rhalf + tick) mod p == 0.
func (d *dueLists) recipientSlot(p uint8, rhalf uint32) int32 {
	return d.slot[p] + int32(d.wantResidue(p, d.tickDue[p], rhalf))
}

// wantResidue returns the residue modulo p that a sender's phase half h
// must have to be due to a recipient with half rhalf at period p this
// tick: (h + rhalf + tick) mod p == 0, tickDue being (p - tick mod p) mod p.
func (d *dueLists) wantResidue(p uint8, tickDue, rhalf uint32) uint32 {
	w := int32(tickDue) - int32(d.residue(rhalf, p))
	if w < 0 {
		w += int32(p)
	}
	return uint32(w)
}

// tickDue returns (p - tick mod p) mod p, what wantResidue takes.
func tickDue(p uint8, tick uint64) uint32 {
	return uint32((uint64(p) - tick%uint64(p)) % uint64(p))
}

// The lists are built set by set after Move (buildSet), and the sets are
// independent: each has its own rows of off (one per slot: ncells entries
// and one past the last list), its own range of picks and packed (from
// j*actors for set j: an actor is in at most one list of a set), and its
// own rows of masks. So the sets build in parallel without sharing a line
// but at their ends, and no step between them is serial. Within a set the
// lists are laid out slot by slot, and within a slot cell by cell: the
// lists of one slot for consecutive cells are adjacent in picks and
// packed, so a recipient that receives the same slot from a run of
// consecutive cells (a row of its stencil in one band) copies the run as
// one block. (Cut by cells instead, the parts' writes interleave in every
// row: square/1000 has 25 cells, a row of off 100 bytes.)

// beginBuild sizes the lists for this tick's cells, sets and actors.
func (d *dueLists) beginBuild(f *Frame) {
	ncells := len(f.cells)
	d.ncells = int32(ncells)
	d.stride = d.ncells + 1
	d.off = resizeSlice(d.off, int(d.stride)*int(d.nslots))
	d.picks = padded(d.picks, f.Len()*len(d.sets))
	d.candsAt = int32(len(d.periods) * f.Len()) // the base sets come last (plan)
	d.packed = resizeSlice(d.packed, int(d.candsAt)*wire.RecordSize)
	if based := len(d.sets) - len(d.periods); based > 0 { // the bases, and the capped lists
		d.cands.resize(based * f.Len())
	}
	d.masked = d.nslots <= maskSlots
	if d.masked {
		d.masks = resizeSlice(d.masks, ncells*int(d.nslots))
	}
}

// buildSet builds set j's lists from the frame's cells: counts each list's
// senders, turns the counts into ends, then places the senders and their
// records from the last back, so that each list keeps the canonical order
// and its entry in off, its cursor, ends at its start.
func (d *dueLists) buildSet(f *Frame, j int) {
	set := d.sets[j]
	ncells, stride := int(d.ncells), int(d.stride)
	rows := d.off[int(set.slot)*stride : (int(set.slot)+int(set.mod))*stride]
	clear(rows)
	tick := f.Tick
	for ci := range f.cells {
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		changed, half := f.changed[lo:hi], f.half[lo:hi]
		if set.mod == 1 {
			n := int32(0)
			for _, c := range changed {
				n += int32(b2i(c == tick))
			}
			rows[ci] = n
			continue
		}
		for i, c := range changed {
			if c+set.window > tick && c != 0 {
				rows[ci+int(d.residue(half[i], set.mod))*stride]++
			}
		}
	}
	at := int32(j * f.Len())
	for r := 0; r < len(rows); r += stride {
		row := rows[r : r+stride]
		for k, n := range row[:ncells] {
			at += n
			row[k] = at
		}
		row[ncells] = at
	}
	based := j >= len(d.periods) // a base set (plan)
	var masks []uint64
	if d.masked && !based {
		masks = d.masks[int(set.slot)*ncells : (int(set.slot)+int(set.mod))*ncells]
		clear(masks)
	}
	for ci := ncells - 1; ci >= 0; ci-- {
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		changed, half := f.changed[lo:hi], f.half[lo:hi]
		small := masks != nil && hi-lo <= maskActors
		for i := len(changed) - 1; i >= 0; i-- {
			if c := changed[i]; c+set.window > tick && c != 0 && (set.mod > 1 || c == tick) {
				w := int(d.residue(half[i], set.mod))
				k := w*stride + ci
				rows[k]--
				at := rows[k]
				a := lo + int32(i)
				d.picks[at] = a
				if based { // read as candidates (gatherBase), never as records or masks
					bc, k := &d.cands, at-d.candsAt
					bc.x[k], bc.y[k], bc.z[k], bc.cell[k] = f.x[a], f.y[a], f.z[a], int32(ci)
					bc.age[k], bc.quot[k] = uint8(min(tick-c, 255)), 0
					if d.cycle > 0 {
						bc.quot[k] = d.quotient(half[i], set.mod)
					}
					continue
				}
				copyRecord(d.packed[int(at)*wire.RecordSize:int(at+1)*wire.RecordSize], f.recordOf(a))
				if small {
					masks[w*ncells+ci] |= 1 << i
				}
			}
		}
	}
}

// mask returns the list of cell ci's slot as a bit set, bit i for the
// cell's i-th actor; the cell, whose first actor is cellLo, has at most
// maskActors actors.
func (d *dueLists) mask(ci, slot, cellLo int32) uint64 {
	if d.masked {
		return d.masks[slot*d.ncells+ci]
	}
	lo, hi := d.list(ci, slot)
	var set uint64
	for _, a := range d.picks[lo:hi] {
		set |= 1 << (a - cellLo)
	}
	return set
}

// lists returns the lists of slot for cells first to last, back to back,
// as one range of picks.
func (d *dueLists) lists(first, last, slot int32) (lo, hi int32) {
	r := slot * d.stride
	return d.off[r+first], d.off[r+last+1]
}

// list returns the list of cell ci's slot: its sender indices' range in
// picks.
func (d *dueLists) list(ci, slot int32) (lo, hi int32) {
	k := slot*d.stride + ci
	return d.off[k], d.off[k+1]
}
