package cputime

import "testing"

// TestProcessGrows: burning CPU shows in Process (where it is measured).
func TestProcessGrows(t *testing.T) {
	before := Process()
	x := 0
	for i := range 50_000_000 {
		x ^= i * i
	}
	after := Process()
	if after == 0 {
		t.Skipf("CPU time is not measured on this platform (%d)", x)
	}
	if after <= before {
		t.Errorf("CPU time did not grow: %s then %s (%d)", before, after, x)
	}
}
