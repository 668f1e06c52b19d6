//go:build !unix

package pacer

import "time"

// cpuTime is unavailable here; the benchmarks then report 0 CPU.
func cpuTime() time.Duration { return 0 }
