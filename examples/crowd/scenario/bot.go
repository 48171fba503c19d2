package scenario

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/throng-go/throng/components"
	"github.com/throng-go/throng/net/wire"
)

// Rates at which a bot sends updates: the server's default client limits.
const (
	MovingUpdatesPerSecond   = 30
	StandingUpdatesPerSecond = 10
)

// MaxAdvance is the longest time one [Bot.Advance] simulates; a longer dt
// (a stalled driver) is cut to it, so one step never exceeds
// Gait.Speed x 1 s.
const MaxAdvance = time.Second

// MaxSpeed is the fastest Gait.Speed a bot walks, in units a second: a
// quarter chunk, so even a MaxAdvance step stays far under the server's
// one-chunk limit. Faster speeds are lowered to it.
const MaxSpeed = ChunkSize / 4

// Animation flags a bot sets: FlagWalking while it walks, FlagJumping
// while it is in the air.
const (
	FlagWalking uint16 = 1
	FlagJumping uint16 = 2
)

// A bot's jump ([Gait].JumpEvery): up JumpHeight units (about 0.7 m) and
// back down to where it left the ground, in JumpTime, along a parabola.
const (
	JumpHeight = 50
	JumpTime   = 600 * time.Millisecond
)

// Gait is how a bot moves: it walks a straight line at Speed for a random
// time between MinWalk and MaxWalk, then stands still for MinStand to
// MaxStand, then turns to a random heading and walks again. At the edge of
// its area it turns back. MaxStand 0 means it never stops, only turns.
// Durations under a millisecond are raised to one.
type Gait struct {
	Speed              float32 // units a second, at most MaxSpeed
	MinWalk, MaxWalk   time.Duration
	MinStand, MaxStand time.Duration
	// JumpEvery is how often the bot jumps, walking or standing: each
	// jump begins between half and one and a half times JumpEvery after
	// the last began (the first within JumpEvery of the bot's start). 0
	// never jumps; a positive JumpEvery under 2 x JumpTime is raised to
	// it, so that the bot lands before it jumps again.
	JumpEvery time.Duration
	// UpdatesPerSecond is the most updates the bot sends a second, moving
	// or standing ([Bot.AppendDueMove]; give a client.Client the same
	// rates, [Gait.Rates]). 0 means the server's default limits:
	// MovingUpdatesPerSecond while it moves, StandingUpdatesPerSecond
	// while it stands.
	UpdatesPerSecond int
}

// WanderGait is a player idling in a crowd: walking pace (300 units a
// second, about 4 m/s at 70 units a metre) for 2 to 8 s, then a 1 to 4 s
// stop.
func WanderGait() Gait {
	return Gait{Speed: 300, MinWalk: 2 * time.Second, MaxWalk: 8 * time.Second, MinStand: time.Second, MaxStand: 4 * time.Second}
}

// RestlessGait walks like WanderGait but never stops: the benchmarks'
// "everyone moving every tick".
func RestlessGait() Gait {
	g := WanderGait()
	g.MinStand, g.MaxStand = 0, 0
	return g
}

// PlazaGait is a player of the plaza scenario: it wanders like
// WanderGait, jumps every 4 s or so, and sends at most 10 updates a
// second, moving or standing, the rate of a game client that sends what
// it has each of its frames at 10 frames a second.
func PlazaGait() Gait {
	g := WanderGait()
	g.JumpEvery = 4 * time.Second
	g.UpdatesPerSecond = 10
	return g
}

// Rates returns the most updates a second the gait's bot sends while it
// moves and while it stands: UpdatesPerSecond for both (never more than
// StandingUpdatesPerSecond standing), or the server's default limits.
func (g Gait) Rates() (moving, standing int) {
	if g.UpdatesPerSecond <= 0 {
		return MovingUpdatesPerSecond, StandingUpdatesPerSecond
	}
	return g.UpdatesPerSecond, min(g.UpdatesPerSecond, StandingUpdatesPerSecond)
}

// Bot is one simulated player: it keeps its own idea of where its actor is,
// wanders its [Area] by its [Gait], numbers its updates, and follows the
// server when told otherwise (Welcome, Correction). A Bot is not safe for
// concurrent use; it sends nothing itself, the caller moves its frames.
type Bot struct {
	area  Area
	gait  Gait
	rng   *rand.Rand
	limit SendLimiter

	x, y, z, yaw float32
	world        uint32
	walking      bool
	left         time.Duration // of the current walk or stop
	clock        time.Duration // time simulated so far
	seq          uint32

	// The jumps, with Gait.JumpEvery: the time to the next one, and while
	// airborne the time since it began and the height it began at.
	jumpIn   time.Duration
	airborne bool
	air      time.Duration
	ground   float32
}

// NewBot returns a bot standing at spawn's transform, about to walk, that
// wanders spawn's area. seed fixes its choices: the same seed and the same
// sequence of calls give the same updates.
func NewBot(spawn Spawn, gait Gait, seed uint64) *Bot {
	gait.Speed = min(max(gait.Speed, 0), MaxSpeed)
	gait.MinWalk = max(gait.MinWalk, time.Millisecond)
	gait.MaxWalk = max(gait.MaxWalk, gait.MinWalk)
	if gait.MaxStand > 0 {
		gait.MinStand = max(gait.MinStand, time.Millisecond)
		gait.MaxStand = max(gait.MaxStand, gait.MinStand)
	}
	if gait.JumpEvery > 0 {
		gait.JumpEvery = max(gait.JumpEvery, 2*JumpTime)
	} else {
		gait.JumpEvery = 0
	}
	t := spawn.Transform
	b := &Bot{
		area:  spawn.Area,
		gait:  gait,
		rng:   rand.New(rand.NewPCG(seed, 0x626f74)),
		limit: NewSendLimiter(gait.Rates()),
		x:     t.X, y: t.Y, z: t.Z, yaw: t.Yaw, world: t.WorldOrCell,
	}
	b.startWalk()
	if gait.JumpEvery > 0 { // a bot that never jumps draws nothing for it
		b.jumpIn = b.between(0, gait.JumpEvery)
	}
	return b
}

// Bots returns one bot per actor of p: [Population.Bot](i) for every i.
func (p Population) Bots(gait Gait, seed uint64) []*Bot {
	bots := make([]*Bot, len(p.Spawns))
	for i := range p.Spawns {
		bots[i] = p.Bot(i, gait, seed)
	}
	return bots
}

// Bot returns bot i of the population, seeded from (seed, i): it starts at
// Spawns[i] and wanders that spawn's area. An i past the end wraps around
// to Spawns[i mod len(Spawns)] with a seed of its own, as
// [Population.AdmitAny] places it, so any number of bots can share a
// population. It panics if i is negative or the population is empty.
func (p Population) Bot(i int, gait Gait, seed uint64) *Bot {
	if i < 0 || len(p.Spawns) == 0 {
		panic(fmt.Sprintf("scenario: Bot(%d) of a population of %d; want i >= 0 and at least one spawn", i, len(p.Spawns)))
	}
	return NewBot(p.Spawns[i%len(p.Spawns)], gait, seed^(uint64(i)+1)*0x9e3779b97f4a7c15)
}

// Position returns where the bot believes its actor is.
func (b *Bot) Position() components.Transform {
	return components.Transform{X: b.x, Y: b.y, Z: b.z, Yaw: b.yaw, WorldOrCell: b.world}
}

// Moving reports whether the bot is walking (rather than standing still).
func (b *Bot) Moving() bool { return b.walking }

// Jumping reports whether the bot is in the air.
func (b *Bot) Jumping() bool { return b.airborne }

// Seq returns the sequence number of the last update the bot made.
func (b *Bot) Seq() uint32 { return b.seq }

// Advance simulates dt of the bot's life (at most [MaxAdvance]): it walks,
// stops, turns and jumps as its gait says, turning back at its area's
// edges. dt of zero or less does nothing.
func (b *Bot) Advance(dt time.Duration) {
	if dt <= 0 {
		return
	}
	dt = min(dt, MaxAdvance)
	b.clock += dt
	if b.gait.JumpEvery > 0 {
		b.hop(dt)
	}
	for dt > 0 {
		span := min(dt, b.left)
		if b.walking {
			b.walk(span)
		}
		b.left -= span
		dt -= span
		if b.left <= 0 {
			b.next()
		}
	}
}

// next ends the current walk or stop: a walk ends in a stop (if the gait
// stops at all), a stop ends in a turn and a new walk.
func (b *Bot) next() {
	if b.walking && b.gait.MaxStand > 0 {
		b.walking = false
		b.left = b.between(b.gait.MinStand, b.gait.MaxStand)
		return
	}
	b.yaw = randomYaw(b.rng)
	b.startWalk()
}

func (b *Bot) startWalk() {
	b.walking = true
	b.left = b.between(b.gait.MinWalk, b.gait.MaxWalk)
}

func (b *Bot) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(b.rng.Int64N(int64(hi-lo)+1))
}

// hop moves the bot's jump on by dt: in the air, it rises and falls along
// the jump's parabola and lands at the height it left; on the ground, it
// jumps when the next jump is due.
func (b *Bot) hop(dt time.Duration) {
	if b.airborne {
		b.air += dt
		if b.air >= JumpTime {
			b.airborne, b.z = false, b.ground
		} else {
			s, t := b.air.Seconds(), JumpTime.Seconds()
			b.z = b.ground + float32(4*JumpHeight*s*(t-s)/(t*t))
		}
	}
	b.jumpIn -= dt
	if b.jumpIn <= 0 && !b.airborne {
		b.airborne, b.air, b.ground = true, 0, b.z
		b.jumpIn = b.between(b.gait.JumpEvery/2, b.gait.JumpEvery*3/2)
	}
}

// walk moves the bot along its heading for span. Inside its area it turns
// back at the edges, mirroring the step; outside it (after the server moved
// it) it heads for the area's middle.
func (b *Bot) walk(span time.Duration) {
	a := b.area
	if b.world != a.WorldOrCell || !a.contains(b.x, b.y) {
		b.yaw = float32(math.Atan2(float64((a.MinY+a.MaxY)/2-b.y), float64((a.MinX+a.MaxX)/2-b.x)))
		b.step(span)
		return
	}
	b.step(span)
	lo, hi := a.MinX+edge, a.MaxX-edge
	if b.x < lo || b.x > hi {
		b.x = mirror(b.x, lo, hi)
		b.yaw = normalYaw(math.Pi - b.yaw)
	}
	lo, hi = a.MinY+edge, a.MaxY-edge
	if b.y < lo || b.y > hi {
		b.y = mirror(b.y, lo, hi)
		b.yaw = normalYaw(-b.yaw)
	}
}

func (b *Bot) step(span time.Duration) {
	d := float64(b.gait.Speed) * span.Seconds()
	s, c := math.Sincos(float64(b.yaw))
	b.x += float32(c * d)
	b.y += float32(s * d)
}

// mirror reflects v back into [lo, hi] off the edge it crossed.
func mirror(v, lo, hi float32) float32 {
	if v < lo {
		v = 2*lo - v
	} else if v > hi {
		v = 2*hi - v
	}
	return min(max(v, lo), hi)
}

// normalYaw brings yaw into [-pi, pi).
func normalYaw(yaw float32) float32 {
	y := math.Mod(float64(yaw)+math.Pi, 2*math.Pi)
	if y < 0 {
		y += 2 * math.Pi
	}
	return float32(y - math.Pi)
}

// Move returns the bot's next update: its position now, under the next
// sequence number. For a client that spaces updates itself (client.Client's
// SendMove does); an update it skips leaves a gap in the sequence numbers,
// which the server accepts.
func (b *Bot) Move() wire.Move {
	b.seq++
	var flags uint16
	if b.walking {
		flags = FlagWalking
	}
	if b.airborne {
		flags |= FlagJumping
	}
	return wire.Move{Seq: b.seq, X: b.x, Y: b.y, Z: b.z, Yaw: b.yaw, WorldOrCell: b.world, Flags: flags}
}

// AppendMove appends the bot's next update ([Bot.Move]) as a Move frame to
// dst.
func (b *Bot) AppendMove(dst []byte) []byte {
	return wire.AppendMove(dst, b.Move())
}

// AppendDueMove is AppendMove if the bot's [SendLimiter] allows an update
// now (by the bot's own clock, which Advance moves): at most its gait's
// rates ([Gait.Rates]), the moving one while it walks or jumps. It returns
// dst and false when no update is due.
func (b *Bot) AppendDueMove(dst []byte) ([]byte, bool) {
	if !b.limit.Allow(b.clock, b.walking || b.airborne) {
		return dst, false
	}
	return b.AppendMove(dst), true
}

// Welcome places the bot where the server admitted its actor, on the
// ground.
func (b *Bot) Welcome(w wire.Welcome) {
	b.x, b.y, b.z, b.yaw, b.world = w.X, w.Y, w.Z, w.Yaw, w.WorldOrCell
	b.airborne = false
}

// Correct snaps the bot to the server's authoritative position after a
// rejected update. Its sequence numbers keep increasing from the highest
// it or the server has seen.
func (b *Bot) Correct(c wire.Correction) {
	b.x, b.y, b.z, b.yaw, b.world = c.X, c.Y, c.Z, c.Yaw, c.WorldOrCell
	b.seq = max(b.seq, c.Seq)
	b.airborne = false // a jump in the air lands where the server has it
}
