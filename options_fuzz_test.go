package throng_test

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
)

// FuzzSettingsAreLoadedOrRefused feeds LoadOptions any document. It refuses
// with an *OptionsError or accepts, never panics; and what it accepts means
// what it says: the standard library's decoder reads the same values from
// it (LoadOptions is stricter, never different; it takes a count written
// as 30.0 or 3e1, which the standard decoder does not, so the document is
// given to it with such numbers written as integers), and the settings
// written back out as JSON load again to the same.
func FuzzSettingsAreLoadedOrRefused(f *testing.F) {
	full, err := os.ReadFile(filepath.Join("testdata", "full.json"))
	require.NoError(f, err)
	f.Add(string(full))
	for _, doc := range []string{
		`{}`,
		`{"tickRate": 60, "chunkSize": 32.5}`,
		`{"parallelism": {"interestTiers": [{"maxDistance": 10, "period": 1}, {"maxDistance": 40, "period": 4}]}}`,
		`{"connection": {"maxRecordsPerTick": 0}}`,
		`{"admission":{"joinAppearsPerTick":400000,"busyShare":1}}`,
		`{"tickRate": 1e2}`,
		`{"tickRate": 30.0}`,
		`{"tickRate": 30, "tickRate": 60}`,
		`{"TickRate": 30}`,
		`{"clientLimits": {"maxSpeedUnitsPerSecond": -1}}`,
		`[]`,
		`{"network": {"quic": "127.0.0.1:0"}} {}`,
	} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		opts, err := throng.LoadOptions(strings.NewReader(doc))
		if err != nil {
			var oe *throng.OptionsError
			require.True(t, errors.As(err, &oe), "refused with an OptionsError: %v", err)
			return
		}
		var std throng.Options
		require.NoError(t, json.Unmarshal(integral(t, doc), &std), "the standard decoder reads what LoadOptions accepts")
		// An empty list and none are one setting: LoadOptions keeps none,
		// the standard decoder an empty one.
		noEmptyLists(reflect.ValueOf(&std).Elem())
		assert.Equal(t, std, opts, "the standard decoder reads the same values")

		saved, err := json.Marshal(opts)
		require.NoError(t, err)
		again, err := throng.LoadOptions(strings.NewReader(string(saved)))
		require.NoError(t, err, "settings written back load again: %s", saved)
		assert.Equal(t, opts, again)
	})
}

// integral returns doc with every number that is a whole one written as an
// integer (30.0 and 3e1 as 30), for the standard decoder, which refuses
// such numbers for an int field where LoadOptions takes them.
func integral(t *testing.T, doc string) []byte {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case json.Number:
			if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				return v
			}
			if f, err := v.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return json.Number(strconv.FormatInt(int64(f), 10))
			}
		}
		return v
	}
	out, err := json.Marshal(walk(v))
	require.NoError(t, err)
	return out
}

// noEmptyLists sets every empty slice in v, a struct, to nil, in nested
// structs and in slices' elements too.
func noEmptyLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				noEmptyLists(v.Field(i))
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			noEmptyLists(v.Elem())
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
		}
		for i := range v.Len() {
			noEmptyLists(v.Index(i))
		}
	}
}
