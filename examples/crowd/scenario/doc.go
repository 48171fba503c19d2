// Package scenario builds the populations and the bots of the crowd example
// and of the tick benchmarks (bench_test.go at the module root): the
// scenarios every performance figure is measured on, each a deterministic
// function of (players, seed), and a bot that wanders the way players do.
//
// It sits in examples/, above the framework: it imports components, grid and
// net/wire, and never the ECS or the systems. Nothing here is package-level
// mutable state; every random source belongs to a population or a bot.
//
// # The scenarios
//
//	square  n actors uniform over one 4096 x 4096 chunk, all in sight of each other
//	town    a hub, two towns, two interiors and scattered travellers; the hub
//	        holds about 70% of the relay work (see [Town] for the split)
//	world   n actors uniform over a 64 x 64 chunk world, roaming across chunks
//	plaza   n players spawning and wandering within 300 x 300 m around a
//	        240 x 240 m plaza, jumping, at 10 updates a second; the plaza's
//	        5,000 props and its NPCs are spawned by examples/crowd/plaza
//
// Every actor comes with an [Area], the rectangle its bot wanders in, so a
// population keeps its shape however long it runs, and every population
// with the [Gait] its bots walk ([Population.BotGait]).
//
// # Task -> API
//
//	build a population by name          [New], [Names]
//	build one directly                  [Square], [Town], [World], [Plaza]
//	the plaza's layout                  [PlazaArea], [PlazaSpawnArea]
//	admit a bot's Hello at its spawn    [Population.Admit], [Token]
//	admit anyone (development server)   [Population.AdmitAny]
//	drive a bot                         [Population.Bot], [NewBot], [Bot.Advance], [Bot.AppendDueMove]
//	hand updates to a client.Client        [Bot.Move]
//	how its bots walk and jump          [Population.BotGait], [Gait], [PlazaGait], [Gait.Rates]
//	move every tick (benchmarks)        [Bot.AppendMove], [RestlessGait]
//	follow the server                   [Bot.Welcome], [Bot.Correct]
//	space a client's updates            [SendLimiter]
//	measure a population's relay split  [Population.RelayWork]
package scenario
