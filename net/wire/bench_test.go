package wire

import (
	"testing"
)

func BenchmarkDecodeMove(b *testing.B) {
	frame := AppendMove(nil, Move{Seq: 1, X: 1, Y: 2, Z: 3, Yaw: 1, WorldOrCell: 7})
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := DecodeMove(frame); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutRecord(b *testing.B) {
	const senders = 1000
	flat := make([]byte, senders*RecordSize)
	for b.Loop() {
		for i := range senders {
			PutRecord(flat[i*RecordSize:], Record{Actor: uint32(i), X: float32(i), Y: 2, Z: 3, Yaw: float32(i) * 0.01})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*senders), "ns/record")
}

// BenchmarkBuildBatch is the relay's per-recipient cost: a header and
// MaxRecordsPerBatch copies of records encoded earlier.
func BenchmarkBuildBatch(b *testing.B) {
	flat := make([]byte, MaxRecordsPerBatch*RecordSize)
	for i := range MaxRecordsPerBatch {
		PutRecord(flat[i*RecordSize:], Record{Actor: uint32(i)})
	}
	batch := make([]byte, 0, MaxBatchPayload)
	for b.Loop() {
		batch = AppendBatchHeader(batch[:0], 1, 0)
		for i := range MaxRecordsPerBatch {
			batch = append(batch, flat[i*RecordSize:(i+1)*RecordSize]...)
		}
		SetBatchCount(batch, MaxRecordsPerBatch)
	}
	b.SetBytes(int64(len(batch)))
}
