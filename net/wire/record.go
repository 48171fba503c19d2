package wire

import (
	"encoding/binary"
	"math"
)

// RecordSize is the size in bytes of one movement record on the wire:
//
//	offset size field
//	0      4    actor id (uint32)
//	4      4    x (float32)
//	8      4    y (float32)
//	12     4    z (float32)
//	16     2    yaw (uint16, 65536 steps per turn, see QuantizeYaw)
//	18     2    animation flags (uint16)
const RecordSize = 20

// BatchHeaderSize is the size of a movement batch's header: version, type,
// tick (uint32), record count (uint16).
const BatchHeaderSize = HeaderSize + 4 + 2

// MaxBatchPayload is the largest movement batch the server sends in one
// datagram, in bytes: it fits the smallest datagram payload a QUIC path
// guarantees (1200 bytes of UDP payload) after QUIC's own overhead.
const MaxBatchPayload = 1150

// MaxRecordsPerBatch is how many records fit in MaxBatchPayload (57).
const MaxRecordsPerBatch = (MaxBatchPayload - BatchHeaderSize) / RecordSize

// Record is one actor's movement as relayed to the actors that see it. The
// server encodes each sender's record once per tick ([PutRecord]) and copies
// those bytes into every recipient's batch.
type Record struct {
	Actor   uint32
	X, Y, Z float32
	// Yaw is the facing in radians. On the wire it is quantized to 1/65536
	// of a turn (about 0.0055 degrees); a decoded Yaw is the quantized value
	// in [0, 2*pi).
	Yaw   float32
	Flags uint16
}

const (
	yawSteps          = 1 << 16
	yawStepsPerRadian = yawSteps / (2 * math.Pi)
	radiansPerYawStep = (2 * math.Pi) / yawSteps
)

// QuantizeYaw maps an angle in radians, of any size or sign, to the nearest
// of 65536 steps of a full turn: 0 is 0 radians, 16384 is pi/2. NaN and the
// infinities map to 0. The result depends only on the input, never on the
// platform's float-to-int conversion of out-of-range values.
func QuantizeYaw(yaw float32) uint16 {
	t := float64(yaw) * yawStepsPerRadian
	if !(t > -1<<62 && t < 1<<62) { // also true for NaN
		if t != t || math.IsInf(t, 0) {
			return 0
		}
		t = math.Mod(t, yawSteps) // exact; brings t inside the int64 range
	}
	// Whole turns vanish in the uint16 truncation (65536 steps per turn).
	return uint16(int64(math.RoundToEven(t)))
}

// YawFromSteps returns the angle in radians, in [0, 2*pi), of a quantized
// yaw. QuantizeYaw(YawFromSteps(q)) == q for every q.
func YawFromSteps(q uint16) float32 {
	return float32(float64(q) * radiansPerYawStep)
}

// PutRecord encodes r into dst[:RecordSize]. It panics if dst is shorter
// than RecordSize, like binary.LittleEndian.PutUint32.
func PutRecord(dst []byte, r Record) {
	_ = dst[RecordSize-1] // one bounds check
	binary.LittleEndian.PutUint32(dst[0:], r.Actor)
	binary.LittleEndian.PutUint32(dst[4:], math.Float32bits(r.X))
	binary.LittleEndian.PutUint32(dst[8:], math.Float32bits(r.Y))
	binary.LittleEndian.PutUint32(dst[12:], math.Float32bits(r.Z))
	binary.LittleEndian.PutUint16(dst[16:], QuantizeYaw(r.Yaw))
	binary.LittleEndian.PutUint16(dst[18:], r.Flags)
}

// AppendRecord appends r's RecordSize bytes to dst.
func AppendRecord(dst []byte, r Record) []byte {
	dst = append(dst, make([]byte, RecordSize)...)
	PutRecord(dst[len(dst)-RecordSize:], r)
	return dst
}

// ReadRecord decodes the record in b[:RecordSize]. It panics if b is shorter
// than RecordSize; [Batch.At] is the checked way to read a received batch.
func ReadRecord(b []byte) Record {
	_ = b[RecordSize-1]
	return Record{
		Actor: binary.LittleEndian.Uint32(b[0:]),
		X:     f32(b[4:]),
		Y:     f32(b[8:]),
		Z:     f32(b[12:]),
		Yaw:   YawFromSteps(binary.LittleEndian.Uint16(b[16:])),
		Flags: binary.LittleEndian.Uint16(b[18:]),
	}
}

// AppendBatchHeader appends a movement batch header for the given tick (its
// low 32 bits) and record count. Append the records after it (usually by
// copying RecordSize-byte slices of records encoded with PutRecord), then fix
// the count with [SetBatchCount] if it was not known in advance.
func AppendBatchHeader(dst []byte, tick uint32, count uint16) []byte {
	dst = appendHeader(dst, TypeBatch)
	dst = binary.LittleEndian.AppendUint32(dst, tick)
	return binary.LittleEndian.AppendUint16(dst, count)
}

// SetBatchCount writes n as the record count of the batch that starts at
// batch[0]. It panics if batch is shorter than BatchHeaderSize or n is
// outside [0, 65535]: both are bugs in the caller.
func SetBatchCount(batch []byte, n int) {
	if n < 0 || n > math.MaxUint16 {
		panic("wire: SetBatchCount: count out of range [0, 65535]; cut batches to MaxRecordsPerBatch")
	}
	if len(batch) < BatchHeaderSize {
		panic("wire: SetBatchCount: batch shorter than its header; start it with AppendBatchHeader")
	}
	binary.LittleEndian.PutUint16(batch[HeaderSize+4:], uint16(n))
}

// Batch is a decoded movement batch. It aliases the datagram it was decoded
// from: read its records before the datagram's buffer is reused. The zero
// value is an empty batch for tick 0.
type Batch struct {
	Tick    uint32 // the server tick the records describe (low 32 bits)
	records []byte // Len() * RecordSize bytes
}

// DecodeBatch decodes a movement batch datagram. The count in the header
// must match the bytes that follow exactly (ErrBatchCount otherwise).
func DecodeBatch(b []byte) (Batch, error) {
	if err := checkHeader(b, TypeBatch); err != nil {
		return Batch{}, err
	}
	if len(b) < BatchHeaderSize {
		return Batch{}, ErrShort
	}
	n := int(binary.LittleEndian.Uint16(b[HeaderSize+4:]))
	if len(b)-BatchHeaderSize != n*RecordSize {
		return Batch{}, ErrBatchCount
	}
	return Batch{
		Tick:    binary.LittleEndian.Uint32(b[HeaderSize:]),
		records: b[BatchHeaderSize:],
	}, nil
}

// Len returns the number of records in the batch.
func (b Batch) Len() int { return len(b.records) / RecordSize }

// At returns record i. It panics if i is outside [0, Len()), like a slice
// index.
func (b Batch) At(i int) Record {
	return ReadRecord(b.records[i*RecordSize : (i+1)*RecordSize])
}
