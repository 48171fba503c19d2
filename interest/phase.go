package interest

import "math/bits"

// Phase returns the send phase of the directed pair sender -> recipient,
// from the two actors' stable ids (components.ActorID, assigned at spawn and
// never reused), never from table rows, which move. The same pair always
// gets the same phase, on any core count and across restarts.
//
// Pairs are directed: Phase(a, b) and Phase(b, a) are hashed independently,
// so A hearing B and B hearing A fall on unrelated ticks. Nothing needs them
// equal, and independence spreads each tick's sends more evenly.
//
// It is the splitmix64 finaliser over the two ids packed into one word: every
// input bit flips about half of the output bits, so sequential spawn ids give
// phases that are evenly spread modulo any small period.
func Phase(sender, recipient uint32) uint32 {
	z := uint64(sender)<<32 | uint64(recipient)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	z ^= z >> 31
	return uint32(z >> 32)
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
