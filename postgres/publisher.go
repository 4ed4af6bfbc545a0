package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/tasks"
)

// PublisherOptions configure a [Publisher]. Zero values take the defaults
// noted.
type PublisherOptions struct {
	// Buffer is each subscriber's buffer (default tasks.DefaultBusBuffer);
	// an event that does not fit is dropped for that subscriber.
	Buffer int
	// PublishTimeout bounds one Publish (default 2s).
	PublishTimeout time.Duration
	// Ping is how long the listener waits for a notification before it
	// checks its connection (default 10s). A dead connection is noticed
	// within about this time even when the network gives no error.
	Ping time.Duration
	// MinBackoff and MaxBackoff bound the wait between reconnection
	// attempts, which doubles after each failure (defaults 100ms and 5s).
	MinBackoff, MaxBackoff time.Duration
	// CatchUpSlack widens the catch-up window after a reconnection to cover
	// transactions that were in flight when the connection was last known
	// good (default 5s).
	CatchUpSlack time.Duration
	// CatchUpLimit bounds how many task ids one catch-up re-announces
	// (default 10000); beyond it, polling covers the rest.
	CatchUpLimit int
	// Logger receives connection errors; default slog.Default().
	Logger *slog.Logger
}

// Publisher is a [tasks.Publisher] over PostgreSQL LISTEN/NOTIFY. The
// manager it is built on already NOTIFYs every client-visible change inside
// the committing transaction, so every replica's Publisher hears every
// replica's changes; Publish is for events of other origin.
//
// Subscribe starts (once) a listener on a dedicated connection, outside the
// pool, that fans the ids out to the local subscribers, each with a bounded
// buffer (a full buffer drops the event for that subscriber: nothing blocks
// on a slow subscriber). When the connection drops, the listener reconnects
// with backoff and then re-announces the id of every task whose change was
// committed since it was last known to be listening (by the database's
// clock, minus CatchUpSlack). Events are ids only: receivers re-read the
// task and authorize the caller before telling anyone anything. Delivery is
// best effort and at least once; polling stays authoritative.
type Publisher struct {
	m       *Manager
	channel string
	opts    PublisherOptions
	connCfg *pgx.ConnConfig

	// beforeListen, when set (tests), runs before each connection attempt
	// with the attempt number (0 for the first).
	beforeListen func(attempt int)

	// bus fans the ids heard on the channel out to local subscribers.
	bus *tasks.Bus

	mu      sync.Mutex
	started bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}

	reconnects, caughtUp, publishErrs atomic.Uint64
	listening                         atomic.Bool
}

// PublisherStats counts what a Publisher did.
type PublisherStats struct {
	Dropped     uint64 // events dropped for full subscriber buffers
	Reconnects  uint64 // listener connections lost (or failed) and retried
	CaughtUp    uint64 // ids re-announced after reconnections
	PublishErrs uint64 // Publish calls that failed
	Listening   bool   // the listener is connected and LISTENing now
}

var _ tasks.Publisher = (*Publisher)(nil)

// NewPublisher returns a publisher on m's database and channel. It fails
// when m was opened with DisableNotify. Close it when done.
func NewPublisher(m *Manager, opts PublisherOptions) (*Publisher, error) {
	if m.channel == "" {
		return nil, errors.New("postgres: publisher: the manager's notifications are disabled")
	}
	if opts.Buffer <= 0 {
		opts.Buffer = tasks.DefaultBusBuffer
	}
	if opts.PublishTimeout <= 0 {
		opts.PublishTimeout = 2 * time.Second
	}
	if opts.Ping <= 0 {
		opts.Ping = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.CatchUpSlack <= 0 {
		opts.CatchUpSlack = 5 * time.Second
	}
	if opts.CatchUpLimit <= 0 {
		opts.CatchUpLimit = 10_000
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := m.pool.Config().ConnConfig.Copy()
	name := "mcpgate-listen:" + m.channel
	if len(name) > 63 {
		name = name[:63]
	}
	cfg.RuntimeParams["application_name"] = name
	return &Publisher{m: m, channel: m.channel, opts: opts, connCfg: cfg, bus: tasks.NewBus(opts.Buffer)}, nil
}

// Publish implements [tasks.Publisher]: NOTIFY id on the channel, bounded
// by PublishTimeout. Failures are counted and logged at debug level, never
// returned: polling stays authoritative.
func (p *Publisher) Publish(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.PublishTimeout)
	defer cancel()
	if _, err := p.m.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, p.channel, id); err != nil {
		p.publishErrs.Add(1)
		p.opts.Logger.Debug("postgres: publish failed", "task", id, "err", err)
	}
}

// Subscribe implements [tasks.Publisher]. The first call starts the
// listener. After Close it returns a closed channel.
func (p *Publisher) Subscribe(ctx context.Context) (<-chan string, func()) {
	p.mu.Lock()
	if !p.started && !p.closed {
		p.started = true
		lctx, stop := context.WithCancel(context.Background())
		p.stop, p.done = stop, make(chan struct{})
		go p.listen(lctx)
	}
	p.mu.Unlock()
	return p.bus.Subscribe(ctx)
}

// Close stops the listener and ends every subscription.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	stop, done := p.stop, p.done
	p.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
	p.bus.Close()
	return nil
}

// Stats returns the publisher's counters.
func (p *Publisher) Stats() PublisherStats {
	return PublisherStats{
		Dropped:     p.bus.Dropped(),
		Reconnects:  p.reconnects.Load(),
		CaughtUp:    p.caughtUp.Load(),
		PublishErrs: p.publishErrs.Load(),
		Listening:   p.listening.Load(),
	}
}

// deliver hands id to every local subscriber that has room.
func (p *Publisher) deliver(id string) { p.bus.Publish(context.Background(), id) }

// listen keeps one LISTEN session alive until ctx ends.
func (p *Publisher) listen(ctx context.Context) {
	defer close(p.done)
	var since time.Time // database time up to which every committed change was heard
	start := time.Now()
	backoff := p.opts.MinBackoff
	for attempt := 0; ; attempt++ {
		if p.beforeListen != nil {
			p.beforeListen(attempt)
		}
		if ctx.Err() != nil {
			return
		}
		healthy, err := p.session(ctx, &since)
		p.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		if since.IsZero() {
			// Never listened yet: once connected, catch up from when the
			// first subscriber arrived (local clock; CatchUpSlack absorbs a
			// modest skew from the database's).
			since = start
		}
		p.reconnects.Add(1)
		p.opts.Logger.Warn("postgres: task listener disconnected; reconnecting", "channel", p.channel, "err", err)
		if healthy {
			backoff = p.opts.MinBackoff
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, p.opts.MaxBackoff)
	}
}

// session connects, LISTENs, catches up on what was missed since *since
// (unless this is the first session) and relays notifications until the
// connection fails or ctx ends. healthy reports whether it got as far as
// listening.
func (p *Publisher) session(ctx context.Context, since *time.Time) (healthy bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, p.connCfg)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{p.channel}.Sanitize()); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	var now time.Time
	if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	p.listening.Store(true)
	if !since.IsZero() {
		if err := p.catchUp(ctx, conn, since.Add(-p.opts.CatchUpSlack)); err != nil {
			return true, err
		}
	}
	*since = now
	lastPing := time.Now()
	for {
		// Wait for notifications until the next ping is due; a busy channel
		// still pings on schedule, so the watermark keeps advancing.
		if wait := p.opts.Ping - time.Since(lastPing); wait > 0 {
			wctx, cancel := context.WithTimeout(ctx, wait)
			n, err := conn.WaitForNotification(wctx)
			expired := wctx.Err() != nil
			cancel()
			if n != nil {
				p.deliver(n.Payload)
			}
			switch {
			case err == nil:
				continue
			case ctx.Err() != nil:
				return true, ctx.Err()
			case !expired || conn.IsClosed():
				return true, fmt.Errorf("wait: %w", err)
			}
		}
		// Prove the connection still works and advance the catch-up
		// watermark. Notifications that arrive meanwhile are queued by pgx
		// and returned by the next wait.
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
			return true, fmt.Errorf("ping: %w", err)
		}
		*since = now
		lastPing = time.Now()
	}
}

// catchUp re-announces the tasks whose change committed after from.
func (p *Publisher) catchUp(ctx context.Context, conn *pgx.Conn, from time.Time) error {
	rows, err := conn.Query(ctx, `SELECT id FROM tasks WHERE changed_at > $1 ORDER BY changed_at LIMIT $2`,
		from, p.opts.CatchUpLimit)
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	for _, id := range ids {
		p.caughtUp.Add(1) // counted first: whoever received it sees the count
		p.deliver(id)
	}
	return nil
}
