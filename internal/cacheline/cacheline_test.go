package cacheline

import (
	"bytes"
	"testing"
)

// TestHintsLeaveMemoryAsItWas: asking for lines, at any offset and length
// (a start inside a line, an end one byte into the next), reads and writes
// nothing a program sees, and a zero-length slice asks for nothing.
func TestHintsLeaveMemoryAsItWas(t *testing.T) {
	buf := make([]byte, 4*Size+7)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf)
	for lo := 0; lo < 2*Size; lo += 13 {
		for hi := lo; hi <= len(buf); hi += 29 {
			Claim(buf[lo:hi])
			Read(buf[lo:hi])
		}
	}
	x := struct{ a, b uint64 }{1, 2}
	ClaimOne(&x)
	Claim([]int(nil))
	if !bytes.Equal(buf, want) || x.a != 1 || x.b != 2 {
		t.Fatal("a prefetch hint changed memory")
	}
}
