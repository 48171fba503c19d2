package interest_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/interest"
)

// budgetRun drives one recipient's Backlog the way the relay does and
// checks every tick against a model of what is owed: nothing is sent that
// was not due or owed, nothing is sent twice in a tick, and a sender's wait
// (first due to sent) is recorded.
type budgetRun struct {
	t           *testing.T
	backlog     interest.Backlog
	pending     map[uint32]uint64 // owed sender -> tick it was first due
	sent        map[uint32]int
	batch       []uint32
	tick        uint64
	longestWait int
}

func newBudgetRun(t *testing.T) *budgetRun {
	return &budgetRun{t: t, pending: map[uint32]uint64{}, sent: map[uint32]int{}}
}

type offer struct {
	sender uint32
	weight uint8
	due    bool
}

func (b *budgetRun) step(offers []offer, budget int) {
	b.t.Helper()
	inView := map[uint32]bool{}
	for _, o := range offers {
		inView[o.sender] = true
		if o.due {
			if _, ok := b.pending[o.sender]; !ok {
				b.pending[o.sender] = b.tick
			}
		}
		b.backlog.Offer(o.sender, o.weight, o.due)
	}
	for s := range b.pending {
		if !inView[s] {
			delete(b.pending, s) // left the view: forgotten, not owed
		}
	}
	b.batch = b.backlog.Take(budget, b.batch[:0])
	if len(b.batch) > max(budget, 0) {
		b.t.Fatalf("tick %d: %d records over a budget of %d", b.tick, len(b.batch), budget)
	}
	// The batch keeps the offer order: a subsequence of the first offers.
	next := 0
	for _, s := range b.batch {
		for next < len(offers) && offers[next].sender != s {
			next++
		}
		if next == len(offers) {
			b.t.Fatalf("tick %d: batch %v not in offer order", b.tick, b.batch)
		}
		next++
		first, ok := b.pending[s]
		if !ok {
			b.t.Fatalf("tick %d: sent %d, which was neither due nor owed (or sent twice)", b.tick, s)
		}
		wait := int(b.tick - first)
		b.longestWait = max(b.longestWait, wait)
		b.sent[s]++
		delete(b.pending, s)
	}
	if len(b.pending) != b.backlog.Owed() {
		b.t.Fatalf("tick %d: model owes %d, Backlog %d", b.tick, len(b.pending), b.backlog.Owed())
	}
	b.tick++
}

// The case: 400 visible senders, a budget of 100 records per tick.
// Every sender reaches the recipient within WaitBound, close senders more
// often than far ones.
func TestEverySenderSentWithinWaitBound(t *testing.T) {
	tiers := defaultTiers(t)
	longest := tiers.Longest()
	r := rand.New(rand.NewPCG(400, 100))
	const n, budget = 400, 100
	type sender struct {
		id     uint32
		period uint8
	}
	senders := make([]sender, n)
	for i := range senders {
		// Anywhere in a 3x3 stencil around the recipient: periods 1 to 4.
		x, y := r.Float32()*16384-8192, r.Float32()*16384-8192
		senders[i] = sender{id: uint32(1000 + i), period: tiers.PeriodSq(x*x + y*y)}
	}
	bound := interest.WaitBound(n, budget, 1, longest)
	require.Equal(t, 39, bound)

	for _, withInterest := range []bool{false, true} {
		run := newBudgetRun(t)
		clock := interest.NewClock(0)
		var offers []offer
		for range 1200 {
			clock.Set(run.tick)
			offers = offers[:0]
			for _, s := range senders {
				due := !withInterest || clock.Sends(interest.Phase(s.id, 1), s.period)
				offers = append(offers, offer{s.id, interest.Weight(s.period, longest), due})
			}
			run.step(offers, budget)
		}
		t.Logf("interest=%v: longest wait %d ticks (bound %d)", withInterest, run.longestWait, bound)
		assert.LessOrEqual(t, run.longestWait, bound)
		for _, s := range senders {
			assert.Positive(t, run.sent[s.id], "sender %d never sent", s.id)
		}
		// Close senders (period 1, weight 4) are sent more often than far
		// ones (period 4, weight 1).
		rate := map[uint8]float64{}
		count := map[uint8]int{}
		for _, s := range senders {
			rate[s.period] += float64(run.sent[s.id])
			count[s.period]++
		}
		for p := range rate {
			rate[p] /= float64(count[p])
		}
		require.Len(t, count, 4, "senders at every period")
		t.Logf("interest=%v: sends per sender over 1200 ticks by period: %v", withInterest, rate)
		assert.Greater(t, rate[1], rate[2])
		assert.Greater(t, rate[2], rate[3])
		assert.Greater(t, rate[3], rate[4])
	}
}

// The bound holds on random loads: random view sizes, budgets, weights that
// change tick to tick, and due patterns.
func TestWaitBoundHoldsOnRandomLoads(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for trial := range 40 {
		n := 2 + r.IntN(200)
		budget := 1 + r.IntN(n)
		wmin := uint8(1 + r.IntN(4))
		wmax := wmin + uint8(r.IntN(8))
		dueChance := 0.2 + 0.8*r.Float64()
		bound := interest.WaitBound(n, budget, wmin, wmax)
		run := newBudgetRun(t)
		offers := make([]offer, n)
		for range 300 {
			for i := range offers {
				offers[i] = offer{uint32(i * 7), wmin + uint8(r.IntN(int(wmax-wmin)+1)), r.Float64() < dueChance}
			}
			r.Shuffle(len(offers), func(i, j int) { offers[i], offers[j] = offers[j], offers[i] })
			run.step(offers, budget)
		}
		require.LessOrEqual(t, run.longestWait, bound, "trial %d: n %d budget %d weights %d..%d", trial, n, budget, wmin, wmax)
	}
}

func TestBacklogSendsEverythingWhenItFits(t *testing.T) {
	var b interest.Backlog
	for _, s := range []uint32{30, 10, 20} {
		b.Offer(s, 1, true)
	}
	b.Offer(40, 1, false) // not due, nothing owed: not sent
	assert.Equal(t, []uint32{30, 10, 20}, b.Take(3, nil), "in offer order")
	assert.Zero(t, b.Owed())
	assert.Empty(t, b.Take(3, nil), "a tick with no offers sends nothing")
}

func TestCutRecordsAreOwedNotLost(t *testing.T) {
	var b interest.Backlog
	for s := uint32(1); s <= 5; s++ {
		b.Offer(s, 1, true)
	}
	first := b.Take(2, nil)
	assert.Equal(t, []uint32{1, 2}, first, "equal priority: lower sender first")
	assert.Equal(t, 3, b.Owed())
	// Next tick nobody is due, but the owed senders are still in view.
	for s := uint32(1); s <= 5; s++ {
		b.Offer(s, 1, false)
	}
	assert.Equal(t, []uint32{3, 4}, b.Take(2, nil))
	for s := uint32(1); s <= 5; s++ {
		b.Offer(s, 1, false)
	}
	assert.Equal(t, []uint32{5}, b.Take(2, nil))
	assert.Zero(t, b.Owed())
}

func TestCloserSendersOvertakeOlderFarOnes(t *testing.T) {
	var b interest.Backlog
	b.Offer(1, 1, true) // far
	b.Offer(2, 4, true) // near
	assert.Equal(t, []uint32{2}, b.Take(1, nil), "near first")
	// Tick 2: far (priority 1+1) against a freshly due near sender (4).
	b.Offer(1, 1, false)
	b.Offer(2, 4, true)
	assert.Equal(t, []uint32{2}, b.Take(1, nil))
	// Tick 3: far at 3 against near at 4 again.
	b.Offer(1, 1, false)
	b.Offer(2, 4, true)
	assert.Equal(t, []uint32{2}, b.Take(1, nil))
	// Tick 4: far at 4 ties the near sender and wins on the lower id.
	b.Offer(1, 1, false)
	b.Offer(2, 4, true)
	assert.Equal(t, []uint32{1}, b.Take(1, nil), "the far sender has waited long enough")
}

func TestOwedSenderLeavingViewIsForgotten(t *testing.T) {
	var b interest.Backlog
	for s := uint32(1); s <= 4; s++ {
		b.Offer(s, 1, true)
	}
	require.Equal(t, []uint32{1, 2}, b.Take(2, nil))
	require.Equal(t, 2, b.Owed())
	b.Offer(4, 1, false) // 3 left the view
	assert.Equal(t, []uint32{4}, b.Take(2, nil))
	assert.Zero(t, b.Owed())

	b.Offer(7, 1, true)
	b.Offer(8, 1, true)
	require.Equal(t, []uint32{7}, b.Take(1, nil))
	b.Reset()
	assert.Zero(t, b.Owed())
	assert.Empty(t, b.Take(1, nil))
}

func TestDuplicateOffersMerge(t *testing.T) {
	var b interest.Backlog
	b.Offer(5, 1, true)
	b.Offer(5, 3, true)
	b.Offer(6, 2, true)
	assert.Equal(t, []uint32{5}, b.Take(1, nil), "merged: weight 3, ahead of 6's 2")
	require.Equal(t, 1, b.Owed())
	// With something owed, not-due offers are kept and merge too.
	b.Offer(6, 2, false)
	b.Offer(7, 1, false)
	b.Offer(7, 1, true)
	assert.Equal(t, []uint32{6, 7}, b.Take(2, nil), "7 is due through its second offer")
	assert.Zero(t, b.Owed())
}

func TestZeroBudgetOwesEverything(t *testing.T) {
	var b interest.Backlog
	b.Offer(1, 0, true)
	b.Offer(2, 0, true)
	assert.Empty(t, b.Take(0, nil))
	assert.Equal(t, 2, b.Owed())
	b.Offer(1, 0, false)
	b.Offer(2, 0, false)
	assert.Empty(t, b.Take(-5, nil))
	assert.Equal(t, 2, b.Owed())
	assert.Equal(t, math.MaxInt, interest.WaitBound(10, 0, 1, 4))
}

func TestWaitBoundFormula(t *testing.T) {
	assert.Equal(t, 0, interest.WaitBound(100, 100, 1, 4), "everyone fits")
	assert.Equal(t, 39, interest.WaitBound(400, 100, 1, 4))
	assert.Equal(t, 2*399*2/100, interest.WaitBound(400, 100, 1, 1))
	assert.Equal(t, interest.WaitBound(400, 100, 1, 1), interest.WaitBound(400, 100, 0, 0), "weight 0 counts as 1")
}

func TestWeightFavoursShortPeriods(t *testing.T) {
	assert.Equal(t, []uint8{4, 3, 2, 1, 1}, []uint8{
		interest.Weight(1, 4), interest.Weight(2, 4), interest.Weight(3, 4), interest.Weight(4, 4), interest.Weight(9, 4),
	})
	assert.Equal(t, uint8(1), interest.Weight(1, 1))
	assert.Equal(t, uint8(1), interest.Weight(0, 0))
}

// TestBacklogsSharingAScratchPickAsAlone: recipients served one after
// another in one Scratch get, tick after tick, exactly the batches they
// get each in its own.
func TestBacklogsSharingAScratchPickAsAlone(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const recipients, budget = 5, 12
	var alone, shared [recipients]interest.Backlog
	var scratch interest.Scratch
	for i := range shared {
		shared[i].Use(&scratch)
	}
	var a, b []uint32
	for tick := range 200 {
		for i := range recipients {
			n := 10 + r.IntN(60) // how many this recipient sees this tick
			for s := range uint32(n) {
				weight, due := uint8(1+r.IntN(4)), r.IntN(3) == 0
				alone[i].Offer(s*7+uint32(i), weight, due)
				shared[i].Offer(s*7+uint32(i), weight, due)
			}
			a, b = alone[i].Take(budget, a[:0]), shared[i].Take(budget, b[:0])
			require.Equal(t, a, b, "tick %d, recipient %d", tick, i)
			require.Equal(t, alone[i].Owed(), shared[i].Owed(), "tick %d, recipient %d", tick, i)
		}
	}
}

func TestInterleavedRoundsInASharedScratchPanic(t *testing.T) {
	var scratch interest.Scratch
	var x, y interest.Backlog
	x.Use(&scratch)
	y.Use(&scratch)
	x.Offer(1, 1, true)
	assert.PanicsWithValue(t, "interest: Backlog.Offer while another backlog's round is open in the shared Scratch",
		func() { y.Offer(2, 1, true) })
	assert.Equal(t, []uint32{1}, x.Take(8, nil), "the open round is x's alone")
	y.Offer(2, 1, true)
	assert.Equal(t, []uint32{2}, y.Take(8, nil), "once x took, y's round may open")
}
