package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/examples/crowd/scenario"
	"github.com/throng-go/throng/net/gateway"
	"github.com/throng-go/throng/net/zone"
)

// connect connects to NATS at url as name, reconnecting for ever once
// connected, and counts in lost each time it loses its server (what was
// sent to it meanwhile is lost). A server not there yet is tried again
// for up to natsWait, so that processes started together need not wait
// for one another by hand (a zone process for the gateway process that
// serves NATS, say).
func connect(ctx context.Context, url, name string, lost *atomic.Uint64) (*nats.Conn, error) {
	deadline := time.Now().Add(natsWait)
	for {
		nc, err := nats.Connect(url, nats.Name(name), nats.MaxReconnects(-1),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err != nil {
					lost.Add(1)
				}
			}))
		if !errors.Is(err, nats.ErrNoServers) || time.Now().After(deadline) {
			return nc, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(natsRetry):
		}
	}
}

// natsWait is how long a process waits for its NATS server to be there,
// trying every natsRetry.
const (
	natsWait  = 10 * time.Second
	natsRetry = 100 * time.Millisecond
)

// zoneServer is one zone's server: a Throng server whose players come
// through gateways, made the holder of its zone.
type zoneServer struct {
	id  zone.ID
	srv *throng.Server
	z   *zone.Server
	gt  *gateway.Transport
	nc  *nats.Conn
}

// startZone connects to NATS at url, publishes the map unless NATS holds
// one (every zone process starts with the same map; a coordinator may
// have moved its borders since) and makes zone id's server. Its owner
// ticks it.
func startZone(ctx context.Context, url string, m zone.Map, id zone.ID, c config, pop scenario.Population, log *slog.Logger, lost *atomic.Uint64) (*zoneServer, error) {
	nc, err := connect(ctx, url, fmt.Sprintf("zone-%d", id), lost)
	if err != nil {
		return nil, fmt.Errorf("zone %d: NATS: %w", id, err)
	}
	s := &zoneServer{id: id, nc: nc}
	fail := func(err error) (*zoneServer, error) {
		s.close()
		return nil, fmt.Errorf("zone %d: %w", id, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return fail(err)
	}
	if err := agree(ctx, js, c); err != nil {
		return fail(err)
	}
	if m, _, err = zone.EnsureMap(ctx, js, "", m); err != nil {
		return fail(err)
	}
	if s.gt, err = gateway.NewTransport(gateway.TransportConfig{Conn: nc, Zone: uint32(id)}); err != nil {
		return fail(err)
	}
	opts := throng.Options{TickRate: &c.hz, Transport: s.gt, Admit: pop.AdmitAny, Logger: log}
	if !c.pooled() {
		opts.Parallelism.Enabled = new(false)
	}
	if c.save != "" {
		// Saved every -save-every into a directory of the zone's own, and
		// started from its latest save if it has one (a zone restarted).
		dir := filepath.Join(c.save, fmt.Sprintf("zone-%d", id))
		every := c.saveEvery.Seconds()
		opts.Persistence = throng.Persistence{Dir: dir, EverySeconds: &every}
		if _, err := os.Stat(filepath.Join(dir, save.ManifestName)); err == nil {
			opts.LoadFrom = dir
		}
	}
	if s.srv, err = throng.New(opts); err != nil {
		return fail(err)
	}
	zn, ok := m.Zone(id)
	if !ok {
		return fail(fmt.Errorf("the map in NATS has no zone %d", id))
	}
	if s.z, err = zone.New(ctx, s.srv, nc, zone.Options{Zone: id, Name: zn.Owner, Gateway: s.gt, HandoffMargin: float32(c.margin)}); err != nil {
		return fail(err)
	}
	return s, nil
}

// close stops the zone's server (which closes its transport) and its
// NATS connection.
func (s *zoneServer) close() {
	if s.z != nil {
		s.z.Close()
	}
	if s.srv != nil {
		s.srv.Close()
	} else if s.gt != nil {
		s.gt.Close()
	}
	s.nc.Close()
}

// startNATS starts an embedded nats-server with JetStream listening on
// addr (host:port; empty: a free loopback port), its store in a
// directory of its own removed by stop.
func startNATS(addr string) (url string, stop func(), err error) {
	host, port := "127.0.0.1", server.RANDOM_PORT
	if addr != "" {
		if host, port, err = listenAddr(addr); err != nil {
			return "", nil, err
		}
	}
	dir, err := os.MkdirTemp("", "throng-zones-nats")
	if err != nil {
		return "", nil, err
	}
	// A client that falls behind in a burst (the gateway, on a machine
	// whose cores the bots and servers share) is given room before the
	// server calls it slow and closes its connection, dropping what it
	// had not read.
	ns, err := server.NewServer(&server.Options{Host: host, Port: port, JetStream: true,
		StoreDir: dir, NoLog: true, NoSigs: true, MaxPending: 1 << 30, WriteDeadline: 30 * time.Second})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	ns.Start()
	if !ns.ReadyForConnections(10e9) {
		ns.Shutdown()
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("the embedded nats-server did not start")
	}
	return ns.ClientURL(), func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		os.RemoveAll(dir)
	}, nil
}

// listenAddr splits -nats-listen's host:port.
func listenAddr(addr string) (host string, port int, err error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("-nats-listen: %w", err)
	}
	if port, err = strconv.Atoi(p); err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("-nats-listen: port %q: 1 to 65535", p)
	}
	return host, port, nil
}

// pooled reports whether a zone server of this process gets a worker pool.
// Several zone servers in one process share its cores, each ticking on its
// own goroutine, and a pool apiece would only poll against the others; so
// would the pools of zone processes that share a machine (-pool=false).
func (c config) pooled() bool {
	return c.pool && !(c.role == "all" && c.zones > 1)
}

// maxProcs is the GOMAXPROCS this process runs with, 0 for the runtime's
// own choice. A zone process without a pool (-pool=false: its machine's
// cores are shared with other processes) takes one: its server ticks on
// one goroutine, and a second P would only let the runtime's idle threads
// spin and steal against the other processes, and let NATS' writer flush
// each publish of a tick on its own, where with one P a tick's publishes
// go out in one write when the tick is done. GOMAXPROCS set in the
// environment wins.
func (c config) maxProcs() int {
	if c.role == "zone" && !c.pool && os.Getenv("GOMAXPROCS") == "" {
		return 1
	}
	return 0
}
