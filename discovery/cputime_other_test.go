//go:build !unix

package discovery

import "time"

// cpuTime is unknown here: the benchmark then reports wall time only.
func cpuTime() time.Duration { return 0 }
