package systems

import (
	"github.com/throng-go/throng/interest"
)

// The relay's rule, written plainly: visit walks a recipient's stencil
// sender by sender and says which are due, as gather's fast paths must
// (reference_test.go lists the tests that hold them to it, one for each
// mode: no budget, the budget, the budget under pressure, throttling), and
// gatherOwed uses it where a recipient's backlog decides. due is the pair
// test both share.

// due reports whether a reduced pair (period above 1) sends this tick: by
// the residue tables for the usual short periods, else by the rule itself,
// from the pair's phase halves (interest.SenderHalf, RecipientHalf).
func (p *Pipeline) due(res, want *interest.Residues, period uint8, senderHalf, recipientHalf uint32) bool {
	if period < interest.FastPeriods {
		return res[period] == want[period]
	}
	return p.clock.Sends(senderHalf+recipientHalf, period)
}

// visit calls fn for every sender in r's stencil that has ever changed,
// with its periods, whether it is due this tick and whether throttling
// alone kept it back.
func (p *Pipeline) visit(r int32, level, spread uint8, fn func(a int32, ip, period uint8, due, throttled bool)) {
	f := &p.frame
	clock := p.clock
	tick := f.Tick
	rx, ry, rz, rid := f.x[r], f.y[r], f.z[r], f.id[r]
	want := clock.Want(rid)
	rhalf := interest.RecipientHalf(rid)
	g := &f.groups[f.group[r]]
	for _, ci := range f.stencilCells(g) {
		for a := f.cells[ci].actors.lo; a < f.cells[ci].actors.hi; a++ {
			kind := f.classSet[f.class[a]] // by the sender's class, not its cell's
			tiers := &p.tierSets[kind]
			changed := f.changed[a]
			if changed == 0 || a == r {
				continue
			}
			dx, dy, dz := f.x[a]-rx, f.y[a]-ry, f.z[a]-rz
			if dx*dx+dy*dy+dz*dz >= p.kindReach[kind] {
				continue // beyond its class's radius: not in range
			}
			ip, period := p.periods(tiers, dx*dx+dy*dy+dz*dz, level)
			if spread > 1 {
				sp := p.rankedSpread(kind, spread)
				ip, period = stretch(ip, sp), stretch(period, sp)
			}
			due := changed+uint64(period) > tick && (period <= 1 || p.due(&f.res[a], &want, period, f.half[a], rhalf))
			throttled := !due && period > ip && changed+uint64(ip) > tick && (ip <= 1 || p.due(&f.res[a], &want, ip, f.half[a], rhalf))
			fn(a, ip, period, due, throttled)
		}
	}
}
