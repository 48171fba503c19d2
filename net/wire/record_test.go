package wire

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryYawStepSurvivesTheRoundTrip(t *testing.T) {
	for q := range 1 << 16 {
		yaw := YawFromSteps(uint16(q))
		require.Equal(t, uint16(q), QuantizeYaw(yaw), "step %d (%v rad)", q, yaw)
		require.True(t, yaw >= 0 && yaw < 2*math.Pi, "step %d gives %v", q, yaw)
	}
}

func TestQuantizeYawWrapsAnyAngleToTheNearestStep(t *testing.T) {
	cases := []struct {
		yaw  float64
		want uint16
	}{
		{0, 0},
		{math.Pi / 2, 16384},
		{math.Pi, 32768},
		{-math.Pi / 2, 49152},
		{2 * math.Pi, 0},
		{-2 * math.Pi, 0},
		{4*math.Pi + math.Pi/2, 16384},
		{-1e-9, 0},
		{math.NaN(), 0},
		{math.Inf(1), 0},
		{math.Inf(-1), 0},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, QuantizeYaw(float32(c.yaw)), "yaw %v", c.yaw)
	}
	// Huge angles do not panic and land on a step.
	_ = QuantizeYaw(math.MaxFloat32)
	_ = QuantizeYaw(-math.MaxFloat32)

	// Within one turn the error is at most half a step.
	r := rand.New(rand.NewPCG(5, 6))
	const step = 2 * math.Pi / 65536
	for range 100000 {
		yaw := float32(r.Float64() * 2 * math.Pi)
		back := float64(YawFromSteps(QuantizeYaw(yaw)))
		diff := math.Abs(float64(yaw) - back)
		diff = math.Min(diff, 2*math.Pi-diff)
		require.LessOrEqual(t, diff, step/2+1e-6, "yaw %v came back as %v", yaw, back)
	}
}

func TestMaxRecordsPerBatchIsTheMostThatFitTheDatagramBudget(t *testing.T) {
	assert.Equal(t, 57, MaxRecordsPerBatch)
	assert.LessOrEqual(t, BatchHeaderSize+MaxRecordsPerBatch*RecordSize, MaxBatchPayload)
	assert.Greater(t, BatchHeaderSize+(MaxRecordsPerBatch+1)*RecordSize, MaxBatchPayload)
}

// TestRecordsEncodedOnceReachEachRecipientUnchanged mirrors the server's
// relay: every sender's record is encoded once into a flat buffer, and each
// recipient's batch is a header plus copies of the chosen senders' bytes.
func TestRecordsEncodedOnceReachEachRecipientUnchanged(t *testing.T) {
	senders := []Record{
		{Actor: 10, X: 100, Y: 200, Z: 5, Yaw: 0, Flags: 1},
		{Actor: 11, X: -7.25, Y: 3, Z: 0, Yaw: math.Pi, Flags: 2},
		{Actor: 12, X: 4095.5, Y: -4096, Z: 1, Yaw: math.Pi / 4, Flags: 0xffff},
	}
	flat := make([]byte, len(senders)*RecordSize)
	for i, s := range senders {
		PutRecord(flat[i*RecordSize:], s)
	}
	recipients := map[string][]int{"a": {1, 2}, "b": {0, 2}, "c": {}}
	for name, chosen := range recipients {
		batch := AppendBatchHeader(nil, 77, 0)
		for _, i := range chosen {
			batch = append(batch, flat[i*RecordSize:(i+1)*RecordSize]...)
		}
		SetBatchCount(batch, len(chosen))
		got, err := DecodeBatch(batch)
		require.NoError(t, err, name)
		assert.Equal(t, uint32(77), got.Tick)
		require.Equal(t, len(chosen), got.Len(), name)
		for j, i := range chosen {
			want := senders[i]
			want.Yaw = YawFromSteps(QuantizeYaw(want.Yaw))
			assert.Equal(t, want, got.At(j), "recipient %s record %d", name, j)
		}
	}
}

func TestAppendRecordMatchesPutRecord(t *testing.T) {
	r := Record{Actor: 3, X: 1, Y: 2, Z: 3, Yaw: 1, Flags: 4}
	put := make([]byte, RecordSize)
	PutRecord(put, r)
	assert.Equal(t, put, AppendRecord(nil, r))
	assert.Equal(t, append([]byte("x"), put...), AppendRecord([]byte("x"), r))
}

func TestBatchMisuseFailsLoudly(t *testing.T) {
	assert.Panics(t, func() { PutRecord(make([]byte, RecordSize-1), Record{}) })
	assert.Panics(t, func() { SetBatchCount(make([]byte, BatchHeaderSize-1), 0) })
	assert.Panics(t, func() { SetBatchCount(AppendBatchHeader(nil, 0, 0), 1<<16) })
	assert.Panics(t, func() { SetBatchCount(AppendBatchHeader(nil, 0, 0), -1) })
	b, err := DecodeBatch(AppendBatchHeader(nil, 0, 0))
	require.NoError(t, err)
	assert.Panics(t, func() { b.At(0) })
	assert.Equal(t, 0, Batch{}.Len())
}
