package throng

import (
	"math"
	"net/netip"
	"strconv"

	"github.com/throng-go/throng/net/client"
	"github.com/throng-go/throng/systems"
)

// Defaults of the operational sections.
const (
	// DefaultBusyShare: new players are turned away while the p95 of work
	// per tick over the last second is above 90% of the tick period.
	DefaultBusyShare = 0.9
	// DefaultJoinAppearsPerTick: the players joining in one tick may cost
	// at most 30,000 appears (see Admission.JoinAppearsPerTick): 173 into
	// an empty world, 5 into a crowd of 3,000.
	DefaultJoinAppearsPerTick = 30_000
	// DefaultMovingUpdatesPerSecond and DefaultStandingUpdatesPerSecond are
	// the most movement updates a client may send while moving and while
	// standing still; the excess is dropped and counted.
	// The same constants pace client.Client, so that a Go client's own limit
	// is never above the server's.
	DefaultMovingUpdatesPerSecond   = client.DefaultMovingUpdatesPerSecond
	DefaultStandingUpdatesPerSecond = client.DefaultStandingUpdatesPerSecond
	// DefaultFloodFactor and DefaultFloodSeconds: a client sending more than
	// FloodFactor times the moving limit for FloodSeconds seconds in a row
	// is disconnected.
	DefaultFloodFactor  = 10
	DefaultFloodSeconds = 2
	// DefaultPropRadiusUnits and DefaultPropSlackUnits: a player sees the
	// props within 5,600 units (80 m where a 4,096-unit chunk is 58.5 m)
	// and takes its sight again after walking 700 (10 m).
	DefaultPropRadiusUnits = systems.DefaultPropRadiusUnits
	DefaultPropSlackUnits  = systems.DefaultPropSlackUnits
)

// Props is the "props" section: how near a player props matter. A prop
// (ecs.ActorSpec.Prop) is told to the players within its radius, in the
// tick it spawns or changes, and to a player who comes within it; it
// costs a tick nothing while it stands unchanged.
type Props struct {
	// RadiusUnits: every prop within this distance of a player, in world
	// units, is in its sight. Above 0. Key "radiusUnits"; nil means
	// [DefaultPropRadiusUnits].
	RadiusUnits *float32 `json:"radiusUnits,omitempty"`
	// SlackUnits is how far a player moves before its sight is taken
	// again. A player sees no prop farther than RadiusUnits plus twice
	// SlackUnits; a smaller slack makes that tighter and takes sight more
	// often. Above 0. Key "slackUnits"; nil means [DefaultPropSlackUnits].
	SlackUnits *float32 `json:"slackUnits,omitempty"`
}

// PropSettings is [Props] resolved.
type PropSettings struct {
	RadiusUnits, SlackUnits float32
}

func (p Props) resolve(r *resolver) PropSettings {
	s := PropSettings{
		RadiusUnits: r.distance("props.radiusUnits", p.RadiusUnits, DefaultPropRadiusUnits),
		SlackUnits:  r.distance("props.slackUnits", p.SlackUnits, DefaultPropSlackUnits),
	}
	for _, k := range []struct {
		key string
		v   *float32
	}{{"props.radiusUnits", p.RadiusUnits}, {"props.slackUnits", p.SlackUnits}} {
		if k.v != nil && *k.v == 0 {
			r.fail(k.key, "must be above 0")
		}
	}
	return s
}

// Admission is the "admission" section: turning new players away while the
// server is over budget, so those already playing keep their tick rate.
type Admission struct {
	// Enabled: false admits everyone whatever the load. Key "enabled";
	// nil means true.
	Enabled *bool `json:"enabled,omitempty"`
	// BusyShare is the share of the tick period (1/tickRate: 33.3 ms at
	// 30 Hz, 16.7 ms at 60 Hz, 8.3 ms at 120 Hz) that the p95 of work per
	// tick over the last second must pass for new sessions to be refused
	// with "server busy". Above 0, at most 1. Key "busyShare"; nil means
	// [DefaultBusyShare].
	BusyShare *float64 `json:"busyShare,omitempty"`
	// JoinAppearsPerTick bounds the players let in in one tick by what
	// their joins cost: k players joining n already there cost about
	// 2kn + k^2 appears (each is told of the others and they of it), and
	// a tick admits the most players (at least one) whose appears stay
	// within this. A player who says Hello past it waits its turn, first
	// come first served (Stats' Waiting), so that a crowd arriving at once
	// joins over several ticks while those already in keep their rate,
	// where a thousand joining in one tick cost a tick of hundreds of
	// milliseconds. 0 lets everyone in at once. Key "joinAppearsPerTick";
	// nil means [DefaultJoinAppearsPerTick].
	JoinAppearsPerTick *int `json:"joinAppearsPerTick,omitempty"`
}

// ClientLimits is the "clientLimits" section: how much a client may send.
type ClientLimits struct {
	// MovingUpdatesPerSecond: at least 1. Key "movingUpdatesPerSecond";
	// nil means [client.DefaultMovingUpdatesPerSecond].
	MovingUpdatesPerSecond *int `json:"movingUpdatesPerSecond,omitempty"`
	// StandingUpdatesPerSecond: an update that does not change the actor's
	// position counts as standing still. At least 1, at most the moving
	// limit. Key "standingUpdatesPerSecond"; nil means
	// [client.DefaultStandingUpdatesPerSecond].
	StandingUpdatesPerSecond *int `json:"standingUpdatesPerSecond,omitempty"`
	// FloodFactor and FloodSeconds: a client above FloodFactor times the
	// moving limit for FloodSeconds consecutive seconds is disconnected
	// with a reason. Both at least 1. Keys "floodFactor", "floodSeconds".
	FloodFactor  *int `json:"floodFactor,omitempty"`
	FloodSeconds *int `json:"floodSeconds,omitempty"`
	// MaxSpeedUnitsPerSecond is the fastest a client may move its actor, in
	// world units a second; 0 (the default) sets no limit but the one every
	// update has, a step shorter than a chunk. Each actor has an allowance
	// of distance that grows by this speed over time, to at most one
	// second's worth, and an accepted update spends it: updates that arrive
	// bunched up (network jitter) pass, a client that moves faster than
	// this for long, or jumps further than a second's travel at once, is
	// corrected. Key "maxSpeedUnitsPerSecond"; finite, not negative.
	MaxSpeedUnitsPerSecond *float32 `json:"maxSpeedUnitsPerSecond,omitempty"`
}

// Metrics is the "metrics" section: where operators read the figures.
type Metrics struct {
	// Listen is a host:port for an HTTP listener serving the Prometheus
	// text format at /metrics. Empty (the default) means off.
	Listen string `json:"listen,omitempty"`
}

// AdmissionSettings is [Admission] resolved.
type AdmissionSettings struct {
	Enabled            bool
	BusyShare          float64
	JoinAppearsPerTick int
}

// ClientSettings is [ClientLimits] resolved.
type ClientSettings struct {
	MovingUpdatesPerSecond   int
	StandingUpdatesPerSecond int
	FloodFactor              int
	FloodSeconds             int
	MaxSpeedUnitsPerSecond   float32
}

func (a Admission) resolve(r *resolver) AdmissionSettings {
	s := AdmissionSettings{Enabled: on(a.Enabled, true), BusyShare: DefaultBusyShare,
		JoinAppearsPerTick: r.count("admission.joinAppearsPerTick", a.JoinAppearsPerTick, DefaultJoinAppearsPerTick)}
	if a.BusyShare != nil {
		s.BusyShare = *a.BusyShare
		if f := s.BusyShare; math.IsNaN(f) || f <= 0 || f > 1 {
			r.fail("admission.busyShare", "must be above 0 and at most 1, got %v", f)
		}
	}
	return s
}

func (c ClientLimits) resolve(r *resolver) ClientSettings {
	s := ClientSettings{
		MovingUpdatesPerSecond:   r.count("clientLimits.movingUpdatesPerSecond", c.MovingUpdatesPerSecond, DefaultMovingUpdatesPerSecond),
		StandingUpdatesPerSecond: r.count("clientLimits.standingUpdatesPerSecond", c.StandingUpdatesPerSecond, DefaultStandingUpdatesPerSecond),
		FloodFactor:              r.count("clientLimits.floodFactor", c.FloodFactor, DefaultFloodFactor),
		FloodSeconds:             r.count("clientLimits.floodSeconds", c.FloodSeconds, DefaultFloodSeconds),
		MaxSpeedUnitsPerSecond:   r.distance("clientLimits.maxSpeedUnitsPerSecond", c.MaxSpeedUnitsPerSecond, 0),
	}
	for _, c := range []struct {
		key string
		v   int
	}{
		{"clientLimits.movingUpdatesPerSecond", s.MovingUpdatesPerSecond},
		{"clientLimits.standingUpdatesPerSecond", s.StandingUpdatesPerSecond},
		{"clientLimits.floodFactor", s.FloodFactor},
		{"clientLimits.floodSeconds", s.FloodSeconds},
	} {
		if c.v == 0 {
			r.fail(c.key, "must be at least 1, got 0")
		}
	}
	if s.StandingUpdatesPerSecond > s.MovingUpdatesPerSecond {
		r.fail("clientLimits.standingUpdatesPerSecond", "must not exceed movingUpdatesPerSecond (%d), got %d", s.MovingUpdatesPerSecond, s.StandingUpdatesPerSecond)
	}
	return s
}

func (m Metrics) resolve(r *resolver) string {
	if m.Listen == "" {
		return ""
	}
	if _, err := netip.ParseAddrPort(m.Listen); err != nil {
		if host, port, ok := cutHostPort(m.Listen); !ok || host == "" || port == "" {
			r.fail("metrics.listen", "must be host:port, got %q", m.Listen)
		}
	}
	return m.Listen
}

// cutHostPort splits "name:port"; ParseAddrPort only takes IP literals.
func cutHostPort(s string) (host, port string, ok bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// Connection is the "connection" section: the per-connection budget.
type Connection struct {
	// MaxRecordsPerTick caps the movement records one client is sent in a
	// tick. Records that do not fit are owed, not lost: the most overdue
	// and closest senders go first next tick (see interest.Backlog). 0
	// lifts the cap: a client then gets as many datagrams per tick as its
	// view needs (benchmarks, LAN). Key "maxRecordsPerTick"; nil means
	// wire.MaxRecordsPerBatch, one datagram per tick.
	MaxRecordsPerTick *int `json:"maxRecordsPerTick,omitempty"`
	// NearestSenders is how many of a client's nearest senders the cap
	// never thins: when more records are due than fit, the cap stretches
	// the client's update periods (farther senders are heard less often),
	// but its nearest NearestSenders senders in range keep their own
	// periods and are sent first, so the people right around a player move
	// every tick however dense the crowd. Finding them costs the relay
	// about a microsecond a client a tick, and each takes a record of the
	// cap from the rest (docs/performance.md). 0 to 64, and at most
	// maxRecordsPerTick. Key "nearestSenders"; nil or 0 turns it off.
	NearestSenders *int `json:"nearestSenders,omitempty"`
}

// Network is the "network" section: the listeners a server opens when
// Options.Transport is not set. Neither set means an in-memory transport;
// both means one server for native clients and browsers (multi.Transport).
type Network struct {
	// QUIC serves native clients. Key "quic".
	QUIC *QUICListener `json:"quic,omitempty"`
	// WebSocket serves browsers. Key "webSocket".
	WebSocket *WebSocketListener `json:"webSocket,omitempty"`
}

// QUICListener is network.quic (see quic.Listen).
type QUICListener struct {
	// Listen is the UDP host:port, e.g. "0.0.0.0:4433" or ":4433".
	// Key "listen"; required.
	Listen string `json:"listen"`
	// CertFile and KeyFile are the PEM certificate chain and key. Keys
	// "certFile", "keyFile"; both, or neither with development.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// Development makes a self-signed certificate at start: loopback and
	// tests only. Key "development".
	Development bool `json:"development"`
}

// WebSocketListener is network.webSocket (see websocket.Listen).
type WebSocketListener struct {
	// Listen is the TCP host:port. Key "listen"; required.
	Listen string `json:"listen"`
	// Path is where clients connect; "" means websocket.DefaultPath.
	// Key "path".
	Path string `json:"path,omitempty"`
	// OriginPatterns are the web pages' hosts allowed besides the
	// server's own. Key "originPatterns".
	OriginPatterns []string `json:"originPatterns,omitempty"`
	// CertFile and KeyFile serve wss:// (both or neither; without them
	// ws://, for loopback or behind a proxy that terminates TLS). Keys
	// "certFile", "keyFile".
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
}

func (n Network) resolve(r *resolver) Network {
	if q := n.QUIC; q != nil {
		listenAddress(r, "network.quic.listen", q.Listen)
		certPair(r, "network.quic", q.CertFile, q.KeyFile)
		if q.CertFile == "" && !q.Development {
			r.fail("network.quic.certFile", "QUIC needs a certificate: give certFile and keyFile, or development: true on loopback")
		}
	}
	if w := n.WebSocket; w != nil {
		listenAddress(r, "network.webSocket.listen", w.Listen)
		certPair(r, "network.webSocket", w.CertFile, w.KeyFile)
		if w.Path != "" && w.Path[0] != '/' {
			r.fail("network.webSocket.path", "must start with /, got %q", w.Path)
		}
	}
	return n
}

// listenAddress checks a host:port to listen on (the host may be empty:
// every interface).
func listenAddress(r *resolver, key, addr string) {
	if addr == "" {
		r.fail(key, "missing: give host:port, for example \"0.0.0.0:4433\"")
		return
	}
	_, port, ok := cutHostPort(addr)
	if n, err := strconv.Atoi(port); !ok || err != nil || n < 0 || n > 65535 {
		r.fail(key, "must be host:port with a port from 0 to 65535, got %q", addr)
	}
}

// certPair checks that a certificate and its key come together.
func certPair(r *resolver, section, cert, key string) {
	if (cert == "") != (key == "") {
		r.fail(section+".keyFile", "certFile and keyFile come together: give both or neither")
	}
}
