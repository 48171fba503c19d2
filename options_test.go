package throng_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
)

// load decodes doc and resolves it, failing the test on any error.
func load(t *testing.T, doc string) (throng.Settings, []throng.Adjustment) {
	t.Helper()
	opts, err := throng.LoadOptions(strings.NewReader(doc))
	require.NoError(t, err, doc)
	s, adj, err := opts.Resolve()
	require.NoError(t, err, doc)
	return s, adj
}

// loadErr decodes doc, which must fail, and returns the first *OptionsError.
func loadErr(t *testing.T, doc string) (*throng.OptionsError, error) {
	t.Helper()
	_, err := throng.LoadOptions(strings.NewReader(doc))
	require.Error(t, err, doc)
	var oe *throng.OptionsError
	require.ErrorAs(t, err, &oe, doc)
	return oe, err
}

func TestZeroOptionsResolveToDocumentedDefaults(t *testing.T) {
	s, adj, err := throng.Options{}.Resolve()
	require.NoError(t, err)
	assert.Empty(t, adj, "defaults need no adjustment")
	assert.Equal(t, throng.Settings{
		TickRate:  30,
		ChunkSize: 4096,
		Parallelism: throng.ParallelSettings{
			Enabled:                 true,
			WorkerThreads:           0,
			MinActorsToOffload:      300,
			MinClusterActors:        4,
			MinShardActors:          4,
			MaxShardsPerCluster:     0,
			ClusterSeparationChunks: 4,
			MaxWorkUnitsPerTick:     0,
			WorkerWakeAheadMicros:   1000,
			InterestManagement:      true,
			InterestFullRateUnits:   2048,
			MaxInterestSkipTicks:    4,
			// Half rate beyond one full-rate distance, a third beyond two,
			// a quarter (the ceiling) beyond three.
			InterestTiers: []throng.InterestTier{
				{BeyondUnits: 2048, Period: 2},
				{BeyondUnits: 4096, Period: 3},
				{BeyondUnits: 6144, Period: 4},
			},
			AdaptiveThrottling:      true,
			TargetTickBudgetMicros:  8000,
			ThrottleWorkShare:       0.7,
			ThrottleDistanceUnits:   4096,
			MaxThrottleSkipTicks:    8,
			MetricsLogIntervalTicks: 0,
		},
		Admission: throng.AdmissionSettings{Enabled: true, BusyShare: 0.9, JoinAppearsPerTick: 30_000},
		Clients: throng.ClientSettings{
			MovingUpdatesPerSecond: 30, StandingUpdatesPerSecond: 10, FloodFactor: 10, FloodSeconds: 2,
		},
		MaxRecordsPerTick: 57,
		Persistence:       throng.PersistenceSettings{Every: 300 * time.Second, Keep: 3},
		Debug:             throng.DebugSettings{FramesPerSecond: 10},
		Props:             throng.PropSettings{RadiusUnits: throng.DefaultPropRadiusUnits, SlackUnits: throng.DefaultPropSlackUnits},
		Classes: []throng.ClassSettings{
			{Name: "player"},
			{Name: "npc", BudgetRank: 1},
			{Name: "prop"},
		},
		UnitsPerMetre: 70,
	}, s)
}

func TestEmptyObjectLoadsAsZeroOptions(t *testing.T) {
	opts, err := throng.LoadOptions(strings.NewReader(" {\n\"parallelism\": {\"interestTiers\": []} }\n"))
	require.NoError(t, err)
	assert.Equal(t, throng.Options{}, opts, "an empty tier list means the derived table")
}

func TestZeroOptionsMarshalAsEmptyObject(t *testing.T) {
	b, err := json.Marshal(throng.Options{})
	require.NoError(t, err)
	assert.JSONEq(t, `{}`, string(b), "a saved default server writes no keys")
}

func TestExplicitZeroIsNotTheDefault(t *testing.T) {
	s, _ := load(t, `{"parallelism": {"minActorsToOffload": 0, "enabled": false, "throttleDistanceUnits": 0}}`)
	assert.Equal(t, 0, s.Parallelism.MinActorsToOffload, "0 always offloads, it does not mean 300")
	assert.False(t, s.Parallelism.Enabled)
	assert.Zero(t, s.Parallelism.ThrottleDistanceUnits)
}

func TestClampsAreAppliedAndReported(t *testing.T) {
	tests := []struct {
		doc, key    string
		given, used float64
	}{
		{doc: `{"parallelism": {"clusterSeparationChunks": 0}}`, key: "parallelism.clusterSeparationChunks", given: 0, used: 3},
		{doc: `{"parallelism": {"clusterSeparationChunks": 1}}`, key: "parallelism.clusterSeparationChunks", given: 1, used: 3},
		{doc: `{"parallelism": {"clusterSeparationChunks": 2}}`, key: "parallelism.clusterSeparationChunks", given: 2, used: 3},
		{doc: `{"parallelism": {"workerThreads": 65}}`, key: "parallelism.workerThreads", given: 65, used: 64},
		{doc: `{"parallelism": {"workerThreads": 1000}}`, key: "parallelism.workerThreads", given: 1000, used: 64},
		{doc: `{"parallelism": {"minShardActors": 0}}`, key: "parallelism.minShardActors", given: 0, used: 1},
		{doc: `{"parallelism": {"maxInterestSkipTicks": 0}}`, key: "parallelism.maxInterestSkipTicks", given: 0, used: 1},
		{doc: `{"parallelism": {"maxInterestSkipTicks": 1000}}`, key: "parallelism.maxInterestSkipTicks", given: 1000, used: 240},
		{doc: `{"parallelism": {"maxThrottleSkipTicks": 0}}`, key: "parallelism.maxThrottleSkipTicks", given: 0, used: 1},
		{doc: `{"parallelism": {"maxThrottleSkipTicks": 241}}`, key: "parallelism.maxThrottleSkipTicks", given: 241, used: 240},
		{doc: `{"parallelism": {"interestTiers": [{"beyondUnits": 100, "period": 2}, {"beyondUnits": 200, "period": 500}]}}`,
			key: "parallelism.interestTiers[1].period", given: 500, used: 240},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			s, adj := load(t, tt.doc)
			require.Len(t, adj, 1)
			assert.Equal(t, tt.key, adj[0].Key)
			assert.Equal(t, tt.given, adj[0].Given)
			assert.Equal(t, tt.used, adj[0].Used)
			assert.NotEmpty(t, adj[0].Why)

			p := s.Parallelism
			var got int
			switch tt.key {
			case "parallelism.clusterSeparationChunks":
				got = p.ClusterSeparationChunks
			case "parallelism.workerThreads":
				got = p.WorkerThreads
			case "parallelism.minShardActors":
				got = p.MinShardActors
			case "parallelism.maxInterestSkipTicks":
				got = p.MaxInterestSkipTicks
			case "parallelism.maxThrottleSkipTicks":
				got = p.MaxThrottleSkipTicks
			case "parallelism.interestTiers[1].period":
				got = p.InterestTiers[1].Period
			}
			assert.Equal(t, int(tt.used), got, "the server runs with the adjusted value")
		})
	}
}

func TestValuesAtTheLimitsAreNotAdjusted(t *testing.T) {
	_, adj := load(t, `{"parallelism": {"clusterSeparationChunks": 3, "workerThreads": 64, "minShardActors": 1,
		"maxInterestSkipTicks": 240, "maxThrottleSkipTicks": 1}}`)
	assert.Empty(t, adj)
}

func TestMaxInterestSkipTicksOfOneSendsEveryUpdate(t *testing.T) {
	s, _ := load(t, `{"parallelism": {"maxInterestSkipTicks": 1}}`)
	assert.Empty(t, s.Parallelism.InterestTiers, "no tier slows anyone down")
	s, _ = load(t, `{"parallelism": {"maxInterestSkipTicks": 0}}`)
	assert.Empty(t, s.Parallelism.InterestTiers, "0 is raised to 1, which means the same")
}

func TestDerivedTiersStepAtEachMultipleOfTheFullRateDistance(t *testing.T) {
	s, _ := load(t, `{"parallelism": {"interestFullRateUnits": 1000, "maxInterestSkipTicks": 6}}`)
	assert.Equal(t, []throng.InterestTier{
		{BeyondUnits: 1000, Period: 2},
		{BeyondUnits: 2000, Period: 3},
		{BeyondUnits: 3000, Period: 4},
		{BeyondUnits: 4000, Period: 5},
		{BeyondUnits: 5000, Period: 6},
	}, s.Parallelism.InterestTiers)

	s, _ = load(t, `{"parallelism": {"interestFullRateUnits": 0}}`)
	assert.Equal(t, []throng.InterestTier{{BeyondUnits: 0, Period: 4}}, s.Parallelism.InterestTiers,
		"with no full-rate zone everyone is at the ceiling")
}

func TestAdjustmentSaysWhatWasGivenAndWhatIsUsed(t *testing.T) {
	_, adj := load(t, `{"parallelism": {"clusterSeparationChunks": 2, "workerThreads": 1000}}`)
	require.Len(t, adj, 2)
	assert.Equal(t, "parallelism.workerThreads: 1000 lowered to 64 (the most worker threads a server runs)", adj[0].String())
	assert.Equal(t, "parallelism.clusterSeparationChunks: 2 raised to 3 (closer clusters could share recipients)", adj[1].String())
}

func TestUnknownKeyIsAnErrorNamingItsPath(t *testing.T) {
	tests := []struct{ doc, key, msg string }{
		{`{"parallelism": {"workerThread": 8}}`, "parallelism.workerThread",
			`throng: options: parallelism.workerThread: unknown key (did you mean "parallelism.workerThreads"?)`},
		{`{"tickrate": 60}`, "tickrate",
			`throng: options: tickrate: unknown key (did you mean "tickRate"?)`},
		{`{"workerThreads": 8}`, "workerThreads",
			`throng: options: workerThreads: unknown key (did you mean "parallelism.workerThreads"?)`},
		{`{"listen": ":7777"}`, "listen", `throng: options: listen: unknown key (did you mean "metrics.listen"?)`},
		{`{"port": 7777}`, "port", `throng: options: port: unknown key`},
		{`{"parallelism": {"repartitionIntervalTicks": 30}}`, "parallelism.repartitionIntervalTicks",
			`throng: options: parallelism.repartitionIntervalTicks: unknown key`},
		{`{"parallelism": {"interestTiers": [{"beyondUnits": 1, "perod": 2}]}}`, "parallelism.interestTiers[0].perod",
			`throng: options: parallelism.interestTiers[0].perod: unknown key (did you mean "parallelism.interestTiers[0].period"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			oe, err := loadErr(t, tt.doc)
			assert.Equal(t, tt.key, oe.Key)
			assert.Equal(t, tt.msg, err.Error())
		})
	}
}

func TestWrongTypeNamesTheKeyPath(t *testing.T) {
	tests := []struct{ doc, msg string }{
		{`{"parallelism": {"workerThreads": "8"}}`, `throng: options: parallelism.workerThreads: want a number, got string "8"`},
		{`{"parallelism": {"enabled": 1}}`, `throng: options: parallelism.enabled: want true or false, got number 1`},
		{`{"parallelism": {"interestFullRateUnits": true}}`, `throng: options: parallelism.interestFullRateUnits: want a number, got boolean true`},
		{`{"tickRate": null}`, `throng: options: tickRate: want a number, got null`},
		{`{"tickRate": 2.5}`, `throng: options: tickRate: want a whole number, got 2.5`},
		{`{"tickRate": 1e40}`, `throng: options: tickRate: 1e40 is out of range`},
		{`{"chunkSize": 1e39}`, `throng: options: chunkSize: 1e39 is out of range`},
		{`{"parallelism": []}`, `throng: options: parallelism: want an object, got list`},
		{`{"parallelism": {"interestTiers": {}}}`, `throng: options: parallelism.interestTiers: want a list, got object`},
		{`{"parallelism": {"interestTiers": [3]}}`, `throng: options: parallelism.interestTiers[0]: want an object, got number 3`},
		{`[]`, `throng: options: want an object, got list`},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			_, err := loadErr(t, tt.doc)
			assert.Equal(t, tt.msg, err.Error())
		})
	}
}

func TestWholeNumbersMayBeWrittenAsDecimals(t *testing.T) {
	s, _ := load(t, `{"tickRate": 6e1, "parallelism": {"workerThreads": 8.0}}`)
	assert.Equal(t, 60, s.TickRate)
	assert.Equal(t, 8, s.Parallelism.WorkerThreads)
}

func TestNegativeCountsAreErrorsNamingTheKey(t *testing.T) {
	keys := []string{
		"workerThreads", "minActorsToOffload", "minClusterActors", "minShardActors",
		"maxShardsPerCluster", "clusterSeparationChunks", "maxWorkUnitsPerTick", "workerWakeAheadMicros",
		"maxInterestSkipTicks", "targetTickBudgetMicros", "maxThrottleSkipTicks",
		"metricsLogIntervalTicks", "interestFullRateUnits", "throttleDistanceUnits",
	}
	for _, key := range keys {
		t.Run(key, func(t *testing.T) {
			oe, err := loadErr(t, `{"parallelism": {"`+key+`": -1}}`)
			assert.Equal(t, "parallelism."+key, oe.Key)
			assert.Equal(t, "throng: options: parallelism."+key+": must not be negative, got -1", err.Error())
		})
	}
}

func TestResolveReportsEveryBadKeyAtOnce(t *testing.T) {
	opts := throng.Options{
		TickRate: new(0),
		Parallelism: throng.Parallelism{
			WorkerThreads:  -1,
			MinShardActors: new(-4),
		},
	}
	s, adj, err := opts.Resolve()
	require.Error(t, err)
	assert.Zero(t, s)
	assert.Nil(t, adj)
	assert.Equal(t, "throng: options: tickRate: must be 1 to 240 Hz, got 0\n"+
		"throng: options: parallelism.workerThreads: must not be negative, got -1\n"+
		"throng: options: parallelism.minShardActors: must not be negative, got -4", err.Error())
}

func TestOutOfRangeValuesAreErrors(t *testing.T) {
	tests := []struct{ doc, msg string }{
		{`{"tickRate": 0}`, "tickRate: must be 1 to 240 Hz, got 0"},
		{`{"tickRate": 241}`, "tickRate: must be 1 to 240 Hz, got 241"},
		{`{"chunkSize": 0}`, "chunkSize: must be a positive finite number, got 0"},
		{`{"chunkSize": -4096}`, "chunkSize: must be a positive finite number, got -4096"},
		{`{"parallelism": {"targetTickBudgetMicros": 0}}`, "parallelism.targetTickBudgetMicros: must be at least 1 microsecond, got 0"},
		{`{"parallelism": {"throttleWorkShare": 0}}`, "parallelism.throttleWorkShare: must be above 0 and at most 1, got 0"},
		{`{"parallelism": {"throttleWorkShare": 1.5}}`, "parallelism.throttleWorkShare: must be above 0 and at most 1, got 1.5"},
		{`{"admission": {"joinAppearsPerTick": -1}}`, "admission.joinAppearsPerTick: must not be negative, got -1"},
		{`{"props": {"radiusUnits": 0}}`, "props.radiusUnits: must be above 0"},
		{`{"props": {"slackUnits": -5}}`, "props.slackUnits: must not be negative, got -5"},
		{`{"connection": {"nearestSenders": 65, "maxRecordsPerTick": 120}}`, "connection.nearestSenders: must be at most 64, got 65"},
		{`{"connection": {"nearestSenders": 58}}`, "connection.nearestSenders: must be at most connection.maxRecordsPerTick (57), got 58"},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			_, err := loadErr(t, tt.doc)
			assert.Equal(t, "throng: options: "+tt.msg, err.Error())
		})
	}
	for _, rate := range []int{1, 30, 60, 120, 240} {
		s, _, err := throng.Options{TickRate: new(rate)}.Resolve()
		require.NoError(t, err)
		assert.Equal(t, rate, s.TickRate)
	}
}

func TestNonFiniteNumbersSetInGoAreErrors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	_, _, err := throng.Options{ChunkSize: &inf}.Resolve()
	assert.EqualError(t, err, "throng: options: chunkSize: must be a positive finite number, got +Inf")
	_, _, err = throng.Options{ChunkSize: &nan}.Resolve()
	assert.EqualError(t, err, "throng: options: chunkSize: must be a positive finite number, got NaN")
	_, _, err = throng.Options{Parallelism: throng.Parallelism{ThrottleDistanceUnits: &nan}}.Resolve()
	assert.EqualError(t, err, "throng: options: parallelism.throttleDistanceUnits: must be a finite number, got NaN")
	_, _, err = throng.Options{Parallelism: throng.Parallelism{
		InterestTiers: []throng.InterestTier{{BeyondUnits: inf, Period: 2}},
	}}.Resolve()
	assert.EqualError(t, err, "throng: options: parallelism.interestTiers[0].beyondUnits: must be a finite number, got +Inf")
}

func TestDocumentMustBeExactlyOneObject(t *testing.T) {
	tests := []struct{ doc, msg string }{
		{``, "no settings: want a JSON object, such as {} for every default"},
		{"  \n", "no settings: want a JSON object, such as {} for every default"},
		{`{} {}`, "line 1, column 4: unexpected data after the settings object"},
		{"{\"tickRate\": 60}\n}", "line 2, column 1: unexpected data after the settings object"},
		{`{"tickRate": 60, "tickRate": 30}`, "tickRate: duplicate key"},
		{`{"parallelism": {"enabled": true, "enabled": false}}`, "parallelism.enabled: duplicate key"},
		{"{\n  \"tickRate\": 60,\n}", "line 3, column 1: invalid character '}' looking for beginning of object key string"},
		{`{"tickRate": 60`, "line 1, column 15: unexpected end of JSON input"},
		{"{\n // comment\n}", "line 2, column 2: invalid character '/' looking for beginning of object key string"},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			_, err := loadErr(t, tt.doc)
			assert.Equal(t, "throng: options: "+tt.msg, err.Error())
		})
	}
}

func TestTierTableMustAscendWithPeriodsOfAtLeastOne(t *testing.T) {
	tiers := func(entries string) string { return `{"parallelism": {"interestTiers": [` + entries + `]}}` }
	tests := []struct{ doc, msg string }{
		{tiers(`{"beyondUnits": 100, "period": 2}, {"beyondUnits": 100, "period": 3}`),
			"parallelism.interestTiers[1].beyondUnits: must be farther than the step before (100), got 100"},
		{tiers(`{"beyondUnits": 100, "period": 3}, {"beyondUnits": 200, "period": 2}`),
			"parallelism.interestTiers[1].period: must not be shorter than the step before (3), got 2"},
		{tiers(`{"beyondUnits": 100, "period": 0}`),
			"parallelism.interestTiers[0].period: must be at least 1, got 0"},
		{tiers(`{"beyondUnits": -5, "period": 2}`),
			"parallelism.interestTiers[0].beyondUnits: must not be negative, got -5"},
		{tiers(`{"period": 2}`),
			"parallelism.interestTiers[0].beyondUnits: missing (a list entry has no defaults)"},
		{`{"parallelism": {"interestFullRateUnits": 5000, "interestTiers": [{"beyondUnits": 4200, "period": 3}]}}`,
			"parallelism.interestTiers[0].beyondUnits: must not be closer than interestFullRateUnits (5000), got 4200"},
		{`{"parallelism": {"maxInterestSkipTicks": 4, "interestTiers": [{"beyondUnits": 1, "period": 2}, {"beyondUnits": 2, "period": 5}]}}`,
			"parallelism.interestTiers[1].period: must not exceed maxInterestSkipTicks (4), got 5"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			_, err := loadErr(t, tt.doc)
			assert.Equal(t, "throng: options: "+tt.msg, err.Error())
		})
	}
}

func TestExplicitTierTableReplacesTheDerivedOne(t *testing.T) {
	s, adj := load(t, `{"parallelism": {"interestTiers": [{"beyondUnits": 500, "period": 1}, {"beyondUnits": 900, "period": 7}]}}`)
	assert.Empty(t, adj)
	p := s.Parallelism
	assert.Equal(t, []throng.InterestTier{{BeyondUnits: 500, Period: 1}, {BeyondUnits: 900, Period: 7}}, p.InterestTiers)
	assert.Equal(t, float32(500), p.InterestFullRateUnits, "the table's first distance")
	assert.Equal(t, 7, p.MaxInterestSkipTicks, "the table's last period, not the default ceiling of 4")
}

func TestCrowdTierPresetLoads(t *testing.T) {
	opts, err := throng.LoadOptionsFile(filepath.Join("testdata", "crowd_tiers.json"))
	require.NoError(t, err)
	s, adj, err := opts.Resolve()
	require.NoError(t, err)
	assert.Empty(t, adj)
	// The file is CrowdTiers at 70 units a metre: 60 m, 100 m, 140 m.
	assert.Equal(t, throng.CrowdTiers(70), s.Parallelism.InterestTiers)
	assert.Equal(t, []throng.InterestTier{
		{BeyondUnits: 4200, Period: 3},
		{BeyondUnits: 7000, Period: 5},
		{BeyondUnits: 9800, Period: 10},
	}, s.Parallelism.InterestTiers)
	assert.Equal(t, 10, s.Parallelism.MaxInterestSkipTicks)

	// The same table set in Go resolves identically.
	fromGo, _, err := throng.Options{Parallelism: throng.Parallelism{InterestTiers: throng.CrowdTiers(70)}}.Resolve()
	require.NoError(t, err)
	assert.Equal(t, s, fromGo)
}

// fullOptions is what testdata/full.json holds, every key away from its
// default.
func fullOptions() throng.Options {
	return throng.Options{
		TickRate:  new(60),
		ChunkSize: new(float32(2048)),
		Parallelism: throng.Parallelism{
			Enabled:                 new(false),
			WorkerThreads:           6,
			MinActorsToOffload:      new(120),
			MinClusterActors:        new(8),
			MinShardActors:          new(16),
			MaxShardsPerCluster:     5,
			ClusterSeparationChunks: new(5),
			MaxWorkUnitsPerTick:     40,
			WorkerWakeAheadMicros:   new(250),
			InterestManagement:      new(false),
			InterestFullRateUnits:   new(float32(3000.5)),
			MaxInterestSkipTicks:    new(12),
			InterestTiers: []throng.InterestTier{
				{BeyondUnits: 4200, Period: 3},
				{BeyondUnits: 7000, Period: 5},
				{BeyondUnits: 9800.25, Period: 10},
			},
			AdaptiveThrottling:      new(false),
			TargetTickBudgetMicros:  new(5000),
			ThrottleWorkShare:       new(0.5),
			ThrottleDistanceUnits:   new(float32(6144)),
			MaxThrottleSkipTicks:    new(6),
			MetricsLogIntervalTicks: 600,
		},
		Admission: throng.Admission{Enabled: new(false), BusyShare: new(0.75), JoinAppearsPerTick: new(5000)},
		ClientLimits: throng.ClientLimits{
			MovingUpdatesPerSecond:   new(20),
			StandingUpdatesPerSecond: new(5),
			FloodFactor:              new(4),
			FloodSeconds:             new(3),
			MaxSpeedUnitsPerSecond:   new(float32(700.5)),
		},
		Metrics:    throng.Metrics{Listen: "127.0.0.1:9464"},
		Connection: throng.Connection{MaxRecordsPerTick: new(120), NearestSenders: new(30)},
		Network: throng.Network{
			QUIC: &throng.QUICListener{Listen: "0.0.0.0:4433", CertFile: "server.pem", KeyFile: "server.key"},
			WebSocket: &throng.WebSocketListener{
				Listen: ":8080", Path: "/play", OriginPatterns: []string{"game.example.com", "*.example.org"},
				CertFile: "server.pem", KeyFile: "server.key",
			},
		},
		Persistence:   throng.Persistence{Dir: "saves", EverySeconds: new(120.5), Keep: new(5)},
		Debug:         throng.Debug{Listen: "127.0.0.1:7778", Token: "s3cret", FramesPerSecond: new(5)},
		Props:         throng.Props{RadiusUnits: new(float32(4000)), SlackUnits: new(float32(250.5))},
		UnitsPerMetre: new(float32(64)),
		Classes: []throng.ClassOptions{
			{Name: "npc", BudgetRank: new(2), InterestTiers: []throng.ClassTier{{BeyondMetres: new(float32(30)), Period: 2}, {BeyondUnits: new(float32(4000)), Period: 6}}},
			{Name: "lamp", RadiusMetres: new(float32(200))},
			{Name: "crate", RadiusUnits: new(float32(3000)), BudgetRank: new(0)},
		},
		LoadFrom: "saves",
	}
}

func TestFullSettingsFileRoundTrips(t *testing.T) {
	path := filepath.Join("testdata", "full.json")
	opts, err := throng.LoadOptionsFile(path)
	require.NoError(t, err)
	assert.Equal(t, fullOptions(), opts, "every field holds the file's value")

	saved, err := json.MarshalIndent(opts, "", "  ")
	require.NoError(t, err)
	again, err := throng.LoadOptions(strings.NewReader(string(saved)))
	require.NoError(t, err)
	assert.Equal(t, opts, again)

	file, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.JSONEq(t, string(file), string(saved), "saving writes back the same keys and values")

	s, adj, err := again.Resolve()
	require.NoError(t, err)
	assert.Empty(t, adj)
	assert.Equal(t, 60, s.TickRate)
	assert.False(t, s.Parallelism.Enabled)
	assert.Equal(t, 600, s.Parallelism.MetricsLogIntervalTicks)
}

// settingKeys lists every settings-file key of a struct type, as full paths.
// A list of structs contributes its entries' keys as "key[].sub".
func settingKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		if f.Tag.Get("json") == "-" {
			continue // set from code, not a settings key
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		path := prefix + name
		keys = append(keys, path)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			keys = append(keys, settingKeys(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			keys = append(keys, settingKeys(ft.Elem(), path+"[].")...)
		}
	}
	return keys
}

func documentKeys(v any, prefix string, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, sub := range v {
			into[prefix+k] = true
			documentKeys(sub, prefix+k+".", into)
		}
	case []any:
		for _, sub := range v {
			documentKeys(sub, strings.TrimSuffix(prefix, ".")+"[].", into)
		}
	}
}

// TestFullSettingsFileSetsEveryKey keeps testdata/full.json complete: a
// field added to Options must be added to the file, which makes the round
// trip above exercise the loader on it.
func TestFullSettingsFileSetsEveryKey(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("testdata", "full.json"))
	require.NoError(t, err)
	var doc any
	require.NoError(t, json.Unmarshal(file, &doc))
	inFile := map[string]bool{}
	documentKeys(doc, "", inFile)

	want := settingKeys(reflect.TypeFor[throng.Options](), "")
	require.Contains(t, want, "parallelism.interestTiers[].period")
	for _, key := range want {
		assert.True(t, inFile[key], "testdata/full.json lacks %q", key)
	}
	assert.Len(t, inFile, len(want), "testdata/full.json has keys Options does not")
}

func TestLoadOptionsFileNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"parallelism": {"workerThread": 8}}`), 0o600))
	_, err := throng.LoadOptionsFile(path)
	var oe *throng.OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, path, oe.File)
	assert.Equal(t, "throng: options: "+path+`: parallelism.workerThread: unknown key (did you mean "parallelism.workerThreads"?)`, err.Error())

	require.NoError(t, os.WriteFile(path, []byte(`{"tickRate": -1, "chunkSize": -1}`), 0o600))
	_, err = throng.LoadOptionsFile(path)
	require.Error(t, err)
	for line := range strings.Lines(err.Error()) {
		assert.True(t, strings.HasPrefix(line, "throng: options: "+path+": "), line)
	}

	_, err = throng.LoadOptionsFile(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.True(t, strings.HasPrefix(err.Error(), "throng: options: open "), err.Error())
}

func TestResolvedSettingsShareNoMemoryWithOptions(t *testing.T) {
	opts := throng.Options{Parallelism: throng.Parallelism{InterestTiers: throng.CrowdTiers(70)}}
	s, _, err := opts.Resolve()
	require.NoError(t, err)
	s.Parallelism.InterestTiers[0].Period = 99
	assert.Equal(t, 3, opts.Parallelism.InterestTiers[0].Period)
}

func TestWorkersFollowGOMAXPROCSUnlessSet(t *testing.T) {
	auto := throng.ParallelSettings{}
	assert.Equal(t, min(runtime.GOMAXPROCS(0), 64), auto.Workers())
	assert.Equal(t, 6, throng.ParallelSettings{WorkerThreads: 6}.Workers())
	assert.Equal(t, 64, throng.ParallelSettings{WorkerThreads: 100}.Workers(), "capped even when built by hand")
}

func TestShardsPerClusterDefaultsToFourTimesTheWorkers(t *testing.T) {
	assert.Equal(t, 32, throng.ParallelSettings{}.ShardsPerCluster(8))
	assert.Equal(t, 5, throng.ParallelSettings{MaxShardsPerCluster: 5}.ShardsPerCluster(8))
}

func TestTickPeriodMatchesTickRate(t *testing.T) {
	for rate, want := range map[int]time.Duration{
		30:  33333333 * time.Nanosecond,
		60:  16666666 * time.Nanosecond,
		120: 8333333 * time.Nanosecond,
	} {
		assert.Equal(t, want, throng.Settings{TickRate: rate}.TickPeriod())
	}
}

func TestErrorsAreOptionsErrors(t *testing.T) {
	_, _, err := throng.Options{TickRate: new(0), ChunkSize: new(float32(-1))}.Resolve()
	var oe *throng.OptionsError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "tickRate", oe.Key, "errors.As finds the first bad key")
	var all interface{ Unwrap() []error }
	require.True(t, errors.As(err, &all))
	assert.Len(t, all.Unwrap(), 2)
}

func TestSpeedLimitMustNotBeNegative(t *testing.T) {
	_, err := loadErr(t, `{"clientLimits": {"maxSpeedUnitsPerSecond": -3}}`)
	assert.Equal(t, "throng: options: clientLimits.maxSpeedUnitsPerSecond: must not be negative, got -3", err.Error())
	opts, err := throng.LoadOptions(strings.NewReader(`{"clientLimits": {"maxSpeedUnitsPerSecond": 350}}`))
	require.NoError(t, err)
	settings, _, err := opts.Resolve()
	require.NoError(t, err)
	assert.Equal(t, float32(350), settings.Clients.MaxSpeedUnitsPerSecond)
	settings, _, err = throng.Options{}.Resolve()
	require.NoError(t, err)
	assert.Zero(t, settings.Clients.MaxSpeedUnitsPerSecond, "off by default")
}
