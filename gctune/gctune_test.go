package gctune

import (
	"context"
	"math"
	"runtime"
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

// settingsNow reads GOGC (-1: off) and the soft memory limit.
func settingsNow() (percent int, limit int64) {
	percent = debug.SetGCPercent(-1)
	debug.SetGCPercent(percent)
	return percent, debug.SetMemoryLimit(-1)
}

// collections allocates n bytes of garbage and returns how many
// collections completed meanwhile.
func collections(n int) uint32 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n / (64 << 10) {
		sink = make([]byte, 64<<10)
	}
	runtime.ReadMemStats(&after)
	return after.NumGC - before.NumGC
}

var sink []byte

func TestHold(t *testing.T) {
	t.Setenv("GOGC", "")
	origPercent := debug.SetGCPercent(100)
	origLimit := debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(origPercent); debug.SetMemoryLimit(origLimit) }()
	runtime.GC()

	if n := collections(64 << 20); n == 0 {
		t.Fatal("64 MB of garbage without a hold: no collection (the test cannot tell a hold from none)")
	}
	release := Hold(256 << 20)
	percent, limit := settingsNow()
	if percent != -1 || limit == math.MaxInt64 || limit < 256<<20 || limit > 1<<30 {
		t.Errorf("during a hold: GOGC %d, limit %d; want off and about the goal + 256 MiB", percent, limit)
	}
	if n := collections(64 << 20); n != 0 {
		t.Errorf("64 MB of garbage during a hold of 256 MiB: %d collections, want 0", n)
	}
	second := Hold(1 << 30) // while one lasts: a no-op, and so is its release
	second()
	if p, _ := settingsNow(); p != -1 {
		t.Errorf("releasing an overlapping hold turned the collector back on (GOGC %d)", p)
	}
	release()
	release() // twice is harmless
	if p, l := settingsNow(); p != 100 || l != math.MaxInt64 {
		t.Errorf("after the hold: GOGC %d, limit %d; want 100 and no limit", p, l)
	}
}

func TestHoldKeepsALowerLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	origLimit := debug.SetMemoryLimit(512 << 20)
	defer debug.SetMemoryLimit(origLimit)
	release := Hold(1 << 40)
	_, limit := settingsNow()
	release()
	if limit != 512<<20 {
		t.Errorf("hold under a 512 MiB limit set a limit of %d", limit)
	}
}

func TestHoldLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "50")
	orig := debug.SetGCPercent(50)
	defer debug.SetGCPercent(orig)
	release := Hold(1 << 30)
	p, _ := settingsNow()
	release()
	if p != 50 {
		t.Errorf("GOGC during a hold: %d, want the operator's 50", p)
	}
}

// TestRunWaitsForAHold: Run leaves the settings alone while a hold lasts
// and tunes again after it.
func TestRunWaitsForAHold(t *testing.T) {
	t.Setenv("GOGC", "")
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	release := Hold(64 << 20)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, 1<<50, time.Millisecond); close(done) }()
	time.Sleep(20 * time.Millisecond) // twenty of Run's ticks
	if p, _ := settingsNow(); p != -1 {
		t.Errorf("Run changed GOGC to %d during a hold", p)
	}
	release()
	deadline := time.Now().Add(5 * time.Second)
	for gogc() != MaxPercent {
		if time.Now().After(deadline) {
			t.Fatalf("after the hold GOGC is %d, want Run's %d", gogc(), MaxPercent)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
}
