package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{1 * mib, 32 * mib, 825},       // small live heap: the runtime's minimum heap (4 MiB × p/100) decides
		{2 * mib, 32 * mib, 850},       //
		{8 * mib, 32 * mib, 400},       // from here the live heap decides
		{32 * mib, 32 * mib, 100},      // the default is already enough
		{500 * mib, 32 * mib, 100},     // never more collection than the default
		{1 << 10, 1 << 40, MaxPercent}, // bounded above
		{0, 32 * mib, 800},             // no live heap measured yet
		{1 * mib, 0, 100},              // headroom 0: the default
	} {
		if got := Percent(c.live, c.headroom); got != c.want {
			t.Errorf("Percent(%d, %d) = %d, want %d", c.live, c.headroom, got, c.want)
		}
	}
	// The invariant, with the runtime's goal max(live + live×p/100,
	// 4 MiB×p/100): never above live + max(live, headroom, 4 MiB).
	for live := uint64(1); live < 1<<34; live = live*3 + 7 {
		for _, h := range []uint64{1 << 20, 32 << 20, 1 << 30} {
			p := uint64(Percent(live, h))
			goal := max(live+live*p/100, runtimeHeapMinimum*p/100)
			if limit := live + max(live, h, runtimeHeapMinimum); goal > limit {
				t.Fatalf("Percent(%d, %d) = %d: goal %d exceeds %d", live, h, p, goal, limit)
			}
		}
	}
}

// gogc reads the current GOGC without changing it.
func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func TestRunSetsAndRestores(t *testing.T) {
	t.Setenv("GOGC", "") // Run treats a set GOGC as the operator's choice
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, 1<<50, time.Millisecond); close(done) }() // a huge headroom: MaxPercent
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != MaxPercent {
		if time.Now().After(deadline) {
			t.Fatalf("GOGC is %d, want %d", gogc(), MaxPercent)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	if p := gogc(); p != 100 {
		t.Errorf("after Run: GOGC %d, want the 100 it found", p)
	}
}

func TestRunLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "50")
	orig := debug.SetGCPercent(50)
	defer debug.SetGCPercent(orig)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { Run(ctx, 1<<40, time.Millisecond); close(done) }()
	select {
	case <-done: // returned at once, without waiting for ctx
	case <-time.After(2 * time.Second):
		t.Fatalf("Run is tuning although GOGC is set (GOGC now %d)", gogc())
	}
	if p := gogc(); p != 50 {
		t.Errorf("GOGC %d, want the operator's 50", p)
	}
}
