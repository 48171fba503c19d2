package wire

import (
	"encoding/binary"
	"unicode/utf8"
)

// AppendHello appends h as a Hello frame. It returns dst unchanged and
// ErrTokenTooLong when the token is longer than MaxTokenLen.
func AppendHello(dst []byte, h Hello) ([]byte, error) {
	if len(h.Token) > MaxTokenLen {
		return dst, ErrTokenTooLong
	}
	dst = appendHeader(dst, TypeHello)
	dst = binary.LittleEndian.AppendUint16(dst, h.Protocol)
	dst = append(dst, byte(len(h.Token)))
	return append(dst, h.Token...), nil
}

// DecodeHello decodes a Hello frame. The returned Token aliases b.
func DecodeHello(b []byte) (Hello, error) {
	if err := checkHeader(b, TypeHello); err != nil {
		return Hello{}, err
	}
	const fixed = HeaderSize + 2 + 1
	if len(b) < fixed {
		return Hello{}, ErrShort
	}
	n := int(b[fixed-1])
	if n > MaxTokenLen {
		return Hello{}, ErrTokenTooLong
	}
	switch {
	case len(b) < fixed+n:
		return Hello{}, ErrShort
	case len(b) > fixed+n:
		return Hello{}, ErrTrailing
	}
	return Hello{
		Protocol: binary.LittleEndian.Uint16(b[2:]),
		Token:    b[fixed : fixed+n : fixed+n],
	}, nil
}

// AppendMove appends m as a Move frame of MoveSize bytes.
func AppendMove(dst []byte, m Move) []byte {
	dst = appendHeader(dst, TypeMove)
	dst = binary.LittleEndian.AppendUint32(dst, m.Seq)
	dst = appendPlace(dst, m.X, m.Y, m.Z, m.Yaw, m.WorldOrCell)
	return binary.LittleEndian.AppendUint16(dst, m.Flags)
}

// DecodeMove decodes a Move frame.
func DecodeMove(b []byte) (Move, error) {
	if err := checkFixed(b, TypeMove, MoveSize); err != nil {
		return Move{}, err
	}
	x, y, z, yaw, w := readPlace(b[6:])
	return Move{Seq: binary.LittleEndian.Uint32(b[2:]), X: x, Y: y, Z: z, Yaw: yaw, WorldOrCell: w, Flags: binary.LittleEndian.Uint16(b[26:])}, nil
}

// AppendWelcome appends w as a Welcome frame of WelcomeSize bytes.
func AppendWelcome(dst []byte, w Welcome) []byte {
	dst = appendHeader(dst, TypeWelcome)
	dst = binary.LittleEndian.AppendUint32(dst, w.Actor)
	dst = binary.LittleEndian.AppendUint16(dst, w.TickRate)
	dst = binary.LittleEndian.AppendUint32(dst, w.Tick)
	return appendPlace(dst, w.X, w.Y, w.Z, w.Yaw, w.WorldOrCell)
}

// DecodeWelcome decodes a Welcome frame.
func DecodeWelcome(b []byte) (Welcome, error) {
	if err := checkFixed(b, TypeWelcome, WelcomeSize); err != nil {
		return Welcome{}, err
	}
	x, y, z, yaw, w := readPlace(b[12:])
	return Welcome{
		Actor:    binary.LittleEndian.Uint32(b[2:]),
		TickRate: binary.LittleEndian.Uint16(b[6:]),
		Tick:     binary.LittleEndian.Uint32(b[8:]),
		X:        x, Y: y, Z: z, Yaw: yaw, WorldOrCell: w,
	}, nil
}

// AppendAppear appends a as an Appear frame of AppearSize bytes.
func AppendAppear(dst []byte, a Appear) []byte {
	dst = appendHeader(dst, TypeAppear)
	dst = binary.LittleEndian.AppendUint32(dst, a.Actor)
	dst = appendPlace(dst, a.X, a.Y, a.Z, a.Yaw, a.WorldOrCell)
	return binary.LittleEndian.AppendUint16(dst, a.Flags)
}

// DecodeAppear decodes an Appear frame.
func DecodeAppear(b []byte) (Appear, error) {
	if err := checkFixed(b, TypeAppear, AppearSize); err != nil {
		return Appear{}, err
	}
	x, y, z, yaw, w := readPlace(b[6:])
	return Appear{Actor: binary.LittleEndian.Uint32(b[2:]), X: x, Y: y, Z: z, Yaw: yaw, WorldOrCell: w, Flags: binary.LittleEndian.Uint16(b[26:])}, nil
}

// AppendProp appends a as a Prop frame of PropSize bytes.
func AppendProp(dst []byte, a Prop) []byte {
	dst = appendHeader(dst, TypeProp)
	dst = binary.LittleEndian.AppendUint32(dst, a.Actor)
	dst = appendPlace(dst, a.X, a.Y, a.Z, a.Yaw, a.WorldOrCell)
	return binary.LittleEndian.AppendUint16(dst, a.Flags)
}

// DecodeProp decodes a Prop frame.
func DecodeProp(b []byte) (Prop, error) {
	if err := checkFixed(b, TypeProp, PropSize); err != nil {
		return Prop{}, err
	}
	x, y, z, yaw, w := readPlace(b[6:])
	return Prop{Actor: binary.LittleEndian.Uint32(b[2:]), X: x, Y: y, Z: z, Yaw: yaw, WorldOrCell: w, Flags: binary.LittleEndian.Uint16(b[26:])}, nil
}

// AppendDisappear appends d as a Disappear frame of DisappearSize bytes.
func AppendDisappear(dst []byte, d Disappear) []byte {
	dst = appendHeader(dst, TypeDisappear)
	return binary.LittleEndian.AppendUint32(dst, d.Actor)
}

// DecodeDisappear decodes a Disappear frame.
func DecodeDisappear(b []byte) (Disappear, error) {
	if err := checkFixed(b, TypeDisappear, DisappearSize); err != nil {
		return Disappear{}, err
	}
	return Disappear{Actor: binary.LittleEndian.Uint32(b[2:])}, nil
}

// Rate tells a client the rate the server ticks at now. A server that
// cannot keep its tick rate slows evenly instead of stalling (every tick
// a little later, the game's time with it), and says so: once a second
// while its rate is off the nominal one, and once more when it is back. A
// client paces its own updates and interpolation by it; the rate limits
// count time, so a client that keeps sending at its own rate is never
// dropped for it.
type Rate struct {
	// Nominal is the configured tick rate, in Hz (Welcome's TickRate).
	Nominal uint16
	// Centihertz is the rate over the last second, in hundredths of a Hz:
	// 3000 is 30 Hz, 1850 is 18.5 Hz.
	Centihertz uint16
}

// Hz returns the current rate in Hz.
func (r Rate) Hz() float64 { return float64(r.Centihertz) / 100 }

// AppendRate appends r as a Rate frame of RateSize bytes.
func AppendRate(dst []byte, r Rate) []byte {
	dst = appendHeader(dst, TypeRate)
	dst = binary.LittleEndian.AppendUint16(dst, r.Nominal)
	return binary.LittleEndian.AppendUint16(dst, r.Centihertz)
}

// DecodeRate decodes a Rate frame.
func DecodeRate(b []byte) (Rate, error) {
	if err := checkFixed(b, TypeRate, RateSize); err != nil {
		return Rate{}, err
	}
	return Rate{Nominal: binary.LittleEndian.Uint16(b[2:]), Centihertz: binary.LittleEndian.Uint16(b[4:])}, nil
}

// AppendCorrection appends c as a Correction frame of CorrectionSize bytes.
func AppendCorrection(dst []byte, c Correction) []byte {
	dst = appendHeader(dst, TypeCorrection)
	dst = binary.LittleEndian.AppendUint32(dst, c.Seq)
	return appendPlace(dst, c.X, c.Y, c.Z, c.Yaw, c.WorldOrCell)
}

// DecodeCorrection decodes a Correction frame.
func DecodeCorrection(b []byte) (Correction, error) {
	if err := checkFixed(b, TypeCorrection, CorrectionSize); err != nil {
		return Correction{}, err
	}
	x, y, z, yaw, w := readPlace(b[6:])
	return Correction{Seq: binary.LittleEndian.Uint32(b[2:]), X: x, Y: y, Z: z, Yaw: yaw, WorldOrCell: w}, nil
}

// AppendRefuse appends r as a Refuse frame, always with the current Version.
// A reason longer than MaxReasonLen is cut to at most MaxReasonLen bytes at
// a UTF-8 character boundary.
func AppendRefuse(dst []byte, r Refuse) []byte {
	reason := r.Reason
	if len(reason) > MaxReasonLen {
		n := MaxReasonLen
		for n > 0 && !utf8.RuneStart(reason[n]) {
			n--
		}
		reason = reason[:n]
	}
	dst = appendHeader(dst, TypeRefuse)
	dst = append(dst, byte(r.Code), byte(len(reason)))
	return append(dst, reason...)
}

// DecodeRefuse decodes a Refuse frame of any wire version: the Refuse layout
// never changes, so a client can always read why it was turned away. The
// returned Reason aliases b.
func DecodeRefuse(b []byte) (Refuse, error) {
	if err := checkHeader(b, TypeRefuse); err != nil {
		return Refuse{}, err
	}
	const fixed = HeaderSize + 1 + 1
	if len(b) < fixed {
		return Refuse{}, ErrShort
	}
	n := int(b[fixed-1])
	switch {
	case len(b) < fixed+n:
		return Refuse{}, ErrShort
	case len(b) > fixed+n:
		return Refuse{}, ErrTrailing
	}
	return Refuse{Code: RefuseCode(b[2]), Reason: b[fixed : fixed+n : fixed+n]}, nil
}
