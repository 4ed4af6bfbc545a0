package par

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestEach checks that every index runs exactly once, whatever the number
// of cores and of iterations.
func TestEach(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for _, n := range []int{0, 1, chunk - 1, chunk, chunk + 1, 10*chunk + 7} {
		counts := make([]atomic.Int32, n)
		Each(n, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d ran %d times", n, i, c)
			}
		}
	}
}
