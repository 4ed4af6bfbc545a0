// Package cputime reads the CPU time this process has used, for
// benchmarks that report CPU per operation: on a busy machine other
// processes disturb it far less than wall time. It owns nothing else.
package cputime

import "time"

// Process is the user and system CPU time this process has used so far
// (the garbage collector's included); 0 where the platform does not say.
func Process() time.Duration { return process() }
