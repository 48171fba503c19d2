// Package fleet runs the crowd example's bots as real QUIC clients of a
// Throng server: each bot is a [scenario.Bot] behind its own [client.Client],
// so the server sees what it would see from players on a network (TLS,
// datagrams, a reliable stream per client), and the bots see what players
// would: their Welcome, movement batches, corrections.
//
// It sits in examples/, above the framework: it imports net and the
// scenario package, never the server. The crowd command uses it for its
// in-process bots and its load test (-ramp); the bots command
// (examples/crowd/bots) runs it in a process of its own.
//
// A fleet starts empty. [Fleet.Grow] dials bots, a few at a time, and hands
// each welcomed one to a driver: a goroutine that steps its share of the
// bots every [Config.Step] (read what arrived, snap to corrections, walk,
// send an update as the client's rate limit allows). Bots are numbered from
// [Config.First]; bot k sends the token TokenPrefix+k and wanders
// Population.Bot(k)'s area, which is where a server admitting with
// [scenario.Population.AdmitAny] of the same population spawns it.
//
// # Task -> API
//
//	start an empty fleet                  [Start], [Config]
//	connect bots up to a number           [Fleet.Grow], [Growth]
//	read what the bots sent and received  [Fleet.Totals], [Totals]
//	disconnect them all                   [Fleet.Close]
//	measure the CPU this process used     [ProcessCPU]
package fleet
