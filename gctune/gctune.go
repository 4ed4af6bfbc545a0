// Package gctune keeps the Go garbage collector from running dozens of
// times a second in a process whose live heap is small.
//
// The collector's default (GOGC=100) lets the heap grow to twice the live
// heap, but never less than 4 MiB. A gateway keeps little alive (its tools
// and caches: a megabyte or two for a small API) while every request
// allocates a few kilobytes of short-lived garbage, so under load it
// collects every 10–15 ms, each time with two short stop-the-world pauses
// that show up in tail latency. Tuner gives the heap a fixed headroom
// instead: the collector runs when the heap has grown by
// max(live, headroom), never by less than the default would allow.
//
// Invariants: the heap goal is at most live + max(live, headroom, 4 MiB),
// where live counts the stacks and globals the collector scans (so the
// extra memory is bounded by headroom); the percentage never drops below
// 100 (never more collection than the default) and never exceeds
// MaxPercent; an operator's GOGC or a zero headroom leaves the runtime
// alone.
package gctune

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// MaxPercent bounds the GOGC the tuner sets.
const MaxPercent = 10000

// runtimeHeapMinimum is the Go runtime's minimum heap goal at GOGC=100; it
// scales with GOGC (at GOGC=800 no collection starts below 32 MiB).
const runtimeHeapMinimum = 4 << 20

// Percent is the GOGC that lets the heap grow by headroom past live bytes
// before a collection: live counts the live heap and the stacks and globals
// the collector scans, since GOGC applies to all three. The runtime's goal
// is the larger of live + live×GOGC/100 and 4 MiB×GOGC/100, so both are
// kept at or under live + headroom. The result is clamped to
// [100, MaxPercent].
func Percent(live, headroom uint64) int {
	if headroom == 0 {
		return 100
	}
	p := (live + headroom) * 100 / runtimeHeapMinimum // the minimum heap goal
	if live > 0 {
		p = min(p, headroom*100/live)
	}
	switch {
	case p < 100:
		return 100
	case p > MaxPercent:
		return MaxPercent
	}
	return int(p)
}

// Run adjusts GOGC to the live heap every interval until ctx ends, then
// restores the setting it found. It does nothing when headroom is 0 or the
// GOGC environment variable is set (the operator decided). Run blocks: start
// it in its own goroutine.
func Run(ctx context.Context, headroom uint64, interval time.Duration) {
	if headroom == 0 || os.Getenv("GOGC") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/stack:bytes"}, {Name: "/gc/scan/globals:bytes"}}
	current, orig, changed := 0, 0, false
	defer func() {
		if changed {
			debug.SetGCPercent(orig)
		}
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		var live uint64
		known := true
		for _, s := range sample {
			if known = s.Value.Kind() == metrics.KindUint64; !known {
				break // not reported by this runtime: leave GOGC alone
			}
			live += s.Value.Uint64()
		}
		if known {
			if p := Percent(live, headroom); p != current {
				prev := debug.SetGCPercent(p)
				if !changed {
					orig, changed = prev, true
				}
				current = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
