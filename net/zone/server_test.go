package zone_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/internal/nettest"
	"github.com/throng-go/throng/net/mem"
	"github.com/throng-go/throng/net/wire"
	"github.com/throng-go/throng/net/zone"
)

// zones is one world split over zone servers in one process, each with a
// NATS connection of its own as separate processes would have, ticked in
// lockstep by the test.
type zones struct {
	t       *testing.T
	url     string
	nats    *nettest.NATSServer
	js      jetstream.JetStream
	servers map[zone.ID]*member
	order   []zone.ID
	tick    uint64
	// silent counts hand-off requests that reached a subscriber that
	// never answers (a test's stand-in for a zone gone quiet).
	silent func() uint64
	// tap counts hand-off requests a test sent by hand and the answers
	// it received.
	tap func() (sent, answers uint64)
	// deaf lists zones closed by the test, whose batches nobody awaits.
	deaf map[zone.ID]bool
	opts zone.Options // HandoffTimeout and the like, for every server
	// With players through a gateway (startGatewayZones): the gateway,
	// its clients' transport, each zone's gateway.Transport, and the zone
	// the gateway sends a new session to.
	gw    *gateway.Gateway
	front *mem.Transport
	gts   map[zone.ID]*gateway.Transport
	// entries lists the zone of each player joinVia connected, in order:
	// the front numbers its sessions from 1 in the order they dial.
	entries []zone.ID
	lastMap zone.Map // the map the last round read
}

type member struct {
	srv     *throng.Server
	z       *zone.Server
	spawnAt components.Transform // where the next player admitted spawns
	moves   *ark.Map[components.Transform]
}

// gameTypes are the components of the game's own every zone server of a
// test saves and hands off, unless typesOf names others for its zone.
var gameTypes = []save.Type{save.Plain[Purse]("test.purse", 1), save.Coded[Title]("test.title", 1, titleCodec{})}

// typesOf, set by a test (and reset by its cleanup), gives some zones'
// servers other types than gameTypes.
var typesOf = map[zone.ID][]save.Type{}

// serverOptions, set by a test (and reset by its cleanup), changes the
// options every zone server of the test starts with.
var serverOptions func(*throng.Options)

func startZones(t *testing.T, m zone.Map) *zones {
	return startZonesWith(t, m, zone.Options{})
}

func startZonesWith(t *testing.T, m zone.Map, opts zone.Options) *zones {
	return startZonesOn(t, m, opts, false)
}

// startGatewayZones starts the zone servers of m behind one gateway, each
// serving the gateway's players through a gateway.Transport: players
// join with joinVia and are handed off with their actors.
func startGatewayZones(t *testing.T, m zone.Map, opts zone.Options) *zones {
	return startZonesOn(t, m, opts, true)
}

func startZonesOn(t *testing.T, m zone.Map, opts zone.Options, viaGateway bool) *zones {
	ns := nettest.StartNATSServer(t, 0)
	url := ns.URL
	_, js := connect(t, url)
	_, err := zone.PublishMap(testContext(t), js, "", m)
	require.NoError(t, err)
	w := &zones{t: t, url: url, nats: ns, js: js, servers: map[zone.ID]*member{}, opts: opts, gts: map[zone.ID]*gateway.Transport{}}
	for _, zn := range m.Zones {
		mb := &member{}
		nc, _ := connect(t, url)
		so := throng.Options{
			Parallelism: throng.Parallelism{Enabled: new(false)},
			// A token "player:NAME" names the player NAME; any other
			// joins a guest.
			Admit: func(h wire.Hello) (throng.Entry, error) {
				return throng.Entry{Spawn: mb.spawnAt, Player: playerOf(h)}, nil
			},
			SavedTypes: gameTypes,
		}
		if types, ok := typesOf[zn.ID]; ok {
			so.SavedTypes = types
		}
		if serverOptions != nil {
			serverOptions(&so)
		}
		if viaGateway {
			gt, err := gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: uint32(zn.ID)})
			require.NoError(t, err)
			so.Transport, w.gts[zn.ID] = gt, gt
		}
		mb.srv, err = throng.New(so)
		require.NoError(t, err)
		t.Cleanup(func() { mb.srv.Close() })
		mb.z, err = zone.New(testContext(t), mb.srv, nc, zone.Options{Zone: zn.ID, Name: zn.Owner, HandoffTimeout: opts.HandoffTimeout, LoadEvery: opts.LoadEvery, Lease: opts.Lease, HandoffMargin: opts.HandoffMargin,
			Gateway: w.gts[zn.ID], Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(mb.z.Close)
		mb.moves = ark.NewMap[components.Transform](mb.srv.World().Ark())
		w.servers[zn.ID] = mb
		w.order = append(w.order, zn.ID)
	}
	if viaGateway {
		nc, _ := connect(t, url)
		w.front = mem.New(mem.Options{})
		w.gw, err = gateway.New(gateway.Config{Conn: nc, Name: "gw", Front: w.front,
			Zone: func(s wire.SessionID) uint32 { return uint32(w.entries[s-1]) }})
		require.NoError(t, err)
		t.Cleanup(func() { w.gw.Close() })
		require.NoError(t, nc.Flush())
	}
	return w
}

// gatewayMessages returns what the zone servers' gateway transports have
// received and published, summed.
func (w *zones) gatewayMessages() (received, published uint64) {
	for _, gt := range w.gts {
		r, p := gt.Messages()
		received += r
		published += p
	}
	return received, published
}

// round ticks every zone once, then waits until every batch a holding
// zone sent in that tick has reached its neighbours, and every hand-off
// request and answer its addressee, so that the next round applies them:
// a ghost moves one tick after its owner moved it.
func (w *zones) round() {
	w.tick++
	if w.gw != nil {
		// What the players sent reaches their zone servers before they
		// tick.
		w.gw.Step()
		require.Eventually(w.t, func() bool {
			received, _ := w.gatewayMessages()
			return received == w.gw.Stats().Messages
		}, 5*time.Second, time.Millisecond, "the gateway's messages before tick %d", w.tick)
	}
	for _, id := range w.order {
		st := w.servers[id].srv.Tick()
		require.Equal(w.t, w.tick, st.Tick)
	}
	m := w.mapForRound()
	for _, id := range w.order {
		from := w.servers[id].z
		if !from.Stats().Holds {
			continue
		}
		for _, n := range m.Neighbours(id, nil) {
			if to := w.servers[n]; to != nil && !w.deaf[n] {
				require.Eventually(w.t, func() bool { return to.z.Heard(id) >= w.tick },
					5*time.Second, time.Millisecond, "zone %d's tick %d batch to zone %d", id, w.tick, n)
			}
		}
	}
	require.Eventually(w.t, func() bool {
		var h zone.HandoffStats
		for _, mb := range w.servers {
			s := mb.z.Stats().Handoffs
			h.RequestsSent += s.RequestsSent
			h.RequestsReceived += s.RequestsReceived
			h.AnswersSent += s.AnswersSent
			h.AnswersReceived += s.AnswersReceived
		}
		if w.silent != nil {
			h.RequestsReceived += w.silent()
		}
		if w.tap != nil {
			sent, answers := w.tap()
			h.RequestsSent += sent
			h.AnswersReceived += answers
		}
		return h.RequestsSent == h.RequestsReceived && h.AnswersSent == h.AnswersReceived
	}, 5*time.Second, time.Millisecond, "hand-off messages of tick %d", w.tick)
	// Commands forwarded between ticks, and passed on in this one, reach
	// their zones before the next round.
	require.Eventually(w.t, func() bool {
		var sent, arrived uint64
		for _, mb := range w.servers {
			s := mb.z.Stats().Commands
			sent += s.Sent
			arrived += s.Arrived
		}
		return arrived >= sent
	}, 5*time.Second, time.Millisecond, "commands of tick %d", w.tick)
	if w.gw != nil {
		// And what the zone servers sent the players reaches them.
		require.Eventually(w.t, func() bool {
			_, published := w.gatewayMessages()
			return w.gw.Stats().Replies == published
		}, 5*time.Second, time.Millisecond, "the zone servers' messages of tick %d", w.tick)
	}
}

// mapForRound returns the map in the bucket, or while the bucket cannot
// be read (JetStream stopped by the test), the last one read.
func (w *zones) mapForRound() zone.Map {
	ctx, cancel := context.WithTimeout(testContext(w.t), 200*time.Millisecond)
	defer cancel()
	if kv, err := w.js.KeyValue(ctx, zone.DefaultBucket); err == nil {
		if e, err := kv.Get(ctx, "map"); err == nil {
			if m, err := zone.DecodeMap(e.Value()); err == nil {
				w.lastMap = m
			}
		}
	}
	return w.lastMap
}

func (w *zones) currentMap() zone.Map {
	kv, err := w.js.KeyValue(testContext(w.t), zone.DefaultBucket)
	require.NoError(w.t, err)
	e, err := kv.Get(testContext(w.t), "map")
	require.NoError(w.t, err)
	m, err := zone.DecodeMap(e.Value())
	require.NoError(w.t, err)
	return m
}

// spawn places a client-less actor (an NPC) in a zone's world.
func (w *zones) spawn(id zone.ID, x, y float32) components.ActorID {
	return w.servers[id].srv.World().Spawn(ecs.ActorSpec{Transform: components.Transform{X: x, Y: y}})
}

// walk writes an NPC's X between ticks, as a game's system would before
// Move.
func (w *zones) walk(id zone.ID, npc components.ActorID, x float32) {
	mb := w.servers[id]
	e, ok := mb.srv.World().Entity(npc)
	require.True(w.t, ok)
	mb.moves.Get(e).X = x
}

// viewer is a player connected to one zone server, noting what a client
// would notice.
type viewer struct {
	t       *testing.T
	c       *mem.Client
	self    uint32
	visible map[uint32]bool
	events  []string
	xs      map[uint32][]float32  // the X of each record received, per actor
	told    map[uint32][2]float32 // the X and Y of each record of the last read, per actor
	// welcomes lists the actor of every Welcome, in order; each starts a
	// new view (a player moved to another zone server sees by its ids).
	welcomes    []uint32
	corrections int
}

func (w *zones) join(id zone.ID, x, y float32) *viewer {
	return w.joinAs(id, x, y, "")
}

// joinAs is join for a player named name ("" for a guest).
func (w *zones) joinAs(id zone.ID, x, y float32, name string) *viewer {
	mb := w.servers[id]
	mb.spawnAt = components.Transform{X: x, Y: y}
	c := mb.srv.Mem().Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(tokenOf(name))})
	require.NoError(w.t, err)
	require.NoError(w.t, c.Send(hello))
	return &viewer{t: w.t, c: c, visible: map[uint32]bool{}, xs: map[uint32][]float32{}}
}

// playerOf returns the player a Hello's token names (tokenOf): "" for a
// guest.
func playerOf(h wire.Hello) string {
	name, named := strings.CutPrefix(string(h.Token), "player:")
	if !named {
		return ""
	}
	return name
}

// tokenOf returns the token of player name: "player:NAME", or "p" for a
// guest ("").
func tokenOf(name string) string {
	if name == "" {
		return "p"
	}
	return "player:" + name
}

// joinVia connects a player through the gateway, which sends it to
// zone entry, whose server spawns it at x, y (the last place given to a
// zone before its next round).
func (w *zones) joinVia(entry zone.ID, x, y float32) *viewer {
	return w.joinViaAs(entry, x, y, "")
}

// joinViaAs is joinVia for a player named name ("" for a guest).
func (w *zones) joinViaAs(entry zone.ID, x, y float32, name string) *viewer {
	w.entries = append(w.entries, entry)
	w.servers[entry].spawnAt = components.Transform{X: x, Y: y}
	c := w.front.Dial()
	hello, err := wire.AppendHello(nil, wire.Hello{Token: []byte(tokenOf(name))})
	require.NoError(w.t, err)
	require.NoError(w.t, c.Send(hello))
	return &viewer{t: w.t, c: c, visible: map[uint32]bool{}, xs: map[uint32][]float32{}}
}

// read takes in what the player received in the last tick: the relay's
// datagrams, then the join's reliable frames, in the order the tick sent
// them.
func (v *viewer) read() {
	var f wire.Frame
	if v.told == nil {
		v.told = map[uint32][2]float32{}
	}
	clear(v.told)
	v.c.DrainDatagrams(func(b []byte) {
		batch, err := wire.DecodeBatch(b)
		require.NoError(v.t, err)
		for i := range batch.Len() {
			r := batch.At(i)
			assert.True(v.t, v.visible[r.Actor], "record of %d, not visible", r.Actor)
			v.xs[r.Actor] = append(v.xs[r.Actor], r.X)
			v.told[r.Actor] = [2]float32{r.X, r.Y}
		}
	})
	v.c.DrainReliable(func(b []byte) {
		require.NoError(v.t, wire.Decode(b, &f))
		switch f.Type {
		case wire.TypeWelcome:
			v.self = f.Welcome.Actor
			v.welcomes = append(v.welcomes, f.Welcome.Actor)
			clear(v.visible)
		case wire.TypeCorrection:
			v.corrections++
		case wire.TypeAppear:
			assert.False(v.t, v.visible[f.Appear.Actor], "appear of %d, already visible", f.Appear.Actor)
			v.visible[f.Appear.Actor] = true
			v.events = append(v.events, fmt.Sprintf("appear %d", f.Appear.Actor))
		case wire.TypeDisappear:
			assert.True(v.t, v.visible[f.Disappear.Actor], "disappear of %d, not visible", f.Disappear.Actor)
			delete(v.visible, f.Disappear.Actor)
			v.events = append(v.events, fmt.Sprintf("disappear %d", f.Disappear.Actor))
		}
	})
}

// others returns the actors the player sees besides itself.
func (v *viewer) others() []uint32 {
	var ids []uint32
	for id := range v.visible {
		if id != v.self {
			ids = append(ids, id)
		}
	}
	return ids
}

// spy listens to every ghost subject of the world; the function it
// returns says, per sending zone, how often each actor was listed so far.
func (w *zones) spy() func() map[zone.ID]map[uint32]int {
	nc, _ := connect(w.t, w.url)
	got := map[zone.ID]map[uint32]int{}
	msgs := make(chan *nats.Msg, 1<<16)
	_, err := nc.ChanSubscribe("throng.ghosts.*", msgs)
	require.NoError(w.t, err)
	require.NoError(w.t, nc.Flush())
	return func() map[zone.ID]map[uint32]int {
		require.NoError(w.t, nc.Flush())
		for {
			select {
			case m := <-msgs:
				b, err := zone.DecodeGhosts(m.Data)
				require.NoError(w.t, err)
				if got[b.Zone] == nil {
					got[b.Zone] = map[uint32]int{}
				}
				for _, r := range records(b) {
					got[b.Zone][r.ID]++
				}
			default:
				return got
			}
		}
	}
}

var twoZones = zone.Map{Zones: []zone.Zone{
	{ID: 1, Owner: "a", Chunks: zone.Rect{MinX: 0, MinY: 0, MaxX: 1, MaxY: 1}},
	{ID: 2, Owner: "b", Chunks: zone.Rect{MinX: 2, MinY: 0, MaxX: 3, MaxY: 1}},
}}

func itoa(v uint32) string { return fmt.Sprint(v) }
