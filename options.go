package throng

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/interest"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/systems"
)

// Defaults and limits of [Options]. A key left out of a settings file (a nil
// or zero field of Options) takes the default named here.
const (
	// DefaultTickRate is the tick rate, in Hz, when tickRate is not set.
	DefaultTickRate = 30
	// MaxTickRate is the highest tickRate accepted. 30, 60 and 120 Hz are
	// the rates Throng is measured at; anything from 1 to MaxTickRate runs.
	MaxTickRate = 240

	// DefaultChunkSize is the edge of a chunk in world units when chunkSize
	// is not set: 4096 units.
	DefaultChunkSize = grid.DefaultChunkSize

	// MaxWorkerThreads caps parallelism.workerThreads, set or automatic.
	MaxWorkerThreads = 64

	// DefaultMinActorsToOffload is the actor count from which the Move and
	// Relay phases go to the worker pool; below it they run inline, because
	// for smaller crowds the fork/join barrier and the cores' shared caches
	// cost more than the second core saves (the break-even BenchmarkTick
	// finds; docs/performance.md).
	DefaultMinActorsToOffload = 300
	// DefaultMinClusterActors: clusters with fewer actors are swept up
	// inline instead of getting their own work unit.
	DefaultMinClusterActors = 4
	// DefaultMinShardActors is the fewest actors one shard of a crowded
	// cluster may carry.
	DefaultMinShardActors = 4
	// DefaultClusterSeparationChunks is the chunk distance that separates
	// clusters: one chunk of margin over [grid.MinSeparation], the smallest
	// value accepted (smaller values are raised to it).
	DefaultClusterSeparationChunks = 4

	// DefaultInterestFullRateUnits: recipients closer than this get every
	// update; half a chunk.
	DefaultInterestFullRateUnits = interest.DefaultFullRateUnits
	// DefaultMaxInterestSkipTicks is the longest interest period: a distant
	// pair is sent at least once every 4 ticks.
	DefaultMaxInterestSkipTicks = interest.DefaultMaxSkip
	// DefaultTargetTickBudgetMicros is the wall-clock target, in
	// microseconds, for the parallel phase; adaptive throttling acts when a
	// cluster's share of it is overshot.
	DefaultTargetTickBudgetMicros = 8000
	// DefaultThrottleWorkShare: adaptive throttling acts only while ticks,
	// smoothed, take more than 70% of the tick period.
	DefaultThrottleWorkShare = systems.DefaultPressWorkShare
	// DefaultWorkerWakeAheadMicros is how long before each tick [Server.Run]
	// wakes the worker pool: 1 ms, longer than a sleeping thread takes to
	// wake even on a busy virtual machine.
	DefaultWorkerWakeAheadMicros = 1000
	// DefaultThrottleDistanceUnits: without a per-connection budget, pairs
	// closer than this are never throttled; one chunk.
	DefaultThrottleDistanceUnits = interest.DefaultThrottleDistanceUnits
	// DefaultMaxThrottleSkipTicks is the longest throttle period, and one
	// more than the highest pressure level. Throttle and interest periods
	// combine by the larger, and with the default tiers every pair beyond
	// the throttle distance already has an interest period of 3 or 4, so
	// the cap must be above 4 for pressure to shed anything there.
	DefaultMaxThrottleSkipTicks = interest.DefaultMaxThrottleSkip
	// MaxSkipTicks is the longest period any interest tier, interest
	// ceiling or throttle ceiling may ask for (one second at [MaxTickRate]);
	// longer periods are lowered to it, so a pair is never silent for long.
	MaxSkipTicks = 240
)

// Options configures a whole Throng server. It is what a settings file holds
// ([LoadOptions] reads one) and what a program fills in by hand.
//
// The zero value means every default. To make that hold for keys whose
// default is not zero, those fields are pointers and nil means "the
// default", so that an explicit 0 or false stays distinguishable from a key
// left out. Keys whose default is zero are plain values. With Go 1.26 a
// pointer field is set inline with new:
//
//	opts := throng.Options{
//		TickRate:    new(60),
//		Parallelism: throng.Parallelism{Enabled: new(false)},
//	}
//
// Entry is what Options.Admit decides for a Hello it lets in: the player's
// name ("" for a guest) and where its actor spawns.
type Entry = systems.Entry

// Options is the raw request; [Options.Resolve] validates it, fills in the
// defaults, applies the documented clamps and returns the [Settings] a
// server runs with.
//
// Every field carries its settings-file key in its json tag, and
// [LoadOptions] decodes against those tags only, so a new section (an
// admission policy, rate limits, listen addresses) is a new field with a
// json tag and is strict from the start: its unknown keys, wrong types and
// duplicates are errors that name their full path.
type Options struct {
	// TickRate is the fixed simulation rate in Hz, 1 to [MaxTickRate].
	// Key "tickRate"; nil means [DefaultTickRate].
	TickRate *int `json:"tickRate,omitempty"`
	// ChunkSize is the edge of a chunk in world units; it must be positive
	// and finite. Key "chunkSize"; nil means [DefaultChunkSize].
	ChunkSize *float32 `json:"chunkSize,omitempty"`
	// Parallelism configures the parallel tick and interest management.
	// Key "parallelism"; its zero value means every default.
	Parallelism Parallelism `json:"parallelism,omitzero"`
	// Admission turns new players away while the server is over budget.
	// Key "admission".
	Admission Admission `json:"admission,omitzero"`
	// ClientLimits caps what clients may send. Key "clientLimits".
	ClientLimits ClientLimits `json:"clientLimits,omitzero"`
	// Metrics says where operators read the figures. Key "metrics".
	Metrics Metrics `json:"metrics,omitzero"`
	// Connection is the per-connection budget. Key "connection".
	Connection Connection `json:"connection,omitzero"`
	// Network says where the server listens for clients when Transport
	// is not set: QUIC, a WebSocket, or both. Key "network".
	Network Network `json:"network,omitzero"`
	// Persistence says where and how often the world is saved. Key
	// "persistence".
	Persistence Persistence `json:"persistence,omitzero"`
	// Debug opens the spectator window for operators. Key "debug".
	Debug Debug `json:"debug,omitzero"`
	// Props says how near players props matter. Key "props".
	Props Props `json:"props,omitzero"`
	// Classes configures the relevance classes: each one's interest
	// table, rank under the per-connection budget and, for props, radius
	// (see [ClassOptions]). Key "classes"; empty keeps Throng's three
	// classes as the other sections set them.
	Classes []ClassOptions `json:"classes,omitempty"`
	// UnitsPerMetre converts the distances the "classes" section gives in
	// metres to world units. Above 0. Key "unitsPerMetre"; nil means
	// [DefaultUnitsPerMetre].
	UnitsPerMetre *float32 `json:"unitsPerMetre,omitempty"`
	// LoadFrom is a save to start from: a save directory (its latest
	// save) or a save file. The server's world starts as the save left
	// it, before the first tick; a save that cannot be read whole fails
	// New. Key "loadFrom"; empty starts an empty world.
	LoadFrom string `json:"loadFrom,omitempty"`

	// The fields below are set from code, never from a settings file.

	// Transport is what clients connect through. Nil gives the server the
	// listeners the "network" section names, or, with none, a fresh
	// in-memory transport ([mem.Transport], see [Server.Mem]), which is for
	// tests, benchmarks and in-process bots.
	Transport wire.Transport `json:"-"`
	// Protocol is the game's own protocol version; a client whose Hello
	// carries another is refused with a reason it can read.
	Protocol uint16 `json:"-"`
	// Admit decides whether a client's Hello is let in, as which player
	// (see Entry.Player: a named player's actor is kept while it is away,
	// in saves too, and handed back when it returns), and where its actor
	// spawns; a non-nil error refuses the client with the error's text.
	// Nil admits everyone as a guest at the origin of worldOrCell 0.
	Admit func(hello wire.Hello) (Entry, error) `json:"-"`
	// SavedTypes are the components of the game's own that saves keep
	// (save.Plain, save.Coded); a save holding a type not listed here
	// cannot be loaded.
	SavedTypes []save.Type `json:"-"`
	// Logger receives the metrics lines; nil means slog.Default().
	Logger *slog.Logger `json:"-"`
}

// Parallelism is the "parallelism" section of [Options]: how the tick uses
// the cores, interest management and adaptive throttling. As in
// Options, nil pointers and zero plain fields mean the defaults; counts must
// not be negative and distances must be finite and not negative.
type Parallelism struct {
	// Enabled: false runs every phase inline on the tick goroutine. Key
	// "enabled"; nil means true.
	Enabled *bool `json:"enabled,omitempty"`
	// WorkerThreads is the size of the worker pool. 0 (the default) means
	// runtime.GOMAXPROCS(0), read each tick so a changed CPU quota takes
	// effect. Set or automatic, at most [MaxWorkerThreads] are used; larger
	// values are lowered. Key "workerThreads".
	WorkerThreads int `json:"workerThreads,omitempty"`
	// MinActorsToOffload: below this many actors the phases run inline.
	// 0 always offloads. Key "minActorsToOffload"; nil means
	// [DefaultMinActorsToOffload].
	MinActorsToOffload *int `json:"minActorsToOffload,omitempty"`
	// MinClusterActors: clusters with fewer actors are swept up inline.
	// Key "minClusterActors"; nil means [DefaultMinClusterActors].
	MinClusterActors *int `json:"minClusterActors,omitempty"`
	// MinShardActors is the fewest actors in one shard; 0 is raised to 1.
	// Key "minShardActors"; nil means [DefaultMinShardActors].
	MinShardActors *int `json:"minShardActors,omitempty"`
	// MaxShardsPerCluster caps the shards one cluster is cut into. 0 (the
	// default) means four times the worker count. Key "maxShardsPerCluster".
	MaxShardsPerCluster int `json:"maxShardsPerCluster,omitempty"`
	// ClusterSeparationChunks is the chunk distance that separates
	// clusters. Values below [grid.MinSeparation] (3) are raised to it: a
	// smaller separation could put two actors that can see each other in
	// different clusters. Key "clusterSeparationChunks"; nil means
	// [DefaultClusterSeparationChunks].
	ClusterSeparationChunks *int `json:"clusterSeparationChunks,omitempty"`
	// MaxWorkUnitsPerTick caps the work units handed to the pool in one
	// tick; the rest run on the tick goroutine. 0 (the default) means
	// unlimited. Key "maxWorkUnitsPerTick".
	MaxWorkUnitsPerTick int `json:"maxWorkUnitsPerTick,omitempty"`
	// WorkerWakeAheadMicros is how long before each tick [Server.Run] wakes
	// the pool's workers, in microseconds, so that they are running, not
	// asleep, when the tick's first parallel phase starts: a sleeping
	// worker takes from tens of microseconds (bare metal) to hundreds (a
	// busy VM) to wake, and the tick goroutine works alone meanwhile. The
	// workers that the last tick used poll from then until the tick's
	// first parallel phase calls them: about this much CPU time per worker
	// and tick, at most twice it, then they sleep as before. 0 lets them sleep. Key
	// "workerWakeAheadMicros"; nil means [DefaultWorkerWakeAheadMicros].
	WorkerWakeAheadMicros *int `json:"workerWakeAheadMicros,omitempty"`

	// InterestManagement: distance tiers lower the update rate of far pairs,
	// regardless of load. Key "interestManagement"; nil means true.
	InterestManagement *bool `json:"interestManagement,omitempty"`
	// InterestFullRateUnits: recipients closer than this get every update.
	// Key "interestFullRateUnits"; nil means [DefaultInterestFullRateUnits].
	InterestFullRateUnits *float32 `json:"interestFullRateUnits,omitempty"`
	// MaxInterestSkipTicks is the longest interest period. 0 is raised to 1
	// (every update is sent); values above [MaxSkipTicks] are lowered. Key
	// "maxInterestSkipTicks"; nil means [DefaultMaxInterestSkipTicks].
	MaxInterestSkipTicks *int `json:"maxInterestSkipTicks,omitempty"`
	// InterestTiers is the interest table. Empty (the default) derives it
	// from InterestFullRateUnits and MaxInterestSkipTicks: period 2 beyond
	// one multiple of the full-rate distance, 3 beyond two, and so on up to
	// the ceiling. When given, it is the whole table: distances must ascend
	// strictly, periods must be at least 1 and must not fall with distance
	// (periods above [MaxSkipTicks] are lowered). InterestFullRateUnits and
	// MaxInterestSkipTicks, if set as well, are limits the table must keep:
	// its first distance may not be closer and its last period may not be
	// longer. [CrowdTiers] is a ready-made table. Key "interestTiers", a
	// list of {"beyondUnits": number, "period": integer}, both keys
	// required in every entry.
	InterestTiers []InterestTier `json:"interestTiers,omitempty"`

	// AdaptiveThrottling spaces out far relays of a cluster whose smoothed
	// cost overshoots its share of the tick budget; it only acts under
	// measured overload. Key "adaptiveThrottling"; nil means true.
	AdaptiveThrottling *bool `json:"adaptiveThrottling,omitempty"`
	// TargetTickBudgetMicros is the wall-clock target for the parallel
	// phase, in microseconds; at least 1. Key "targetTickBudgetMicros"; nil
	// means [DefaultTargetTickBudgetMicros].
	TargetTickBudgetMicros *int `json:"targetTickBudgetMicros,omitempty"`
	// ThrottleWorkShare is the share of the tick period that whole ticks,
	// smoothed, must take for adaptive throttling to act: below it the
	// server keeps its rate with room to spare, and shedding relays would
	// take updates from players for nothing. Above 0, at most 1. Key
	// "throttleWorkShare"; nil means [DefaultThrottleWorkShare].
	ThrottleWorkShare *float64 `json:"throttleWorkShare,omitempty"`
	// ThrottleDistanceUnits: pairs closer than this are never throttled.
	// Key "throttleDistanceUnits"; nil means [DefaultThrottleDistanceUnits].
	ThrottleDistanceUnits *float32 `json:"throttleDistanceUnits,omitempty"`
	// MaxThrottleSkipTicks is the longest throttle period. 0 is raised to 1
	// (throttling never spaces a pair out); values above [MaxSkipTicks] are
	// lowered. Key "maxThrottleSkipTicks"; nil means
	// [DefaultMaxThrottleSkipTicks].
	MaxThrottleSkipTicks *int `json:"maxThrottleSkipTicks,omitempty"`

	// MetricsLogIntervalTicks: every this many ticks the server logs one
	// summary line. 0 (the default) turns the line off. Key
	// "metricsLogIntervalTicks".
	MetricsLogIntervalTicks int `json:"metricsLogIntervalTicks,omitempty"`
}

// InterestTier is one step of the interest table: recipients at BeyondUnits
// or farther from a sender get its updates once every Period ticks, until
// the next step's distance. Recipients closer than the first step get every
// update. A pair with period p is sent when (phase + tick) mod p == 0, with
// a phase hashed from the pair, so it is sent exactly once per p ticks.
type InterestTier struct {
	// BeyondUnits is the distance, in world units, where this step starts.
	BeyondUnits float32 `json:"beyondUnits"`
	// Period is how many ticks apart updates are sent; 1 is every tick.
	Period int `json:"period"`
}

// CrowdTiers returns [interest.CrowdSteps] as settings: every update
// nearby, a third as often from 60 m, a fifth from 100 m and a tenth from
// 140 m. Throng knows units, not metres: unitsPerMetre converts (about 70
// where a 4096-unit chunk is 58.5 m, which puts the bands at 4200, 7000
// and 9800 units, all within the 3x3 stencil's reach).
func CrowdTiers(unitsPerMetre float32) []InterestTier {
	steps := interest.CrowdSteps(unitsPerMetre)
	tiers := make([]InterestTier, len(steps))
	for i, s := range steps {
		tiers[i] = InterestTier{BeyondUnits: s.BeyondUnits, Period: int(s.Period)}
	}
	return tiers
}

// Settings is [Options] resolved: every default filled in, every value
// validated and clamped. It holds plain values only; [Options.Resolve]
// makes one and the server reads it.
type Settings struct {
	// TickRate is the simulation rate in Hz, 1 to [MaxTickRate].
	TickRate int
	// ChunkSize is the edge of a chunk in world units, positive and finite.
	ChunkSize float32
	// Parallelism is the resolved "parallelism" section.
	Parallelism ParallelSettings
	// Admission is the resolved "admission" section.
	Admission AdmissionSettings
	// Clients is the resolved "clientLimits" section.
	Clients ClientSettings
	// MetricsListen is metrics.listen: "" (off) or host:port.
	MetricsListen string
	// MaxRecordsPerTick is connection.maxRecordsPerTick: 0 (no cap) or
	// the most records one client is sent per tick.
	MaxRecordsPerTick int
	// NearestSenders is connection.nearestSenders: how many nearest
	// senders the cap never thins (0 with no cap).
	NearestSenders int
	// Network is the "network" section, checked.
	Network Network
	// Persistence is the resolved "persistence" section.
	Persistence PersistenceSettings
	// Debug is the resolved "debug" section.
	Debug DebugSettings
	// Props is the resolved "props" section.
	Props PropSettings
	// Classes are the relevance classes by number, Throng's three
	// ("player", "npc", "prop") first, and UnitsPerMetre the metre's
	// length in world units.
	Classes       []ClassSettings
	UnitsPerMetre float32
	// LoadFrom is the save the world starts from, or "".
	LoadFrom string
}

// TickPeriod returns the time between two ticks at TickRate, truncated to
// the nanosecond. TickRate must be positive, as Resolve guarantees.
func (s Settings) TickPeriod() time.Duration {
	return time.Second / time.Duration(s.TickRate)
}

// ParallelSettings is [Parallelism] resolved. Fields mean what the
// Parallelism field of the same name means; the notes say what a resolved
// value can be.
type ParallelSettings struct {
	Enabled bool
	// WorkerThreads is 0 (automatic, see [ParallelSettings.Workers]) or 1
	// to [MaxWorkerThreads].
	WorkerThreads      int
	MinActorsToOffload int
	MinClusterActors   int
	// MinShardActors is at least 1.
	MinShardActors int
	// MaxShardsPerCluster is 0 (four times the worker count, see
	// [ParallelSettings.ShardsPerCluster]) or a positive cap.
	MaxShardsPerCluster int
	// ClusterSeparationChunks is at least [grid.MinSeparation].
	ClusterSeparationChunks int
	// MaxWorkUnitsPerTick is 0 (unlimited) or a positive cap.
	MaxWorkUnitsPerTick int
	// WorkerWakeAheadMicros is 0 (workers sleep between ticks) or how long
	// before each tick Run wakes them; see [ParallelSettings.WakeAhead].
	WorkerWakeAheadMicros int

	InterestManagement bool
	// InterestFullRateUnits and MaxInterestSkipTicks describe the table in
	// force: as configured when the table is derived, else the explicit
	// table's first distance and last period. MaxInterestSkipTicks is 1 to
	// [MaxSkipTicks].
	InterestFullRateUnits float32
	MaxInterestSkipTicks  int
	// InterestTiers is the table the relay applies when InterestManagement
	// is on: distances strictly ascending, periods 1 to [MaxSkipTicks] and
	// never falling. Empty means every update is sent. Resolve returns a
	// fresh slice; the server must not modify it.
	InterestTiers []InterestTier

	AdaptiveThrottling bool
	// TargetTickBudgetMicros is at least 1.
	TargetTickBudgetMicros int
	// ThrottleWorkShare is above 0 and at most 1.
	ThrottleWorkShare     float64
	ThrottleDistanceUnits float32
	// MaxThrottleSkipTicks is 1 to [MaxSkipTicks].
	MaxThrottleSkipTicks int
	// MetricsLogIntervalTicks is 0 (off) or the interval in ticks.
	MetricsLogIntervalTicks int
}

// Workers returns how many workers the parallel phases may use now:
// WorkerThreads when set, else runtime.GOMAXPROCS(0), capped at
// [MaxWorkerThreads]. Call it once per tick: the Go runtime lowers or
// raises GOMAXPROCS when the container's CPU quota changes.
func (p ParallelSettings) Workers() int {
	if p.WorkerThreads > 0 {
		return min(p.WorkerThreads, MaxWorkerThreads)
	}
	return min(runtime.GOMAXPROCS(0), MaxWorkerThreads)
}

// WakeAhead returns WorkerWakeAheadMicros as a duration.
func (p ParallelSettings) WakeAhead() time.Duration {
	return time.Duration(p.WorkerWakeAheadMicros) * time.Microsecond
}

// ShardsPerCluster returns the most shards one cluster may be cut into when
// workers workers run: MaxShardsPerCluster when set, else 4 * workers.
//
// Each goroutine of the pool runs its home block of shards, then takes the
// cheapest shards left in the others', so a tick ends when the last shard
// does: where one core is slower than another (a cloud machine's noisy
// neighbour, an efficiency core), the fast one waits at the end of the
// relay for up to one shard. Four a worker bound that tail to a quarter
// of a core's share; more shards cost more in handoffs than they save
// (docs/performance.md).
func (p ParallelSettings) ShardsPerCluster(workers int) int {
	if p.MaxShardsPerCluster > 0 {
		return p.MaxShardsPerCluster
	}
	return 4 * workers
}
