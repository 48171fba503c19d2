package viewer_test

import (
	"regexp"
	"sync/atomic"
	"testing"

	ark "github.com/mlange-42/ark/ecs"
	"github.com/stretchr/testify/require"

	"github.com/throng-go/throng"
	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/ecs"
	"github.com/throng-go/throng/examples/crowd/plaza"
	"github.com/throng-go/throng/scheduler"
	"github.com/throng-go/throng/systems"
)

// carrier is a game's system that carries a prop far away, once, when
// asked: it writes the prop's Transform and calls World.Update after the
// join, where the world may change.
type carrier struct {
	srv   *throng.Server
	prop  components.ActorID
	asked atomic.Bool
}

func (c *carrier) Name() string { return "carrier" }
func (c *carrier) Access() scheduler.Access {
	return scheduler.Uses(scheduler.Write[components.Transform]())
}
func (c *carrier) RunSerial(*scheduler.Tick) {
	if !c.asked.CompareAndSwap(true, false) {
		return
	}
	w := c.srv.World()
	e, ok := w.Entity(c.prop)
	if !ok {
		return
	}
	ark.NewMap[components.Transform](w.Ark()).Get(e).X += 20000 // far out of anyone's sight
	w.Update(c.prop)
}

// TestViewerShowsPropsInSightAndNPCsApart: the page counts the props the
// server tells it of apart from the actors, and an NPC (flagged
// plaza.FlagNPC) apart from the players; a prop carried out of its sight
// is forgotten on its Disappear.
func TestViewerShowsPropsInSightAndNPCsApart(t *testing.T) {
	carry := &carrier{}
	c := serveWith(t, "127.0.0.1:0", throng.Options{}, func(srv *throng.Server) {
		w := srv.World()
		carry.srv = srv
		carry.prop = w.Spawn(ecs.ActorSpec{Prop: true, Transform: components.Transform{X: viewerX + 300, Y: viewerY}})
		w.Spawn(ecs.ActorSpec{Prop: true, Transform: components.Transform{X: viewerX, Y: viewerY + 400}})
		w.Spawn(ecs.ActorSpec{Transform: components.Transform{X: viewerX - 200, Y: viewerY}, Animation: components.Animation{Flags: plaza.FlagNPC}})
		require.NoError(t, srv.AddSystem(carry, scheduler.After(systems.JoinName)))
	})
	ctx := open(t, c)
	join(t, ctx)
	waitStatus(t, ctx, regexp.MustCompile(`^actor \d+ · 1 others in view · .* · 1 NPCs · 2 props in sight$`))
	carry.asked.Store(true)
	waitStatus(t, ctx, regexp.MustCompile(`^actor \d+ · 1 others in view · .* · 1 NPCs · 1 props in sight$`))
}
