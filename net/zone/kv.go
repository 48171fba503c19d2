package zone

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

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
// owner and chunks (see view.since).
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

// view is one revision of the map as a zone server knows it. Views are
// immutable once stored: the watcher builds a new one per revision.
type view struct {
	revision uint64
	m        Map
	// valid is false when the newest revision is not a valid map (deleted,
	// unreadable, or breaking a rule of Validate): nobody holds a zone
	// as of it.
	valid bool
	// since says, per zone, the earliest revision from which its entry
	// (owner, worldOrCell, chunks) has been what it is now: a batch that
	// zone's owner sent as of an earlier revision was sent by an owner the
	// map has since replaced (or moved), and is refused.
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
		if old, ok := v.m.Zone(z.ID); ok && old == z && v.valid {
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
type mapWatch struct {
	current atomic.Pointer[view]
	watcher jetstream.KeyWatcher
	done    sync.WaitGroup
}

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
	mw := &mapWatch{watcher: w}
	v := &view{since: map[ID]uint64{}}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("zone: the map watch closed while reading the map")
			}
			if e != nil {
				v = v.next(e)
				continue
			}
		case <-ctx.Done():
			_ = w.Stop()
			return nil, fmt.Errorf("zone: reading the map: %w", ctx.Err())
		}
		break
	}
	if v.revision == 0 {
		_ = w.Stop()
		return nil, fmt.Errorf("zone: bucket %q holds no map (PublishMap writes one)", bucket)
	}
	mw.current.Store(v)
	mw.done.Add(1)
	go mw.follow()
	return mw, nil
}

func (mw *mapWatch) follow() {
	defer mw.done.Done()
	for e := range mw.watcher.Updates() {
		if e != nil {
			mw.current.Store(mw.current.Load().next(e))
		}
	}
}

// load returns the newest view.
func (mw *mapWatch) load() *view { return mw.current.Load() }

// stop ends the watch and waits for its goroutine.
func (mw *mapWatch) stop() {
	_ = mw.watcher.Stop()
	mw.done.Wait()
}
