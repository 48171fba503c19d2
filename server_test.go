package throng_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/scheduler"
)

func TestRunTicksUntilTheContextEnds(t *testing.T) {
	srv, err := throng.New(throng.Options{TickRate: new(120)})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	assert.Positive(t, srv.Stats().Tick, "it ticked")
}

func TestAddSystemAfterTheFirstTickIsAnError(t *testing.T) {
	srv, err := throng.New(throng.Options{})
	require.NoError(t, err)
	defer srv.Close()
	srv.Tick()
	err = srv.AddSystem(&headcount{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "before the server starts")
}

func TestPinToAnUnknownSystemIsReported(t *testing.T) {
	srv, err := throng.New(throng.Options{})
	require.NoError(t, err)
	defer srv.Close()
	require.NoError(t, srv.AddSystem(&headcount{}, scheduler.Before("nosuch")))
	_, err = srv.Schedule()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nosuch")
}

func TestNewRejectsBrokenOptions(t *testing.T) {
	_, err := throng.New(throng.Options{TickRate: new(-5)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tickRate")
}
