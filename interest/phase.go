package interest

import (
	"hash/fnv"
	"io"
	"math/bits"
)

// Phase returns the send phase of the directed pair sender -> recipient,
// from the two actors' phase keys (components.PhaseKey: the actor's id,
// assigned at spawn and never reused, or a key it was given, such as its
// player's name's [NameKey]), never from table rows, which move. The same
// pair always gets the same phase, on any core count and across restarts,
// and on any server that gives its actors the same keys.
//
// It is the sum of a sender half and a recipient half, each a splitmix64
// hash of one key reduced modulo [PhaseModulus] (720720, the least common
// multiple of 1..16). Every period up to 16 divides the modulus, so a pair's
// phase modulo such a period is the sum of the halves' residues: the relay
// computes each actor's residues once per tick ([SenderResidues],
// [Clock.Want]) and decides a pair with one byte comparison instead of a
// hash and a division. Longer periods still follow the rule exactly, from
// the phase.
//
// Pairs are directed: the sender and recipient halves use different hash
// keys, so A hearing B and B hearing A fall on unrelated ticks. Sequential
// spawn ids, and hashed names, give phases evenly spread modulo any small
// period.
func Phase(sender, recipient uint32) uint32 {
	return senderHalf(sender) + recipientHalf(recipient)
}

// PhaseModulus is the modulus of each half of a phase: lcm(1, ..., 16).
const PhaseModulus = 720720

// FastPeriods bounds the periods the residue tables cover: 2 to
// FastPeriods-1 (16). Longer periods are decided by [Clock.Sends].
const FastPeriods = 17

// Residues holds a value's remainders modulo the fast periods: r[p] for
// 2 <= p < FastPeriods; r[0] and r[1] are 0.
type Residues [FastPeriods]uint8

func senderHalf(id uint32) uint32 { return uint32(mix(uint64(id)^0x9e3779b97f4a7c15) % PhaseModulus) }
func recipientHalf(id uint32) uint32 {
	return uint32(mix(uint64(id)^0xd1b54a32d192ed03) % PhaseModulus)
}

// mix is the splitmix64 finaliser: every input bit flips about half of the
// output bits.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// SenderResidues returns the residues of sender's half of every phase it is
// in. They depend only on the id: compute them once per actor and tick.
func SenderResidues(sender uint32) Residues {
	return residues(senderHalf(sender))
}

// SenderHalf and RecipientHalf are the two halves of a phase:
// Phase(s, r) == SenderHalf(s) + RecipientHalf(r). Each depends on one id
// only, so a relay computes each actor's once per tick and a pair's phase
// with one addition, for the periods beyond the residue tables
// ([Clock.Sends]).
func SenderHalf(sender uint32) uint32 { return senderHalf(sender) }

// RecipientHalf is the recipient's half of a phase; see [SenderHalf].
func RecipientHalf(recipient uint32) uint32 { return recipientHalf(recipient) }

// HalfResidues returns the residues of a sender half: SenderResidues(s) ==
// HalfResidues(SenderHalf(s)), for a caller that keeps the half as well.
func HalfResidues(half uint32) Residues { return residues(half) }

// residues is written out period by period: with constant divisors the
// compiler turns each remainder into a multiplication, where a loop over p
// would divide fifteen times per actor and tick.
func residues(v uint32) Residues {
	return Residues{
		0, 0, uint8(v % 2), uint8(v % 3), uint8(v % 4), uint8(v % 5), uint8(v % 6), uint8(v % 7),
		uint8(v % 8), uint8(v % 9), uint8(v % 10), uint8(v % 11), uint8(v % 12), uint8(v % 13),
		uint8(v % 14), uint8(v % 15), uint8(v % 16),
	}
}

// Sends reports the send rule: a pair with phase and period sends on tick
// when (phase + tick) mod period == 0. Any period consecutive ticks hold
// exactly one such tick: a reduced rate, never silence. Period 0 is treated
// as 1 (every tick).
//
// Sends is the definition, written with a division. The relay loop uses
// [Clock.Sends], which gives the same answer without one. (They could differ
// only once phase + tick overflows 64 bits, billions of years into a run.)
func Sends(phase uint32, tick uint64, period uint8) bool {
	if period <= 1 {
		return true
	}
	return (uint64(phase)+tick)%uint64(period) == 0
}

// Clock answers [Sends] for one tick without dividing: per period it holds
// the residue a phase must have to send this tick, and a reciprocal that
// turns "phase mod period" into two multiplications (Lemire, Kaser and
// Kurz, "Faster Remainder by Direct Computation", 2019; exact for every
// 32-bit phase and every period).
//
// Build one with [NewClock] and move it with [Clock.Set] once per tick before
// the relay starts; during the relay it is read-only and safe for any number
// of goroutines. It is about 2.3 KiB: keep one and pass a pointer. The zero
// value is not ready: it says every pair sends.
type Clock struct {
	magic [256]uint64 // magic[p] = ceil(2^64 / p); 0 for p <= 1
	due   [256]uint8  // due[p] = (p - tick mod p) mod p
	tick  uint64
}

// NewClock returns a Clock set to tick.
func NewClock(tick uint64) *Clock {
	c := &Clock{}
	for p := 2; p < len(c.magic); p++ {
		c.magic[p] = ^uint64(0)/uint64(p) + 1
	}
	c.Set(tick)
	return c
}

// Set moves the clock to tick. Moving to the next tick, the usual case,
// steps each residue down by one; any other move costs one division per
// period (255). Either way the relay loop does none.
func (c *Clock) Set(tick uint64) {
	if tick == c.tick+1 && tick != 0 {
		for p := 2; p < len(c.due); p++ {
			d := c.due[p]
			if d == 0 {
				d = uint8(p)
			}
			c.due[p] = d - 1
		}
	} else {
		for p := 2; p < len(c.due); p++ {
			c.due[p] = uint8((uint64(p) - tick%uint64(p)) % uint64(p))
		}
	}
	c.tick = tick
}

// Want returns, for each fast period p, the residue a sender's half must
// have for the pair sender -> recipient to send on the clock's tick:
// (SenderResidues(s)[p] == want[p]) == c.Sends(Phase(s, recipient), p) for
// every sender and every 2 <= p < FastPeriods. Compute it once per
// recipient and tick.
func (c *Clock) Want(recipient uint32) Residues {
	r := residues(recipientHalf(recipient))
	var want Residues
	for p := 2; p < FastPeriods; p++ {
		// (s + r + tick) mod p == 0  <=>  s mod p == -(r + tick) mod p; due[p] is -tick mod p.
		w := int(c.due[p]) - int(r[p])
		if w < 0 {
			w += p
		}
		want[p] = uint8(w)
	}
	return want
}

// Tick returns the tick the clock is set to.
func (c *Clock) Tick() uint64 { return c.tick }

// Sends reports whether a pair with phase and period sends on the clock's
// tick. It agrees with [Sends](phase, c.Tick(), period) for every input,
// including period 0 and 1 (always true).
func (c *Clock) Sends(phase uint32, period uint8) bool {
	// phase mod period = high word of (magic * phase mod 2^64) * period.
	rem, _ := bits.Mul64(c.magic[period]*uint64(phase), uint64(period))
	return uint8(rem) == c.due[period]
}

// NameKey returns the phase key of a player named name
// (components.Client.Phase): a hash of the name, never 0. A player who
// comes back under the same name, or whose actor another server takes,
// keeps the phases of its pairs with every actor whose key is kept too.
func NameKey(name string) uint32 {
	h := fnv.New64a() // then mixed, as an id is
	_, _ = io.WriteString(h, name)
	return max(uint32(mix(h.Sum64())), 1)
}
