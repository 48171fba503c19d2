package throng

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/throng-go/throng/grid"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/systems"
)

// Adjustment reports one value that [Options.Resolve] changed to keep the
// server within its documented limits. A server logs them at start-up.
type Adjustment struct {
	// Key is the full settings-file path, e.g.
	// "parallelism.clusterSeparationChunks".
	Key string
	// Given is the value asked for; Used is the value the server runs with.
	Given, Used float64
	// Why says what the limit protects.
	Why string
}

// String formats a like "parallelism.clusterSeparationChunks: 2 raised to
// 3 (...)".
func (a Adjustment) String() string {
	dir := "raised"
	if a.Used < a.Given {
		dir = "lowered"
	}
	return fmt.Sprintf("%s: %s %s to %s (%s)", a.Key, formatNumber(a.Given), dir, formatNumber(a.Used), a.Why)
}

func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// OptionsError is a problem with one settings key, or with the settings as
// a whole. [LoadOptions], [LoadOptionsFile] and [Options.Resolve] return it;
// when several keys are wrong they return all of them joined with
// errors.Join, each an *OptionsError, so errors.As finds the first.
type OptionsError struct {
	// File is the settings file, "" when the settings did not come from
	// [LoadOptionsFile].
	File string
	// Key is the full path of the key, e.g. "parallelism.workerThreads" or
	// "parallelism.interestTiers[1].period"; "" for the document as a
	// whole (a syntax error, trailing data).
	Key string
	// Problem says what is wrong, e.g. "want a number, got string".
	Problem string
}

// Error formats e as "throng: options: [file: ][key: ]problem".
func (e *OptionsError) Error() string {
	msg := "throng: options: "
	if e.File != "" {
		msg += e.File + ": "
	}
	if e.Key != "" {
		msg += e.Key + ": "
	}
	return msg + e.Problem
}

// Resolve validates o and returns the settings a server runs with: every
// default filled in, every documented clamp applied and reported, in key
// order, as an [Adjustment]. Values no clamp can repair (a negative count, a
// tick rate out of range, a non-finite distance, a misordered tier table)
// are errors naming their key (see [OptionsError]); then Resolve returns
// zero Settings and no adjustments. Resolve does not modify o, and the
// Settings share no memory with it.
func (o Options) Resolve() (Settings, []Adjustment, error) {
	s, adj, errs := o.resolve()
	if len(errs) > 0 {
		return Settings{}, nil, joinOptionsErrors(errs, "")
	}
	return s, adj, nil
}

func joinOptionsErrors(errs []*OptionsError, file string) error {
	if len(errs) == 1 {
		errs[0].File = file
		return errs[0]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		e.File = file
		all[i] = e
	}
	return errors.Join(all...)
}

// resolver collects the adjustments and errors of one Resolve call.
type resolver struct {
	adj  []Adjustment
	errs []*OptionsError
}

func (r *resolver) fail(key, format string, args ...any) {
	r.errs = append(r.errs, &OptionsError{Key: key, Problem: fmt.Sprintf(format, args...)})
}

// count returns *p, or def when p is nil; negative counts are errors.
func (r *resolver) count(key string, p *int, def int) int {
	if p == nil {
		return def
	}
	return r.plainCount(key, *p)
}

func (r *resolver) plainCount(key string, v int) int {
	if v < 0 {
		r.fail(key, "must not be negative, got %d", v)
		return 0
	}
	return v
}

// distance returns *p, or def when p is nil; negative or non-finite
// distances are errors.
func (r *resolver) distance(key string, p *float32, def float32) float32 {
	if p == nil {
		return def
	}
	return r.plainDistance(key, *p)
}

func (r *resolver) plainDistance(key string, v float32) float32 {
	f := float64(v)
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		r.fail(key, "must be a finite number, got %v", v)
		return 0
	case v < 0:
		r.fail(key, "must not be negative, got %s", formatNumber(f))
		return 0
	}
	return v
}

// clamp returns v limited to [lo, hi], reporting any change.
func (r *resolver) clamp(key string, v, lo, hi int, whyLo, whyHi string) int {
	switch {
	case v < lo:
		r.adj = append(r.adj, Adjustment{Key: key, Given: float64(v), Used: float64(lo), Why: whyLo})
		return lo
	case v > hi:
		r.adj = append(r.adj, Adjustment{Key: key, Given: float64(v), Used: float64(hi), Why: whyHi})
		return hi
	}
	return v
}

func on(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

const (
	whyNoSkip    = "a period of 1 sends every update"
	whyMaxSkip   = "the longest period Throng allows"
	whySeparated = "closer clusters could share recipients"
)

func (o Options) resolve() (Settings, []Adjustment, []*OptionsError) {
	var r resolver
	s := Settings{TickRate: DefaultTickRate, ChunkSize: DefaultChunkSize}
	if o.TickRate != nil {
		s.TickRate = *o.TickRate
		if s.TickRate < 1 || s.TickRate > MaxTickRate {
			r.fail("tickRate", "must be 1 to %d Hz, got %d", MaxTickRate, s.TickRate)
		}
	}
	if o.ChunkSize != nil {
		s.ChunkSize = *o.ChunkSize
		if f := float64(s.ChunkSize); !(f > 0) || math.IsInf(f, 0) {
			r.fail("chunkSize", "must be a positive finite number, got %v", s.ChunkSize)
		}
	}
	s.Parallelism = o.Parallelism.resolve(&r)
	s.Admission = o.Admission.resolve(&r)
	s.Props = o.Props.resolve(&r)
	s.Classes, s.UnitsPerMetre = resolveClasses(&r, o.Classes, o.UnitsPerMetre)
	s.Clients = o.ClientLimits.resolve(&r)
	s.MetricsListen = o.Metrics.resolve(&r)
	s.Network = o.Network.resolve(&r)
	s.Persistence = o.Persistence.resolve(&r)
	s.Debug = o.Debug.resolve(&r)
	s.LoadFrom = o.LoadFrom
	s.MaxRecordsPerTick = r.count("connection.maxRecordsPerTick", o.Connection.MaxRecordsPerTick, wire.MaxRecordsPerBatch)
	s.NearestSenders = r.count("connection.nearestSenders", o.Connection.NearestSenders, 0)
	switch {
	case s.NearestSenders > systems.MaxNearestSenders:
		r.fail("connection.nearestSenders", "must be at most %d, got %d", systems.MaxNearestSenders, s.NearestSenders)
	case s.MaxRecordsPerTick > 0 && s.NearestSenders > s.MaxRecordsPerTick:
		r.fail("connection.nearestSenders", "must be at most connection.maxRecordsPerTick (%d), got %d", s.MaxRecordsPerTick, s.NearestSenders)
	case s.MaxRecordsPerTick == 0:
		s.NearestSenders = 0 // nothing is thinned without a cap
	}
	if len(r.errs) > 0 {
		return Settings{}, nil, r.errs
	}
	return s, r.adj, nil
}

func (p Parallelism) resolve(r *resolver) ParallelSettings {
	const at = "parallelism."
	s := ParallelSettings{
		Enabled:                 on(p.Enabled, true),
		WorkerThreads:           r.plainCount(at+"workerThreads", p.WorkerThreads),
		MinActorsToOffload:      r.count(at+"minActorsToOffload", p.MinActorsToOffload, DefaultMinActorsToOffload),
		MinClusterActors:        r.count(at+"minClusterActors", p.MinClusterActors, DefaultMinClusterActors),
		MinShardActors:          r.count(at+"minShardActors", p.MinShardActors, DefaultMinShardActors),
		MaxShardsPerCluster:     r.plainCount(at+"maxShardsPerCluster", p.MaxShardsPerCluster),
		ClusterSeparationChunks: r.count(at+"clusterSeparationChunks", p.ClusterSeparationChunks, DefaultClusterSeparationChunks),
		MaxWorkUnitsPerTick:     r.plainCount(at+"maxWorkUnitsPerTick", p.MaxWorkUnitsPerTick),
		WorkerWakeAheadMicros:   r.count(at+"workerWakeAheadMicros", p.WorkerWakeAheadMicros, DefaultWorkerWakeAheadMicros),
		InterestManagement:      on(p.InterestManagement, true),
		InterestFullRateUnits:   r.distance(at+"interestFullRateUnits", p.InterestFullRateUnits, DefaultInterestFullRateUnits),
		MaxInterestSkipTicks:    r.count(at+"maxInterestSkipTicks", p.MaxInterestSkipTicks, DefaultMaxInterestSkipTicks),
		AdaptiveThrottling:      on(p.AdaptiveThrottling, true),
		TargetTickBudgetMicros:  r.count(at+"targetTickBudgetMicros", p.TargetTickBudgetMicros, DefaultTargetTickBudgetMicros),
		ThrottleDistanceUnits:   r.distance(at+"throttleDistanceUnits", p.ThrottleDistanceUnits, DefaultThrottleDistanceUnits),
		MaxThrottleSkipTicks:    r.count(at+"maxThrottleSkipTicks", p.MaxThrottleSkipTicks, DefaultMaxThrottleSkipTicks),
		MetricsLogIntervalTicks: r.plainCount(at+"metricsLogIntervalTicks", p.MetricsLogIntervalTicks),
	}
	if p.TargetTickBudgetMicros != nil && *p.TargetTickBudgetMicros == 0 {
		r.fail(at+"targetTickBudgetMicros", "must be at least 1 microsecond, got 0")
	}
	s.ThrottleWorkShare = DefaultThrottleWorkShare
	if p.ThrottleWorkShare != nil {
		s.ThrottleWorkShare = *p.ThrottleWorkShare
		if f := s.ThrottleWorkShare; math.IsNaN(f) || f <= 0 || f > 1 {
			r.fail(at+"throttleWorkShare", "must be above 0 and at most 1, got %v", f)
		}
	}
	s.WorkerThreads = r.clamp(at+"workerThreads", s.WorkerThreads, 0, MaxWorkerThreads,
		"", "the most worker threads a server runs")
	s.MinShardActors = r.clamp(at+"minShardActors", s.MinShardActors, 1, math.MaxInt,
		"a shard holds at least one actor", "")
	s.ClusterSeparationChunks = r.clamp(at+"clusterSeparationChunks", s.ClusterSeparationChunks,
		grid.MinSeparation, math.MaxInt, whySeparated, "")
	p.resolveInterest(r, &s)
	s.MaxThrottleSkipTicks = r.clamp(at+"maxThrottleSkipTicks", s.MaxThrottleSkipTicks, 1, MaxSkipTicks,
		whyNoSkip, whyMaxSkip)
	return s
}

// resolveInterest fills in s's interest table, derived or explicit.
func (p Parallelism) resolveInterest(r *resolver, s *ParallelSettings) {
	const at = "parallelism."
	s.MaxInterestSkipTicks = r.clamp(at+"maxInterestSkipTicks", s.MaxInterestSkipTicks, 1, MaxSkipTicks,
		whyNoSkip, whyMaxSkip)
	if len(p.InterestTiers) == 0 {
		s.InterestTiers = derivedTiers(s.InterestFullRateUnits, s.MaxInterestSkipTicks)
		return
	}
	failed := len(r.errs)
	tiers := r.tiers(at+"interestTiers", p.InterestTiers)
	if len(r.errs) > failed {
		return
	}
	// Set alongside a table, the two keys are limits the table must keep.
	if first := tiers[0].BeyondUnits; p.InterestFullRateUnits != nil && first < s.InterestFullRateUnits {
		r.fail(at+"interestTiers[0].beyondUnits", "must not be closer than interestFullRateUnits (%s), got %s",
			formatNumber(float64(s.InterestFullRateUnits)), formatNumber(float64(first)))
	}
	if last := len(tiers) - 1; p.MaxInterestSkipTicks != nil && tiers[last].Period > s.MaxInterestSkipTicks {
		r.fail(fmt.Sprintf("%sinterestTiers[%d].period", at, last), "must not exceed maxInterestSkipTicks (%d), got %d",
			s.MaxInterestSkipTicks, tiers[last].Period)
	}
	s.InterestTiers = tiers
	s.InterestFullRateUnits = tiers[0].BeyondUnits
	s.MaxInterestSkipTicks = tiers[len(tiers)-1].Period
}

// tiers validates an explicit interest table and returns a copy of it with
// periods above MaxSkipTicks lowered.
func (r *resolver) tiers(key string, given []InterestTier) []InterestTier {
	out := make([]InterestTier, len(given))
	failed := len(r.errs)
	for i, t := range given {
		at := fmt.Sprintf("%s[%d].", key, i)
		out[i].BeyondUnits = r.plainDistance(at+"beyondUnits", t.BeyondUnits)
		if t.Period < 1 {
			r.fail(at+"period", "must be at least 1, got %d", t.Period)
		}
		out[i].Period = r.clamp(at+"period", max(t.Period, 1), 1, MaxSkipTicks, "", whyMaxSkip)
		if i == 0 || len(r.errs) > failed {
			continue
		}
		prev := out[i-1]
		if out[i].BeyondUnits <= prev.BeyondUnits {
			r.fail(at+"beyondUnits", "must be farther than the step before (%s), got %s",
				formatNumber(float64(prev.BeyondUnits)), formatNumber(float64(out[i].BeyondUnits)))
		}
		if out[i].Period < prev.Period {
			r.fail(at+"period", "must not be shorter than the step before (%d), got %d", prev.Period, out[i].Period)
		}
	}
	return out
}

// derivedTiers is the default interest table: period p from (p-1) multiples
// of the full-rate distance, for p = 2 to maxSkip. With a full-rate distance
// of 0 every step starts at 0 and only the last one is kept.
func derivedTiers(fullRate float32, maxSkip int) []InterestTier {
	var t []InterestTier
	for p := 2; p <= maxSkip; p++ {
		d := fullRate * float32(p-1)
		if math.IsInf(float64(d), 1) {
			break // farther than any position can be
		}
		if n := len(t); n > 0 && t[n-1].BeyondUnits >= d {
			t[n-1].Period = p
			continue
		}
		t = append(t, InterestTier{BeyondUnits: d, Period: p})
	}
	return t
}
