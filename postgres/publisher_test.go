package postgres_test

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpgate/mcpgate/postgres"
	"github.com/mcpgate/mcpgate/tasks"
)

// uniqueChannel keeps parallel tests (and test runs) off each other's events.
func uniqueChannel() string { return "mcpgate_test_" + strings.ToLower(rand.Text()[:12]) }

// listening starts a publisher on m and waits until its listener is up.
func listening(t *testing.T, m *postgres.Manager, o postgres.PublisherOptions, hook func(int)) (*postgres.Publisher, <-chan string, func()) {
	t.Helper()
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := postgres.NewPublisher(m, o)
	if err != nil {
		t.Fatal(err)
	}
	if hook != nil {
		postgres.SetBeforeListen(p, hook)
	}
	t.Cleanup(func() { p.Close() })
	ch, cancel := p.Subscribe(t.Context())
	waitFor(t, "the listener", 10*time.Second, func() bool { return p.Stats().Listening })
	return p, ch, cancel
}

// next returns the next event or fails after d.
func next(t *testing.T, ch <-chan string, d time.Duration) string {
	t.Helper()
	select {
	case id, ok := <-ch:
		if !ok {
			t.Fatal("subscription closed")
		}
		return id
	case <-time.After(d):
		t.Fatalf("no event within %v", d)
		return ""
	}
}

// TestPublisherAcrossReplicas: a change committed by one replica reaches the
// subscribers of another; worker-only changes (claim, heartbeat) do not
// notify; events arrive in commit order.
func TestPublisherAcrossReplicas(t *testing.T) {
	schema, channel := newSchema(t), uniqueChannel()
	a := open(t, schema, postgres.Options{Channel: channel})
	b := open(t, schema, postgres.Options{Channel: channel})
	_, events, _ := listening(t, a, postgres.PublisherOptions{}, nil)
	ctx := t.Context()
	t1, err := b.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != t1.ID {
		t.Fatalf("event %q, want %q", got, t1.ID)
	}
	c, err := b.Claim(ctx, tasks.Claim{TaskID: t1.ID, Owner: "w", For: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Heartbeat(ctx, c.Lease(), time.Minute); err != nil {
		t.Fatal(err)
	}
	t2, err := b.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != t2.ID {
		t.Fatalf("event %q after claim+heartbeat of %s and create of %s: the claim notified", got, t1.ID, t2.ID)
	}
	if err := b.SetStatusMessage(ctx, c.Lease(), "half way"); err != nil {
		t.Fatal(err)
	}
	if err := a.Cancel(ctx, owner, t2.ID); err != nil {
		t.Fatal(err)
	}
	if got := []string{next(t, events, 10*time.Second), next(t, events, 10*time.Second)}; !slices.Equal(got, []string{t1.ID, t2.ID}) {
		t.Fatalf("events %v, want %v in commit order", got, []string{t1.ID, t2.ID})
	}
	// A rolled-back change notifies nothing: a write refused by the fence.
	if err := b.Finish(ctx, tasks.Lease{TaskID: t1.ID, Owner: "w", Token: 9}, tasks.Completed, []byte(`{}`), ""); !errors.Is(err, tasks.ErrLeaseLost) {
		t.Fatal(err)
	}
	t3, err := a.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != t3.ID {
		t.Fatalf("event %q, want %q", got, t3.ID)
	}
}

// TestPublisherReconnectsAndCatchesUp: the listener's backend is terminated;
// changes committed while it is away (their NOTIFY reached nobody) are
// re-announced after it reconnects, and live events flow again.
func TestPublisherReconnectsAndCatchesUp(t *testing.T) {
	schema, channel := newSchema(t), uniqueChannel()
	m := open(t, schema, postgres.Options{Channel: channel})
	reconnecting := make(chan int, 1)
	resume := make(chan struct{})
	ctx := t.Context()
	hook := func(attempt int) {
		if attempt == 1 {
			reconnecting <- attempt
			select {
			case <-resume:
			case <-ctx.Done():
			}
		}
	}
	p, events, _ := listening(t, m, postgres.PublisherOptions{MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}, hook)
	before, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != before.ID {
		t.Fatalf("live event %q, want %q", got, before.ID)
	}

	admin, err := pgx.Connect(ctx, testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, "mcpgate-listen:"+channel).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listener backends (%v), want 1", killed, err)
	}
	select {
	case <-reconnecting:
	case <-time.After(10 * time.Second):
		t.Fatal("listener did not notice its connection was terminated")
	}
	if p.Stats().Listening {
		t.Fatal("publisher claims to listen while disconnected")
	}
	// Nobody listens now: these NOTIFYs are lost, only the catch-up can
	// bring them.
	missed, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Cancel(ctx, owner, before.ID); err != nil {
		t.Fatal(err)
	}
	close(resume)
	got := map[string]bool{}
	for !got[missed.ID] || !got[before.ID] {
		got[next(t, events, 10*time.Second)] = true
	}
	st := p.Stats()
	if st.Reconnects < 1 || st.CaughtUp < 2 {
		t.Fatalf("stats after reconnect: %+v", st)
	}
	waitFor(t, "the listener again", 10*time.Second, func() bool { return p.Stats().Listening })
	after, err := m.Create(ctx, tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	for id := next(t, events, 10*time.Second); id != after.ID; id = next(t, events, 10*time.Second) {
		if id != before.ID && id != missed.ID {
			t.Fatalf("unexpected event %q", id)
		}
	}
}

// TestPublisherDropsForSlowSubscribers: a subscriber that does not read
// loses events beyond its buffer; Publish never blocks on it and other
// subscribers still get everything.
func TestPublisherDropsForSlowSubscribers(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{Channel: uniqueChannel()})
	p, slow, _ := listening(t, m, postgres.PublisherOptions{Buffer: 2}, nil)
	fast, cancelFast := p.Subscribe(t.Context())
	defer cancelFast()
	ids := []string{"a", "b", "c", "d", "e"}
	for _, id := range ids {
		p.Publish(t.Context(), id)
		if got := next(t, fast, 10*time.Second); got != id {
			t.Fatalf("reading subscriber got %q, want %q", got, id)
		}
	}
	waitFor(t, "drops", 10*time.Second, func() bool { return p.Stats().Dropped == 3 })
	if got := []string{next(t, slow, time.Second), next(t, slow, time.Second)}; !slices.Equal(got, ids[:2]) {
		t.Fatalf("slow subscriber kept %v", got)
	}
	select {
	case id := <-slow:
		t.Fatalf("slow subscriber got %q beyond its buffer", id)
	default:
	}
}

// TestPublisherSubscriptionsEnd: a subscription ends by its cancel function,
// by its context, and by Close; Subscribe after Close gives a closed channel.
func TestPublisherSubscriptionsEnd(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{Channel: uniqueChannel()})
	p, byClose, cancel := listening(t, m, postgres.PublisherOptions{}, nil)
	ctx, stop := context.WithCancel(t.Context())
	byCtx, _ := p.Subscribe(ctx)
	byCancel, cancel2 := p.Subscribe(t.Context())
	cancel2()
	cancel2() // idempotent
	if _, ok := <-byCancel; ok {
		t.Fatal("cancelled subscription still open")
	}
	stop()
	select {
	case _, ok := <-byCtx:
		if ok {
			t.Fatal("event on a subscription whose context ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("subscription outlived its context")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-byClose; ok {
		t.Fatal("subscription open after Close")
	}
	cancel() // after Close: harmless
	late, _ := p.Subscribe(t.Context())
	if _, ok := <-late; ok {
		t.Fatal("Subscribe after Close returned an open channel")
	}
	if p.Stats().Listening {
		t.Fatal("listening after Close")
	}
}

// TestPublisherNeedsNotify: a manager without NOTIFY cannot feed a publisher.
func TestPublisherNeedsNotify(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{DisableNotify: true})
	if _, err := postgres.NewPublisher(m, postgres.PublisherOptions{}); err == nil {
		t.Fatal("publisher on a manager without notifications")
	}
	if _, err := m.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x"}); err != nil {
		t.Fatal(err)
	}
}

// TestPublisherChannelPerSchema: by default each schema has its own channel,
// so a deployment does not hear another's changes.
func TestPublisherChannelPerSchema(t *testing.T) {
	a := open(t, newSchema(t), postgres.Options{})
	b := open(t, newSchema(t), postgres.Options{})
	if a.Channel() == b.Channel() || !strings.HasPrefix(a.Channel(), postgres.DefaultChannel+".") {
		t.Fatalf("channels %q and %q", a.Channel(), b.Channel())
	}
	_, events, _ := listening(t, a, postgres.PublisherOptions{}, nil)
	other, err := b.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	mine, err := a.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != mine.ID {
		t.Fatalf("event %q (other schema's task %s), want %q", got, other.ID, mine.ID)
	}
	// A schema name too long to append gets a hashed channel that works.
	long := dropAtEnd(t, "t_"+strings.ToLower(rand.Text()[:16])+strings.Repeat("x", 40))
	c := open(t, long, postgres.Options{})
	if n := len(c.Channel()); n > 63 || !strings.HasPrefix(c.Channel(), postgres.DefaultChannel+".") {
		t.Fatalf("channel %q (%d bytes)", c.Channel(), n)
	}
	_, events, _ = listening(t, c, postgres.PublisherOptions{}, nil)
	tk, err := c.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(t, events, 10*time.Second); got != tk.ID {
		t.Fatalf("event %q, want %q", got, tk.ID)
	}
}

// TestPublisherSurvivesPings: with a very short ping interval the listener
// pings between (and in the middle of) a stream of events without losing
// its connection or an event.
func TestPublisherSurvivesPings(t *testing.T) {
	m := open(t, newSchema(t), postgres.Options{})
	p, events, _ := listening(t, m, postgres.PublisherOptions{Ping: time.Millisecond}, nil)
	deadline := time.Now().Add(50 * time.Millisecond) // at least fifty ping periods
	for i := 0; i < 20 || time.Now().Before(deadline); i++ {
		tk, err := m.Create(t.Context(), tasks.NewTask{Owner: owner, ToolName: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if got := next(t, events, 10*time.Second); got != tk.ID {
			t.Fatalf("event %d: %q, want %q", i, got, tk.ID)
		}
	}
	if st := p.Stats(); st.Reconnects != 0 || !st.Listening {
		t.Fatalf("listener after pings: %+v", st)
	}
}
