package systems

import (
	"math/bits"

	"github.com/throng-go/throng/components"
)

// Due bytes: the dense walk at a spread above 1 (relay_dense.go).
//
// A budgeted recipient's pair is due at its tier period stretched by the
// recipient's spread and, for a sender of a ranked kind, by 2^rank more
// (rankedSpread), up to 255. Due keys of bits (one bit a residue) fit 32
// bits only at spreads 2 and 3 without ranks; past them, and wherever a
// stencil holds a ranked sender, the relay fell back on cells, lists and
// pairs decided one by one: in a plaza of players and NPCs under the
// budget that cost five times the relay of the same crowd without one.
//
// A due byte key gives each band of the sender's table a byte: the
// sender's residue at that band's stretched period (its phase half modulo
// the period, below 255), or 0xFF where the sender did not change within
// that period. The recipient wants, at each band and rank, one residue
// (the same rule as the due lists' slots: (half + rhalf + tick) mod
// period == 0); so a pair is due when the byte of its band equals the
// recipient's residue for its band and the sender's rank: a XOR and a
// mask by band, eight pairs an instruction with AVX2 (denseDueBytes8),
// and with AVX-512 sixteen, decided and packed in one pass as the due keys
// of bits are (denseBytes16), the rank of each sender from a byte beside
// its key. Tables of up to four bands (three finite limits) and ranks 0
// and 1 fit; the default tables and classes do.

// maxByteStencil is the biggest stencil, in senders, whose recipients
// take the due bytes (bytesFit).
const maxByteStencil = 2048

// bytesFit reports whether a recipient at a spread above 1, whose stencil
// is cells holding senders, takes the due bytes rather than its spread's
// due keys of bits or lists: where at least a quarter of the stencil's
// cells are decided one by one under those (ranked: a ranked kind's, or a
// sparse chunk's, which may hold one), and the stencil is at most
// maxByteStencil. The walk decides every sender, for about a fifth of
// what a sender a list hands the recipient costs (the lists hand it about
// its budget's worth, whatever the stencil's size); each ranked cell
// costs the others a call and its senders a decision each, and cuts the
// bits' runs. So a crowd, whose crowded chunks keep the ranked kinds in
// cells of their own, keeps its keys and lists, and a sparse world, whose
// every chunk is one cell, takes the bytes. The answer is the unit's
// current cell's (sc.cell), kept.
func (p *Pipeline) bytesFit(cells []int32, senders int, sc *relayScratch) bool {
	if sc.fit == fitUnknown {
		sc.fit = fitNo
		if senders <= maxByteStencil {
			p.rankCell(cells, sc)
			ranked := 0
			for _, r := range sc.rankedAt {
				ranked += b2i(r)
			}
			if ranked*4 >= len(cells) {
				sc.fit = fitYes
			}
		}
	}
	return sc.fit == fitYes
}

// byteSpread reports whether spread s takes due bytes where they fit: 2
// to 254. The longest spread (255) thins, and its base lists hand a
// recipient one sender in 255; the census of fits counts none there, so
// that its recipients keep their lists.
func byteSpread(s uint8) bool { return s > 1 && s < 255 }

// bytesFit's answers, kept in relayScratch.fit.
const (
	fitUnknown uint8 = iota
	fitNo
	fitYes
)

// byteBands is how many bands a table may have for due bytes: a byte each
// of a 32-bit key.
const byteBands = 4

// maxKinds is the most kinds of sender a pipeline has (configureClasses:
// the players' table and one for each class) rounded up to a power of
// two, so that an index taken modulo it needs no bounds check.
const maxKinds = 32

var _ [maxKinds - components.MaxClasses - 1]struct{}

// byteKeys are the due bytes of every actor at one spread, built on a tick
// whose last tick had recipients at it (Pipeline.keySpreads), one pass
// over the actors, in place of the lists or pairs that spread would take.
type byteKeys struct {
	spread uint8
	// keys: per actor, byte b its residue at band b's stretched period,
	// 0xFF where it did not change within it (and past its table's
	// bands); ranks: per actor, its kind's rank. Both readable a group
	// of sixteen past the end.
	keys  []uint32
	ranks []uint8
	kinds [maxKinds]byteKind
	// want is, per kind's table and rank, each band's stretched period
	// and this tick's (p - tick mod p) mod p for it: what a recipient's
	// residues are computed from (byteWant).
	wantPeriod [maxKinds][2][byteBands]uint8
	wantTick   [maxKinds][2][byteBands]uint32
}

// byteKind is what build reads of a sender's kind: each band's stretched
// period (0 past the table's bands, where every sender is 0xFF), the
// multiplier that takes a residue modulo it (dueLists.magic), its rank.
type byteKind struct {
	period [byteBands]uint64
	magic  [byteBands]uint64
	rank   uint8
}

// bytesLayout says whether the relay takes due bytes (byteKeys): where a
// kind is ranked (without ranks, spreads 2 and 3 have due keys of bits
// and the others lists that cost no more), with AVX2 (a Go loop a pair
// costs more than the lists), every kind's table of at most byteBands
// bands, and ranks of 0 and 1 (the kernel's want table is eight words:
// two ranks of four bands).
func (p *Pipeline) bytesLayout() bool {
	if !useAVX2 || p.maxRank != 1 || len(p.tierSets) > maxKinds {
		return false
	}
	for _, l := range p.kindLimits {
		if l >= byteBands {
			return false
		}
	}
	return true
}

// lay sets k up for spread s at tick: each kind's stretched periods, and
// what the recipients' residues are computed from.
func (k *byteKeys) lay(p *Pipeline, s uint8, tick uint64) {
	k.spread = s
	d := &p.frame.due
	for kind := range p.tierSets {
		_, periods := p.tierSets[kind].Bands()
		nb := p.kindLimits[kind] + 1
		sp := p.rankedSpread(uint8(kind), s)
		bk := &k.kinds[kind]
		*bk = byteKind{rank: p.kindRank[kind]}
		k.wantPeriod[kind], k.wantTick[kind] = [2][byteBands]uint8{}, [2][byteBands]uint32{}
		for b := range nb {
			q := stretch(periods[b], sp)
			bk.period[b], bk.magic[b] = uint64(q), d.magic[q]
			for rank := range 2 {
				wq := stretch(periods[b], uint8(min(int(s)<<rank, 255)))
				k.wantPeriod[kind][rank][b], k.wantTick[kind][rank][b] = wq, tickDue(wq, tick)
			}
		}
	}
}

// build computes every actor's due bytes at k's spread this tick: each
// band's residue always, then 0xFF where the actor's age is not below the
// band's period (one that never changed has every byte 0xFF).
func (k *byteKeys) build(f *Frame) {
	n := f.Len()
	k.keys, k.ranks = padded(k.keys, n), padded(k.ranks, n)
	keys, ranks := k.keys[:n], k.ranks[:n]
	changed, half, class := f.changed[:n], f.half[:n], f.class[:n]
	tick := f.Tick
	for a := range keys {
		bk := &k.kinds[f.classSet[class[a]%components.MaxClasses]%maxKinds]
		ranks[a] = bk.rank
		age := tick - changed[a]
		if changed[a] == 0 {
			age = ^uint64(0)
		}
		h := uint64(half[a])
		var key uint32
		for b := range byteBands {
			res, _ := bits.Mul64(bk.magic[b]*h, bk.period[b])
			old := uint32(b2i(age >= bk.period[b])) * 0xFF // res is below the period: ORed with 0xFF, 0xFF
			key |= (uint32(res) | old) << (8 * b)
		}
		keys[a] = key
	}
}

// byteWant aims k, aimed at a recipient with phase half rhalf, at the
// senders of kind's table at the spread of keys: the recipient's residue
// at each band's stretched period, for each rank, in the band's byte.
func (p *Pipeline) byteWant(k *denseKernel, keys *byteKeys, kind int, rhalf uint32) {
	d := &p.frame.due
	k.bwant = [8]uint32{}
	for rank := range int(p.maxRank) + 1 { // bytesLayout: at most 1
		for b := range p.kindLimits[kind] + 1 {
			q := keys.wantPeriod[kind][rank&1][b]
			k.bwant[rank&1*byteBands+b] = d.wantResidue(q, keys.wantTick[kind][rank&1][b], rhalf) << (8 * b)
		}
	}
}

// byteMasks is the mask of each band's byte, by band (the kernel permutes
// it by the lanes' bands, as the want table by their bands and ranks).
var byteMasks = [8]uint32{0xFF, 0xFF00, 0xFF0000, 0xFF000000, 0xFF, 0xFF00, 0xFF0000, 0xFF000000}

// denseDueBytes is denseDue for due bytes (k.bytes): bit i of byte i/8 of
// masks for sender i, whether it is due to k's recipient by its key and
// its rank (ranks[i]); the bits past the senders cleared to the next eight
// bytes. With AVX2, eight senders an instruction (denseDueBytes8).
func denseDueBytes(masks []byte, xs, ys, zs []float32, keys []uint32, k *denseKernel) {
	n := len(xs)
	ys, zs, keys = ys[:n], zs[:n], keys[:n]
	ranks := k.ranks[:n]
	i := 0
	if up := denseGroups(n, cap(xs), cap(ys), cap(zs), cap(keys), cap(ranks)); up > 0 {
		denseDueBytes8(&masks[0], &xs[0], &ys[0], &zs[0], &keys[0], &ranks[0], up, k)
		i = min(up, n)
	}
	clearPast(masks, i, n)
	for ; i < n; i++ {
		dx, dy, dz := xs[i]-k.rx, ys[i]-k.ry, zs[i]-k.rz
		d := dx*dx + dy*dy + dz*dz
		b := min(k.bands.bandOf(d), byteBands-1)
		due := (keys[i]^k.bwant[int(ranks[i]&1)*byteBands+b])&byteMasks[b] == 0 && d < k.cut
		masks[i/8] |= byte(b2i(due)) << (i % 8)
	}
}

// gatherBytes is gatherDense at a spread with due bytes (keys): every run
// of r's stencil decided by the senders' keys and ranks, whatever their
// kinds' ranks, so no cell is cut out of a run.
func (p *Pipeline) gatherBytes(w *batchOut, r int32, keys *byteKeys, rhalf uint32, sc *relayScratch) {
	f := &p.frame
	k := &sc.dense
	k.rx, k.ry, k.rz = f.x[r], f.y[r], f.z[r]
	k.lut = &widenLUT
	k.bytes = true
	aimed := -1
	for j := 0; j+2 < len(sc.stencilRuns); j += 3 {
		lo, hi, kind := sc.stencilRuns[j], sc.stencilRuns[j+1], int(sc.stencilRuns[j+2])
		if kind != aimed {
			b := &p.kindBands[kind]
			k.bands, k.cut, k.limits = b, p.kindReach[kind], int64(p.kindLimits[kind])
			p.byteWant(k, keys, kind, rhalf)
			aimed = kind
		}
		k.ranks = keys.ranks[lo:hi:cap(keys.ranks)]
		sc.denseMask = w.writeDense(k, f.x[lo:hi], f.y[lo:hi], f.z[lo:hi], keys.keys[lo:hi], lo, r, sc.denseMask, bestDensePass)
	}
	k.bytes, k.ranks = false, nil
}
