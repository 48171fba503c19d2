package net

import (
	"fmt"
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

// BenchmarkMemTick is one tick of traffic through a CountOnly Mem: every
// client sends a move, the server receives and decodes them all and sends
// each client a full batch and a reliable frame.
func BenchmarkMemTick(b *testing.B) {
	for _, clients := range []int{100, 1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			m := NewMem(MemOptions{CountOnly: true})
			cs := make([]*MemClient, clients)
			for i := range cs {
				cs[i] = m.Dial()
			}
			frame := AppendMove(nil, Move{Seq: 1})
			batch := AppendBatchHeader(nil, 1, MaxRecordsPerBatch)
			batch = append(batch, make([]byte, MaxRecordsPerBatch*RecordSize)...)
			inbox := make([]Inbound, 0, 2*clients)
			for range 2 { // grow both of the Mem's inbox buffers
				inbox = steadyTick(m, cs, frame, batch, inbox)
			}
			before := m.Stats()
			for b.Loop() {
				inbox = steadyTick(m, cs, frame, batch, inbox)
			}
			after := m.Stats()
			sent := after.DatagramBytesOut + after.ReliableBytesOut - before.DatagramBytesOut - before.ReliableBytesOut
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/tick")
			b.ReportMetric(float64(sent)/float64(b.N), "bytes/tick")
		})
	}
}
