package systems

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/net/wire"
)

// TestDueListsHoldExactlyTheirSenders checks every list the relay reads,
// as it reads them, against the rule: the list of cell c at a set's slot
// w holds, in canonical order, c's senders that changed within the set's
// window (this tick, for period 1) and whose phase half is w modulo the
// set's period, with their records (a base list: where each stands, its
// cell, age and quotient, as chooseBased reads them); a run of cells reads
// their lists back to back; a small cell's bit set has the same senders
// (period lists). A third of the
// crowd stands still each tick, so the sets are not full and some lists
// end short of their set's room, and the budget brings stretched periods
// and base lists.
func TestDueListsHoldExactlyTheirSenders(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	spawns := oneChunkCrowd(rng, 300)
	r := newRig(t, Config{MaxRecordsPerTick: 24, Tiers: defaultTiers(t)}, spawns)
	d := &r.p.frame.due
	var sets, bases, checked int
	r.beforeRelay = func() {
		f := &r.p.frame
		sets = max(sets, len(d.sets))
		bases = max(bases, len(d.bases))
		for j, set := range d.sets {
			based := j >= len(d.periods) // read as candidates: no records, no bit sets
			for w := range int32(set.mod) {
				slot := set.slot + w
				run := []int32{} // the slot's lists of every cell, back to back
				for ci := range int32(len(f.cells)) {
					c := f.cells[ci]
					want := []int32{}
					var bits uint64
					for a := c.actors.lo; a < c.actors.hi; a++ {
						ch := f.changed[a]
						in := ch != 0 && ch+set.window > f.Tick && (set.mod > 1 || ch == f.Tick)
						if in && int32(d.residue(f.half[a], set.mod)) == w {
							want = append(want, a)
							bits |= 1 << (a - c.actors.lo)
						}
					}
					lo, hi := d.list(ci, slot)
					require.Equal(t, want, append([]int32{}, d.picks[lo:hi]...), "tick %d, period %d window %d, residue %d, cell %d", f.Tick, set.mod, set.window, w, ci)
					for k, a := range want {
						at := int(lo) + k
						if based {
							bc, i := &d.cands, at-int(d.candsAt)
							got := []any{bc.x[i], bc.y[i], bc.z[i], bc.cell[i], bc.age[i]}
							require.Equal(t, []any{f.x[a], f.y[a], f.z[a], ci, uint8(min(f.Tick-f.changed[a], 255))}, got, "candidate %d", a)
							if d.cycle > 0 {
								require.Equal(t, d.quotient(f.half[a], set.mod), bc.quot[i], "quotient of candidate %d", a)
							}
							continue
						}
						require.Equal(t, f.recordOf(a), d.packed[at*wire.RecordSize:(at+1)*wire.RecordSize], "record of actor %d", a)
					}
					if !based && c.actors.hi-c.actors.lo <= maskActors {
						require.Equal(t, bits, d.mask(ci, slot, c.actors.lo), "bit set of cell %d", ci)
					}
					run = append(run, want...)
					checked++
				}
				lo, hi := d.lists(0, int32(len(f.cells))-1, slot)
				require.Equal(t, run, append([]int32{}, d.picks[lo:hi]...), "tick %d: the lists of slot %d, back to back", f.Tick, slot)
			}
		}
	}
	for range 60 {
		for i, c := range r.clients {
			if rng.IntN(3) == 0 {
				continue // stands still: no update this tick
			}
			r.seq[i]++
			s := r.spawns[i]
			require.NoError(t, c.Send(wire.AppendMove(nil, wire.Move{Seq: r.seq[i], X: s.X + rng.Float32(), Y: s.Y, WorldOrCell: s.WorldOrCell})))
		}
		r.step()
		for _, c := range r.clients {
			c.DrainDatagrams(func([]byte) {})
			c.DrainReliable(func([]byte) {})
		}
	}
	require.Greater(t, sets, len(d.tierPeriods)+1, "periods stretched by a spread were listed")
	require.Positive(t, bases, "a spread had base lists")
	t.Logf("%d lists checked; at most %d sets, %d of them base lists", checked, sets, bases)
}
