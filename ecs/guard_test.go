package ecs_test

import (
	"strings"
	"sync"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
)

// populate spawns n actors spread over a few chunks of two worldOrCells,
// tags every third one (so chunks have two tables) and applies.
func populate(t testing.TB, w *ecs.World, n int) []components.ActorID {
	ids := make([]components.ActorID, n)
	for i := range n {
		ids[i] = w.Spawn(ecs.ActorSpec{
			Transform: components.Transform{
				X: float32(i%7)*37 - 120, Y: float32(i%5)*53 - 90, WorldOrCell: uint32(i % 2),
			},
			Client: components.Client{Session: uint64(i + 1)},
		})
	}
	w.Apply(nil)
	tags := ark.NewMap[Tag](w.Ark())
	for i, id := range ids {
		if i%3 == 0 {
			e, ok := w.Entity(id)
			require.True(t, ok)
			tags.Add(e, &Tag{N: i})
		}
	}
	return ids
}

// TestWorkersShareViewsUnderGuardWithoutRaces runs the two parallel phases
// on views: Move (each worker writes only the rows it owns) and Relay (every
// worker reads every row). Under -race any unsynchronised access fails.
func TestWorkersShareViewsUnderGuardWithoutRaces(t *testing.T) {
	w := ecs.NewWorld(100)
	populate(t, w, 600)
	views := w.Snapshot(nil)
	require.Greater(t, len(views), 8)

	const workers = 4
	w.Guard()
	require.True(t, w.Guarded())
	require.True(t, w.Ark().IsLocked(), "the guard locks Ark")

	var wg sync.WaitGroup
	for k := range workers { // Move: worker k owns views k, k+workers, ...
		wg.Go(func() {
			for i := k; i < len(views); i += workers {
				v := &views[i]
				for r := range v.Len() {
					v.Transforms[r].X += 1
					v.Transforms[r].Yaw = float32(v.IDs[r].ID)
					v.Inputs[r].Seq = v.IDs[r].ID
					v.Animations[r].Flags = uint16(v.Clients[r].Session)
				}
			}
		})
	}
	wg.Wait()

	sums := make([]float64, workers)
	for k := range workers { // Relay: everyone reads everything
		wg.Go(func() {
			for i := range views {
				v := &views[i]
				for r := range v.Len() {
					sums[k] += float64(v.Transforms[r].Yaw) + float64(v.Inputs[r].Seq) +
						float64(v.Animations[r].Flags) + float64(v.Clients[r].Session) +
						float64(v.IDs[r].ID) + float64(v.Entities[r].ID())
				}
			}
		})
	}
	wg.Wait()
	w.Release()
	require.False(t, w.Guarded())
	require.False(t, w.Ark().IsLocked(), "Release unlocks Ark")

	for k := 1; k < workers; k++ {
		assert.Equal(t, sums[0], sums[k], "every reader saw the same rows")
	}
	// The workers' writes landed in Ark's storage.
	transforms := ark.NewMap[components.Transform](w.Ark())
	inputs := ark.NewMap[components.MoveInput](w.Ark())
	for _, v := range views {
		for r, e := range v.Entities {
			assert.Equal(t, float32(v.IDs[r].ID), transforms.Get(e).Yaw)
			assert.Equal(t, v.IDs[r].ID, inputs.Get(e).Seq)
		}
	}
}

func TestStructuralChangeUnderGuardPanicsWithAdvice(t *testing.T) {
	w := ecs.NewWorld(100)
	ids := populate(t, w, 10)
	w.Guard()

	ours := map[string]func(){
		"Spawn":    func() { w.Spawn(ecs.ActorSpec{}) },
		"Despawn":  func() { w.Despawn(ids[0]) },
		"Relocate": func() { w.Relocate(ids[0]) },
		"Teleport": func() { w.Teleport(ids[0], components.Transform{}) },
		"Apply":    func() { w.Apply(nil) },
	}
	for name, f := range ours {
		msg := panicMessage(t, f)
		assert.True(t, strings.HasPrefix(msg, "ecs: "+name+" called while the world is guarded"), msg)
		if name == "Apply" {
			assert.Contains(t, msg, "call Release")
		} else {
			assert.Contains(t, msg, "queue structural changes from serial systems")
		}
	}

	// Ark's own structural calls panic with Ark's message, also from a worker.
	arkMsg := "cannot modify a locked world: collect entities into a slice and apply changes after query iteration has completed"
	assert.PanicsWithValue(t, arkMsg, func() { w.Ark().NewEntity() })
	e, _ := w.Entity(ids[1])
	assert.PanicsWithValue(t, arkMsg, func() { w.Ark().RemoveEntity(e) })
	var fromWorker any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { fromWorker = recover() }()
		ark.NewMap[Tag](w.Ark()).Add(e, &Tag{})
	}()
	<-done
	assert.Equal(t, arkMsg, fromWorker)

	assert.Equal(t, 0, w.Pending(), "nothing was queued under the guard")
	assert.PanicsWithValue(t, "ecs: Guard called while the world is already guarded; call Release once after each parallel phase", w.Guard)
	w.Release()
	assert.PanicsWithValue(t, "ecs: Release called without Guard", w.Release)

	// After Release the same calls work again.
	id := w.Spawn(ecs.ActorSpec{})
	w.Despawn(ids[0])
	var report ecs.ApplyReport
	w.Apply(&report)
	require.Len(t, report.Changes, 2)
	assert.Equal(t, id, report.Changes[0].ID)
	assert.Equal(t, ecs.Despawned, report.Changes[1].Kind)
	w.Ark().NewEntity()
}

func panicMessage(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		require.NotNil(t, r, "expected a panic")
		msg, _ = r.(string)
	}()
	f()
	return ""
}

func TestApplyRefusesWhileArkQueryIsOpen(t *testing.T) {
	w := ecs.NewWorld(100)
	ids := populate(t, w, 4)
	w.Despawn(ids[0])
	q := ark.NewFilter1[components.Transform](w.Ark()).Query()
	assert.PanicsWithValue(t, "ecs: Apply called while an Ark query is open (the Ark world is locked); "+
		"finish or Close the query before the join applies changes", func() { w.Apply(nil) })
	q.Close()
	assert.Equal(t, 1, w.Pending(), "the refused Apply changed nothing")
	assert.Equal(t, 4, w.Len())
	w.Apply(nil)
	assert.Equal(t, 3, w.Len())
}
