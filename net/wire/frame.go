package wire

// Frame holds any decoded frame: Type says which field is set. It is meant
// to be reused: [Decode] overwrites only Type and the field Type names, so
// the other fields keep stale values from earlier frames. Byte slices inside
// (Hello.Token, Refuse.Reason, the Batch records) alias the decoded input.
type Frame struct {
	Type       Type
	Hello      Hello
	Move       Move
	Welcome    Welcome
	Appear     Appear
	Prop       Prop
	Disappear  Disappear
	Correction Correction
	Refuse     Refuse
	Rate       Rate
	Batch      Batch
	// Payload is a Command's or an Event's payload.
	Payload []byte
}

// Decode decodes any frame into f. On error f.Type is 0 and the error is
// one of the CodecError values; Decode never panics and never allocates.
func Decode(b []byte, f *Frame) error {
	t, err := PeekType(b)
	if err != nil {
		f.Type = 0
		return err
	}
	switch t {
	case TypeHello:
		f.Hello, err = DecodeHello(b)
	case TypeMove:
		f.Move, err = DecodeMove(b)
	case TypeWelcome:
		f.Welcome, err = DecodeWelcome(b)
	case TypeAppear:
		f.Appear, err = DecodeAppear(b)
	case TypeProp:
		f.Prop, err = DecodeProp(b)
	case TypeDisappear:
		f.Disappear, err = DecodeDisappear(b)
	case TypeCorrection:
		f.Correction, err = DecodeCorrection(b)
	case TypeRefuse:
		f.Refuse, err = DecodeRefuse(b)
	case TypeRate:
		f.Rate, err = DecodeRate(b)
	case TypeBatch:
		f.Batch, err = DecodeBatch(b)
	case TypeCommand:
		f.Payload, err = DecodeCommand(b)
	case TypeEvent:
		f.Payload, err = DecodeEvent(b)
	}
	if err != nil {
		f.Type = 0
		return err
	}
	f.Type = t
	return nil
}
