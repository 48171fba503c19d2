package zone

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The player directory says which zone keeps each player who left: a
// player's actor is kept by the zone server it left from (a player who
// walked across borders left from the last), under its name
// (throng.Entry.Player), and only that server hands it back. A program
// that routes new sessions (a gateway's Config.Route) looks a returning
// player up with a [PlayerWatch] and sends it to that zone, where the
// game's Admit gives it its actor again; a player not in the directory is
// routed as a newcomer.
//
// Each zone server files its players as they leave (one key-value write a
// player, off the tick goroutine). An entry names the zone that kept the
// player last; it is not removed when the player returns, and is replaced
// when the player leaves again, from wherever it is then.

// DefaultPlayersBucket is the JetStream key-value bucket of the player
// directory when Options.PlayersBucket is empty.
const DefaultPlayersBucket = "throng_players"

// playerKeyPrefix starts every key of the directory.
const playerKeyPrefix = "p."

// playerKey returns the directory's key of player. A key allows only
// some characters and a name may hold any: the name is base64url-encoded.
func playerKey(player string) string {
	return playerKeyPrefix + base64.RawURLEncoding.EncodeToString([]byte(player))
}

// playerOf returns the player whose key is key.
func playerOf(key string) (string, bool) {
	enc, ok := strings.CutPrefix(key, playerKeyPrefix)
	if !ok {
		return "", false
	}
	name, err := base64.RawURLEncoding.DecodeString(enc)
	return string(name), err == nil
}

// playersBucket opens the directory's bucket, creating it if there is
// none: zone servers and the programs that read it may start in any order.
func playersBucket(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = DefaultPlayersBucket
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket})
	if err != nil {
		return nil, fmt.Errorf("zone: player directory bucket %q: %w", bucket, err)
	}
	return kv, nil
}

// filer writes a zone server's players who left into the directory, on a
// goroutine of its own: the tick only queues their names.
type filer struct {
	kv     jetstream.KeyValue
	value  []byte // the zone's ID, as text
	names  chan string
	stop   chan struct{}
	once   sync.Once
	done   sync.WaitGroup
	filed  atomic.Uint64
	failed atomic.Uint64
}

// filerQueue is how many names may wait to be filed; past it a name is
// counted as not filed and the player is routed as a newcomer if it
// returns.
const filerQueue = 4096

// filerRetry is how long the filer waits before writing again what NATS
// refused (while it restarts, say).
const filerRetry = time.Second

// newFiler starts a filer for zone that first files kept, the players
// kept there as it starts (a world loaded from a save keeps the players
// it held).
func newFiler(kv jetstream.KeyValue, zone ID, kept []string) *filer {
	f := &filer{kv: kv, value: []byte(strconv.Itoa(int(zone))), names: make(chan string, filerQueue), stop: make(chan struct{})}
	f.done.Add(1)
	go f.run(kept)
	return f
}

// file queues player's entry; it never waits.
func (f *filer) file(player string) {
	select {
	case f.names <- player:
	default:
		f.failed.Add(1)
	}
}

// run writes first, then the queued names until stop; a write NATS
// refuses is tried again every filerRetry, oldest first, while no more
// than filerQueue wait behind it.
func (f *filer) run(first []string) {
	defer f.done.Done()
	var retry []string
	for i, name := range first {
		if !f.put(name) {
			retry = first[i:]
			break
		}
	}
	timer := time.NewTimer(filerRetry)
	defer timer.Stop()
	for {
		select {
		case <-f.stop:
			f.failed.Add(uint64(len(retry)))
			return
		case name := <-f.names:
			if len(retry) > 0 || !f.put(name) {
				if len(retry) >= filerQueue {
					f.failed.Add(1)
					continue
				}
				retry = append(retry, name)
			}
		case <-timer.C:
			for len(retry) > 0 && f.put(retry[0]) {
				retry = retry[1:]
			}
			timer.Reset(filerRetry)
		}
	}
}

// put writes player's entry and reports whether NATS took it.
func (f *filer) put(player string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), filerRetry)
	defer cancel()
	if _, err := f.kv.Put(ctx, playerKey(player), f.value); err != nil {
		return false
	}
	f.filed.Add(1)
	return true
}

func (f *filer) close() {
	f.once.Do(func() { close(f.stop) })
	f.done.Wait()
}

// PlayerWatch follows the player directory for a program that routes new
// sessions: [PlayerWatch.Zone] answers from memory, kept current by a
// watch of the bucket, so a gateway's Route may ask on every Hello. Its
// methods are safe for concurrent use.
type PlayerWatch struct {
	kv       jetstream.KeyValue
	mu       sync.RWMutex
	zones    map[string]ID
	revision uint64 // the newest entry read
	due      uint64 // the bucket's last revision at the last check (follow's goroutine's)
	stopped  chan struct{}
	once     sync.Once
	done     sync.WaitGroup
}

// WatchPlayers starts following the player directory in bucket (""
// means DefaultPlayersBucket), creating the bucket if there is none, and
// returns once every entry it holds has been read. Stop ends the watch.
func WatchPlayers(ctx context.Context, js jetstream.JetStream, bucket string) (*PlayerWatch, error) {
	kv, err := playersBucket(ctx, js, bucket)
	if err != nil {
		return nil, err
	}
	pw := &PlayerWatch{kv: kv, stopped: make(chan struct{})}
	w, err := pw.watch(ctx)
	if err != nil {
		return nil, err
	}
	pw.done.Add(1)
	go func() {
		defer pw.done.Done()
		follow(w, pw.stopped, pw)
	}()
	return pw, nil
}

// Zone returns the zone that keeps player, if the directory names one.
func (pw *PlayerWatch) Zone(player string) (ID, bool) {
	pw.mu.RLock()
	defer pw.mu.RUnlock()
	z, ok := pw.zones[player]
	return z, ok
}

// Len returns how many players the directory names.
func (pw *PlayerWatch) Len() int {
	pw.mu.RLock()
	defer pw.mu.RUnlock()
	return len(pw.zones)
}

// Stop ends the watch and waits for its goroutine; Zone answers from
// what was read until then.
func (pw *PlayerWatch) Stop() {
	pw.once.Do(func() { close(pw.stopped) })
	pw.done.Wait()
}

// watch watches the whole bucket afresh: it reads every entry it holds
// into a new map, which replaces the one Zone answers from, and returns
// the watch, whose updates follow.
func (pw *PlayerWatch) watch(ctx context.Context) (jetstream.KeyWatcher, error) {
	w, err := pw.kv.WatchAll(context.Background())
	if err != nil {
		return nil, fmt.Errorf("zone: watching the player directory: %w", err)
	}
	zones := map[string]ID{}
	var revision uint64
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("zone: the player directory's watch closed while reading it")
			}
			if e == nil {
				pw.mu.Lock()
				pw.zones, pw.revision = zones, max(revision, pw.revision)
				pw.mu.Unlock()
				return w, nil
			}
			revision = max(revision, e.Revision())
			apply(zones, e)
		case <-ctx.Done():
			_ = w.Stop()
			return nil, fmt.Errorf("zone: reading the player directory: %w", ctx.Err())
		}
	}
}

// apply applies entry e to zones: a put names the player's zone, a delete
// or purge forgets the player, and what is not an entry of the directory
// is passed over.
func apply(zones map[string]ID, e jetstream.KeyValueEntry) {
	player, ok := playerOf(e.Key())
	if !ok {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(zones, player)
		return
	}
	if z, err := strconv.ParseUint(string(e.Value()), 10, 16); err == nil && z > 0 {
		zones[player] = ID(z)
	}
}

// take applies an update to the directory the watch answers from.
func (pw *PlayerWatch) take(e jetstream.KeyValueEntry) {
	pw.mu.Lock()
	pw.revision = max(pw.revision, e.Revision())
	apply(pw.zones, e)
	pw.mu.Unlock()
}

// behind reports whether the watch has still not read a revision the
// bucket held at the check before (see follow), and notes the bucket's
// last revision for the next check.
func (pw *PlayerWatch) behind() bool {
	if pw.read() < pw.due {
		return true
	}
	pw.due = pw.last()
	return false
}

// again reads the directory afresh with a new watch, or returns nil when
// NATS is not there yet.
func (pw *PlayerWatch) again() jetstream.KeyWatcher {
	ctx, cancel := context.WithTimeout(context.Background(), checkEvery)
	defer cancel()
	w, err := pw.watch(ctx)
	if err != nil {
		return nil
	}
	pw.due = 0
	return w
}

// read returns the newest revision the watch has read.
func (pw *PlayerWatch) read() uint64 {
	pw.mu.RLock()
	defer pw.mu.RUnlock()
	return pw.revision
}

// last returns the bucket's newest revision, or 0 when it cannot tell
// (NATS away).
func (pw *PlayerWatch) last() uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), checkEvery/2)
	defer cancel()
	st, err := pw.kv.Status(ctx)
	if err != nil {
		return 0
	}
	return lastRevision(st)
}
