package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Signals carries short messages between the replicas sharing a database,
// on a LISTEN/NOTIFY channel of their own: the version of a tool set one
// replica put in service, so that the others check their documents too.
// Delivery is best effort: nothing is caught up after a reconnection
// (receivers re-check what the message is about; a missed one delays that
// check until the next message or their own watch).
type Signals struct {
	m       *Manager
	channel string
	connCfg *pgx.ConnConfig
	logger  *slog.Logger
}

// NewSignals returns the signals of m's database on the channel named
// after m's task channel and topic ("tools").
func NewSignals(m *Manager, topic string, logger *slog.Logger) *Signals {
	if logger == nil {
		logger = slog.Default()
	}
	channel := m.channel + "." + topic
	if m.channel == "" {
		channel = DefaultChannel + "." + topic
	}
	if len(channel) > 63 {
		channel = channel[len(channel)-63:]
	}
	cfg := m.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = "mcpgate-signals"
	return &Signals{m: m, channel: channel, connCfg: cfg, logger: logger}
}

// Publish sends msg to every replica listening (this one included).
func (s *Signals) Publish(ctx context.Context, msg string) error {
	if _, err := s.m.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, s.channel, msg); err != nil {
		return fmt.Errorf("postgres: signal: %w", err)
	}
	return nil
}

// Listen calls fn with every message until ctx ends, on a dedicated
// connection that is re-established with backoff when it drops.
func (s *Signals) Listen(ctx context.Context, fn func(msg string)) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		healthy, err := s.session(ctx, fn)
		if ctx.Err() != nil {
			return
		}
		s.logger.Warn("postgres: signal listener disconnected; reconnecting", "channel", s.channel, "err", err)
		if healthy {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Signals) session(ctx context.Context, fn func(string)) (healthy bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.connCfg)
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return false, err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		fn(n.Payload)
	}
}
