//go:build !unix

package gateway

import "time"

// processCPU is not measured here: benchmarks report no cpu-ns/op.
func processCPU() time.Duration { return 0 }
