// Package pace lets long CPU-bound work run in the background at a bounded
// share of a core: the gateway rebuilds a changed document's tools (parse,
// generate, index; about half a CPU-second for GitHub's 1,223 operations)
// while it serves calls, and a rebuild that takes a core whole for that
// long raises the calls' tail latency by far more than its share of the
// work. Work that loops calls [Pacer.Step] or [Pacer.Check]; every burst of running is
// followed by a pause, so that over time the work uses at most its share.
//
// It owns the pacing arithmetic and the context key that carries a Pacer
// from the code that starts the work (gateway reload) to the loops that do
// it (openapi decode, build and generate; the discovery index), through the
// context those already take.
//
// Invariants: a nil *Pacer never pauses, so code paced on reload runs at
// full speed at start and in tools that never set one; a Pacer belongs to
// one goroutine (it is not safe for concurrent use); a pause ends early when
// the work's context is done, and Step never fails: the work notices the
// context itself.
package pace

import (
	"context"
	"time"
)

// Pacer spreads one goroutine's work: after each burst of running it
// sleeps long enough for the work's share of the wall time to be share.
type Pacer struct {
	ctx   context.Context
	burst time.Duration
	pause time.Duration
	steps int
	start time.Time
}

// stepsPerCheck is how many Steps pass between two looks at the clock:
// a Step is cheap (a loop iteration, a JSON token), the clock less so.
const stepsPerCheck = 64

// New returns a Pacer for work under ctx that runs in bursts of burst and
// uses share (0 < share < 1) of the wall time; a share of 1 or more
// returns nil, which never pauses.
func New(ctx context.Context, share float64, burst time.Duration) *Pacer {
	if share >= 1 || share <= 0 || burst <= 0 {
		return nil
	}
	return &Pacer{
		ctx:   ctx,
		burst: burst,
		pause: time.Duration(float64(burst) * (1 - share) / share),
		start: time.Now(),
	}
}

// Step marks a small unit of work done (a JSON value decoded, a schema
// built: microseconds at most) and pauses when the current burst is over.
// It looks at the clock every stepsPerCheck steps only.
func (p *Pacer) Step() {
	if p == nil {
		return
	}
	p.steps++
	if p.steps < stepsPerCheck {
		return
	}
	p.Check()
}

// Check marks a larger unit of work done (an operation's tool generated)
// and pauses when the current burst is over. The burst is measured in wall
// time: on a busy machine, where the work waits for a core too, it pauses
// sooner, which is the point.
func (p *Pacer) Check() {
	if p == nil {
		return
	}
	p.steps = 0
	if time.Since(p.start) < p.burst {
		return
	}
	t := time.NewTimer(p.pause)
	select {
	case <-t.C:
	case <-p.ctx.Done():
		t.Stop()
	}
	p.start = time.Now()
}

type key struct{}

// NewContext returns ctx carrying p, for the loops of the work it paces.
func NewContext(ctx context.Context, p *Pacer) context.Context {
	return context.WithValue(ctx, key{}, p)
}

// FromContext returns the Pacer ctx carries, or nil (which never pauses).
func FromContext(ctx context.Context) *Pacer {
	p, _ := ctx.Value(key{}).(*Pacer)
	return p
}
