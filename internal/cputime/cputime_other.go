//go:build !unix

package cputime

import "time"

// Process returns 0: the process's CPU time is not read on this system, and benchmarks that
// report CPU per operation then report 0.
func Process() time.Duration { return 0 }
