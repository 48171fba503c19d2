package link

import "github.com/throng-go/throng/net/wire"

// Refusal follows a session's reliable frames until its Welcome: a
// Refuse queued before any Welcome makes the connection close with the
// refusal's code and reason, so that a client that did not read the frame
// still learns why it was turned away.
type Refusal struct {
	Welcomed, Refused bool
	Code              wire.RefuseCode
	Reason            string
}

// Note looks at one reliable frame queued for the session. After the
// Welcome or a Refuse it only checks a flag, inline, since every later
// frame of the session passes through it.
func (r *Refusal) Note(frame []byte) {
	if !r.Welcomed && !r.Refused {
		r.note(frame)
	}
}

func (r *Refusal) note(frame []byte) {
	switch t, _ := wire.PeekType(frame); t {
	case wire.TypeWelcome:
		r.Welcomed = true
	case wire.TypeRefuse:
		if f, err := wire.DecodeRefuse(frame); err == nil {
			r.Refused, r.Code, r.Reason = true, f.Code, string(f.Reason)
		}
	}
}
