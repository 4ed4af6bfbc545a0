// Package par runs a loop's independent iterations on every core: the one
// way the project spreads work that is the same for each of many items
// (encoding and compiling Microsoft Graph's 11,422 tools) over the machine.
//
// Invariants: Each returns only after every iteration has returned; an
// iteration runs once; a small loop runs on the caller's goroutine, with
// no goroutine started.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// chunk is how many iterations a goroutine takes at a time: few enough
// that the cores finish together, many enough that taking them costs
// nothing.
const chunk = 64

// Each calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// when n is large enough for that to pay. f must be safe to call
// concurrently for different i.
func Each(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+chunk-1)/chunk)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				start := int(next.Add(chunk)) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
}
