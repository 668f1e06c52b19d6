//go:build unix

package pacer_test

import (
	"syscall"
	"time"
)

// processCPU returns the user+system CPU time of the whole test process (all threads). On a
// shared machine, CPU time per op is a steadier figure than wall time per op.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
