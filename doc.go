// Package throng is a framework for authoritative game servers whose players
// crowd together: a city square, a market, a raid. Every movement update is
// relayed to everyone who can see the mover, so N players in one area cost
// about N^2 relay decisions per tick; Throng keeps the world in an Ark ECS,
// runs that quadratic part across all cores, sends far players less often,
// and stays deterministic: the same inputs give the same bytes on the wire
// on 1 core or 64.
//
// This root package is the server's front door. It may import every package
// of the module (grid/, components/, ecs/, scheduler/, net/, systems/, ...);
// none of them imports it.
//
// # Outline
//
// Configuration: [Options] is the one settings struct of a server, read
// from a JSON settings file by [LoadOptions] or [LoadOptionsFile] (strictly:
// unknown keys, wrong types and negative counts are [*OptionsError] values
// naming the key's path) or filled in by hand. Its zero value means every
// default. [Options.Resolve] turns it into [Settings], the plain validated
// values a server runs with, and lists each documented clamp it applied as
// an [Adjustment] for the start-up log. [Parallelism] is the "parallelism"
// section; [InterestTier] is one step of
// the interest table and [CrowdTiers] a ready-made table.
//
// The server: [New] builds a [Server] from Options: an ECS world
// ([ecs.World]), a transport (Options.Transport, or an in-memory one), the
// worker pool and the schedule of the five built-in systems (ingest,
// prepare, move, relay, join; see package systems). [Server.Run] ticks at
// the configured rate on a fixed time grid; [Server.Tick] runs one tick, for
// tests and benchmarks. [Server.AddSystem] puts a user's own system into the
// tick at a named place, and [Server.Schedule] shows where everything runs.
//
// # Task -> API
//
//   - Start a server: [New], then [Server.Run] with a context.
//   - Step it by hand: [Server.Tick]; what the tick did: [Server.Stats].
//   - Add game logic: implement scheduler.SerialSystem or
//     scheduler.ParallelSystem, then [Server.AddSystem] with
//     scheduler.After(systems.MoveName) or similar; print
//     [Server.Schedule] to see the stages.
//   - Decide who may join, under which name (a named player's actor is kept
//     while it is away), and where they spawn: Options.Admit.
//   - Connect in-process clients (tests, bots): [Server.Mem], then Dial.
//   - Read a settings file: [LoadOptionsFile], then [Options.Resolve].
//   - Configure in Go: set [Options] fields (pointer fields with new(v)),
//     then [Options.Resolve].
//   - Log what was changed at start-up: [Adjustment.String] on each
//     adjustment Resolve returns.
//   - Find which key is wrong: errors.As(err, &oe) with an [*OptionsError],
//     then oe.Key.
//   - Run inline only: Parallelism.Enabled = new(false), or
//     "parallelism": {"enabled": false}.
//   - Size the worker pool this tick: [ParallelSettings.Workers]; shards of
//     one cluster: [ParallelSettings.ShardsPerCluster].
//   - Tune interest management: Parallelism.InterestFullRateUnits and
//     MaxInterestSkipTicks, or a whole table in Parallelism.InterestTiers
//     (for example [CrowdTiers]).
//   - Time between ticks: [Settings.TickPeriod].
package throng
