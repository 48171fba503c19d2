// Package interest decides how often each sender's movement reaches each
// recipient: the distance tiers of interest management, the pair phase and
// send rule that spread reduced-rate pairs evenly over their window, adaptive
// throttling under load, and the priority accumulator that keeps what a full
// datagram cut owed rather than lost.
//
// It is pure logic for the Relay and Join systems. It imports nothing of
// Throng's and knows nothing of the ECS; everything in it is deterministic,
// and the per-pair calls are tiny, inlinable and allocation-free.
//
// # Outline
//
//   - Interest tiers: a [Tiers] table of [Step] rows, built once by
//     [NewTiers] from [DefaultSteps] or [CrowdSteps] (or your own rows).
//     [Tiers.PeriodSq] maps a pair's squared distance to its period.
//   - Send rule: a pair sends when (phase + tick) mod period == 0 ([Sends]),
//     with phase = [Phase](sender, recipient) over stable actor ids. A
//     [Clock], set once per tick, answers the same without a division.
//   - Throttling: per cluster, an [EWMA] of cost feeds a [Pressure] level
//     under a [PressureRule]; [Throttle.PeriodSq] spaces far pairs by that
//     level; [Combine] (or [Rates.PeriodSq]) takes the larger of the interest
//     and throttle periods.
//   - Per-connection budget: a [Backlog] per recipient picks the senders that
//     fit the datagram and owes the rest, with a documented bound
//     ([WaitBound]) on how long any owed sender waits.
//
// # Units
//
// Distances are world units (a default chunk is 4096 of them) and are
// passed squared, as dx*dx + dy*dy (+ dz*dz), so the relay never takes a
// square root. [CrowdSteps] takes metre-based tiers with the game's units
// per metre.
//
// # Task -> API
//
//   - Build the default tiers: [NewTiers]([DefaultSteps](2048, 4), 4).
//   - Build the 60 m / 100 m / beyond tiers:
//     [NewTiers]([CrowdSteps](unitsPerMetre), 10).
//   - Switch interest management off: use the zero [Tiers].
//   - Period of a pair: [Tiers.PeriodSq].
//   - Phase of a pair: [Phase].
//   - Does the pair send this tick? [NewClock] once, [Clock.Set] per tick,
//     [Clock.Sends] per pair; [Sends] is the definition.
//   - Smooth a cluster's cost: [EWMA.Observe], [EWMA.Value].
//   - Raise or lower a cluster's pressure: [Pressure.Update] with a
//     [PressureRule] whose MaxLevel is [Throttle.MaxLevel].
//   - Throttle period of a pair: [NewThrottle], [Throttle.PeriodSq].
//   - Interest and throttle together: [Combine], or [Rates.PeriodSq] in one
//     call.
//   - Cut a batch to the datagram budget: [Backlog.Offer] per sender,
//     [Backlog.Take] once per tick, weights from [Weight]; one [Scratch]
//     for the recipients a goroutine serves in turn ([Backlog.Use]), and
//     [Backlog.Reserve] / [Scratch.Reserve] to size them for the view.
//   - How long an owed sender can wait: [WaitBound].
//
// # The relay loop
//
// Once per tick, before the relay: clock.Set(tick), and per cluster
// cost.Observe(lastCost); pressure.Update(rule, cost.Value(), share). Per
// actor: res[s] = SenderResidues(s.ID). Then, for recipient r (want :=
// clock.Want(r.ID)) and each sender s in r's 3x3 stencil (s != r):
//
//	d2 := dx*dx + dy*dy
//	p := rates.PeriodSq(d2, pressure.Level())
//	due := p == 1 || res[s][p] == want[p] // p < FastPeriods; else clock.Sends(Phase(s.ID, r.ID), p)
//	if due {
//		// append s's record to r's batch
//	}
//
// Because a phase is the sum of a sender half and a recipient half, each
// reduced modulo lcm(1..16), a pair costs one byte comparison: no hash, no
// division. With a per-connection budget, offer instead of
// appending, and send what Take returns:
//
//	if due || backlog.Owed() > 0 {
//		backlog.Offer(s.ID, interest.Weight(p, rates.Interest.Longest()), due)
//	}
//	...
//	batch = backlog.Take(budget, batch[:0]) // senders in offer order
package interest
