package tasks

import (
	"context"
	"sync"
)

// Publisher carries task-change events between the managers that commit
// changes and the parties that care (notifications/tasks streams, waiting
// workers). An event is a task id only: a receiver must do a fresh,
// authorized lookup to learn anything about the task. Delivery is best
// effort; polling with Get stays authoritative.
type Publisher interface {
	// Publish announces that task id changed. It never blocks on a slow
	// subscriber.
	Publish(ctx context.Context, id string)
	// Subscribe returns a channel of changed task ids and a function that
	// ends the subscription. The channel is closed when the subscription ends,
	// either by calling the function or when ctx is done.
	Subscribe(ctx context.Context) (<-chan string, func())
}

// DefaultBusBuffer is the per-subscriber buffer of a [Bus] built with a
// non-positive size.
const DefaultBusBuffer = 256

// Bus is the in-process [Publisher]. Each subscriber has a bounded buffer;
// an event that does not fit is dropped for that subscriber (counted in
// Dropped), so a slow or stalled subscriber never blocks a publisher.
type Bus struct {
	buffer int

	mu      sync.Mutex
	subs    map[*busSub]struct{}
	dropped uint64
	closed  bool
}

type busSub struct {
	ch   chan string
	once sync.Once
}

// NewBus returns a Bus whose subscribers buffer up to buffer events.
func NewBus(buffer int) *Bus {
	if buffer <= 0 {
		buffer = DefaultBusBuffer
	}
	return &Bus{buffer: buffer, subs: make(map[*busSub]struct{})}
}

// Publish implements [Publisher]; it never blocks.
func (b *Bus) Publish(_ context.Context, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.ch <- id:
		default:
			b.dropped++
		}
	}
}

// Subscribe implements [Publisher]. After Close it returns a closed
// channel.
func (b *Bus) Subscribe(ctx context.Context) (<-chan string, func()) {
	s := &busSub{ch: make(chan string, b.buffer)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		close(s.ch)
		return s.ch, func() {}
	}
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	stop := make(chan struct{})
	cancel := func() {
		s.once.Do(func() {
			b.mu.Lock()
			if _, ok := b.subs[s]; ok { // Close may have ended it already
				delete(b.subs, s)
				close(s.ch) // under mu: no Publish is sending
			}
			b.mu.Unlock()
			close(stop)
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-stop:
		}
	}()
	return s.ch, cancel
}

// Close ends every subscription (their channels close) and refuses new
// ones. Publishing after Close does nothing.
func (b *Bus) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for s := range b.subs {
		delete(b.subs, s)
		close(s.ch)
	}
}

// Dropped returns how many events were dropped for slow subscribers.
func (b *Bus) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
