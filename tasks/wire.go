package tasks

import "time"

// Helpers for the mcp layer, which owns the wire shapes. Times are stored
// with full precision; on the wire they are ISO 8601 UTC with milliseconds.

// WireTimeLayout is the timestamp layout for createdAt and lastUpdatedAt.
const WireTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime renders t for the wire, e.g. "2026-08-01T10:30:00.123Z".
func FormatTime(t time.Time) string { return t.UTC().Format(WireTimeLayout) }

// TTLMillis is the task's ttlMs: nil (JSON null) when unlimited.
func (t *Task) TTLMillis() *int64 {
	if t.TTL <= 0 {
		return nil
	}
	ms := t.TTL.Milliseconds()
	return &ms
}

// PollIntervalMillis is the task's pollIntervalMs; 0 means omit the field.
func (t *Task) PollIntervalMillis() int64 { return t.PollInterval.Milliseconds() }
