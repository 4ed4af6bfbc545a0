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
//
// [Hold] serves the other case: a burst of short-lived garbage far larger
// than the live heap (a reload parses a 12 MiB document into 150 MB of
// temporaries) would force several collections in a second, and every one
// slows the requests served meanwhile. While a hold lasts the collector
// waits until the heap has grown by the hold's budget (a soft memory limit,
// never above one already set); then one collection takes the lot. Holds
// and Run's adjustments are serialized by one lock (the settings they
// change are the process's), and Run leaves the settings alone while a
// hold lasts.
package gctune

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
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
			settings.Lock()
			debug.SetGCPercent(orig)
			settings.Unlock()
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
		if known && settings.TryLock() { // a hold in progress: next tick
			if p := Percent(live, headroom); p != current {
				prev := debug.SetGCPercent(p)
				if !changed {
					orig, changed = prev, true
				}
				current = p
			}
			settings.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// settings serializes the changes Run and Hold make to the collector's
// settings, which belong to the whole process: the one piece of package
// state, as the thing it guards is process state too.
var settings sync.Mutex

// Hold lets the heap grow by up to budget bytes past its current goal
// without a collection, until release is called: the collector is turned
// off (GOGC=off) under a soft memory limit of goal + budget, or the limit
// already set when that is lower, so memory stays bounded and the runtime
// still collects at the limit. release restores both settings, and the next
// collection (due at once) takes the garbage of the whole burst.
//
// Hold is a no-op (release does nothing) when the operator set GOGC, when
// budget is 0, or while another hold lasts; release may be called more
// than once.
func Hold(budget uint64) (release func()) {
	if budget == 0 || os.Getenv("GOGC") != "" || !settings.TryLock() {
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		settings.Unlock() // no goal to bound the hold by: no hold
		return func() {}
	}
	goal := min(sample[0].Value.Uint64(), math.MaxInt64/2)
	limit := debug.SetMemoryLimit(-1) // a negative limit reads it
	debug.SetMemoryLimit(min(limit, int64(goal+min(budget, math.MaxInt64/2))))
	percent := debug.SetGCPercent(-1)
	var once sync.Once
	return func() {
		once.Do(func() {
			debug.SetGCPercent(percent)
			debug.SetMemoryLimit(limit)
			settings.Unlock()
		})
	}
}
