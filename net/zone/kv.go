package zone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultBucket is the JetStream key-value bucket the zone map lives in
// when Options.Bucket is empty.
const DefaultBucket = "throng_zones"

// mapKey is the one key of the bucket: the whole map is one value, so
// that a change that moves several borders is one write, seen whole by
// every server and numbered by one revision.
const mapKey = "map"

// mapHistory is how many revisions of the map the bucket keeps: enough
// for a server that starts to learn since when each zone has had its
// owner (see view.since).
const mapHistory = 16

// PublishMap validates m and writes it to bucket as the zone map,
// creating the bucket if there is none, and returns its revision: the
// number servers hold their zones as of. It is how the map gets from
// settings into NATS; a coordinator that moves borders later writes the
// same way.
func PublishMap(ctx context.Context, js jetstream.JetStream, bucket string, m Map) (uint64, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	if bucket == "" {
		bucket = DefaultBucket
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: mapHistory})
	if err != nil {
		return 0, fmt.Errorf("zone: map bucket %q: %w", bucket, err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return 0, fmt.Errorf("zone: map: %w", err)
	}
	rev, err := kv.Put(ctx, mapKey, data)
	if err != nil {
		return 0, fmt.Errorf("zone: publishing the map: %w", err)
	}
	return rev, nil
}

// EnsureMap writes m as the zone map unless bucket holds one already (a
// coordinator may have moved its borders since), creating the bucket if
// there is none, and returns the map in force and its revision. It is how
// each of several processes that start a world in any order writes its
// settings' map without undoing a later one.
func EnsureMap(ctx context.Context, js jetstream.JetStream, bucket string, m Map) (Map, uint64, error) {
	if err := m.Validate(); err != nil {
		return Map{}, 0, err
	}
	if bucket == "" {
		bucket = DefaultBucket
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: mapHistory})
	if err != nil {
		return Map{}, 0, fmt.Errorf("zone: map bucket %q: %w", bucket, err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return Map{}, 0, fmt.Errorf("zone: map: %w", err)
	}
	rev, err := kv.Create(ctx, mapKey, data)
	if err == nil {
		return m, rev, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return Map{}, 0, fmt.Errorf("zone: publishing the map: %w", err)
	}
	e, err := kv.Get(ctx, mapKey)
	if err != nil {
		return Map{}, 0, fmt.Errorf("zone: reading the map: %w", err)
	}
	held, err := DecodeMap(e.Value())
	if err != nil {
		return Map{}, 0, fmt.Errorf("zone: the map in bucket %q, revision %d: %w", bucket, e.Revision(), err)
	}
	return held, e.Revision(), nil
}

// view is one revision of the map as a zone server knows it. Views are
// immutable once stored: the watcher builds a new one per revision.
type view struct {
	revision uint64
	m        Map
	// valid is false when the newest revision is not a valid map (deleted,
	// unreadable, or breaking a rule of Validate): nobody holds a zone
	// as of it.
	valid bool
	// since says, per zone, the earliest revision from which it has had
	// its owner (and worldOrCell) as now: a batch sent as of an earlier
	// revision was sent by an owner the map has since replaced, and is
	// refused. A border moved between zones keeps their owners: what
	// their owners send as of the revision before is still theirs to say
	// (their actors are theirs until handed off), and the ghosts they lent
	// stay (see Coordinator).
	since map[ID]uint64
}

// holds reports whether owner holds zone id as of this view.
func (v *view) holds(id ID, owner string) bool {
	if v == nil || !v.valid {
		return false
	}
	z, ok := v.m.Zone(id)
	return ok && z.Owner == owner
}

// next returns the view of entry e, which follows v.
func (v *view) next(e jetstream.KeyValueEntry) *view {
	n := &view{revision: e.Revision(), since: make(map[ID]uint64, len(v.since))}
	if e.Operation() == jetstream.KeyValuePut {
		var m Map
		if err := json.Unmarshal(e.Value(), &m); err == nil && m.Validate() == nil {
			n.m, n.valid = m, true
		}
	}
	for _, z := range n.m.Zones {
		if old, ok := v.m.Zone(z.ID); ok && old.Owner == z.Owner && old.WorldOrCell == z.WorldOrCell && v.valid {
			n.since[z.ID] = v.since[z.ID]
		} else {
			n.since[z.ID] = n.revision
		}
	}
	if !n.valid {
		n.m = v.m // kept only to compare the next valid map against
		n.since = v.since
	}
	return n
}

// mapWatch follows the map's key in the bucket and keeps the newest view
// for the tick goroutine to load once a tick.
//
// A JetStream watch does not outlive every outage: after the NATS server
// restarts, its consumer may be gone and its updates stop without a word.
// So the watch checks the key's newest revision every checkEvery, and
// when the bucket holds a newer one than it has read, or the watch ended,
// it watches again from the revision after the last it read: no revision
// is skipped, and each view's since stays right.
type mapWatch struct {
	current atomic.Pointer[view]
	// confirmed is when the watch last knew its view to be the newest
	// (unix nanoseconds): the start, a check that read the bucket, a
	// watch begun again. See lapsed.
	confirmed atomic.Int64
	kv        jetstream.KeyValue
	stopped   chan struct{}
	once      sync.Once
	done      sync.WaitGroup
}

// checkEvery is how often a map watch checks that it is not behind.
const checkEvery = time.Second

// watchMap starts following the map and returns once every revision the
// bucket has kept has been read, so that the first view is as new as the
// bucket's and its since is learned from the kept history.
func watchMap(ctx context.Context, js jetstream.JetStream, bucket string) (*mapWatch, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("zone: map bucket %q: %w", bucket, err)
	}
	w, err := kv.Watch(context.Background(), mapKey, jetstream.IncludeHistory())
	if err != nil {
		return nil, fmt.Errorf("zone: watching the map: %w", err)
	}
	mw := &mapWatch{kv: kv, stopped: make(chan struct{})}
	v, err := catchUp(ctx, w, &view{since: map[ID]uint64{}})
	if err != nil {
		_ = w.Stop()
		return nil, err
	}
	if v.revision == 0 {
		_ = w.Stop()
		return nil, fmt.Errorf("zone: bucket %q holds no map (PublishMap writes one)", bucket)
	}
	mw.current.Store(v)
	mw.confirm()
	mw.done.Add(1)
	go func() {
		defer mw.done.Done()
		follow(w, mw.stopped, mw)
	}()
	return mw, nil
}

// catchUp applies w's updates to v until the watch says it has delivered
// every kept revision (a nil entry), and returns the newest view.
func catchUp(ctx context.Context, w jetstream.KeyWatcher, v *view) (*view, error) {
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("zone: the map watch closed while reading the map")
			}
			if e == nil {
				return v, nil
			}
			if e.Revision() > v.revision {
				v = v.next(e)
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("zone: reading the map: %w", ctx.Err())
		}
	}
}

// follow runs watch w, and the watches that replace it, until stopped:
// it hands each update to k, and every checkEvery watches again (k.again)
// when w ended or k says it fell behind. A JetStream watch does not
// outlive every outage: after the NATS server restarts, its consumer may
// be gone and its updates stop without a word.
func follow(w jetstream.KeyWatcher, stopped <-chan struct{}, k watched) {
	check := time.NewTicker(checkEvery)
	defer check.Stop()
	updates := w.Updates()
	for {
		select {
		case <-stopped:
			_ = w.Stop()
			return
		case e, ok := <-updates:
			if !ok {
				updates = nil // ended: the next check watches again
				continue
			}
			if e != nil {
				k.take(e)
			}
		case <-check.C:
			if updates != nil && !k.behind() {
				continue
			}
			if again := k.again(); again != nil {
				_ = w.Stop()
				w, updates = again, again.Updates()
			}
		}
	}
}

// watched is what follow keeps current.
type watched interface {
	// take applies an update.
	take(e jetstream.KeyValueEntry)
	// behind reports, at a check, whether the watch has fallen behind the
	// bucket (false when it cannot tell).
	behind() bool
	// again watches afresh, catching up with what was missed, or returns
	// nil when NATS is not there yet.
	again() jetstream.KeyWatcher
}

// take applies a revision of the map newer than the view's.
func (mw *mapWatch) take(e jetstream.KeyValueEntry) {
	if e.Revision() > mw.current.Load().revision {
		mw.current.Store(mw.current.Load().next(e))
	}
}

// again is rewatch, confirming the view it caught up to.
func (mw *mapWatch) again() jetstream.KeyWatcher {
	w := mw.rewatch()
	if w != nil {
		mw.confirm()
	}
	return w
}

// behind reports whether the bucket holds a revision of the map newer
// than the view's; a check that finds it current confirms the view.
func (mw *mapWatch) behind() bool {
	behind, read := mw.newer()
	if read && !behind {
		mw.confirm()
	}
	return behind
}

// newer reports whether the bucket holds a revision of the map newer
// than the view's, and read whether it could tell (not with NATS or its
// key-value store away).
func (mw *mapWatch) newer() (behind, read bool) {
	ctx, cancel := context.WithTimeout(context.Background(), checkEvery/2)
	defer cancel()
	e, err := mw.kv.Get(ctx, mapKey)
	if err == nil {
		return e.Revision() > mw.current.Load().revision, true
	}
	// Deleted, perhaps: a delete marker is a revision too, which the
	// bucket's last sequence counts.
	st, err := mw.kv.Status(ctx)
	if err != nil {
		return false, false
	}
	return lastRevision(st) > mw.current.Load().revision, true
}

// confirm notes that the view is the newest now.
func (mw *mapWatch) confirm() { mw.confirmed.Store(time.Now().UnixNano()) }

// lapsed reports whether more than lease has passed since the watch last
// knew its view to be the newest.
func (mw *mapWatch) lapsed(lease time.Duration) bool {
	return time.Since(time.Unix(0, mw.confirmed.Load())) > lease
}

// lastRevision returns the bucket's newest revision of any key.
func lastRevision(st jetstream.KeyValueStatus) uint64 {
	if s, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return s.StreamInfo().State.LastSeq
	}
	return 0
}

// rewatch watches the map again from the revision after the view's, and
// returns the new watch, or nil if NATS is not there yet.
func (mw *mapWatch) rewatch() jetstream.KeyWatcher {
	ctx, cancel := context.WithTimeout(context.Background(), checkEvery)
	defer cancel()
	v := mw.current.Load()
	w, err := mw.kv.Watch(context.Background(), mapKey, jetstream.ResumeFromRevision(v.revision+1))
	if err != nil {
		return nil
	}
	// What the view has not read yet, in order, before the watch goes on.
	n, err := catchUp(ctx, w, v)
	if err != nil {
		_ = w.Stop()
		return nil
	}
	mw.current.Store(n)
	return w
}

// load returns the newest view.
func (mw *mapWatch) load() *view { return mw.current.Load() }

// stop ends the watch and waits for its goroutine.
func (mw *mapWatch) stop() {
	mw.once.Do(func() { close(mw.stopped) })
	mw.done.Wait()
}

// MapWatch follows the zone map in NATS for a program that routes by it
// (a gateway's Config.Route sending a new player to the zone that holds
// its chunk, say): the newest map, kept current as a coordinator moves
// borders or an operator edits it, through NATS restarts as a zone
// server's own watch is.
type MapWatch struct{ w *mapWatch }

// WatchMap starts following the map in bucket (empty: DefaultBucket) and
// returns once it has read the newest revision. Stop ends it.
func WatchMap(ctx context.Context, js jetstream.JetStream, bucket string) (*MapWatch, error) {
	if bucket == "" {
		bucket = DefaultBucket
	}
	w, err := watchMap(ctx, js, bucket)
	if err != nil {
		return nil, err
	}
	return &MapWatch{w}, nil
}

// Map returns the newest map the watch has read and its revision; ok is
// false when that revision is not a valid map (deleted, say), and the map
// is then the last valid one. Any goroutine may call it.
func (m *MapWatch) Map() (mp Map, revision uint64, ok bool) {
	v := m.w.load()
	return v.m, v.revision, v.valid
}

// Stop ends the watch.
func (m *MapWatch) Stop() { m.w.stop() }
