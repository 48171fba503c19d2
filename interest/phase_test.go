package interest_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/throng-go/throng/interest"
)

// Start ticks from the first tick to far beyond any real run, so that no
// window is special.
func startTicks(r *rand.Rand) []uint64 {
	return []uint64{0, 1, 59, 1 << 32, 1<<40 + 7, r.Uint64N(1 << 50), r.Uint64N(1 << 62)}
}

func TestEveryPairSendsOncePerWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	pairs := make([][2]uint32, 40)
	for i := range pairs {
		pairs[i] = [2]uint32{r.Uint32(), r.Uint32()}
	}
	pairs = append(pairs, [2]uint32{0, 1}, [2]uint32{1, 0}, [2]uint32{7, 8}, [2]uint32{math.MaxUint32, 0})
	clock := interest.NewClock(0)
	sends := make([]int, len(pairs))
	for p := 1; p <= math.MaxUint8; p++ {
		for _, start := range startTicks(r) {
			clear(sends)
			for tick := start; tick < start+uint64(p); tick++ {
				clock.Set(tick)
				for i, pr := range pairs {
					phase := interest.Phase(pr[0], pr[1])
					fast := clock.Sends(phase, uint8(p))
					if fast != interest.Sends(phase, tick, uint8(p)) {
						t.Fatalf("period %d tick %d phase %d: Clock.Sends %v, Sends %v", p, tick, phase, fast, !fast)
					}
					if fast {
						sends[i]++
					}
				}
			}
			for i, n := range sends {
				if n != 1 {
					t.Fatalf("pair %v period %d: %d sends in the window from tick %d, want 1", pairs[i], p, n, start)
				}
			}
		}
	}
}

// Clock.Sends is the division-free form of Sends: they agree everywhere,
// including periods 0 and 1, which mean every tick.
func TestClockAgreesWithSends(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	phases := []uint32{0, 1, math.MaxUint32, math.MaxUint32 - 1, 1 << 31}
	for range 200 {
		phases = append(phases, r.Uint32())
	}
	for _, tick := range startTicks(r) {
		clock := interest.NewClock(tick)
		assert.Equal(t, tick, clock.Tick())
		for p := range math.MaxUint8 + 1 {
			for _, ph := range phases {
				if want, got := interest.Sends(ph, tick, uint8(p)), clock.Sends(ph, uint8(p)); got != want {
					t.Fatalf("period %d tick %d phase %d: Clock.Sends %v, Sends %v", p, tick, ph, got, want)
				}
			}
		}
	}
	// Stepping tick by tick (Set's fast path) stays in agreement too, also
	// across the uint32 boundary.
	for _, start := range []uint64{0, 1<<32 - 300, r.Uint64N(1 << 40)} {
		clock := interest.NewClock(start)
		for tick := start; tick < start+600; tick++ {
			clock.Set(tick)
			for p := range math.MaxUint8 + 1 {
				for _, ph := range phases[:8] {
					if want, got := interest.Sends(ph, tick, uint8(p)), clock.Sends(ph, uint8(p)); got != want {
						t.Fatalf("stepping: period %d tick %d phase %d: Clock.Sends %v, Sends %v", p, tick, ph, got, want)
					}
				}
			}
		}
	}
	for _, p := range []uint8{0, 1} {
		assert.True(t, interest.Sends(12345, 678, p))
		assert.True(t, interest.NewClock(678).Sends(12345, p))
	}
}

// Phase(a, b) == Phase(b, a) is NOT required: pairs are directed (a's
// updates to b, b's updates to a) and each direction gets its own phase. The
// two directions are independent, so for period p they share a residue about
// one time in p, not always.
func TestPhaseIsSymmetricOrNot(t *testing.T) {
	const n = 200
	same, sameMod4 := 0, 0
	pairs := 0
	for a := uint32(0); a < n; a++ {
		for b := a + 1; b < n; b++ {
			pairs++
			ab, ba := interest.Phase(a, b), interest.Phase(b, a)
			if ab == ba {
				same++
			}
			if ab%4 == ba%4 {
				sameMod4++
			}
		}
	}
	assert.Zero(t, same, "directions should hash independently")
	share := float64(sameMod4) / float64(pairs)
	assert.InDelta(t, 0.25, share, 0.02, "directions share a residue mod 4 in %.3f of pairs", share)
}

func TestPhasesSpreadEvenly(t *testing.T) {
	// Spawn ids are small and sequential: the worst case for a weak hash.
	// Spaced ids exercise the high bits.
	idSets := map[string]func(i uint32) uint32{
		"sequential": func(i uint32) uint32 { return i },
		"spaced":     func(i uint32) uint32 { return i << 20 },
		"offset":     func(i uint32) uint32 { return 1_000_000 + 3*i },
		// Named players' keys: names that differ in a digit or two.
		"names": func(i uint32) uint32 { return interest.NameKey(fmt.Sprint("bot-", i)) },
	}
	const actors = 200
	for name, id := range idSets {
		for p := 2; p <= 16; p++ {
			counts := make([]int, p)
			pairs := 0
			for s := uint32(0); s < actors; s++ {
				for r := uint32(0); r < actors; r++ {
					if s != r {
						counts[interest.Phase(id(s), id(r))%uint32(p)]++
						pairs++
					}
				}
			}
			want := float64(pairs) / float64(p)
			sigma := math.Sqrt(float64(pairs) * (1 / float64(p)) * (1 - 1/float64(p)))
			for res, c := range counts {
				assert.InDelta(t, want, float64(c), 5*sigma, "%s ids, period %d, residue %d", name, p, res)
			}
		}
	}
}

// The phase is a pure function of the two ids: the same pair sends on the
// same ticks on any machine, core count or release. Changing these values
// changes every server's output bytes.
func TestPhaseIsStable(t *testing.T) {
	assert.Equal(t, uint32(0x78da2), interest.Phase(0, 1))
	assert.Equal(t, uint32(0x33d90), interest.Phase(1, 0))
	assert.Equal(t, uint32(0x1318fc), interest.Phase(12345, 678))
	assert.Equal(t, uint32(0xf9af7), interest.Phase(math.MaxUint32, math.MaxUint32))
}

// A name's key is a pure function of the name, never 0 (which would mean
// "the actor id" in components.Client.Phase): a player's pairs keep their
// phases wherever it plays, and changing these values changes the bytes
// every server sends named players.
func TestNameKeyIsStable(t *testing.T) {
	got := []uint32{interest.NameKey(""), interest.NameKey("ann"), interest.NameKey("bot-1"), interest.NameKey("bot-2")}
	assert.Equal(t, []uint32{0xa9b5e89b, 0xd559ed80, 0x5495598, 0xb058d859}, got)
}

// Within one tick the pairs that send are spread evenly: about 1/p of the
// pairs at period p send on each tick, so load does not burst.
func TestEachTickCarriesItsShareOfPairs(t *testing.T) {
	const actors = 150
	for _, p := range []uint8{2, 3, 4, 5, 10} {
		clock := interest.NewClock(0)
		for tick := uint64(100); tick < 100+uint64(p); tick++ {
			clock.Set(tick)
			n, pairs := 0, 0
			for s := uint32(0); s < actors; s++ {
				for r := uint32(0); r < actors; r++ {
					if s == r {
						continue
					}
					pairs++
					if clock.Sends(interest.Phase(s, r), p) {
						n++
					}
				}
			}
			want := float64(pairs) / float64(p)
			assert.InDelta(t, want, float64(n), want*0.05, "period %d tick %d", p, tick)
		}
	}
}

// The relay decides pairs from per-actor residues; they must agree with the
// rule applied to the pair's phase for every fast period and tick.
func TestResiduesAgreeWithTheSendRule(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ids := []uint32{0, 1, 2, math.MaxUint32}
	for range 60 {
		ids = append(ids, r.Uint32())
	}
	for _, start := range startTicks(r) {
		clock := interest.NewClock(start)
		for tick := start; tick < start+40; tick++ {
			clock.Set(tick)
			for _, rec := range ids {
				want := clock.Want(rec)
				for _, snd := range ids {
					res := interest.SenderResidues(snd)
					for p := uint8(2); p < interest.FastPeriods; p++ {
						if got, rule := res[p] == want[p], interest.Sends(interest.Phase(snd, rec), tick, p); got != rule {
							t.Fatalf("sender %d recipient %d period %d tick %d: residues say %v, the rule %v", snd, rec, p, tick, got, rule)
						}
					}
				}
			}
		}
	}
}

func TestPhaseIsTheSumOfItsHalves(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 10000 {
		s, rc := r.Uint32(), r.Uint32()
		assert.Equal(t, interest.Phase(s, rc), interest.SenderHalf(s)+interest.RecipientHalf(rc), "pair %d -> %d", s, rc)
		assert.Equal(t, interest.SenderResidues(s), interest.HalfResidues(interest.SenderHalf(s)), "sender %d", s)
	}
}
