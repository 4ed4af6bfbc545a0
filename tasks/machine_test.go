package tasks_test

import (
	"testing"
	"time"

	"github.com/mcpgate/mcpgate/tasks"
)

func TestStatusMachine(t *testing.T) {
	all := []tasks.Status{tasks.Working, tasks.InputRequired, tasks.Completed, tasks.Failed, tasks.Cancelled}
	legal := map[[2]tasks.Status]bool{}
	for _, from := range []tasks.Status{tasks.Working, tasks.InputRequired} {
		for _, to := range all {
			legal[[2]tasks.Status{from, to}] = true
		}
	}
	for _, from := range append(all, "bogus") {
		for _, to := range append(all, "bogus") {
			if got := from.CanBecome(to); got != legal[[2]tasks.Status{from, to}] {
				t.Errorf("%s → %s: %v", from, to, got)
			}
		}
	}
	for _, s := range all {
		if s.Terminal() != (s == tasks.Completed || s == tasks.Failed || s == tasks.Cancelled) || !s.Valid() {
			t.Errorf("%s: terminal=%v valid=%v", s, s.Terminal(), s.Valid())
		}
	}
}

func TestWireHelpers(t *testing.T) {
	at := time.Date(2026, 8, 1, 12, 30, 0, 123456789, time.FixedZone("x", 2*3600))
	if got := tasks.FormatTime(at); got != "2026-08-01T10:30:00.123Z" {
		t.Fatalf("FormatTime = %s", got)
	}
	tk := tasks.Task{}
	if tk.TTLMillis() != nil || tk.PollIntervalMillis() != 0 {
		t.Fatal("unlimited TTL must be null")
	}
	tk.TTL, tk.PollInterval = time.Hour, 5*time.Second
	if *tk.TTLMillis() != 3_600_000 || tk.PollIntervalMillis() != 5000 {
		t.Fatalf("ttl %d poll %d", *tk.TTLMillis(), tk.PollIntervalMillis())
	}
}

func TestIDsAreLongAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 10_000 {
		id := tasks.NewID()
		if len(id) < 26 || seen[id] {
			t.Fatalf("bad id %q", id)
		}
		seen[id] = true
	}
}
