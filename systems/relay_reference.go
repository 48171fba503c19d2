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
func (p *Pipeline) visit(r int32, level, spread, thin uint8, fn func(a int32, ip, period uint8, due, throttled bool)) {
	var nearBuf [MaxNearestSenders]int32
	near := nearBuf[:0]
	if p.nearing(spread) {
		near = nearBuf[:p.nearestPlain(r, &nearBuf)]
	}
	p.visitNear(r, level, spread, thin, near, fn)
}

// visitNear is visit for a recipient whose nearest (near, in ascending
// frame index, empty unless nearing) are known: the relay's own walk
// passes those nearestDue found, the reference tests let visit find them.
func (p *Pipeline) visitNear(r int32, level, spread, thin uint8, near []int32, fn func(a int32, ip, period uint8, due, throttled bool)) {
	f := &p.frame
	want := p.clock.Want(f.key[r])
	rhalf := interest.RecipientHalf(f.key[r])
	g := &f.groups[f.group[r]]
	for _, ci := range f.stencilCells(g) {
		for a := f.cells[ci].actors.lo; a < f.cells[ci].actors.hi; a++ {
			isNear := len(near) > 0 && near[0] == a // visited in ascending frame index, as near is
			if isNear {
				near = near[1:]
			}
			if ip, period, due, throttled, in := p.pairOf(r, a, level, spread, thin, isNear, &want, rhalf); in {
				fn(a, ip, period, due, throttled)
			}
		}
	}
}

// pairOf is the rule for one pair: whether sender a is in range of
// recipient r at all (it has ever changed, is not r, and stands within its
// class's radius) and if so its periods, whether it is due this tick and
// whether throttling alone kept it back. want and rhalf are r's
// (interest.Clock.Want, interest.RecipientHalf). A sender among r's
// nearest (near, relay_near.go) is due at its tier period as well as at
// the stretched one, and its periods are reported unstretched. A
// recipient thinning (thin above 0, at the longest spread, relay_thin.go)
// keeps only its share of any other pair's due ticks.
func (p *Pipeline) pairOf(r, a int32, level, spread, thin uint8, near bool, want *interest.Residues, rhalf uint32) (ip, period uint8, due, throttled, in bool) {
	f := &p.frame
	changed := f.changed[a]
	if changed == 0 || a == r {
		return 0, 0, false, false, false
	}
	kind := f.classSet[f.class[a]] // by the sender's class, not its cell's
	dx, dy, dz := f.x[a]-f.x[r], f.y[a]-f.y[r], f.z[a]-f.z[r]
	if dx*dx+dy*dy+dz*dz >= p.kindReach[kind] {
		return 0, 0, false, false, false // beyond its class's radius: not in range
	}
	ip, period = p.periods(&p.tierSets[kind], dx*dx+dy*dy+dz*dz, level)
	tick := f.Tick
	if near { // under the budget: no throttling (relayLevel), so ip == period
		tier, stretched := p.nearPairDue(a, kind, period, spread, want, rhalf)
		return ip, period, tier || stretched, false, true
	}
	if spread > 1 {
		sp := p.rankedSpread(kind, spread)
		ip, period = stretch(ip, sp), stretch(period, sp)
	}
	due = changed+uint64(period) > tick && (period <= 1 || p.due(&f.res[a], want, period, f.half[a], rhalf))
	if due && thin > 0 {
		due = thinKept(f.id[a], f.id[r], tick, keepOf(thin))
	}
	throttled = !due && period > ip && changed+uint64(ip) > tick && (ip <= 1 || p.due(&f.res[a], want, ip, f.half[a], rhalf))
	return ip, period, due, throttled, true
}
