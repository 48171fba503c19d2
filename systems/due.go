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
	slot    [interest.FastPeriods]int32 // per period: its first slot in a cell's run of slots; -1 if not listed
	nslots  int32                       // slots per cell: the sum of periods
	off     []int32                     // per cell and slot: where its list starts in picks; one extra entry ends the last
	picks   []int32                     // sender indices, list after list
	packed  []byte                      // the records of picks, in the same order
}

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
func (d *dueLists) build(f *Frame) {
	d.off = resizeSlice(d.off, len(f.cells)*int(d.nslots)+1)
	d.picks = resizeSlice(d.picks, f.Len()*len(d.periods))
	tick := f.Tick
	var at int32
	k := 0
	for ci := range f.cells {
		lo, hi := f.cells[ci].actors.lo, f.cells[ci].actors.hi
		changed, res := f.changed[lo:hi], f.res[lo:hi]
		for _, p := range d.periods {
			if p == 1 {
				d.off[k] = at
				k++
				for i, c := range changed {
					if c == tick {
						d.picks[at] = lo + int32(i)
						at++
					}
				}
				continue
			}
			// A counting sort by residue, stable, so each list keeps the
			// canonical order.
			var cursor [interest.FastPeriods]int32
			for i, c := range changed {
				if c+uint64(p) > tick {
					cursor[res[i][p]]++
				}
			}
			for w := range int(p) {
				n := cursor[w]
				d.off[k] = at
				cursor[w] = at
				at += n
				k++
			}
			for i, c := range changed {
				if c+uint64(p) > tick {
					w := res[i][p]
					d.picks[cursor[w]] = lo + int32(i)
					cursor[w]++
				}
			}
		}
	}
	d.off[k] = at
	d.picks = d.picks[:at]
	d.packed = resizeSlice(d.packed, int(at)*net.RecordSize)
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

// list returns the list of cell ci's slot: its sender indices' range in
// picks.
func (d *dueLists) list(ci, slot int32) (lo, hi int32) {
	k := ci*d.nslots + slot
	return d.off[k], d.off[k+1]
}
