package systems

import (
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net"
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
type dueLists struct {
	periods []uint8                     // the table's periods, ascending, 1 first; only those below FastPeriods
	slot    [interest.FastPeriods]int32 // per period: its first slot (period p has slots slot[p] to slot[p]+p-1); -1 if not listed
	nslots  int32                       // slots per cell: the sum of periods
	ncells  int32                       // cells this tick
	off     []int32                     // per slot and cell: where its list starts in picks; one extra entry ends the last
	picks   []int32                     // sender indices, list after list
	packed  []byte                      // the records of picks, in the same order
	// masks holds the same lists as bit sets, per cell and slot (bit i:
	// the cell's i-th actor), for cells of at most maskActors actors.
	masks []uint64
}

// maskActors is the most actors a cell may have for its lists to be kept
// as bit sets too.
const maskActors = 64

// setPeriods lists the periods of tiers that due lists are built for.
func (d *dueLists) setPeriods(tiers *interest.Tiers) {
	d.periods = d.periods[:0]
	for i := range d.slot {
		d.slot[i] = -1
	}
	d.nslots = 0
	for _, p := range tiers.Periods(nil) {
		if int(p) >= interest.FastPeriods {
			continue
		}
		d.periods = append(d.periods, p)
		d.slot[p] = d.nslots
		d.nslots += int32(p)
	}
}

// build makes this tick's lists from the frame's cells, after Move.
//
// The lists are laid out slot by slot, and within a slot cell by cell: the
// lists of one slot for consecutive cells are adjacent in picks and packed,
// so a recipient that receives the same slot from a run of consecutive
// cells (a row of its stencil in one band) copies the run as one block.
func (d *dueLists) build(f *Frame) {
	ncells := len(f.cells)
	d.ncells = int32(ncells)
	d.off = resizeSlice(d.off, ncells*int(d.nslots)+1)
	d.picks = resizeSlice(d.picks, f.Len()*len(d.periods))
	clear(d.off)
	tick := f.Tick
	// Count each list's senders into off[k+1] (k = slot*ncells + cell) ...
	for ci := range f.cells {
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		changed, res := f.changed[lo:hi], f.res[lo:hi]
		for _, p := range d.periods {
			base := int(d.slot[p])*ncells + ci + 1
			if p == 1 {
				for _, c := range changed {
					d.off[base] += int32(b2i(c == tick))
				}
				continue
			}
			for i, c := range changed {
				if c+uint64(p) > tick && c != 0 {
					d.off[base+int(res[i][p])*ncells]++
				}
			}
		}
	}
	// ... turn the counts into starts ...
	for k := 1; k < len(d.off); k++ {
		d.off[k] += d.off[k-1]
	}
	// ... and place the senders, cell by cell in canonical order, so each
	// list keeps that order. off[k] serves as list k's cursor and ends at
	// list k's end, which is list k+1's start: shifted back below.
	d.masks = resizeSlice(d.masks, ncells*int(d.nslots))
	clear(d.masks)
	for ci := range f.cells {
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		changed, res := f.changed[lo:hi], f.res[lo:hi]
		masks := d.masks[ci*int(d.nslots) : (ci+1)*int(d.nslots)]
		small := hi-lo <= maskActors
		for _, p := range d.periods {
			for i, c := range changed {
				if c+uint64(p) > tick && c != 0 { // for p == 1: c == tick
					slot := int(d.slot[p])
					if p > 1 {
						slot += int(res[i][p])
					}
					k := slot*ncells + ci
					d.picks[d.off[k]] = lo + int32(i)
					d.off[k]++
					if small {
						masks[slot] |= 1 << i
					}
				}
			}
		}
	}
	copy(d.off[1:], d.off[:len(d.off)-1])
	d.off[0] = 0
	n := d.off[len(d.off)-1]
	d.picks = d.picks[:n]
	d.packed = resizeSlice(d.packed, int(n)*net.RecordSize)
	for i, a := range d.picks {
		o := int(a) * net.RecordSize
		copyRecord(d.packed[i*net.RecordSize:(i+1)*net.RecordSize], f.records[o:o+net.RecordSize])
	}
}

// recipientSlots returns, per listed period, the slot of the list a
// recipient with the given wanted residues receives; -1 for periods
// without lists.
func (d *dueLists) recipientSlots(want *interest.Residues) [interest.FastPeriods]int32 {
	slots := d.slot
	for _, p := range d.periods[1:] {
		slots[p] += int32(want[p])
	}
	return slots
}

// mask returns the list of cell ci's slot as a bit set; only for cells of
// at most maskActors actors.
func (d *dueLists) mask(ci, slot int32) uint64 { return d.masks[ci*d.nslots+slot] }

// list returns the list of cell ci's slot: its sender indices' range in
// picks.
func (d *dueLists) list(ci, slot int32) (lo, hi int32) {
	k := slot*d.ncells + ci
	return d.off[k], d.off[k+1]
}
