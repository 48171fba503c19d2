package throng

import (
	"fmt"
	"runtime/debug"
	"time"

	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/ecs/save"
	"github.com/throng-go/throng/scheduler"
)

// Defaults of the "persistence" section.
const (
	// DefaultSaveEverySeconds: with persistence.dir set, the world is
	// saved every five minutes.
	DefaultSaveEverySeconds = 300
	// DefaultSavesKept: the three newest saves are kept; older ones are
	// removed once a newer one is durable.
	DefaultSavesKept = 3
)

// Persistence is the "persistence" section: where and how often the
// world is saved (package ecs/save says what a save holds and how it
// survives a crash).
type Persistence struct {
	// Dir is the save directory. Empty (the default) saves nothing
	// unless the program calls [Server.Save]. Key "dir".
	Dir string `json:"dir,omitempty"`
	// EverySeconds is the time between periodic saves while [Server.Run]
	// or [Server.RunTicks] ticks; 0 saves only when the program asks and
	// when Run stops. Key "everySeconds"; nil means
	// [DefaultSaveEverySeconds].
	EverySeconds *float64 `json:"everySeconds,omitempty"`
	// Keep is how many saves the directory keeps, at least 1. Key
	// "keep"; nil means [DefaultSavesKept].
	Keep *int `json:"keep,omitempty"`
}

// PersistenceSettings is [Persistence] resolved.
type PersistenceSettings struct {
	Dir   string
	Every time.Duration // 0: no periodic saves
	Keep  int
}

func (p Persistence) resolve(r *resolver) PersistenceSettings {
	s := PersistenceSettings{Dir: p.Dir, Every: DefaultSaveEverySeconds * time.Second, Keep: DefaultSavesKept}
	if p.EverySeconds != nil {
		v := *p.EverySeconds
		if !(v >= 0) || v > 1e9 {
			r.fail("persistence.everySeconds", "must be 0 to 1e9 seconds, got %v", v)
		}
		s.Every = time.Duration(v * float64(time.Second))
	}
	if p.Keep != nil {
		if s.Keep = *p.Keep; s.Keep < 1 {
			r.fail("persistence.keep", "must be at least 1, got %d", s.Keep)
		}
	}
	return s
}

// SaveReport is what one finished save did: the freeze the tick
// goroutine spent copying the world, and what the background write took.
type SaveReport struct {
	save.Result
	Freeze time.Duration
}

// PendingSave is a save whose picture is taken and which is being written
// in the background.
type PendingSave struct {
	done   chan struct{}
	report SaveReport
	err    error
}

// Wait blocks until the save is written (or failed); by then
// [Server.Stats] counts it.
func (p *PendingSave) Wait() (SaveReport, error) {
	<-p.done
	return p.report, p.err
}

// Done is closed once the save is written or failed.
func (p *PendingSave) Done() <-chan struct{} { return p.done }

// saveJob runs a save's copy units on the pool.
type saveJob struct{ saver *save.Saver }

func (j *saveJob) RunUnit(i int) { j.saver.CopyUnit(i) }

// Save takes a picture of the world at this tick boundary into dir
// (persistence.dir when dir is ""), and writes it in the background while
// the world ticks on: the tick goroutine and the worker pool only copy
// the component columns (the freeze), and the next tick does not wait
// for the write. Call it between ticks, from the goroutine that ticks
// (RunTicks' each, or your own loop); Run and RunTicks call it every
// persistence.everySeconds themselves. It fails while the last save is
// still being written, and with no directory to save to.
func (s *Server) Save(dir string) (*PendingSave, error) {
	if dir == "" {
		dir = s.settings.Persistence.Dir
	}
	if dir == "" {
		return nil, fmt.Errorf("throng: save: no directory (set persistence.dir)")
	}
	start := time.Now()
	n, err := s.saver.Begin(s.tick, s.pipe.SavedPlayers())
	if err != nil {
		return nil, fmt.Errorf("throng: %w", err)
	}
	units := s.saveUnits[:0]
	for i := range n {
		units = append(units, scheduler.Unit{Cost: s.saver.UnitCost(i)})
	}
	s.saveUnits = units
	if s.settings.Parallelism.Enabled && n > 1 {
		s.pool.Run(&s.saveJob, units)
	} else {
		scheduler.RunInline(&s.saveJob, n)
	}
	freeze := time.Since(start)
	writing := s.saver.Write(dir, s.settings.Persistence.Keep)
	p := &PendingSave{done: make(chan struct{})}
	s.lastSave = p
	s.meter.saveStarted(freeze)
	go func() {
		defer close(p.done)
		res, err := writing.Wait()
		if err != nil {
			s.log.Error("throng: save failed", "err", err)
		}
		s.meter.saveFinished(res, err)
		p.report, p.err = SaveReport{Result: res, Freeze: freeze}, err
	}()
	return p, nil
}

// KeptPlayers returns the names of the players whose actors are kept for
// their return (see Kept), sorted; before the first tick, those a save
// loaded with the world (LoadFrom). Call it on the tick goroutine or
// before the server runs.
func (s *Server) KeptPlayers() []string { return s.pipe.KeptPlayers(nil) }

// LeftThisTick returns the named players who left in the last tick and
// whose actors are now kept for their return (see Kept), in the order they
// left: for a directory of where each player is kept, as a world split
// into zones keeps one (net/zone). The list is the server's and changes
// with the next tick; call it on the tick goroutine, from a system or
// between ticks.
func (s *Server) LeftThisTick() []string { return s.pipe.LeftThisTick() }

// Kept returns the actor kept for player, a named player who is away (see
// Entry.Player), if one waits for its return: for a game's Admit that
// decides by it, say. Call it on the tick goroutine (Admit runs there).
func (s *Server) Kept(player string) (*save.Kept, bool) { return s.pipe.Kept(player) }

// LastSave returns the latest save begun (Server.Save, or a periodic one),
// written or still being written, or nil before the first.
func (s *Server) LastSave() *PendingSave { return s.lastSave }

// loadUncollected loads the save at path into w with no garbage
// collection: the load allocates what the world will hold from then on,
// and a collection during it would only rescan the growing world (a
// memory limit set with debug.SetMemoryLimit still holds).
func loadUncollected(path string, w *ecs.World, types []save.Type) (*save.File, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	return save.Load(path, w, types)
}

// load restores the save at path into the server's world, before its
// first tick. On an error the world holds part of the save, and New,
// which called it, fails: the server is never started from it.
func (s *Server) load(path string, types []save.Type) error {
	f, err := loadUncollected(path, s.world, types)
	if err != nil {
		return fmt.Errorf("throng: loadFrom: %w", err)
	}
	kept, err := f.Kept(types)
	if err != nil {
		return fmt.Errorf("throng: loadFrom: %w", err)
	}
	s.pipe.KeepAll(kept)
	s.tick = f.Tick()
	s.log.Info("throng: world loaded", "file", f.Path(), "tick", f.Tick(), "actors", s.world.Len(), "props", s.world.Props(), "kept_players", len(kept))
	return nil
}
