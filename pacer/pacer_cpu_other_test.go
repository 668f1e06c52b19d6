//go:build !unix

package pacer_test

import "time"

// processCPU is not measured on this system; benchmarks then report 0 cpu-ns/op.
func processCPU() time.Duration { return 0 }
